// The page `rlf dashboard` serves: one self-contained HTML document (inline
// CSS and JavaScript, canvas-drawn charts, no CDN, no external request but
// the dashboard's own /api routes). Compiled into the binary.
#pragma once

namespace rlf {

inline constexpr const char* kDashboardPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rlf dashboard</title>
<link rel="icon" href="data:,">
<style>
  :root { --fg: #1d2330; --muted: #6b7280; --line: #e5e7eb; --bg: #ffffff; --panel: #f8fafc; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { padding: 10px 16px; border-bottom: 1px solid var(--line); display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
  header h1 { font-size: 16px; margin: 0; }
  #status { color: var(--muted); }
  main { padding: 12px 16px; }
  section { margin-bottom: 18px; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { color: var(--muted); font-weight: 600; }
  .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: middle; }
  .bar { background: var(--line); border-radius: 3px; height: 8px; width: 160px; display: inline-block; vertical-align: middle; }
  .bar > span { display: block; height: 100%; border-radius: 3px; background: #2563eb; }
  #charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 10px; }
  .chart { border: 1px solid var(--line); border-radius: 6px; padding: 6px; background: var(--panel); }
  .chart .title { font-weight: 600; font-size: 12px; margin-bottom: 2px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .chart canvas { width: 100%; height: 150px; display: block; }
  .controls { display: flex; gap: 10px; align-items: center; margin-bottom: 8px; flex-wrap: wrap; }
  input[type=search] { padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; min-width: 220px; }
  select { padding: 3px 6px; }
  pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px; max-height: 360px; overflow: auto; margin: 0; }
  .cols { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 14px; }
  .sample { border: 1px solid var(--line); border-radius: 6px; padding: 8px; margin-bottom: 8px; background: var(--panel); }
  .sample .meta { color: var(--muted); margin-bottom: 4px; }
  .sample .prompt { white-space: pre-wrap; color: var(--muted); }
  .sample .completion { white-space: pre-wrap; }
  .sample .extra { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 12px; margin-top: 4px; }
  .empty { color: var(--muted); font-style: italic; }
</style>
</head>
<body>
<header>
  <h1>rlf dashboard</h1>
  <span id="status">loading…</span>
</header>
<main>
  <section>
    <h2>Runs</h2>
    <table id="runs"><thead><tr><th>run</th><th>directory</th><th>kind</th><th>progress</th><th>step</th><th>reward</th><th>status</th></tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Metrics</h2>
    <div class="controls">
      <input id="filter" type="search" placeholder="filter metrics (e.g. reward, kl, time/)">
      <span id="chart-count" class="empty"></span>
    </div>
    <div id="charts"></div>
  </section>
  <section class="cols">
    <div>
      <h2>Config</h2>
      <div class="controls"><select id="config-run"></select></div>
      <pre id="config" class="empty">no config</pre>
    </div>
    <div>
      <h2>Samples</h2>
      <div class="controls">
        <select id="samples-run"></select>
        <select id="samples-step"></select>
        <input id="samples-filter" type="search" placeholder="search prompts and completions">
      </div>
      <div id="samples"><div class="empty">no samples</div></div>
    </div>
  </section>
</main>
<script>
"use strict";
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d"];
const state = { runs: [], metrics: [], metricOffset: [], samples: [], sampleOffset: [], keys: [], drawn: "" };

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "style") e.setAttribute("style", v); else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2);
  return (Math.round(x * 1000) / 1000).toString();
}

function lastStep(i) {
  const m = state.metrics[i];
  return m.length ? m[m.length - 1].step : 0;
}

function plannedSteps(run) {
  const c = run.config || {};
  return (c.run && typeof c.run.steps === "number") ? c.run.steps : null;
}

function renderRuns() {
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  state.runs.forEach((run, i) => {
    const steps = plannedSteps(run);
    const step = lastStep(i);
    const m = state.metrics[i];
    const last = m.length ? m[m.length - 1] : {};
    const frac = steps ? Math.min(1, step / steps) : (run.finished ? 1 : 0);
    const bar = el("span", { class: "bar" }, el("span", { style: "width:" + Math.round(frac * 100) + "%" }));
    const status = run.finished ? "finished" : (m.length ? "running" : "waiting");
    body.append(el("tr", { id: "run-" + i },
      el("td", {}, el("span", { class: "swatch", style: "background:" + COLORS[i % COLORS.length] }), run.name),
      el("td", {}, run.dir),
      el("td", {}, (run.config && run.config.trainer && run.config.trainer.kind) || (run.summary && run.summary.kind) || "–"),
      el("td", {}, bar, " ", Math.round(frac * 100) + "%"),
      el("td", { class: "step" }, steps ? step + " / " + steps : step),
      el("td", {}, fmt(last["reward/mean"])),
      el("td", { class: "run-status" }, status)));
  });
}

function drawChart(canvas, key) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.max(1, Math.round(w * dpr));
  canvas.height = Math.max(1, Math.round(h * dpr));
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  let xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity;
  const series = state.metrics.map(rows => rows.filter(r => typeof r[key] === "number" && Number.isFinite(r[key]))
                                                .map(r => [r.step, r[key]]));
  for (const s of series) for (const [x, y] of s) {
    xmin = Math.min(xmin, x); xmax = Math.max(xmax, x); ymin = Math.min(ymin, y); ymax = Math.max(ymax, y);
  }
  if (!Number.isFinite(xmin)) { g.fillStyle = "#6b7280"; g.fillText("no finite values", 8, 16); return; }
  if (xmax === xmin) { xmax += 1; xmin -= 1; }
  if (ymax === ymin) { ymax += Math.abs(ymax) * 0.05 || 1; ymin -= Math.abs(ymin) * 0.05 || 1; }
  const L = 48, R = 8, T = 6, B = 18;
  const X = x => L + (x - xmin) / (xmax - xmin) * (w - L - R);
  const Y = y => T + (1 - (y - ymin) / (ymax - ymin)) * (h - T - B);
  g.strokeStyle = "#e5e7eb"; g.lineWidth = 1;
  g.fillStyle = "#6b7280"; g.font = "10px system-ui, sans-serif";
  for (let k = 0; k <= 3; ++k) {
    const y = ymin + (ymax - ymin) * k / 3;
    g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(w - R, Y(y)); g.stroke();
    g.fillText(fmt(y), 2, Y(y) + 3);
  }
  g.fillText(String(xmin), L, h - 4);
  const xr = String(xmax);
  g.fillText(xr, w - R - g.measureText(xr).width, h - 4);
  series.forEach((s, i) => {
    if (!s.length) return;
    g.strokeStyle = COLORS[i % COLORS.length]; g.lineWidth = 1.5;
    g.beginPath();
    s.forEach(([x, y], j) => (j ? g.lineTo(X(x), Y(y)) : g.moveTo(X(x), Y(y))));
    g.stroke();
    if (s.length === 1) { g.fillStyle = COLORS[i % COLORS.length]; g.fillRect(X(s[0][0]) - 2, Y(s[0][1]) - 2, 4, 4); }
  });
}

function renderCharts(force) {
  const filter = document.getElementById("filter").value.trim().toLowerCase();
  const keys = state.keys.filter(k => !filter || k.toLowerCase().includes(filter));
  const sig = keys.join("|") + "#" + state.metrics.map(m => m.length).join(",");
  if (!force && sig === state.drawn) return;
  state.drawn = sig;
  const box = document.getElementById("charts");
  const have = new Map([...box.children].map(c => [c.dataset.key, c]));
  box.replaceChildren();
  for (const key of keys) {
    let card = have.get(key);
    if (!card) {
      card = el("div", { class: "chart" }, el("div", { class: "title", title: key }, key), el("canvas", {}));
      card.dataset.key = key;
    }
    box.append(card);
  }
  for (const card of box.children) drawChart(card.querySelector("canvas"), card.dataset.key);
  document.getElementById("chart-count").textContent = keys.length + " of " + state.keys.length + " metrics";
}

function renderConfig() {
  const i = Number(document.getElementById("config-run").value || 0);
  const pre = document.getElementById("config");
  const run = state.runs[i];
  if (run && run.config) { pre.textContent = JSON.stringify(run.config, null, 2); pre.className = ""; }
  else { pre.textContent = "no config.json in this run directory"; pre.className = "empty"; }
}

function renderSamples() {
  const i = Number(document.getElementById("samples-run").value || 0);
  const rows = state.samples[i] || [];
  const stepSel = document.getElementById("samples-step");
  const steps = [...new Set(rows.map(r => r.step))].sort((a, b) => b - a);
  const keep = stepSel.value;
  stepSel.replaceChildren(el("option", { value: "" }, "all steps"), ...steps.map(s => el("option", { value: String(s) }, "step " + s)));
  if ([...stepSel.options].some(o => o.value === keep)) stepSel.value = keep;
  const q = document.getElementById("samples-filter").value.trim().toLowerCase();
  const shown = rows.filter(r => (stepSel.value === "" || String(r.step) === stepSel.value) &&
                                 (!q || ((r.prompt || "") + (r.completion || "")).toLowerCase().includes(q)));
  const box = document.getElementById("samples");
  box.replaceChildren();
  if (!shown.length) { box.append(el("div", { class: "empty" }, "no samples")); return; }
  for (const r of shown.slice(-50).reverse()) {
    const extra = Object.entries(r).filter(([k]) => !["prompt", "completion", "step", "index", "reward", "id"].includes(k))
      .map(([k, v]) => k + ": " + (typeof v === "string" ? v : JSON.stringify(v))).join("\n");
    box.append(el("div", { class: "sample" },
      el("div", { class: "meta" }, "step " + r.step + " · #" + (r.index ?? "") + " · " + (r.id ?? "") + " · reward " + fmt(r.reward)),
      el("div", { class: "prompt" }, r.prompt || ""),
      el("div", { class: "completion" }, r.completion || ""),
      el("div", { class: "extra" }, extra)));
  }
}

function fillRunSelect(id) {
  const sel = document.getElementById(id);
  const keep = sel.value;
  sel.replaceChildren(...state.runs.map((r, i) => el("option", { value: String(i) }, r.name)));
  if (keep) sel.value = keep;
}

async function refresh() {
  const runs = (await getJSON("/api/runs")).runs;
  const added = runs.length !== state.runs.length;
  state.runs = runs;
  while (state.metrics.length < runs.length) { state.metrics.push([]); state.metricOffset.push(0); state.samples.push([]); state.sampleOffset.push(0); }
  let changed = added;
  for (let i = 0; i < runs.length; ++i) {
    const m = await getJSON("/api/metrics?run=" + i + "&offset=" + state.metricOffset[i]);
    if (m.rows.length) { state.metrics[i].push(...m.rows); changed = true; }
    state.metricOffset[i] = m.offset;
    const s = await getJSON("/api/samples?run=" + i + "&offset=" + state.sampleOffset[i]);
    if (s.rows.length) { state.samples[i].push(...s.rows); if (i === Number(document.getElementById("samples-run").value || 0)) renderSamples(); }
    state.sampleOffset[i] = s.offset;
  }
  const keys = new Set();
  for (const rows of state.metrics) for (const r of rows) for (const [k, v] of Object.entries(r)) if (k !== "step" && typeof v === "number") keys.add(k);
  state.keys = [...keys].sort();
  if (added) { fillRunSelect("config-run"); fillRunSelect("samples-run"); renderConfig(); renderSamples(); }
  renderRuns();
  if (changed) renderCharts(false);
  const total = state.metrics.reduce((a, m) => a + m.length, 0);
  document.getElementById("status").textContent = runs.length + " run(s), " + total + " steps logged, updated " + new Date().toLocaleTimeString();
}

async function loop() {
  try { await refresh(); }
  catch (e) { document.getElementById("status").textContent = "cannot reach the dashboard server (" + e.message + "); retrying"; }
  setTimeout(loop, POLL_MS);
}

const POLL_MS = Number(new URLSearchParams(location.search).get("poll_ms")) || 1500;
document.getElementById("filter").addEventListener("input", () => renderCharts(true));
document.getElementById("config-run").addEventListener("change", renderConfig);
document.getElementById("samples-run").addEventListener("change", renderSamples);
document.getElementById("samples-step").addEventListener("change", renderSamples);
document.getElementById("samples-filter").addEventListener("input", renderSamples);
window.addEventListener("resize", () => renderCharts(true));
loop();
</script>
</body>
</html>
)HTML";

}  // namespace rlf
