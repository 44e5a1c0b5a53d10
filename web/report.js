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

  // ---- colours and fills ----

  // Column i of the comparison (a GPU) has colour i in every chart of the page; the
  // lines of sweeps and the roofline take them in order too.
  const PALETTE = ['#1f6fb2', '#d9822b', '#3a9a5b', '#b23a48', '#7b5ea7', '#8c6d31',
    '#2a9d8f', '#e76f51', '#6c757d', '#264653'];

  function hslRgb(h, s, l) {
    const a = s * Math.min(l, 1 - l);
    const f = (n) => {
      const k = (n + h / 30) % 12;
      return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
    };
    return [f(0), f(8), f(4)];
  }

  // Beyond the palette: hues a golden angle apart.
  function colorRgb(i) {
    if (i < PALETTE.length) return [1, 3, 5].map((k) => parseInt(PALETTE[i].slice(k, k + 2), 16));
    return hslRgb((i * 137.508) % 360, 0.55, 0.42);
  }

  function css(rgb, alpha) {
    return alpha === undefined ? 'rgb(' + rgb.join(', ') + ')' : 'rgba(' + rgb.join(', ') + ', ' + alpha + ')';
  }

  // How a bar shows where its figure comes from, in its column's colour.
  const SOURCE_STYLES = [
    ['measured', 'solid'],
    ['datasheet', 'hatched'],
    ['published', 'outline'],
    ['derived', 'dotted'],
  ];

  function barStyle(rgb, source) {
    if (source === 'published') return { fill: css(rgb, 0.06), border: css(rgb), width: 2 };
    if (source !== 'datasheet' && source !== 'derived') return { fill: css(rgb), border: css(rgb), width: 0 };
    const tile = document.createElement('canvas');
    tile.width = 8;
    tile.height = 8;
    const t = tile.getContext('2d');
    t.fillStyle = css(rgb, 0.2);
    t.fillRect(0, 0, 8, 8);
    t.fillStyle = css(rgb);
    t.strokeStyle = css(rgb);
    if (source === 'datasheet') {  // diagonal stripes that join across tiles
      t.lineWidth = 2;
      t.beginPath();
      for (const [x0, y0] of [[-4, 4], [0, 8], [4, 12]]) {
        t.moveTo(x0, y0);
        t.lineTo(x0 + 8, y0 - 8);
      }
      t.stroke();
    } else {
      t.beginPath();
      t.arc(4, 4, 1.7, 0, 2 * Math.PI);
      t.fill();
    }
    return { fill: t.createPattern(tile, 'repeat'), border: css(rgb), width: 1 };
  }

  // The key to the bar fills, above a group of bar charts.
  function sourceKey(kinds) {
    const key = document.createElement('p');
    key.className = 'chart-key';
    const lead = document.createElement('span');
    lead.textContent = 'Colours name the GPUs (legends); the fill says where a figure comes from:';
    key.appendChild(lead);
    for (const [kind, look] of SOURCE_STYLES) {
      if (!kinds.has(kind)) continue;
      const item = document.createElement('span');
      item.className = 'key-item';
      const swatch = document.createElement('canvas');
      swatch.className = 'key-swatch';
      swatch.width = 28;
      swatch.height = 14;
      swatch.setAttribute('aria-hidden', 'true');
      const s = barStyle([92, 100, 117], kind);
      const ctx = swatch.getContext('2d');
      ctx.fillStyle = s.fill;
      ctx.fillRect(0, 0, 28, 14);
      if (s.width) {
        ctx.strokeStyle = s.border;
        ctx.lineWidth = s.width;
        ctx.strokeRect(s.width / 2, s.width / 2, 28 - s.width, 14 - s.width);
      }
      item.appendChild(swatch);
      const text = document.createElement('span');
      text.textContent = kind + ' (' + look + ')';
      item.appendChild(text);
      key.appendChild(item);
    }
    return key;
  }

  // ---- chart building blocks ----

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
    if (log) {
      a.afterBuildTicks = logTicks(binary);
    } else {
      a.beginAtZero = true;
      a.afterBuildTicks = spaceTicks(format);
    }
    return a;
  }

  const measurer = document.createElement('canvas').getContext('2d');

  function tickFont() {
    return (Chart.defaults.font.size || 12) + 'px ' + Chart.defaults.font.family;
  }

  // Keeps every k-th tick of a horizontal linear axis so that labels keep 12 px apart
  // (Chart.js's own skipping lets wide labels touch).
  function spaceTicks(format) {
    return function (scale) {
      const ticks = scale.ticks;
      const span = scale.max - scale.min;
      if (!scale.isHorizontal() || ticks.length < 3 || !(span > 0) || !(scale.width > 0)) return;
      measurer.font = tickFont();
      const widest = Math.max(...ticks.map((t) => measurer.measureText(format(t.value)).width));
      const step = ((ticks[1].value - ticks[0].value) / span) * scale.width;
      const k = Math.ceil((widest + 12) / step);
      if (k > 1) scale.ticks = ticks.filter((t, i) => i % k === 0);
    };
  }

  // `text` in lines no wider than `maxWidth` in `font`, broken at spaces (a word longer
  // than a line is cut).
  function wrapText(text, maxWidth, font) {
    measurer.font = font;
    const fits = (s) => measurer.measureText(s).width <= maxWidth;
    const lines = [];
    let line = '';
    for (const word of String(text).split(/\s+/).filter(Boolean)) {
      const joined = line ? line + ' ' + word : word;
      if (fits(joined)) {
        line = joined;
        continue;
      }
      if (line) lines.push(line);
      line = word;
      while (line.length > 1 && !fits(line)) {
        let n = line.length - 1;
        while (n > 1 && !fits(line.slice(0, n))) n -= 1;
        lines.push(line.slice(0, n));
        line = line.slice(n);
      }
    }
    if (line || !lines.length) lines.push(line);
    return lines;
  }

  const VALUE_FONT = 11;

  // Writes each bar's value at its end, right of the bar where there is room in the
  // chart area, else inside its end on a white backing: never outside the area.
  function valueLabels(unit) {
    return {
      id: 'gpuvsValueLabels',
      afterDatasetsDraw(chart) {
        const ctx = chart.ctx;
        const area = chart.chartArea;
        ctx.save();
        ctx.font = VALUE_FONT + 'px ' + Chart.defaults.font.family;
        ctx.textBaseline = 'middle';
        ctx.textAlign = 'left';
        chart.data.datasets.forEach((ds, i) => {
          if (!chart.isDatasetVisible(i)) return;
          chart.getDatasetMeta(i).data.forEach((bar, j) => {
            const v = ds.data[j];
            if (v === null || v === undefined || !bar) return;
            const text = formatSI(v, unit);
            const w = ctx.measureText(text).width;
            const end = Math.max(bar.x, bar.base);
            let x = end + 4;
            if (x + w > area.right) x = Math.max(area.left + 2, Math.min(end, area.right) - 4 - w);
            // The backing keeps grid and reference lines, and a bar's fill, off the text.
            ctx.fillStyle = 'rgba(255, 255, 255, 0.85)';
            ctx.fillRect(x - 2, bar.y - VALUE_FONT / 2 - 1, w + 4, VALUE_FONT + 2);
            ctx.fillStyle = '#222';
            ctx.fillText(text, x, bar.y);
          });
        });
        ctx.restore();
      },
    };
  }

  // A dashed line behind the bars at `value` (100 % of the datasheet).
  function referenceLine(value) {
    return {
      id: 'gpuvsReference',
      beforeDatasetsDraw(chart) {
        const x = chart.scales.x.getPixelForValue(value);
        const area = chart.chartArea;
        const ctx = chart.ctx;
        ctx.save();
        ctx.strokeStyle = '#b23a48';
        ctx.setLineDash([6, 4]);
        ctx.beginPath();
        ctx.moveTo(x, area.top);
        ctx.lineTo(x, area.bottom);
        ctx.stroke();
        ctx.restore();
      },
    };
  }

  const BAR_SLOT = 24;  // px of the category axis per bar
  const MIN_BAR_HEIGHT = 120;

  // The column a bar belongs to: its index into the island's `columns` (a bar without
  // one, from an older gpuvs, by its label).
  function columnFinder(columns) {
    const extra = new Map();
    return function (bar) {
      if (Number.isInteger(bar.column)) return bar.column;
      const i = columns.findIndex((c) => c.label === bar.label);
      if (i >= 0) return i;
      if (!extra.has(bar.label)) extra.set(bar.label, columns.length + extra.size);
      return extra.get(bar.label);
    };
  }

  // Horizontal bars, one dataset (colour, legend entry) per column that has a bar.
  // A metric's chart has one category per column, labelled with the column and where
  // its figure comes from (missing and invalid figures have no bar, only that label).
  // When a column has several bars (the share of the datasheet), the categories are
  // the bars' sublabels (metrics), grouped, one bar per column. The fill shows the
  // source (sourceKey). The box grows with the categories, so labels never crowd.
  function barChart(canvas, spec, columns) {
    const box = canvas.parentElement;
    const columnOf = columnFinder(columns);
    const names = new Map();  // column -> its label
    const counts = new Map();  // column -> its bars
    spec.bars.forEach((b) => {
      const c = columnOf(b);
      if (!names.has(c)) names.set(c, (columns[c] && columns[c].label) || b.label || 'column ' + (c + 1));
      counts.set(c, (counts.get(c) || 0) + 1);
    });
    const colLabel = (c) => names.get(c);
    const byMetric = spec.reference !== undefined || Array.from(counts.values()).some((n) => n > 1);

    const cats = [];  // {text: [what the label says], bars}
    const catOf = new Map();
    for (const b of spec.bars) {
      const key = byMetric ? 'm:' + b.sublabel : 'b:' + cats.length;
      if (!catOf.has(key)) {
        catOf.set(key, cats.length);
        cats.push({ text: byMetric ? [b.sublabel] : [colLabel(columnOf(b)), b.sublabel], bars: [] });
      }
      cats[catOf.get(key)].bars.push(b);
    }
    const shown = Array.from(new Set(spec.bars.filter((b) => b.value !== null).map(columnOf)))
      .sort((a, b) => a - b);
    const datasets = shown.map((c) => {
      const rgb = colorRgb(c);
      const bars = cats.map((cat) => cat.bars.find((b) => columnOf(b) === c && b.value !== null));
      const styles = bars.map((b) => barStyle(rgb, b ? b.source : 'measured'));
      return {
        label: colLabel(c),
        data: bars.map((b) => (b ? b.value : null)),
        gpuvsColor: css(rgb),
        gpuvsSources: bars.map((b) => (b ? b.source : '')),
        backgroundColor: styles.map((s) => s.fill),
        borderColor: styles.map((s) => s.border),
        borderWidth: styles.map((s) => s.width),
        grouped: byMetric,
        skipNull: true,
        maxBarThickness: 28,
      };
    });
    const barsIn = (cat) => Math.max(1, byMetric ? cat.bars.filter((b) => b.value !== null).length : 1);

    // Category labels wrapped to the box's width (Chart.js gives a vertical axis at
    // most half of it), and the height of the chart area that gives every category
    // room for its label and its bars.
    let width = -1;
    let areaHeight = 0;
    function wrapLabels() {
      width = box.clientWidth;
      const font = tickFont();
      const max = Math.max(80, Math.floor(width * 0.4));
      const lineHeight = (Chart.defaults.font.size || 12) * 1.2;
      const labels = cats.map((cat) => (byMetric ? wrapText(cat.text[0], max, font)
        : wrapText(cat.text[0], max, font).concat([cat.text[1]])));
      const perCat = Math.max(...cats.map((cat, i) =>
        Math.max(labels[i].length * lineHeight + 8, barsIn(cat) * BAR_SLOT + 6)));
      areaHeight = Math.ceil(perCat * cats.length);
      return labels;
    }

    const plugins = [valueLabels(spec.unit)];
    const x = axis((v) => formatTick(v, spec.unit), false, '');
    x.grace = '8%';
    if (spec.reference !== undefined) {
      plugins.push(referenceLine(spec.reference));
      x.suggestedMax = spec.reference * 1.1;
    }
    const suggestedMax = x.suggestedMax;
    const labels = wrapLabels();
    box.style.height = Math.max(MIN_BAR_HEIGHT, areaHeight + 90) + 'px';
    let pending = false;
    const chart = new Chart(canvas, {
      type: 'bar',
      data: { labels: labels, datasets: datasets },
      options: {
        indexAxis: 'y',
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        // A new width (the window's) wraps the labels anew; a new height is ours.
        onResize: () => {
          if (box.clientWidth === width || pending) return;
          pending = true;
          setTimeout(() => {
            pending = false;
            chart.data.labels = wrapLabels();
            chart.options.scales.x.suggestedMax = suggestedMax;
            chart.update();
            fit(chart);
          }, 0);
        },
        plugins: {
          legend: {
            position: 'bottom',
            labels: {
              boxWidth: 14,
              generateLabels: (ch) => ch.data.datasets.map((ds, i) => ({
                text: ds.label,
                fillStyle: ds.gpuvsColor,
                strokeStyle: ds.gpuvsColor,
                lineWidth: 0,
                fontColor: Chart.defaults.color,
                hidden: !ch.isDatasetVisible(i),
                datasetIndex: i,
              })),
            },
          },
          tooltip: {
            callbacks: {
              title: (items) => (items.length ? cats[items[0].dataIndex].text.join(', ') : ''),
              label: (c) => c.dataset.label + ': ' + formatSI(c.parsed.x, spec.unit) + ' (' +
                c.dataset.gpuvsSources[c.dataIndex] + ')',
            },
          },
        },
        scales: {
          x: x,
          y: { type: 'category', grid: { display: false }, ticks: { autoSkip: false, maxRotation: 0 } },
        },
      },
      plugins: plugins,
    });

    // Once the axes and legend are laid out: size the box so that the chart area is
    // areaHeight tall, and widen the value axis so that each value fits beside its bar.
    function fit(ch) {
      for (let i = 0; i < 3; i++) {
        const overhead = ch.height - (ch.chartArea.bottom - ch.chartArea.top);
        const want = Math.max(MIN_BAR_HEIGHT, Math.ceil(areaHeight + overhead));
        const max = roomForValues(ch, spec.unit);
        if (Math.abs(want - ch.height) < 1 && !(max > ch.scales.x.max)) break;
        if (max > ch.scales.x.max) {
          ch.options.scales.x.suggestedMax = Math.max(max, ch.options.scales.x.suggestedMax || 0);
          ch.update();
        }
        if (Math.abs(want - ch.height) >= 1) {
          box.style.height = want + 'px';
          ch.resize();
        }
      }
    }
    fit(chart);
    return chart;
  }

  // The end of a value axis at which every bar's value label fits right of its bar
  // (0 when a label could only fit by squeezing the bars to under a third).
  function roomForValues(chart, unit) {
    const width = chart.chartArea.right - chart.chartArea.left;
    measurer.font = VALUE_FONT + 'px ' + Chart.defaults.font.family;
    let max = 0;
    chart.data.datasets.forEach((ds) => ds.data.forEach((v) => {
      if (!(v > 0)) return;
      const free = width - measurer.measureText(formatSI(v, unit)).width - 10;
      if (free > width / 3) max = Math.max(max, (v * width) / free);
    }));
    return max;
  }

  const AXIS_TITLES = {
    B: 'buffer size',
    'FLOP/B': 'arithmetic intensity (FLOP/B)',
    'B/s': 'bandwidth',
    's': 'latency',
    'FLOP/s': 'attained',
  };

  // Series against a (log) x axis: size sweeps and the roofline. Each measured series
  // has its own colour and legend entry (their labels are unique: "H200 #0", "H200 #1");
  // a roof is dashed in the colour of the series it belongs to and has no entry.
  function lineChart(canvas, spec) {
    // Buffer sizes in binary units; intensities as plain numbers (the axis title has the unit).
    const formatX = spec.x_unit === 'B' ? formatBytes
      : spec.x_unit === 'FLOP/B' ? plainNumber : (v) => formatTick(v, spec.x_unit);
    const colors = {};
    let next = 0;
    spec.series.forEach((s) => {
      if (s.role !== 'roof' && !(s.label in colors)) colors[s.label] = css(colorRgb(next++));
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

  function draw(canvas, spec, columns) {
    if (!spec) throw new Error('no specification for chart ' + canvas.dataset.chart);
    if (spec.kind === 'bar') return barChart(canvas, spec, columns);
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
      const columns = Array.isArray(data.columns) ? data.columns : [];
      const keyed = new Map();  // group of bar charts -> source kinds drawn in it
      for (const canvas of canvases) {
        try {
          const spec = data.charts[Number(canvas.dataset.chart)];
          draw(canvas, spec, columns);
          rendered += 1;
          body.dataset.chartsRendered = String(rendered);
          const group = canvas.closest('.charts');
          if (spec.kind === 'bar' && group) {
            if (!keyed.has(group)) keyed.set(group, new Set());
            spec.bars.forEach((b) => { if (b.value !== null) keyed.get(group).add(b.source); });
          }
        } catch (e) {
          recordError('chart ' + canvas.dataset.chart + ': ' + e.message);
          const p = document.createElement('p');
          p.className = 'chart-failed';
          p.textContent = 'This chart could not be drawn: ' + e.message;
          canvas.parentElement.replaceWith(p);
        }
      }
      keyed.forEach((kinds, group) => group.parentElement.insertBefore(sourceKey(kinds), group));
    }
  } catch (e) {
    recordError(e.message);
  }
  body.dataset.chartsRendered = String(rendered);
  body.dataset.reportReady = '1';
})();
