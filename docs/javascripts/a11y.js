// What axe-core (tests/browser) found missing in the theme and in notebook pages: names for
// the search dialog, for the numbered markers of code annotations (their number is drawn by
// CSS, which screen readers do not read), for table-of-contents links to headings that are
// only code, for the expand toggles of sections with an index page and for the button bar of
// each code block; keyboard access to notebook cells and outputs that scroll sideways. Markers
// and button bars are created after load, so new ones are named as they appear.
function nameUnnamed() {
  for (const cell of document.querySelectorAll(
    ".highlight-ipynb:not([tabindex]), .jupyter-wrapper pre:not([tabindex])",
  )) {
    cell.setAttribute("tabindex", "0");
  }
  for (const link of document.querySelectorAll("a.md-nav__link[href^='#']:not([aria-label])")) {
    if (link.textContent.trim()) continue;
    const heading = document.getElementById(decodeURIComponent(link.hash.slice(1)));
    link.setAttribute("aria-label", heading?.textContent.replace("¶", "").trim() || "Section");
  }
  // A section with an index page: its nav is labelled by the expand toggle, which shows only an
  // icon; it takes the name of the section's link beside it.
  for (const toggle of document.querySelectorAll("label.md-nav__link[id$='_label']:not([aria-label])")) {
    if (toggle.textContent.trim()) continue;
    const link = toggle.parentElement?.querySelector("a.md-nav__link");
    if (link?.textContent.trim()) toggle.setAttribute("aria-label", link.textContent.trim());
  }
  // The copy button of each code block sits in a <nav>: a landmark that screen readers list,
  // one per block, so each gets its own name.
  document.querySelectorAll("nav.md-code__nav").forEach((bar, i) => {
    if (!bar.hasAttribute("aria-label")) bar.setAttribute("aria-label", `Code block ${i + 1}`);
  });
  const search = document.querySelector(".md-search[role=dialog]:not([aria-label])");
  if (search) search.setAttribute("aria-label", "Search");
  for (const marker of document.querySelectorAll("a.md-annotation__index:not([aria-label])")) {
    const number = marker.querySelector("[data-md-annotation-id]")?.dataset.mdAnnotationId;
    marker.setAttribute("aria-label", number ? `Code annotation ${number}` : "Code annotation");
  }
}
new MutationObserver(nameUnnamed).observe(document.documentElement, {
  childList: true,
  subtree: true,
});
nameUnnamed();
