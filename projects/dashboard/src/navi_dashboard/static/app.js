// Navi dashboard page: one websocket in, status bar + observation views + charts out.
// Protocol: see navi_dashboard/protocol.py. Everything here is served by the dashboard itself.

import { BarChart, LineChart, formatNumber } from "/static/charts.js";

const STALE_AFTER_MS = 3000;
const KEY_CODES = {
  KeyW: "w", KeyA: "a", KeyS: "s", KeyD: "d", KeyQ: "q", KeyE: "e", Space: "space",
  ShiftLeft: "shift", ShiftRight: "shift",
};

const $ = (id) => document.getElementById(id);
const page = {
  socket: null,
  retryMs: 500,
  control: false,
  heldKeys: new Set(),
  status: null,
  statusAt: 0,
  framesDrawn: 0,
  lineCharts: [],
  rewardBars: null,
};

// The chart list comes from the server's hello (navi_contracts.telemetry_names.CHARTS), the same
// list every producer names its metrics from.
function buildCharts(charts, maxPoints) {
  const container = $("charts");
  container.replaceChildren();
  page.lineCharts = charts.map(([title, names]) => new LineChart(container, title, names, maxPoints));
  $("side").replaceChildren();
  page.rewardBars = new BarChart($("side"), "Reward-term breakdown (latest)");
}

function drawLegend(ticks) {
  const canvas = $("legend");
  const context = canvas.getContext("2d");
  const gradient = context.createLinearGradient(0, 0, canvas.width, 0);
  ticks.forEach((tick, i) => gradient.addColorStop(i / (ticks.length - 1), `rgb(${tick.rgb.join(",")})`));
  context.fillStyle = gradient;
  context.fillRect(0, 0, canvas.width, canvas.height);
  const percent = (d) => `${+(d * 100).toPrecision(2)}%`;
  $("legend-ticks").textContent = `of horizon: ${ticks.map((t) => percent(t.depth)).join(" · ")}`;
}

function onHello(message) {
  page.control = message.control;
  $("control").classList.toggle("hidden", !message.control);
  drawLegend(message.legend);
  buildCharts(message.charts, message.max_points);
}

function onStatus(status) {
  page.status = status;
  page.statusAt = performance.now();
  updateFreshness();
  const mode = $("mode");
  mode.textContent = status.mode;
  mode.className = `mode mode-${status.mode}`;
  $("sps").textContent = formatNumber(status.sps);
  $("actors").textContent = status.active_actors === null ? "–" : String(Math.round(status.active_actors));
  $("scene").textContent = status.scene ?? "–";
  const pose = status.obs_pose
    ? ` · (${status.obs_pose.position.map((c) => c.toFixed(1)).join(", ")}) m, ${status.obs_pose.yaw_deg}°`
    : "";
  $("source").textContent = status.obs_source
    ? `${status.obs_source}${status.obs_step === null ? "" : ` · step ${status.obs_step}`}${pose}`
    : "–";
  showRealtime(status.realtime);
  for (const [name, points] of Object.entries(status.charts)) {
    for (const chart of page.lineCharts) if (chart.accepts(name)) chart.append(name, points.t, points.v);
  }
  page.rewardBars.set(status.reward_terms);
  const counts = status.counts;
  $("counts").textContent = `observations ${counts.observations} · telemetry ${counts.telemetry} · decode errors ${counts.errors}`
    + (counts.last_error ? ` (last: ${counts.last_error})` : "");
  if (status.control) {
    const c = status.control;
    $("control-state").textContent = ` — ${c.state}; steps ${c.steps}, last ${formatNumber(c.last_latency_ms)} ms`
      + (c.last_error ? `; error: ${c.last_error}` : "");
  }
}

// Real-time control figures: shown only while a realtime environment reports them.
function showRealtime(realtime) {
  $("realtime-stat").classList.toggle("hidden", !realtime);
  if (!realtime) return;
  const percent = realtime.fallback_fraction === null ? "–" : `${Math.round(realtime.fallback_fraction * 100)}%`;
  $("realtime").textContent = `${formatNumber(realtime.control_hz)} Hz · action age `
    + `${formatNumber(realtime.mean_action_age_ticks)} / ${formatNumber(realtime.max_action_age_ticks)} ticks · `
    + `missed ${realtime.missed_ticks === null ? "–" : Math.round(realtime.missed_ticks)} · fallback ${percent}`;
}

function updateFreshness() {
  // The server reports the age when it built the status; extrapolate with the local clock.
  const status = page.status;
  const age = status && status.obs_age_ms !== null ? status.obs_age_ms + (performance.now() - page.statusAt) : null;
  $("freshness").textContent = age === null ? "–" : `${Math.round(age)} ms`;
  // Grey the views out once the picture is clearly old, so nobody mistakes it for live.
  document.querySelector(".views").classList.toggle("stale", age !== null && age > STALE_AFTER_MS);
}

async function onFrame(buffer) {
  const view = new DataView(buffer);
  const headerLength = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const png = new Blob([new Uint8Array(buffer, 4 + headerLength)], { type: "image/png" });
  const bitmap = await createImageBitmap(png);
  drawPanorama(bitmap, header);
  drawForward(bitmap, header);
  bitmap.close();
  page.framesDrawn += 1;
  $("panorama").dataset.frames = String(page.framesDrawn);
  $("panorama").dataset.version = String(header.version);
}

function drawPanorama(bitmap, header) {
  const canvas = $("panorama");
  const context = canvas.getContext("2d");
  context.imageSmoothingEnabled = false;
  context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  // Heading (centre) and the edges of the forward hemisphere (±90°).
  context.strokeStyle = "rgba(255,255,255,0.55)";
  context.setLineDash([4, 4]);
  for (const fraction of [0.25, 0.5, 0.75]) {
    context.beginPath();
    context.moveTo(canvas.width * fraction, 0);
    context.lineTo(canvas.width * fraction, canvas.height);
    context.stroke();
  }
  context.setLineDash([]);
  context.fillStyle = "rgba(255,255,255,0.8)";
  context.font = "12px 'DejaVu Sans', sans-serif";
  [["B", 0.005], ["L", 0.25], ["F", 0.5], ["R", 0.75]].forEach(([label, f]) => context.fillText(label, canvas.width * f + 4, 14));
}

function drawForward(bitmap, header) {
  const canvas = $("forward");
  const context = canvas.getContext("2d");
  context.imageSmoothingEnabled = false;
  // The forward hemisphere is the middle half of the heading-centred panorama.
  context.drawImage(bitmap, header.width / 4, 0, header.width / 2, header.height, 0, 0, canvas.width, canvas.height);
  context.strokeStyle = "rgba(255,255,255,0.6)";
  const cx = canvas.width / 2, cy = canvas.height / 2;
  context.beginPath();
  context.moveTo(cx - 10, cy); context.lineTo(cx + 10, cy);
  context.moveTo(cx, cy - 10); context.lineTo(cx, cy + 10);
  context.stroke();
}

function onMessage(event) {
  if (typeof event.data !== "string") {
    onFrame(event.data).catch((error) => { $("notice").textContent = `frame: ${error}`; });
    return;
  }
  const message = JSON.parse(event.data);
  if (message.type === "hello") onHello(message);
  else if (message.type === "status") onStatus(message);
  else if (message.type === "notice") $("notice").textContent = message.text;
}

function connect() {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  page.socket = socket;
  socket.onopen = () => {
    page.retryMs = 500;
    $("connection").textContent = "live";
    $("connection").classList.remove("down");
  };
  socket.onmessage = onMessage;
  socket.onclose = () => {
    // The dashboard server may restart; keep trying with a capped backoff.
    $("connection").textContent = "disconnected — retrying";
    $("connection").classList.add("down");
    setTimeout(connect, page.retryMs);
    page.retryMs = Math.min(page.retryMs * 2, 5000);
  };
}

function sendKeys() {
  if (!page.control || !page.socket || page.socket.readyState !== WebSocket.OPEN) return;
  page.socket.send(JSON.stringify({ type: "keys", down: [...page.heldKeys] }));
  const held = [...page.heldKeys].join(" + ");
  $("control-state").dataset.held = held;
}

function onKey(event, down) {
  const key = KEY_CODES[event.code];
  if (!page.control || !key) return;
  event.preventDefault();
  const changed = down ? !page.heldKeys.has(key) : page.heldKeys.has(key);
  if (down) page.heldKeys.add(key);
  else page.heldKeys.delete(key);
  if (changed) sendKeys();
}

function animate() {
  for (const chart of page.lineCharts) chart.draw();
  if (page.rewardBars) page.rewardBars.draw();
  requestAnimationFrame(animate);
}

document.addEventListener("keydown", (event) => onKey(event, true));
document.addEventListener("keyup", (event) => onKey(event, false));
window.addEventListener("blur", () => { page.heldKeys.clear(); sendKeys(); });
window.addEventListener("resize", () => page.lineCharts.forEach((chart) => { chart.dirty = true; }));
connect();
setInterval(updateFreshness, 100);
requestAnimationFrame(animate);
