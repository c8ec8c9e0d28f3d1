// Accessible names for two things the theme leaves unnamed: the search dialog, and the
// numbered markers of code annotations (their number is drawn by CSS, which screen readers
// do not read). The markers are created after load, so new ones are named as they appear.
function nameUnnamed() {
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
