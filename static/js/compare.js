// Compare page: draw the overlaid AL(k) and BAR(k) charts (the figures are in the page, as on the result page).
(function () {
  "use strict";
  var figures = document.getElementById("figures");
  if (!figures || !window.Plotly) { return; }
  var data = JSON.parse(figures.textContent);
  var config = {responsive: true, displaylogo: false,
                toImageButtonOptions: {format: "png", filename: "personasteer-compare"}};
  [["chart-al", "al_curve"], ["chart-binary", "binary_curve"]].forEach(function (pair) {
    var el = document.getElementById(pair[0]);
    if (el && data[pair[1]]) { Plotly.newPlot(el, data[pair[1]].data, data[pair[1]].layout, config); }
  });
})();
