// People's ratings in the browser (kinds/dialogue/templates/ask_people.html and rate.html).
// Ask people: a new rating link's address is selected when focused, and copied by its Copy button.
// The rating page's keys: a digit picks that value of a question whose values are digits and focuses the next
// question; number fields take digits and ArrowUp/ArrowDown natively, Tab moves on natively; Enter saves and opens the
// next reply not rated; S skips to the next reply; B, or Backspace outside a number field, goes back.
(function () {
  "use strict";
  document.querySelectorAll("input[data-select-on-focus]").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.dataset.copy);
    button.hidden = false;  // without scripts the address is selected and copied by hand
    button.addEventListener("click", function () {
      field.focus();
      field.select();
      var done = function () { button.textContent = button.dataset.copied; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
      } else {
        document.execCommand("copy");
        done();
      }
    });
  });

  var form = document.getElementById("rating-form");
  if (!form) { return; }
  var groups = Array.prototype.slice.call(form.querySelectorAll("fieldset.dimension"));

  function current() {
    for (var i = 0; i < groups.length; i++) { if (groups[i].contains(document.activeElement)) { return i; } }
    return -1;
  }

  function focusGroup(i) {
    if (i >= groups.length) {  // past the last question: the Save button
      form.querySelector("button[type=submit]").focus();
      return;
    }
    var group = groups[Math.max(0, i)];
    (group.querySelector("input:checked") || group.querySelector("input")).focus();
  }

  function typing(target) {
    return target && target.matches && target.matches("input[type=text], input[type=number], textarea, select");
  }

  function go(address) {
    if (address) { window.location.href = address; }
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var key = event.key;
    var i = current();
    if (/^[0-9]$/.test(key) && !typing(event.target)) {
      var group = groups[i < 0 ? 0 : i];
      var radio = group && group.querySelector("input[type=radio][value='" + key + "']");
      if (radio) {
        radio.checked = true;
        focusGroup((i < 0 ? 0 : i) + 1);
        event.preventDefault();
      }
    } else if (key === "Enter") {
      if (event.target && event.target.matches && event.target.matches("a, button")) { return; }
      event.preventDefault();
      form.requestSubmit();
    } else if ((key === "s" || key === "S") && !(event.target.matches && event.target.matches("input[type=text], textarea"))) {
      event.preventDefault();
      go(form.dataset.skip);
    } else if ((key === "b" || key === "B") && !(event.target.matches && event.target.matches("input[type=text], textarea"))) {
      event.preventDefault();
      go(form.dataset.back);
    } else if (key === "Backspace" && !typing(event.target)) {
      event.preventDefault();
      go(form.dataset.back);
    }
  });

  var first = groups.filter(function (g) {
    return !g.querySelector("input:checked") && !g.querySelector("input[type=number]:valid");
  })[0];
  focusGroup(first ? groups.indexOf(first) : 0);
}());
