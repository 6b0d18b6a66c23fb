// Small canvas charts: no libraries, so the page works offline and stays light.
// LineChart draws named series over wall time; BarChart draws signed horizontal bars.

const PALETTE = ["#5fb3f9", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#bab0ac"];

function fitCanvas(canvas) {
  // Match the backing store to the displayed size so lines stay crisp on any pixel ratio.
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
  }
  const context = canvas.getContext("2d");
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  return { context, width: width / ratio, height: height / ratio };
}

export function formatNumber(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude >= 1e5 || magnitude < 1e-3)) return value.toExponential(2);
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 1) return value.toFixed(2);
  return value.toFixed(4);
}

function makeCard(container, title) {
  const card = document.createElement("div");
  card.className = "chart";
  const heading = document.createElement("h3");
  heading.textContent = title;
  const canvas = document.createElement("canvas");
  card.append(heading, canvas);
  container.append(card);
  return canvas;
}

export class LineChart {
  // names: exact series names, or a prefix ending in "/" to take every series under it.
  constructor(container, title, names, maxPoints) {
    this.canvas = makeCard(container, title);
    this.names = names;
    this.maxPoints = maxPoints;
    this.series = new Map(); // name -> {t: [], v: []}
    this.dirty = true;
  }

  accepts(name) {
    return this.names.some((pattern) => (pattern.endsWith("/") ? name.startsWith(pattern) : name === pattern));
  }

  clear() {
    this.series.clear();
    this.dirty = true;
  }

  append(name, times, values) {
    let entry = this.series.get(name);
    if (!entry) {
      entry = { t: [], v: [] };
      this.series.set(name, entry);
    }
    for (let i = 0; i < times.length; i += 1) {
      entry.t.push(times[i]);
      entry.v.push(values[i]);
    }
    const excess = entry.t.length - this.maxPoints;
    if (excess > 0) {
      entry.t.splice(0, excess);
      entry.v.splice(0, excess);
    }
    this.dirty = true;
  }

  bounds() {
    let tMin = Infinity, tMax = -Infinity, vMin = Infinity, vMax = -Infinity;
    for (const { t, v } of this.series.values()) {
      if (!t.length) continue;
      tMin = Math.min(tMin, t[0]);
      tMax = Math.max(tMax, t[t.length - 1]);
      for (const value of v) {
        if (value < vMin) vMin = value;
        if (value > vMax) vMax = value;
      }
    }
    if (vMin === vMax) { vMin -= 0.5; vMax += 0.5; }
    const pad = (vMax - vMin) * 0.06;
    return { tMin, tMax: Math.max(tMax, tMin + 1e-6), vMin: vMin - pad, vMax: vMax + pad };
  }

  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const { context, width, height } = fitCanvas(this.canvas);
    context.clearRect(0, 0, width, height);
    context.font = "10px 'DejaVu Sans', sans-serif";
    if (!this.series.size) {
      context.fillStyle = "#8a94a6";
      context.fillText("no data yet", 8, height / 2);
      return;
    }
    const entries = [...this.series].map(([name, points], i) => ({
      colour: PALETTE[i % PALETTE.length],
      label: `${this.label(name)} ${formatNumber(points.v[points.v.length - 1])}`,
      points,
    }));
    const legendRows = this.drawLegend(context, entries, width);
    const left = 52, right = width - 6, top = 6 + 12 * legendRows, bottom = height - 16;
    const { tMin, tMax, vMin, vMax } = this.bounds();
    const x = (t) => left + ((t - tMin) / (tMax - tMin)) * (right - left);
    const y = (v) => bottom - ((v - vMin) / (vMax - vMin)) * (bottom - top);
    this.drawAxes(context, { left, right, top, bottom, tMin, tMax, vMin, vMax, y });
    for (const { colour, points: { t, v } } of entries) {
      context.strokeStyle = colour;
      context.fillStyle = colour;
      context.lineWidth = 1.4;
      if (t.length === 1) {
        // One point has no line: a dot shows it exists.
        context.beginPath();
        context.arc(x(t[0]), y(v[0]), 2.5, 0, 2 * Math.PI);
        context.fill();
        continue;
      }
      context.beginPath();
      for (let i = 0; i < t.length; i += 1) {
        if (i === 0) context.moveTo(x(t[i]), y(v[i]));
        else context.lineTo(x(t[i]), y(v[i]));
      }
      context.stroke();
    }
  }

  label(name) {
    // Under a prefix chart ("reward/"), show the rest of the name ("env/collision").
    const prefix = this.names.find((pattern) => pattern.endsWith("/") && name.startsWith(pattern));
    return prefix ? name.slice(prefix.length) : name;
  }

  drawLegend(context, entries, width) {
    // Wraps onto as many rows as needed; returns the row count so the plot starts below it.
    let legendX = 52, row = 0;
    for (const { colour, label } of entries) {
      const labelWidth = context.measureText(label).width;
      if (legendX + labelWidth > width - 4 && legendX > 52) {
        legendX = 52;
        row += 1;
      }
      context.fillStyle = colour;
      context.fillText(label, legendX, 10 + 12 * row);
      legendX += labelWidth + 12;
    }
    return row + 1;
  }

  drawAxes(context, { left, right, top, bottom, tMin, tMax, vMin, vMax, y }) {
    context.strokeStyle = "#2f3742";
    context.fillStyle = "#8a94a6";
    context.lineWidth = 1;
    for (const value of [vMin, (vMin + vMax) / 2, vMax]) {
      context.beginPath();
      context.moveTo(left, y(value));
      context.lineTo(right, y(value));
      context.stroke();
      context.fillText(formatNumber(value), 2, y(value) + 3);
    }
    const span = tMax - tMin;
    const spanText = span < 1 ? "< 1 s" : `${formatNumber(span)} s`;
    context.fillText(spanText, right - context.measureText(spanText).width, bottom + 12);
    context.fillText(new Date(tMax * 1000).toLocaleTimeString(), left, bottom + 12);
  }
}

export class BarChart {
  // Latest value per name, one signed horizontal bar each (zero in the middle when mixed signs).
  constructor(container, title) {
    this.canvas = makeCard(container, title);
    this.values = {};
    this.dirty = true;
  }

  set(values) {
    this.values = values || {};
    this.dirty = true;
  }

  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const { context, width, height } = fitCanvas(this.canvas);
    context.clearRect(0, 0, width, height);
    context.font = "10px 'DejaVu Sans', sans-serif";
    const entries = Object.entries(this.values).filter(([, v]) => Number.isFinite(v));
    if (!entries.length) {
      context.fillStyle = "#8a94a6";
      context.fillText("no reward terms yet", 8, height / 2);
      return;
    }
    const extent = Math.max(...entries.map(([, v]) => Math.abs(v)), 1e-9);
    const hasNegative = entries.some(([, v]) => v < 0);
    const labelWidth = 120, valueWidth = 64;
    const zero = hasNegative ? labelWidth + (width - labelWidth - valueWidth) / 2 : labelWidth;
    const scale = (width - labelWidth - valueWidth) / (hasNegative ? 2 * extent : extent);
    const rowHeight = Math.min(18, (height - 4) / entries.length);
    entries.forEach(([name, value], row) => {
      const top = 2 + row * rowHeight;
      context.fillStyle = "#d8dee9";
      context.fillText(name, 2, top + rowHeight * 0.7);
      context.fillStyle = value >= 0 ? "#59a14f" : "#e15759";
      const length = value * scale;
      context.fillRect(Math.min(zero, zero + length), top + 2, Math.abs(length), rowHeight - 4);
      context.fillStyle = "#8a94a6";
      context.fillText(formatNumber(value), width - valueWidth + 4, top + rowHeight * 0.7);
    });
    context.strokeStyle = "#8a94a6";
    context.beginPath();
    context.moveTo(zero, 0);
    context.lineTo(zero, height);
    context.stroke();
  }
}
