// What axe-core (tests/browser) found missing in the theme and in notebook pages: names for
// the search dialog, for the numbered markers of code annotations (their number is drawn by
// CSS, which screen readers do not read) and for table-of-contents links to headings that are
// only code; keyboard access to notebook cells and outputs that scroll sideways. The markers
// are created after load, so new ones are named as they appear.
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
