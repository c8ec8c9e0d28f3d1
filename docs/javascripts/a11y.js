// What axe-core (tests/browser) found missing in the theme and in notebook pages: names for
// the search dialog, for the numbered markers of code annotations (their number is drawn by
// CSS, which screen readers do not read), for table-of-contents links to headings that are
// only code, for the expand toggles of sections with an index page and for the button bar of
// each code block; keyboard access and a name for whatever scrolls sideways (tables, code and
// output blocks). Markers and button bars are created after load, so new ones are named as
// they appear, and a box that changes size is checked again for whether it scrolls.
let codeBars = 0;
const SCROLL_REGIONS = ".md-typeset__scrollwrap, .md-typeset .per-device-table, .md-typeset .sharding-diagram, .md-typeset .tpu-plot, .md-typeset .overlap-chart";
const CODES = ".md-typeset pre > code";
// A box wider than the page scrolls sideways (a table in its wrapper, a per-device table, a
// diagram): reachable by keyboard too, as a named region.
function nameRegion(wrap) {
  if (wrap.hasAttribute("tabindex")) return;
  wrap.setAttribute("tabindex", "0");
  // a figure (a plot, a chart) keeps its own role, which may not be changed to a region
  const figure = wrap.tagName === "FIGURE";
  if (!figure) wrap.setAttribute("role", "region");
  // Named after its caption, or else after the section it is in (the nearest heading before
  // its top-level block), and numbered where a section holds several: landmarks need
  // distinct names.
  let block = wrap;
  while (block.parentElement && !block.parentElement.classList.contains("md-content__inner")) {
    block = block.parentElement;
  }
  let heading = block.previousElementSibling;
  while (heading && !/^H[1-6]$/.test(heading.tagName)) heading = heading.previousElementSibling;
  const caption = wrap.querySelector("caption")?.firstChild?.textContent.trim();
  const base = `${figure ? "Figure" : "Table"}: ${caption || heading?.textContent.replace("¶", "").trim() || document.title}`;
  let name = base;
  for (let n = 2; document.querySelector(`[tabindex="0"][aria-label="${CSS.escape(name)}"]`); n++) {
    name = `${base} (${n})`;
  }
  wrap.setAttribute("aria-label", name);
}
// A code or output block with a line longer than the block scrolls too: focusable, and
// named (as a group: a name needs a role, and a landmark per block would crowd the page's
// list of regions). The theme makes such a block focusable only where the pointer can
// hover, and takes the tabindex away again on a touch screen (a phone with a keyboard, or
// a switch, could not scroll it): the mutation observer below puts it back.
const scrollingCodes = new Set();
function nameCode(code) {
  if (code.getAttribute("tabindex") === "0") return;
  code.setAttribute("tabindex", "0");
  code.setAttribute("role", "group");
  code.setAttribute("aria-label", code.closest(".output") ? "Output" : "Code");
}
// What scrolls is read where the browser has just laid the page out, in a ResizeObserver's
// callback (at load, and whenever a box changes size: a narrower window, an opened fold),
// so reading it lays nothing out again; a read in a script of its own, after the theme's
// writes, laid the whole page out each time. Every size is read before anything is written.
const sizes = new ResizeObserver((entries) => {
  const wide = entries.map((entry) => entry.target)
    .filter((el) => el.isConnected && el.scrollWidth > el.clientWidth);
  for (const el of wide) {
    if (el.matches(CODES)) {
      scrollingCodes.add(el);
      nameCode(el);
    } else {
      nameRegion(el);
    }
  }
});
const watched = new WeakSet();
function watchBoxes() {
  for (const el of document.querySelectorAll(`${SCROLL_REGIONS}, ${CODES}`)) {
    if (watched.has(el)) continue;
    watched.add(el);
    sizes.observe(el);
  }
}
function nameUnnamed() {
  watchBoxes();
  for (const code of scrollingCodes) nameCode(code);
  for (const link of document.querySelectorAll("a.md-nav__link[href^='#']:not([aria-label])")) {
    if (link.textContent.trim()) continue;
    const heading = document.getElementById(decodeURIComponent(link.hash.slice(1)));
    link.setAttribute("aria-label", heading?.textContent.replace("¶", "").trim() || "Section");
  }
  // A section with an index page: its nav is labelled by the expand toggle, which shows only an
  // icon; the toggle gets the section's name as hidden text (a <label> may not take an
  // aria-label).
  for (const toggle of document.querySelectorAll("label.md-nav__link[id$='_label']")) {
    if (toggle.textContent.trim()) continue;
    const name = toggle.parentElement?.querySelector("a.md-nav__link")?.textContent.trim();
    if (!name) continue;
    const hidden = document.createElement("span");
    hidden.className = "a11y-hidden";
    hidden.textContent = name;
    toggle.append(hidden);
  }
  // The copy button of each code block sits in a <nav>: a landmark that screen readers list,
  // one per block, so each gets its own name.
  for (const bar of document.querySelectorAll("nav.md-code__nav:not([aria-label])")) {
    bar.setAttribute("aria-label", `Code block ${++codeBars}`);
  }
  const search = document.querySelector(".md-search[role=dialog]:not([aria-label])");
  if (search) search.setAttribute("aria-label", "Search");
  for (const marker of document.querySelectorAll("a.md-annotation__index:not([aria-label])")) {
    const number = marker.querySelector("[data-md-annotation-id]")?.dataset.mdAnnotationId;
    marker.setAttribute("aria-label", number ? `Code annotation ${number}` : "Code annotation");
  }
}
// Once per burst of changes, not once per change: the theme inserts elements one by one.
let queued = false;
new MutationObserver(() => {
  if (queued) return;
  queued = true;
  setTimeout(() => {
    queued = false;
    nameUnnamed();
  });
}).observe(document.documentElement, {
  childList: true,
  subtree: true,
  attributeFilter: ["tabindex"],
});
nameUnnamed();
