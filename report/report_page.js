// The report page: builds the sections from the JSON in #fk-data and draws
// the plots with Plotly. When every plot has drawn, body[data-rendered]
// holds their count (tests read it with a headless browser).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('fk-data').textContent);
  var app = document.getElementById('app');
  var pending = [];
  var BACKEND_COLORS = { nvrtc: '#1f77b4', halide: '#ff7f0e', cublaslt: '#2ca02c' };
  var STATUS_COLORS = { ok: '#2ca02c', modeled: '#8c9fb5', compile_error: '#d62728', launch_error: '#9467bd',
                        verify_error: '#e377c2', timeout: '#8c564b' };
  var STATUS_SYMBOLS = { ok: 'circle', modeled: 'circle-open', compile_error: 'x', launch_error: 'triangle-up',
                         verify_error: 'diamond', timeout: 'square' };

  function el(tag, attrs) {
    var e = document.createElement(tag);
    for (var k in (attrs || {})) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'html') e.innerHTML = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; ++i) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }
  function num(x, digits) {
    if (x === null || x === undefined || isNaN(x)) return '';
    return Number(x).toFixed(digits === undefined ? 2 : digits);
  }
  function pct(x) { return x === null || x === undefined ? '' : num(100 * x, 1) + ' %'; }
  function color(backend) { return BACKEND_COLORS[backend] || '#7f7f7f'; }
  // A table; a cell is text, a node, or {text, cls}.
  function table(headers, rows) {
    var t = el('table');
    var hr = el('tr');
    headers.forEach(function (h) { hr.appendChild(el('th', { text: h })); });
    t.appendChild(hr);
    rows.forEach(function (row) {
      var tr = el('tr');
      row.forEach(function (c) {
        if (c && typeof c === 'object' && !(c instanceof Node)) tr.appendChild(el('td', { text: c.text, class: c.cls || '' }));
        else if (c instanceof Node) tr.appendChild(el('td', {}, c));
        else tr.appendChild(el('td', { text: c === undefined || c === null ? '' : String(c) }));
      });
      t.appendChild(tr);
    });
    return t;
  }
  function plot(div, traces, layout) {
    var base = { margin: { l: 60, r: 16, t: 34, b: 48 }, font: { size: 11 }, legend: { font: { size: 10 } },
                 hovermode: 'closest' };
    pending.push(Plotly.newPlot(div, traces, Object.assign(base, layout), { displaylogo: false, displayModeBar: false, responsive: false }));
  }
  function opAnchor(op) { return 'op-' + (op.op + '-' + op.dtype + '-' + op.arch).replace(/[^A-Za-z0-9_-]/g, '_'); }

  // -- header and overview --------------------------------------------------
  function header() {
    var o = data.overview;
    app.appendChild(el('h1', { text: 'fusekit report' }));
    app.appendChild(el('p', { class: 'sub', text: 'database ' + data.source.db + ' \u00b7 ' + o.records +
      ' records \u00b7 timed ' + o.first_timestamp + ' \u2026 ' + o.last_timestamp + ' \u00b7 written ' + data.source.written +
      ' by fusekit ' + data.source.fusekit_version }));
    if (data.points.shown < data.points.of)
      app.appendChild(el('p', { class: 'note', text: 'Schedule points are sampled: ' + data.points.shown + ' of ' +
        data.points.of + ' records are drawn (every n-th record of each op, and every size\'s best per backend always); ' +
        'the tables and winners use every record.' }));
  }
  function overview() {
    var o = data.overview;
    app.appendChild(el('h2', { text: 'Overview', id: 'overview' }));
    var cards = el('div', { class: 'cards' });
    [['records', o.records], ['ops', o.ops.length], ['dtypes', o.dtypes.join(' ')], ['shapes', o.shapes.length],
     ['arches', o.archs.join(' ')], ['backends', o.backends.join(' ')]].forEach(function (c) {
      cards.appendChild(el('div', { class: 'card' }, el('b', { text: String(c[1]) }), c[0]));
    });
    app.appendChild(cards);
    var statusRows = Object.keys(o.statuses).map(function (s) { return [s, { text: String(o.statuses[s]), cls: 'num' }]; });
    var gpuRows = o.gpus.map(function (g) { return [g.name, { text: String(g.sm_count), cls: 'num' }, { text: String(g.records), cls: 'num' }]; });
    var row = el('div', { class: 'plots' });
    row.appendChild(el('div', {}, el('h3', { text: 'Records by status' }), table(['status', 'records'], statusRows),
                       el('h3', { text: 'GPUs' }), gpuRows.length ? table(['GPU', 'SMs', 'records'], gpuRows)
                                                                   : el('p', { text: 'none (every record is modeled or failed before timing)' })));
    var chart = el('div', { class: 'plot', style: 'width:900px;height:360px' });
    row.appendChild(chart);
    app.appendChild(row);
    var statuses = Object.keys(o.statuses).filter(function (s) { return o.statuses[s] > 0; });
    plot(chart, statuses.map(function (s) {
      return { type: 'bar', name: s, marker: { color: STATUS_COLORS[s] || '#7f7f7f' }, x: o.ops.map(function (p) { return p.op; }),
               y: o.ops.map(function (p) { return p.statuses[s] || 0; }) };
    }), { barmode: 'stack', title: { text: 'records per op by status' }, xaxis: { tickangle: -35, automargin: true },
          yaxis: { title: { text: 'records' } } });
    app.appendChild(el('details', {}, el('summary', { text: o.shapes.length + ' shapes' }), el('p', { class: 'mono', text: o.shapes.join('  ') })));
    var toc = el('p', { class: 'toc' }, 'ops: ');
    function link(href, text) { toc.appendChild(el('a', { href: href, text: text })); toc.appendChild(document.createTextNode(' ')); }
    data.ops.forEach(function (op) { link('#' + opAnchor(op), op.op + ' ' + op.dtype + ' ' + op.arch); });
    link('#failures', 'failures');
    if (data.plan) link('#plan', 'plan');
    if (data.package) link('#package', 'package');
    app.appendChild(toc);
  }

  // -- plan -----------------------------------------------------------------
  function plan() {
    var p = data.plan;
    if (!p) return;
    app.appendChild(el('h2', { text: 'Plan coverage', id: 'plan' }));
    app.appendChild(el('p', { text: (p.model ? 'model ' + p.model + ' (' + p.source + '): ' : '') + p.entries.length +
      ' entries; ' + p.sizes_tuned + ' of ' + p.sizes + ' entry sizes have timed records in this database (matched by entry name, dtype and shape); ' +
      p.unsupported + ' unsupported regions, ' + p.boundaries + ' boundaries.' }));
    if (p.coverage && Object.keys(p.coverage).length)
      app.appendChild(table(Object.keys(p.coverage), [Object.keys(p.coverage).map(function (k) { return String(p.coverage[k]); })]));
    app.appendChild(table(['entry', 'dtype', 'expression', 'occurrences', 'sizes tuned', 'sizes (records, best \u00b5s)'],
      p.entries.map(function (e) {
        return [e.name, e.dtype, { text: e.expr, cls: 'mono' }, { text: String(e.occurrences), cls: 'num' },
                { text: e.covered + ' of ' + e.sizes.length, cls: e.covered < e.sizes.length ? 'bad' : '' },
                e.sizes.map(function (s) { return s.size + (s.records ? ' (' + s.records + ', ' + num(s.best_us) + ')' : ' (none)'); }).join(', ')];
      })));
  }

  // -- ops ------------------------------------------------------------------
  function scheduleText(s) { return s ? s.backend + ' ' + s.params : ''; }
  function shapeTable(op) {
    var backends = [];
    op.shapes.forEach(function (s) { Object.keys(s.best).forEach(function (b) { if (backends.indexOf(b) < 0) backends.push(b); }); });
    var headers = ['shape', 'bucket', 'records', 'failed', 'timed', 'winner', '\u00b5s (median)', 'p20\u2013p80 spread', 'GB/s',
                   'runner-up', 'margin'].concat(backends.map(function (b) { return 'best ' + b + ' \u00b5s'; }));
    return table(headers, op.shapes.map(function (s) {
      var w = s.winner;
      var spread = w && w.median_us > 0 ? num(w.p20_us) + '\u2013' + num(w.p80_us) + ' (' + pct((w.p80_us - w.p20_us) / w.median_us) + ')' : '';
      return [s.shape, s.bucket, { text: String(s.records), cls: 'num' }, { text: String(s.failed), cls: s.failed ? 'num bad' : 'num' },
              s.timed, { text: scheduleText(w), cls: 'mono win' }, { text: w ? num(w.median_us) : '', cls: 'num' },
              { text: spread, cls: 'num' }, { text: w ? num(w.gbps, 0) : '', cls: 'num' },
              { text: scheduleText(s.runner_up), cls: 'mono' }, { text: pct(s.margin), cls: 'num' }]
        .concat(backends.map(function (b) { return { text: s.best[b] ? num(s.best[b].median_us) : '', cls: 'num' }; }));
    }));
  }
  function bandwidthPlot(op, div) {
    var backends = [];
    op.shapes.forEach(function (s) { Object.keys(s.best).forEach(function (b) { if (backends.indexOf(b) < 0) backends.push(b); }); });
    var traces = backends.map(function (b) {
      var shapes = op.shapes.filter(function (s) { return s.best[b]; });
      return { type: 'scatter', mode: 'lines+markers', name: b + ' best', line: { color: color(b) },
               x: shapes.map(function (s) { return s.elements; }), y: shapes.map(function (s) { return s.best[b].gbps; }),
               text: shapes.map(function (s) { return s.shape + '<br>' + s.best[b].params + '<br>' + num(s.best[b].median_us) + ' \u00b5s'; }),
               hoverinfo: 'text+y' };
    });
    var won = op.shapes.filter(function (s) { return s.winner; });
    traces.push({ type: 'scatter', mode: 'markers', name: 'winner', x: won.map(function (s) { return s.elements; }),
                  y: won.map(function (s) { return s.winner.gbps; }),
                  marker: { symbol: 'star', size: 14, color: won.map(function (s) { return color(s.winner.backend); }),
                            line: { color: '#000', width: 1 } },
                  text: won.map(function (s) { return 'winner ' + s.winner.backend + ' at ' + s.shape; }), hoverinfo: 'text+y' });
    var none = won.length ? [] : [{ text: 'no timed record at any size', showarrow: false, xref: 'paper', yref: 'paper', x: 0.5, y: 0.5 }];
    plot(div, traces, { annotations: none, title: { text: 'bandwidth of each backend\'s best against size' + (won.length && won[0].timed === 'modeled' ? ' (modeled)' : '') },
                        xaxis: { type: 'log', title: { text: 'elements' } }, yaxis: { title: { text: 'GB/s' }, rangemode: 'tozero' } });
  }
  // Points of one parameter: x is the value's rank (jittered so that equal
  // values spread), y the time relative to the shape's winner, or in \u00b5s
  // when one shape is chosen; failed records sit in a band above.
  function pointTraces(op, param, shapeIndex) {
    var P = op.points, vals = P.values[param] || [];
    var distinct = [];
    for (var i = 0; i < P.us.length; ++i) {
      var v = vals[i] === undefined || vals[i] === null ? '(none)' : vals[i];
      if (distinct.indexOf(v) < 0) distinct.push(v);
    }
    distinct.sort(function (a, b) {
      if (typeof a === 'number' && typeof b === 'number') return a - b;
      return typeof a === 'number' ? -1 : typeof b === 'number' ? 1 : String(a) < String(b) ? -1 : 1;
    });
    var ymax = 0;
    for (i = 0; i < P.us.length; ++i) {
      var y0 = shapeIndex >= 0 ? P.us[i] : P.rel[i];
      if ((shapeIndex < 0 || P.shape[i] === shapeIndex) && y0 !== null && y0 > ymax) ymax = y0;
    }
    var failY = ymax > 0 ? ymax * 1.6 : 1;
    var groups = {};
    for (i = 0; i < P.us.length; ++i) {
      if (shapeIndex >= 0 && P.shape[i] !== shapeIndex) continue;
      var backend = P.backends[P.backend[i]], status = P.statuses[P.status[i]];
      var key = backend + ' ' + status;
      var g = groups[key] || (groups[key] = { type: 'scatter', mode: 'markers', name: key, x: [], y: [], text: [],
        marker: { color: color(backend), symbol: STATUS_SYMBOLS[status] || 'circle', size: 6, opacity: 0.7 }, hoverinfo: 'text' });
      var value = vals[i] === undefined || vals[i] === null ? '(none)' : vals[i];
      var jitter = (((i * 2654435761) % 1000) / 1000 - 0.5) * 0.5;
      var y = shapeIndex >= 0 ? P.us[i] : P.rel[i];
      g.x.push(distinct.indexOf(value) + jitter);
      g.y.push(y === null ? failY : y);
      var params = P.params.map(function (p) { var pv = P.values[p][i]; return pv === null ? '' : p + '=' + pv; }).join(' ');
      g.text.push(P.shape_names[P.shape[i]] + ' ' + key + '<br>' + params + '<br>' +
                  (P.us[i] === null ? 'no time (failed)' : num(P.us[i]) + ' \u00b5s, ' + num(P.rel[i], 3) + 'x the winner'));
    }
    var traces = Object.keys(groups).sort().map(function (k) { return groups[k]; });
    var layout = { showlegend: true, title: { text: 'every schedule: ' + (shapeIndex >= 0 ? '\u00b5s at ' + P.shape_names[shapeIndex] : 'time / the size\'s winner') +
                                  ' against ' + param + (P.shown < P.of ? ' (' + P.shown + ' of ' + P.of + ' records)' : '') },
                   xaxis: { title: { text: param }, tickvals: distinct.map(function (d, k) { return k; }),
                            ticktext: distinct.map(String), range: [-0.6, distinct.length - 0.4] },
                   yaxis: { type: 'log', title: { text: shapeIndex >= 0 ? '\u00b5s (failed: top band)' : 'time / winner (failed: top band)' } } };
    return { traces: traces, layout: layout };
  }
  function pointsPlot(op, div, controls) {
    var P = op.points;
    var paramSel = el('select'), shapeSel = el('select');
    P.params.forEach(function (p) { paramSel.appendChild(el('option', { value: p, text: p })); });
    shapeSel.appendChild(el('option', { value: '-1', text: 'all sizes' }));
    P.shape_names.forEach(function (s, k) { shapeSel.appendChild(el('option', { value: String(k), text: s })); });
    controls.appendChild(el('label', { text: 'parameter' }));
    controls.appendChild(paramSel);
    controls.appendChild(el('label', { text: 'size' }));
    controls.appendChild(shapeSel);
    var param = P.params.length ? P.params[0] : '(none)';
    var first = pointTraces(op, param, -1);
    plot(div, first.traces, first.layout);
    function redraw() {
      var t = pointTraces(op, paramSel.value, Number(shapeSel.value));
      Plotly.react(div, t.traces, Object.assign({ margin: { l: 60, r: 16, t: 34, b: 48 }, font: { size: 11 }, hovermode: 'closest' }, t.layout));
    }
    paramSel.addEventListener('change', redraw);
    shapeSel.addEventListener('change', redraw);
  }
  function opSection(op) {
    var s = el('div', { class: 'op', id: opAnchor(op) });
    s.appendChild(el('h3', { text: op.op + ' \u00b7 ' + op.dtype + ' \u00b7 ' + op.arch + (op.gpus.length ? ' \u00b7 ' + op.gpus.join(', ') : '') +
                             ' \u00b7 ' + op.records + ' records' }));
    s.appendChild(el('p', { class: 'mono sub', text: op.pipeline_text }));
    s.appendChild(shapeTable(op));
    var controls = el('div', { class: 'controls' });
    s.appendChild(controls);
    var plots = el('div', { class: 'plots' });
    var bw = el('div', { class: 'plot' }), pts = el('div', { class: 'plot' });
    plots.appendChild(bw);
    plots.appendChild(pts);
    s.appendChild(plots);
    app.appendChild(s);
    bandwidthPlot(op, bw);
    pointsPlot(op, pts, controls);
  }
  function ops() {
    app.appendChild(el('h2', { text: 'Ops: winners and the search', id: 'ops' }));
    app.appendChild(el('p', { class: 'note', text: 'Per op, dtype and arch: each shape\'s fastest schedule per backend ' +
      '(a schedule timed more than once by its median record; measured records beat modeled ones), the winner with ' +
      'its p20\u2013p80 spread, the runner-up and how much slower it is. ' + data.copy.note }));
    data.ops.forEach(opSection);
  }

  // -- failures, peers, package ---------------------------------------------
  function failures() {
    var f = data.failures;
    app.appendChild(el('h2', { text: 'Failures', id: 'failures' }));
    if (!f.by_status.length) { app.appendChild(el('p', { text: 'No record failed.' })); return; }
    app.appendChild(table(['status', 'records'], f.by_status.map(function (s) { return [s.status, { text: String(s.count), cls: 'num' }]; })));
    f.by_status.forEach(function (s) {
      app.appendChild(el('h3', { text: s.status + ': the first ' + s.first.length + ' of ' + s.count }));
      app.appendChild(table(['record id', 'op', 'dtype', 'shape', 'arch', 'backend', 'params', 'message'], s.first.map(function (r) {
        var link = el('a', { href: '#' + opAnchor(r), text: r.op });
        return [{ text: r.id, cls: 'mono' }, link, r.dtype, r.shape, r.arch, r.backend, { text: r.params, cls: 'mono' }, { text: r.message, cls: 'mono' }];
      })));
    });
    app.appendChild(el('p', { class: 'sub', text: 'A record in full: fusekit db export --db FILE out.jsonl, then look for its id.' }));
    var statuses = f.by_status.map(function (s) { return s.status; });
    app.appendChild(el('h3', { text: 'Failed records per op' }));
    app.appendChild(table(['op', 'dtype', 'arch'].concat(statuses), f.by_op.map(function (o) {
      return [el('a', { href: '#' + opAnchor(o), text: o.op }), o.dtype, o.arch].concat(statuses.map(function (s) { return { text: String(o.counts[s] || 0), cls: 'num' }; }));
    })));
  }
  function peers() {
    app.appendChild(el('h2', { text: 'Against peers', id: 'peers' }));
    app.appendChild(el('p', { class: 'note', text: data.peers.note }));
  }
  function pkg() {
    var p = data.package;
    if (!p) return;
    app.appendChild(el('h2', { text: 'Package: what each bucket dispatches to', id: 'package' }));
    app.appendChild(el('p', { text: p.dir + ': ' + p.variants.length + ' variants for ' + p.archs.join(' ') + ' (and portable PTX).' }));
    var archs = [];
    p.variants.forEach(function (v) { if (archs.indexOf(v.arch) < 0) archs.push(v.arch); });
    var rows = {}, order = [];
    p.variants.forEach(function (v) {
      var key = v.op + '\u0000' + v.dtype + '\u0000' + v.bucket;
      if (!rows[key]) { rows[key] = { op: v.op, dtype: v.dtype, bucket: v.bucket, at: {} }; order.push(key); }
      var cell = v.backend + ' ' + v.params + (v.row_length !== 'any' ? ' (rows of ' + v.row_length + ')' : '') +
                 ' [' + v.provenance + (v.measured_on ? ' on ' + v.measured_on : '') + ']';
      rows[key].at[v.arch] = rows[key].at[v.arch] ? rows[key].at[v.arch] + '; ' + cell : cell;
    });
    app.appendChild(table(['op', 'dtype', 'bucket'].concat(archs), order.map(function (k) {
      var r = rows[k];
      return [r.op, r.dtype, r.bucket].concat(archs.map(function (a) { return { text: r.at[a] || '', cls: 'mono' }; }));
    })));
    if (p.notes.length) app.appendChild(el('details', {}, el('summary', { text: p.notes.length + ' build notes' }),
                                              el('p', { class: 'mono', text: p.notes.join('\n') })));
    app.appendChild(el('h3', { text: 'Fallback ladder for sample calls' }));
    app.appendChild(el('p', { class: 'sub', text: 'The runtime\'s own selection (the steps fusekit_explain reports) for calls at the top ' +
      'of a few buckets, one past the largest, and one with pointers aligned to the element only, on each packaged arch and one it was not built for.' }));
    app.appendChild(table(['op', 'dtype', 'device', 'elements', 'row length', 'pointer alignment', 'arch step', 'shape step', 'variant taken'],
      p.ladder.map(function (c) {
        return [c.op, c.dtype, c.device, { text: String(c.elements), cls: 'num' }, c.row_length < 0 ? '' : String(c.row_length),
                { text: String(c.alignment), cls: 'num' }, c.arch_step || '', c.shape_step || '',
                c.variant ? { text: c.variant.arch + ' ' + c.variant.bucket + ': ' + c.variant.backend + ' ' + c.variant.params, cls: 'mono' }
                          : { text: c.status, cls: 'bad' }];
      })));
  }

  header();
  overview();
  plan();
  ops();
  failures();
  peers();
  pkg();
  Promise.all(pending).then(function () {
    document.body.setAttribute('data-rendered', String(pending.length));
    app.insertBefore(el('p', { id: 'fk-rendered', class: 'sub', text: pending.length + ' plots drawn' }), app.children[2] || null);
  }, function (e) { fkFail('plot failed: ' + (e && e.message || e)); });
})();
