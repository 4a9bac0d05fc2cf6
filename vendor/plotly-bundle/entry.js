// plotly.js with the trace types the dashboard's figures use (kinds/*/figures.py): scatter (in core, with
// its error bars and filled bands), bar, scatterpolar (the radars) and heatmap (the judges' agreement).
'use strict';

var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/scatterpolar'),
    require('plotly.js/lib/heatmap'),
]);

module.exports = Plotly;
