// The status page of a simulation (templates/simulation.html) reloads itself while the simulation runs, so that the
// progress and the transcripts follow it; it stops once the simulation has ended. The transcripts a reader opened or
// closed stay so across the reloads (kept for this tab in sessionStorage, by the page's address).
(function () {
  "use strict";
  var section = document.getElementById("simulation");
  var key = "psb-open:" + window.location.pathname + window.location.search;
  var details = document.querySelectorAll("details.transcript");
  var saved = null;
  try {
    saved = JSON.parse(window.sessionStorage.getItem(key) || "null");
  } catch (ignored) {
    saved = null;
  }
  if (saved) {
    details.forEach(function (d) { d.open = saved.indexOf(d.id) >= 0; });
  }
  details.forEach(function (d) {
    d.addEventListener("toggle", function () {
      var open = [];
      document.querySelectorAll("details.transcript[open]").forEach(function (o) { open.push(o.id); });
      try {
        window.sessionStorage.setItem(key, JSON.stringify(open));
      } catch (ignored) { /* storage off: the first transcript opens again at each reload */ }
    });
  });
  var every = section && Number(section.getAttribute("data-refresh"));
  if (every > 0) {
    window.setTimeout(function () { window.location.reload(); }, every);
  }
})();
