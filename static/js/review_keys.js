// A judgment's page: j goes to the next judgment of the grid, k to the previous one (the links rel="next" and
// rel="prev"), unless a key is typed into a field or combined with a modifier.
(function () {
  var TYPING = "textarea, select, [contenteditable], input:not([type=radio]):not([type=checkbox])" +
    ":not([type=submit]):not([type=button]):not([type=reset])";
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.isComposing || event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    var rel = {j: "next", k: "prev"}[event.key];
    var target = event.target;
    if (!rel || (target && target.closest && target.closest(TYPING))) {
      return;
    }
    var link = document.querySelector('.review-steps a[rel="' + rel + '"]');
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  });
})();
