// The status page of a simulation (templates/simulation.html) reloads itself while the simulation runs, so that the
// progress and the transcripts follow it; it stops once the simulation has ended.
(function () {
  "use strict";
  var section = document.getElementById("simulation");
  var every = section && Number(section.getAttribute("data-refresh"));
  if (every > 0) {
    window.setTimeout(function () { window.location.reload(); }, every);
  }
})();
