(gd) => {
  const box = (el) => el.getBoundingClientRect();
  const svg = box(gd.querySelector('svg.main-svg'));
  const name = gd.dataset.figure || gd.id;
  const problems = [];
  const label = (el) => (el.textContent || '').trim().slice(0, 40);
  const overlaps = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const texts = gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .g-gtitle text, .legendtext, .angularaxistick text, .radialaxistick text');
  for (const t of texts) {
    const r = box(t);
    if (!r.width) continue;
    if (r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1)
      problems.push(`${name}: "${label(t)}" is cut at the chart's edge`);
  }
  const legend = gd.querySelector('g.legend rect.bg');
  if (legend) {
    const lr = box(legend);
    for (const t of gd.querySelectorAll('.g-xtitle text, .xtick text, .angularaxistick text')) {
      if (overlaps(lr, box(t))) problems.push(`${name}: the legend covers "${label(t)}"`);
    }
    const bar = gd.querySelector('g.legend rect.scrollbar');
    if (bar && box(bar).height > 0) problems.push(`${name}: the legend scrolls`);
  }
  const radialTexts = [...gd.querySelectorAll('.radialaxistick text')];
  const radial = radialTexts.map(box);
  for (const t of gd.querySelectorAll('.angularaxistick text')) {
    if (radial.some(r => overlaps(r, box(t)))) problems.push(`${name}: radial ticks cover "${label(t)}"`);
  }
  radial.forEach((r, i) => radial.slice(i + 1).forEach((other, j) => {
    if (overlaps(r, other)) problems.push(`${name}: radial ticks "${label(radialTexts[i])}" and "${label(radialTexts[i + 1 + j])}" run into each other`);
  }));
  // A radar's methods are outlines: filled areas stacked on each other hide the ones below.
  for (const fill of gd.querySelectorAll('.polarlayer path.js-fill')) {
    const colour = getComputedStyle(fill).fill;
    if (fill.getAttribute('d') && colour && colour !== 'none' && !/rgba\(.*, 0\)$/.test(colour))
      problems.push(`${name}: a radar trace is a filled area`);
  }
  return problems;
}
