// Builds ../../static/vendor/plotly-personasteer.min.js (or the file named by the first argument) from entry.js with
// esbuild, the way plotly.js builds its own minified bundles (an IIFE that defines the global Plotly), headed by
// plotly.js's licence.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { version } = JSON.parse(readFileSync(require.resolve('plotly.js/package.json'), 'utf8'));
const outfile = process.argv[2] || new URL('../../static/vendor/plotly-personasteer.min.js', import.meta.url).pathname;

await build({
    entryPoints: [new URL('entry.js', import.meta.url).pathname],
    outfile,
    bundle: true,
    minify: true,
    format: 'iife',
    globalName: 'Plotly',
    target: 'es2016',
    legalComments: 'eof',  // the licences of the libraries bundled, at the end as in plotly.js's own bundles
    loader: { '.css': 'empty' },  // maplibre-gl's stylesheet, required only for map traces, which are left out
    define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
    banner: { js: `/**\n* plotly.js (personasteer - minified) v${version}\n* Copyright 2012-2026, Plotly, Inc.\n` +
                  '* All rights reserved.\n* Licensed under the MIT license\n*/' },
    logLevel: 'info',
});
