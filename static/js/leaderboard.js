// A dataset's leaderboard: a click on a point of the trend chart picks it as the first, then the second point of
// the "compare two points" form (alternately); the form works without this script.
(function () {
  "use strict";
  var chart = document.getElementById("chart-trend");
  var form = document.getElementById("compare-points");
  if (!chart || !form) { return; }
  var selects = [form.querySelector("#point-a"), form.querySelector("#point-b")];
  var next = 0;
  var pick = function (method, run) {
    var select = selects[next];
    var key = method + "|" + run;
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].getAttribute("data-point") === key) { select.selectedIndex = i; break; }
    }
    select.focus({preventScroll: true});  // the chart stays in view for the second click
    next = 1 - next;
  };
  var attach = function () {
    if (typeof chart.on !== "function") { return false; }
    chart.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      if (!point) { return; }
      var methods = JSON.parse(chart.getAttribute("data-methods") || "[]");
      pick(methods[point.curveNumber], point.customdata);
    });
    return true;
  };
  // result.js draws the chart when it scrolls into view: wait for Plotly to have made it.
  var tries = 0;
  var wait = function () {
    if (!attach() && tries++ < 600) { setTimeout(wait, 100); }
  };
  wait();
}());
