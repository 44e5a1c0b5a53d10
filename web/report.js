// Draws the charts of the gpuvs HTML report. The page's tables are plain HTML written
// by gpuvs (src/report/html.cpp); this script reads the chart specifications from the
// JSON island #gpuvs-data and draws one chart per <canvas data-chart="N"> with the
// inlined Chart.js. Text from files reaches the page only through textContent and the
// canvas, never through innerHTML.
//
// It records what happened on <body>, for people and for the browser test:
//   data-charts-expected  number of chart containers (written by gpuvs)
//   data-charts-rendered  charts drawn
//   data-report-errors    errors seen (window errors, charts that failed)
//   data-report-ready     "1" once every chart has been tried
(function () {
  'use strict';

  const body = document.body;
  const errors = [];
  window.gpuvsErrors = errors;

  function recordError(message) {
    errors.push(String(message));
    body.dataset.reportErrors = String(errors.length);
    const box = document.getElementById('report-errors');
    if (box) {
      const p = document.createElement('p');
      p.textContent = 'Error while drawing this report: ' + message;
      box.appendChild(p);
      box.hidden = false;
    }
  }
  window.addEventListener('error', (e) => recordError(e.message || 'unknown error'));
  window.addEventListener('unhandledrejection', (e) => recordError(String(e.reason)));

  // ---- number formatting: the same rules as format_si in src/core/units.cpp ----

  const PREFIXES = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''],
    [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];
  // Units that take SI prefixes; counts of things (img/s, seq/s) read best as plain
  // numbers, and arithmetic rates stop at tera, as datasheets write them (1979 TFLOP/s).
  const SI_UNITS = new Set(['B', 'B/s', 'FLOP/s', 'OP/s', 'Hz', 'W', 's']);
  const TERA_CAP = new Set(['FLOP/s', 'OP/s']);

  // `digits` significant digits, never scientific notation (4.31, 43.1, 431); an
  // integer part is never rounded away: 3958, not 3960.
  function withDigits(x, digits) {
    if (x === 0) return '0';
    if (Math.abs(x) >= Math.pow(10, digits - 1)) return x.toFixed(0);
    const r = Number(x.toPrecision(digits));
    const mag = Math.floor(Math.log10(Math.abs(r)));
    return r.toFixed(Math.max(0, digits - 1 - mag));
  }

  // As withDigits, without trailing zeros: 0.25, 1, 4096 (not 4100), 1755.
  function plainNumber(x) {
    if (!Number.isFinite(x)) return String(x);
    if (Math.abs(x) >= 100) return x.toFixed(0);
    return String(Number(x.toPrecision(3)));
  }

  // A count (unit "1" or none) that is an integer is written exactly: 16896 CUDA cores.
  function formatSI(value, unit, digits) {
    digits = digits || 3;
    if (!Number.isFinite(value)) return String(value) + (unit && unit !== '1' ? ' ' + unit : '');
    if (!unit || unit === '1') return Number.isInteger(value) ? String(value) : withDigits(value, digits);
    if (unit === '%') return withDigits(value, digits) + ' %';
    if (!SI_UNITS.has(unit)) return withDigits(value, digits) + ' ' + unit;
    const mag = Math.abs(value);
    let prefix = [1, ''];
    if (mag !== 0) {
      prefix = PREFIXES.find((p) => !(TERA_CAP.has(unit) && p[0] > 1e12) && mag >= p[0] * 0.9995) ||
        [1, ''];
    }
    if (prefix[0] < 1 && unit !== 's') prefix = [1, ''];
    return withDigits(value / prefix[0], digits) + ' ' + prefix[1] + unit;
  }

  // Axis ticks: formatSI less trailing zeros ("1.5 TB/s", "2 TB/s"); integers stay exact.
  function formatTick(value, unit) {
    return formatSI(value, unit).replace(/^(-?\d+)\.(\d*?)0+(?!\d)/, (m, int, frac) =>
      frac ? int + '.' + frac : int);
  }

  // Buffer sizes read in binary units, as they are allocated: "4 KiB", "1.5 GiB".
  function formatBytes(bytes) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = bytes;
    let u = 0;
    while (Math.abs(v) >= 1024 && u + 1 < units.length) {
      v /= 1024;
      u += 1;
    }
    return plainNumber(v) + ' ' + units[u];
  }

  // ---- chart building blocks ----

  const SOURCE_COLORS = {
    measured: '#1f6fb2',
    datasheet: '#8a8f98',
    published: '#d9822b',
    derived: '#3a9a5b',
  };
  const PALETTE = ['#1f6fb2', '#d9822b', '#3a9a5b', '#b23a48', '#7b5ea7', '#8c6d31',
    '#2a9d8f', '#e76f51', '#6c757d', '#264653'];

  // Log axes get their own ticks: powers of two for buffer sizes (at most about ten),
  // else 1, 2 and 5 times a power of ten (every integer mantissa on a narrow range).
  function logTicks(binary) {
    return function (scale) {
      const lo = scale.min;
      const hi = scale.max;
      if (!(lo > 0) || !(hi > lo)) return;
      let values = [];
      if (binary) {
        const a = Math.ceil(Math.log2(lo));
        const b = Math.floor(Math.log2(hi));
        const step = Math.max(1, Math.ceil((b - a + 1) / 10));
        for (let e = a; e <= b; e += step) values.push(Math.pow(2, e));
      } else {
        const decades = [];
        for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) decades.push(e);
        const pick = (mantissas) => decades.flatMap((e) => mantissas.map((m) => m * Math.pow(10, e)))
          .filter((v) => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9));
        values = pick(decades.length > 4 ? [1] : [1, 2, 5]);
        if (values.length < 3) values = pick([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      }
      if (values.length) scale.ticks = values.map((v) => ({ value: v }));
    };
  }

  // `format` turns a tick value into its label.
  function axis(format, log, title, binary) {
    const a = {
      type: log ? 'logarithmic' : 'linear',
      title: { display: Boolean(title), text: title },
      ticks: { callback: (v) => format(v), maxRotation: 0, autoSkip: true },
    };
    if (log) a.afterBuildTicks = logTicks(binary);
    else a.beginAtZero = true;
    return a;
  }

  // Writes each bar's value above it.
  function valueLabels(unit) {
    return {
      id: 'gpuvsValueLabels',
      afterDatasetsDraw(chart) {
        const ctx = chart.ctx;
        ctx.save();
        ctx.fillStyle = '#222';
        ctx.font = '11px system-ui, sans-serif';
        ctx.textAlign = 'center';
        ctx.textBaseline = 'bottom';
        chart.data.datasets.forEach((ds, i) => {
          const meta = chart.getDatasetMeta(i);
          if (meta.hidden) return;
          meta.data.forEach((bar, j) => {
            const v = ds.data[j];
            if (v === null || v === undefined) return;
            ctx.fillText(formatSI(v, unit), bar.x, bar.y - 2);
          });
        });
        ctx.restore();
      },
    };
  }

  // A dashed horizontal line at `value` (100 % of the datasheet).
  function referenceLine(value) {
    return {
      id: 'gpuvsReference',
      afterDatasetsDraw(chart) {
        const y = chart.scales.y.getPixelForValue(value);
        const area = chart.chartArea;
        const ctx = chart.ctx;
        ctx.save();
        ctx.strokeStyle = '#b23a48';
        ctx.setLineDash([6, 4]);
        ctx.beginPath();
        ctx.moveTo(area.left, y);
        ctx.lineTo(area.right, y);
        ctx.stroke();
        ctx.restore();
      },
    };
  }

  // One bar per column (GPU); one dataset per source kind so that the legend names the
  // kinds and each bar has its kind's colour. Missing and invalid figures have no bar,
  // only their label.
  function barChart(canvas, spec) {
    const kinds = Object.keys(SOURCE_COLORS).filter((k) =>
      spec.bars.some((b) => b.value !== null && b.source === k));
    const datasets = kinds.map((k) => ({
      label: k,
      data: spec.bars.map((b) => (b.value !== null && b.source === k ? b.value : null)),
      backgroundColor: SOURCE_COLORS[k],
      skipNull: true,
      maxBarThickness: 64,
    }));
    const plugins = [valueLabels(spec.unit)];
    const y = axis((v) => formatTick(v, spec.unit), false, '');
    if (spec.reference !== undefined) {
      plugins.push(referenceLine(spec.reference));
      y.suggestedMax = spec.reference * 1.1;
    }
    y.grace = '10%';
    return new Chart(canvas, {
      type: 'bar',
      data: { labels: spec.bars.map((b) => [b.label, b.sublabel]), datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          legend: { position: 'bottom' },
          tooltip: {
            callbacks: { label: (c) => c.dataset.label + ': ' + formatSI(c.parsed.y, spec.unit) },
          },
        },
        scales: { x: { grid: { display: false } }, y: y },
      },
      plugins: plugins,
    });
  }

  const AXIS_TITLES = {
    B: 'buffer size',
    'FLOP/B': 'arithmetic intensity (FLOP/B)',
    'B/s': 'bandwidth',
    's': 'latency',
    'FLOP/s': 'attained',
  };

  // Series against a (log) x axis: size sweeps and the roofline. A roof is dashed and
  // takes the colour of the measured series it belongs to.
  function lineChart(canvas, spec) {
    // Buffer sizes in binary units; intensities as plain numbers (the axis title has the unit).
    const formatX = spec.x_unit === 'B' ? formatBytes
      : spec.x_unit === 'FLOP/B' ? plainNumber : (v) => formatTick(v, spec.x_unit);
    const colors = {};
    let next = 0;
    spec.series.forEach((s) => {
      if (s.role !== 'roof') colors[s.label] = PALETTE[next++ % PALETTE.length];
    });
    const datasets = spec.series.map((s) => {
      const roof = s.role === 'roof';
      const color = (roof ? colors[s.label.replace(/^roof: /, '')] : colors[s.label]) || '#6c757d';
      return {
        label: s.label,
        data: s.points.map((p) => ({ x: p[0], y: p[1] })),
        showLine: true,
        borderColor: color,
        backgroundColor: color,
        borderDash: roof ? [6, 4] : [],
        borderWidth: roof ? 1.5 : 2,
        pointRadius: roof ? 0 : 3,
      };
    });
    return new Chart(canvas, {
      type: 'scatter',
      data: { datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          // Roofs are explained in the section's text; the legend names the measurements.
          legend: { position: 'bottom', labels: { filter: (item) => !item.text.startsWith('roof: ') } },
          tooltip: {
            callbacks: {
              label: (c) => c.dataset.label + ': ' + formatX(c.parsed.x) +
                (spec.x_unit === 'FLOP/B' ? ' FLOP/B' : '') + ', ' + formatSI(c.parsed.y, spec.y_unit),
            },
          },
        },
        scales: {
          x: axis(formatX, spec.x_log, AXIS_TITLES[spec.x_unit] || spec.x_unit, spec.x_unit === 'B'),
          y: axis((v) => formatTick(v, spec.y_unit), spec.y_log,
            AXIS_TITLES[spec.y_unit] || spec.y_unit, false),
        },
      },
    });
  }

  // The benchmark steps of a utilization timeline: shaded bands, alternately tinted,
  // each labelled at the top where its band is wide enough for the text.
  function stepWindows(windows) {
    return {
      id: 'gpuvsStepWindows',
      beforeDatasetsDraw(chart) {
        const x = chart.scales.x;
        const area = chart.chartArea;
        const ctx = chart.ctx;
        ctx.save();
        ctx.font = '10px system-ui, sans-serif';
        ctx.textBaseline = 'top';
        windows.forEach((w, i) => {
          const left = Math.max(area.left, x.getPixelForValue(w.t_begin));
          const right = Math.min(area.right, x.getPixelForValue(w.t_end));
          if (!(right >= left)) return;
          ctx.fillStyle = i % 2 ? 'rgba(31, 111, 178, 0.07)' : 'rgba(217, 130, 43, 0.09)';
          ctx.fillRect(left, area.top, Math.max(1, right - left), area.bottom - area.top);
          const text = w.label;
          if (ctx.measureText(text).width + 4 <= right - left) {
            ctx.fillStyle = '#5c6475';
            ctx.fillText(text, left + 2, area.top + 2);
          }
        });
        ctx.restore();
      },
    };
  }

  const TIMELINE_COLORS = {
    'SM active': '#1f6fb2',
    'tensor active': '#d9822b',
    'DRAM bandwidth': '#3a9a5b',
    'GPU util (NVML)': '#8a8f98',
    power: '#b23a48',
    'SM clock': '#7b5ea7',
  };

  // A GPU's utilization over the run: percentages on the left axis, power (W) on the
  // right, the SM clock (MHz) hidden until its legend entry is clicked; x in seconds.
  function timelineChart(canvas, spec) {
    const datasets = spec.series.map((s, i) => {
      const color = TIMELINE_COLORS[s.label] || PALETTE[i % PALETTE.length];
      return {
        label: s.label + ' (' + s.unit + ')',
        data: s.points.map((p) => ({ x: p[0], y: p[1] })),
        yAxisID: s.axis,
        showLine: true,
        spanGaps: false,
        borderColor: color,
        backgroundColor: color,
        borderWidth: 1.5,
        pointRadius: 0,
        hidden: s.axis === 'y3',
      };
    });
    const units = {};
    spec.series.forEach((s) => { units[s.label + ' (' + s.unit + ')'] = s.unit; });
    const pctAxis = axis((v) => plainNumber(v) + ' %', false, 'utilization (%)');
    pctAxis.suggestedMax = 100;
    const watts = axis((v) => formatTick(v, 'W'), false, 'power (W)');
    watts.position = 'right';
    watts.grid = { drawOnChartArea: false };
    watts.display = 'auto';
    const mhz = axis((v) => plainNumber(v) + ' MHz', false, 'SM clock (MHz)');
    mhz.position = 'right';
    mhz.grid = { drawOnChartArea: false };
    mhz.display = 'auto';
    const x = axis((v) => plainNumber(v) + ' s', false, 'time since sampling began (s)');
    return new Chart(canvas, {
      type: 'scatter',
      data: { datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          legend: { position: 'bottom' },
          tooltip: {
            callbacks: {
              label: (c) => c.dataset.label + ': ' + plainNumber(c.parsed.x) + ' s, ' +
                (units[c.dataset.label] === 'MHz' ? plainNumber(c.parsed.y) + ' MHz'
                  : formatSI(c.parsed.y, units[c.dataset.label])),
            },
          },
        },
        scales: { x: x, y: pctAxis, y2: watts, y3: mhz },
      },
      plugins: [stepWindows(spec.windows || [])],
    });
  }

  function draw(canvas, spec) {
    if (!spec) throw new Error('no specification for chart ' + canvas.dataset.chart);
    if (spec.kind === 'bar') return barChart(canvas, spec);
    if (spec.kind === 'line') return lineChart(canvas, spec);
    if (spec.kind === 'timeline') return timelineChart(canvas, spec);
    throw new Error('unknown chart kind ' + spec.kind);
  }

  // ---- main ----

  let rendered = 0;
  try {
    const data = JSON.parse(document.getElementById('gpuvs-data').textContent);
    const canvases = Array.from(document.querySelectorAll('canvas[data-chart]'));
    if (canvases.length && typeof window.Chart !== 'function') {
      recordError('the chart library did not load');
    } else if (canvases.length) {
      Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
      Chart.defaults.color = '#333';
      for (const canvas of canvases) {
        try {
          draw(canvas, data.charts[Number(canvas.dataset.chart)]);
          rendered += 1;
          body.dataset.chartsRendered = String(rendered);
        } catch (e) {
          recordError('chart ' + canvas.dataset.chart + ': ' + e.message);
          const p = document.createElement('p');
          p.className = 'chart-failed';
          p.textContent = 'This chart could not be drawn: ' + e.message;
          canvas.parentElement.replaceWith(p);
        }
      }
    }
  } catch (e) {
    recordError(e.message);
  }
  body.dataset.chartsRendered = String(rendered);
  body.dataset.reportReady = '1';
})();
