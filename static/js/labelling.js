// The labelling page's keys (kinds/conversation/templates/label.html): 1-9 pick the focused dimension's value and
// focus the next dimension; ArrowUp/ArrowDown move between dimensions (Tab does natively, ArrowLeft/ArrowRight change
// the value natively); Enter saves and opens the next conversation; S skips to it; B goes back.
(function () {
  "use strict";
  var form = document.getElementById("label-form");
  if (!form) { return; }
  var groups = Array.prototype.slice.call(form.querySelectorAll("fieldset.dimension"));

  function current() {
    for (var i = 0; i < groups.length; i++) { if (groups[i].contains(document.activeElement)) { return i; } }
    return -1;
  }

  function focusGroup(i) {
    var group = groups[Math.max(0, Math.min(groups.length - 1, i))];
    (group.querySelector("input:checked") || group.querySelector("input")).focus();
  }

  function typing(target) {
    return target && target.matches && target.matches("input[type=text], input[type=number], textarea, select");
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) { return; }
    var i = current();
    var key = event.key;
    if (/^[1-9]$/.test(key)) {
      var group = groups[i < 0 ? 0 : i];
      var inputs = group.querySelectorAll("input[type=radio]");
      var k = Number(key) - 1;
      if (k < inputs.length) {
        inputs[k].checked = true;
        focusGroup(i < 0 ? 0 : Math.min(i + 1, groups.length - 1));
      }
      event.preventDefault();
    } else if (key === "ArrowDown" || key === "ArrowUp") {
      if (i < 0) { return; }
      focusGroup(i + (key === "ArrowDown" ? 1 : -1));
      event.preventDefault();
    } else if (key === "Enter") {
      if (event.target && event.target.matches && event.target.matches("a, button")) { return; }
      event.preventDefault();
      form.requestSubmit();
    } else if (key === "s" || key === "S") {
      window.location.href = form.dataset.skip;
    } else if ((key === "b" || key === "B") && form.dataset.back) {
      window.location.href = form.dataset.back;
    }
  });

  var first = groups.filter(function (g) { return !g.querySelector("input:checked"); })[0];
  focusGroup(first ? groups.indexOf(first) : 0);
}());
