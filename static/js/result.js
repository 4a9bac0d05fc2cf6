// Result and compare pages: draw every [data-figure] chart, load sessions when opened, poll progress.
(function () {
  "use strict";
  // Charts in or near the viewport are drawn at once, the others when they scroll into view (or when the closed
  // <details> holding one is opened), so a long page does not draw a dozen charts before it answers a click.
  // Plotly itself (at this script's data-plotly) is loaded only once a chart is about to be drawn, or the reader
  // scrolls or presses a key: a page whose charts are all below the fold (a phone's) is ready without running it.
  // Everything is drawn before printing, and at once in the offline report (data-draw-all, Plotly inline).
  var figures = document.getElementById("figures");
  var plotlySrc = document.currentScript && document.currentScript.getAttribute("data-plotly");
  if (figures && (window.Plotly || plotlySrc)) {
    var data = JSON.parse(figures.textContent);
    var config = {responsive: true, displaylogo: false,
                  toImageButtonOptions: {format: "png", filename: "personasteer-chart"}};
    var charts = Array.prototype.slice.call(document.querySelectorAll("[data-figure]"));
    var waiting = [];
    var loading = null;
    var withPlotly = function (then) {
      if (window.Plotly) { then(); return; }
      waiting.push(then);
      if (loading) { return; }
      loading = document.createElement("script");
      loading.src = plotlySrc;
      loading.onload = function () {
        var ready = waiting;
        waiting = [];
        ready.forEach(function (run) { run(); });
      };
      document.head.appendChild(loading);
    };
    var draw = function (el) {
      var figure = data[el.dataset.figure];
      if (!figure || el.dataset.drawn) { return; }
      el.dataset.drawn = "1";
      Plotly.newPlot(el, figure.data, figure.layout, config);
    };
    var drawAll = function () { withPlotly(function () { charts.forEach(draw); }); };
    if (figures.hasAttribute("data-draw-all") || !("IntersectionObserver" in window)) {
      drawAll();
    } else {
      // One chart per task, so that the page answers input between two charts.
      var queue = [];
      var drawNext = function () {
        draw(queue.shift());
        if (queue.length) { setTimeout(drawNext, 0); }
      };
      var observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (entry) {
          if (!entry.isIntersecting) { return; }
          observer.unobserve(entry.target);
          withPlotly(function () {
            if (queue.push(entry.target) === 1) { setTimeout(drawNext, 0); }
          });
        });
      }, {rootMargin: "200px 0px"});
      charts.forEach(function (el) { observer.observe(el); });
      window.addEventListener("beforeprint", drawAll);
      var early = function () {
        ["scroll", "keydown", "pointerdown"].forEach(function (type) { window.removeEventListener(type, early); });
        withPlotly(function () {});
      };
      ["scroll", "keydown", "pointerdown"].forEach(function (type) {
        window.addEventListener(type, early, {passive: true});
      });
    }
  }

  // Session detail is fetched when a session is opened, so a 5,000-session result stays light.
  document.querySelectorAll("details.session[data-src]").forEach(function (details) {
    details.addEventListener("toggle", function () {
      if (!details.open || details.dataset.loaded) { return; }
      details.dataset.loaded = "1";
      var body = details.querySelector(".session-body");
      fetch(details.dataset.src)
        .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
        .then(function (html) { body.innerHTML = html; })  // HTML rendered and escaped by the server
        .catch(function () {
          delete details.dataset.loaded;
          body.textContent = document.getElementById("sessions").dataset.loadError;
        });
    });
  });

  // A share link's address is selected whole when its field gets the focus, ready to copy.
  document.querySelectorAll("input[data-select-on-focus]").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });

  // The figures being updated after people's ratings changed (a rescore job): reload once it is over.
  var rescoring = document.getElementById("rescoring");
  if (rescoring && rescoring.dataset.url) {
    var pollRescore = function () {
      fetch(rescoring.dataset.url, {headers: {"Accept": "application/json"}})
        .then(function (r) { return r.json(); })
        .then(function (body) {
          if (["queued", "running"].indexOf(body.status) < 0) { window.location.reload(); return; }
          setTimeout(pollRescore, 1000);
        })
        .catch(function () { setTimeout(pollRescore, 3000); });
    };
    setTimeout(pollRescore, 1000);
  }

  // A running evaluation's live view (#live): the figures of the judgments stored so far, drawn now and fetched again
  // while the progress shows more judgments stored than they were made from, at most once per poll (a second); the
  // server answers 304 while its figures have not changed (it makes them again at most once a second).
  var live = document.getElementById("live");
  var liveBusy = false;
  var liveHtml = null;
  function drawLive() {
    var source = document.getElementById("live-figures");
    if (!source || !window.Plotly) { return; }
    var data = JSON.parse(source.textContent);
    live.querySelectorAll("[data-live-figure]").forEach(function (el) {
      var figure = data[el.dataset.liveFigure];
      if (figure) { Plotly.react(el, figure.data, figure.layout, {responsive: true, displaylogo: false}); }
    });
  }
  function refreshLive(done) {
    var shown = live && document.getElementById("live-n");
    if (!live || liveBusy || (shown && Number(shown.dataset.judgments) === done)) { return; }
    liveBusy = true;
    fetch(live.dataset.url, {headers: {"Accept": "text/html"}})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        if (html !== liveHtml) {
          liveHtml = html;
          live.innerHTML = html;  // HTML rendered and escaped by the server
          drawLive();
        }
      })
      .catch(function () {})
      .then(function () { liveBusy = false; });
  }
  if (live) { window.addEventListener("load", drawLive); }

  var progress = document.getElementById("progress");
  if (!progress) { return; }
  var bar = progress.querySelector("progress");
  function fillIn(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, key) { return values[key]; });
  }
  function formatDuration(seconds) {
    seconds = Math.round(seconds);
    var parts = {h: Math.floor(seconds / 3600), m: Math.floor(seconds % 3600 / 60), s: seconds % 60};
    var d = progress.dataset;
    return fillIn(parts.h ? d.hours : parts.m ? d.minutes : d.seconds, parts);
  }
  function poll() {
    fetch(progress.dataset.url, {headers: {"Accept": "application/json"}})
      .then(function (r) { return r.json(); })
      .then(function (body) {
        if (["queued", "running"].indexOf(body.status) < 0) { window.location.reload(); return; }
        var p = body.progress;
        var badge = document.getElementById("status");
        if (badge && progress.dataset["status_" + body.status]) {
          badge.textContent = progress.dataset["status_" + body.status];
          badge.className = "status status-" + body.status;
        }
        refreshLive(p.done);
        bar.max = p.total || 1;
        bar.value = p.done;
        var values = {done: p.done, total: p.total, failed: p.failed, unparsed: p.unparsed,
                      percent: Math.floor(100 * p.done / (p.total || 1))};
        document.getElementById("progress-text").textContent = fillIn(progress.dataset.template, values);
        if (p.waiting || !p.rate_per_s) {
          document.getElementById("progress-speed").textContent = p.waiting ? progress.dataset["waiting_" + p.waiting] || "" : "";
        } else {
          values.rate = p.rate_per_s.toFixed(1);
          values.eta = formatDuration(p.eta_s);
          document.getElementById("progress-speed").textContent = fillIn(progress.dataset.speedTemplate, values);
        }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 1000);
})();
