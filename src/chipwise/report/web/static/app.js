// chipwise web UI: fill the form from /api/workloads and /api/chips, post /api/advise, show
// the answer and draw its charts with the plotly.js the server ships. No framework, no CDN.
// Every value from the server is set with textContent (never innerHTML).
"use strict";

const UPLOADED = "__uploaded__";
const state = { upload: null };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function fmt(n, digits) {
  if (n === null || n === undefined || !isFinite(n)) return "—";
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 0 : digits });
}

function seconds(s) {
  if (s === null || s === undefined) return "—";
  if (s < 1e-3) return (s * 1e6).toPrecision(3) + " µs";
  if (s < 1) return (s * 1e3).toPrecision(3) + " ms";
  if (s < 120) return s.toPrecision(3) + " s";
  if (s < 7200) return (s / 60).toPrecision(3) + " min";
  return (s / 3600).toPrecision(3) + " h";
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function getJSON(url, options) {
  const response = await fetch(url, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const message = (data && data.error) || ("HTTP " + response.status);
    throw new Error(message);
  }
  return data;
}

// ---- the form ------------------------------------------------------------------------------

async function loadWorkloads() {
  const data = await getJSON("/api/workloads");
  const select = $("workload");
  const zoo = el("optgroup", { label: "Model zoo" });
  for (const m of data.models) {
    const params = (m.params_total / 1e9).toPrecision(3) + "B" + (m.moe ? " MoE" : "");
    zoo.appendChild(el("option", { value: m.id }, m.id + " (" + m.title + ", " + params + ")"));
  }
  const other = el("optgroup", { label: "Not ML (which chips can run it)" });
  for (const k of data.non_ml) other.appendChild(el("option", { value: k.id }, k.id + ": " + k.title));
  select.appendChild(zoo);
  select.appendChild(other);
  select.value = data.default;
}

async function loadChips() {
  const data = await getJSON("/api/chips");
  const box = $("chips");
  const kinds = [["gpu", "GPUs"], ["tpu", "TPUs"], ["asic", "Other accelerators"]];
  for (const [kind, title] of kinds) {
    const chips = data.chips.filter((c) => c.kind === kind);
    if (!chips.length) continue;
    box.appendChild(el("div", { class: "group" }, title));
    for (const c of chips) {
      const label = el("label", { title: c.name });
      const input = el("input", { type: "checkbox", name: "chip", value: c.id });
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + c.id));
      box.appendChild(label);
    }
  }
}

function phase() {
  return document.querySelector('input[name="phase"]:checked').value;
}

function onPhase() {
  const train = phase() === "train";
  document.querySelectorAll(".train-only").forEach((n) => { n.hidden = !train; });
  document.querySelectorAll(".infer-only").forEach((n) => { n.hidden = train; });
}

function onLoad() {
  const rps = $("load").value === "rps";
  document.querySelectorAll(".load-rps").forEach((n) => { n.hidden = !rps; });
  document.querySelectorAll(".load-batch").forEach((n) => { n.hidden = rps; });
}

async function onUpload() {
  const file = $("upload").files[0];
  const status = $("upload-status");
  if (!file) return;
  status.className = "muted";
  status.textContent = "reading " + file.name + "…";
  const form = new FormData();
  form.append("file", file);
  try {
    const data = await getJSON("/api/workloads/upload", { method: "POST", body: form });
    state.upload = data;
    const select = $("workload");
    let option = select.querySelector('option[value="' + UPLOADED + '"]');
    if (!option) {
      option = el("option", { value: UPLOADED });
      select.insertBefore(option, select.firstChild);
    }
    option.textContent = "uploaded: " + data.name;
    select.value = UPLOADED;
    status.textContent = data.name + ": " + (data.params_total / 1e9).toPrecision(3) + "B parameters, "
      + data.n_layers + " layers, width " + data.d_model + (data.moe ? ", MoE" : "");
  } catch (err) {
    status.className = "error";
    status.textContent = err.message;
    $("upload").value = "";
  }
}

function numberOrNull(id) {
  const v = $(id).value.trim();
  return v === "" ? null : Number(v);
}

function textOrNull(id) {
  const v = $(id).value.trim();
  return v === "" ? null : v;
}

function body() {
  const workload = $("workload").value;
  const b = {
    phase: phase(),
    objective: $("objective").value,
    cloud: $("cloud").value,
    pricing: $("pricing").value,
    own_hardware: $("own-hardware").checked,
    precision: $("precision").value,
    budget_usd: numberOrNull("budget"),
    deadline_days: numberOrNull("deadline"),
    framework: $("framework").value || null,
    seq_len: Number($("seq-len").value),
    global_batch: numberOrNull("global-batch"),
    batch: Number($("batch").value),
    input_len: Number($("input-len").value),
    output_len: Number($("output-len").value),
    tokens: textOrNull("tokens"),
    requests_per_day: textOrNull("requests"),
    max_chips: numberOrNull("max-chips"),
    method: $("method").value || null,
    lora_rank: Number($("lora-rank").value),
    project: textOrNull("project"),
    porting: $("porting").value,
    chips: Array.from(document.querySelectorAll('input[name="chip"]:checked')).map((c) => c.value),
  };
  if (b.phase === "infer" && $("load").value === "rps") {
    // the engine: an arrival rate (else the daily load, evenly) and p99 targets
    b.load = "rps";
    b.requests_per_day = null;
    b.rps = numberOrNull("rps");
    b.ttft_ms = numberOrNull("ttft");
    b.tpot_ms = numberOrNull("tpot");
    b.kv_dtype = $("kv-dtype").value;
  } else if (b.phase === "infer") {
    b.load = "batch";
  }
  if (workload === UPLOADED && state.upload) {
    b.config = state.upload.config;
    b.config_name = state.upload.name;
  } else {
    b.workload = workload;
  }
  return b;
}

async function onSubmit(event) {
  event.preventDefault();
  const button = $("advise");
  button.disabled = true;
  setStatus("planning every chip × count… (the first answer also loads the validation data)");
  const started = performance.now();
  try {
    const data = await getJSON("/api/advise", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body()),
    });
    render(data);
    setStatus("answered in " + ((performance.now() - started) / 1000).toFixed(1) + " s");
  } catch (err) {
    setStatus(err.message, true);
  } finally {
    button.disabled = false;
  }
}

// ---- the answer ----------------------------------------------------------------------------

// "dp=1,fsdp=8,tp=1,...,microbatch=2,recompute=none" -> "fsdp=8,mb=2" (as the HTML report)
function planShort(plan) {
  const parts = [];
  for (const kv of plan.split(",")) {
    const [k, v] = kv.split("=");
    if (k === "microbatch") parts.push("mb=" + v);
    else if (k === "recompute") { if (v !== "none") parts.push(kv); }
    else if (v !== "1") parts.push(kv);
  }
  return parts.join(",");
}

// "disaggregated: 2 prefill + 3 decode replicas of 4" (as the terminal table)
function disaggregatedText(o) {
  const d = o.disaggregated;
  return "disaggregated: " + d.prefill_replicas + " prefill + " + d.decode_replicas
    + " decode replicas of " + o.chips;
}

function optionLine(label, o, training) {
  const parts = [o.chip + " ×" + o.chips * o.replicas, "plan " + planShort(o.plan)];
  if (training) parts.push(fmt(o.days, 2) + " days");
  else if (o.load === "batch") parts.push("TTFT " + seconds(o.ttft_s) + ", TPOT " + seconds(o.tpot_s));
  else {
    parts.push("TTFT p99 " + seconds(o.ttft_p99_s) + ", TPOT p99 " + seconds(o.tpot_p99_s));
    if (o.disaggregated) parts.push(disaggregatedText(o));
  }
  if (!training && o.usd_per_million_output_tokens !== null) parts.push("$" + fmt(o.usd_per_million_output_tokens, 2) + " per 1M output tokens");
  if (o.usd !== null) parts.push("$" + fmt(o.usd) + (training ? "" : "/day"));
  parts.push(fmt(o.memory_per_chip_bytes / 1e9) + "/" + fmt(o.capacity_bytes / 1e9) + " GB per chip");
  const line = el("div");
  line.appendChild(el("b", {}, label + ": "));
  line.appendChild(document.createTextNode(parts.join("; ")));
  return line;
}

function renderAnswer(rec) {
  const training = rec.phase === "train";
  const pick = $("pick");
  const alternatives = $("alternatives");
  alternatives.replaceChildren();
  pick.removeAttribute("data-chip");
  if (rec.non_ml) {
    pick.textContent = rec.non_ml.workload + ": not an ML workload.";
    alternatives.appendChild(el("div", {}, "Chips that can run it (" + rec.non_ml.basis + "): "
      + rec.non_ml.capable_chips.join(", ")));
  } else if (!rec.pick) {
    pick.textContent = "No chip qualifies.";
  } else {
    pick.textContent = "Recommendation: " + rec.pick.chip + " ×" + rec.pick.chips * rec.pick.replicas;
    pick.setAttribute("data-chip", rec.pick.chip);
    alternatives.appendChild(el("div", { class: "muted" }, "price: " + rec.pick.price));
    for (const [label, o] of [["best GPU", rec.best_gpu], ["best TPU", rec.best_tpu]]) {
      if (o) alternatives.appendChild(optionLine(label, o, training));
    }
  }
  const c = rec.confidence;
  $("confidence").textContent = c
    ? "Confidence: " + (c.what || "training-throughput") + " predictions are within ±" + fmt(c.median_abs_error * 100)
      + "% (median) and ±" + fmt(c.p90_abs_error * 100) + "% (90th percentile) of " + c.rows
      + " published measurements (" + (c.scope || c.kind) + ")."
      + (c.note ? " The band is " + c.note + "." : "")
      + (c.latency || []).map((l) => " " + l.what + ": ±" + fmt(l.median_abs_error * 100) + "% (median), ±"
        + fmt(l.p90_abs_error * 100) + "% (p90) of " + l.rows + " measurements (" + l.scope + ").").join("")
    : "Confidence: no validation data was found, so no band is given.";
  $("answer").hidden = false;
}

function renderCharts(charts) {
  const box = $("charts");
  for (const div of box.querySelectorAll(".chart")) Plotly.purge(div);
  box.replaceChildren();
  // Lay out every box first, then draw: each plot takes its box's final width.
  const divs = charts.map((chart) => {
    const figure = el("figure", { class: "chart-box" });
    const div = el("div", { class: "chart", id: chart.id, "data-title": chart.title });
    figure.appendChild(div);
    if (chart.caption) figure.appendChild(el("figcaption", { class: "muted" }, chart.caption));
    box.appendChild(figure);
    return div;
  });
  charts.forEach((chart, i) => {
    Plotly.newPlot(divs[i], chart.figure.data, chart.figure.layout, { responsive: true, displaylogo: false });
  });
}

function renderOptions(rec) {
  const training = rec.phase === "train";
  const table = $("options-table");
  table.replaceChildren();
  const head = training
    ? ["#", "chip", "×n", "plan", "days", "tok/s/chip", "MFU", "$ total", "kWh", "price"]
    : ["#", "chip", "×n", "plan", "TTFT p99", "TPOT p99", "out tok/s/chip", "$/1M out", "$/day",
       "kWh/day", "price"];
  const tr = el("tr");
  for (const h of head) tr.appendChild(el("th", {}, h));
  table.appendChild(el("thead")).appendChild(tr);
  const tbody = table.appendChild(el("tbody"));
  rec.options.forEach((o, i) => {
    const isPick = Boolean(rec.pick) && o.chip === rec.pick.chip;
    const row = el("tr", isPick ? { class: "pick" } : {});
    const cells = training
      ? [i + 1, o.chip + (isPick ? " ★" : ""), o.chips * o.replicas, planShort(o.plan), fmt(o.days, 2),
         fmt(o.tokens_per_s_per_chip), o.mfu === null ? "—" : fmt(o.mfu * 100) + "%", fmt(o.usd),
         fmt(o.kwh), o.price]
      : [i + 1, o.chip + (isPick ? " ★" : ""), o.chips * o.replicas,
         planShort(o.plan) + (o.disaggregated ? "; " + disaggregatedText(o) : ""),
         seconds(o.ttft_p99_s), seconds(o.tpot_p99_s), fmt(o.output_tokens_per_s_per_chip),
         o.usd_per_million_output_tokens === null ? "—" : "$" + fmt(o.usd_per_million_output_tokens, 2),
         fmt(o.usd), fmt(o.kwh), o.price];
    const numbers = training ? [0, 2, 4, 5, 6, 7, 8] : [0, 2, 4, 5, 6, 7, 8, 9];
    cells.forEach((c, j) => {
      const numeric = numbers.includes(j);
      row.appendChild(el("td", numeric ? { class: "num" } : {}, c));
    });
    tbody.appendChild(row);
  });
  $("options-section").hidden = rec.options.length === 0;
}

function renderReasons(rec) {
  const box = $("reasons");
  box.replaceChildren();
  for (const r of rec.reasons) {
    const div = el("div", { class: "reason", "data-rule": r.rule });
    const head = el("div");
    head.appendChild(el("b", {}, r.situation));
    head.appendChild(el("span", { class: "tag" }, "favours " + r.favours.toUpperCase()));
    if (r.agrees_with_article === true) head.appendChild(el("span", { class: "tag agrees" }, "agrees with the article"));
    if (r.agrees_with_article === false) head.appendChild(el("span", { class: "tag contradicts" }, "contradicts the article"));
    div.appendChild(head);
    div.appendChild(el("div", {}, r.text));
    if (r.evidence.length) {
      const ul = el("ul");
      for (const e of r.evidence) ul.appendChild(el("li", {}, e));
      div.appendChild(ul);
    }
    box.appendChild(div);
  }
  $("reasons-section").hidden = rec.reasons.length === 0;
  const excluded = $("excluded");
  excluded.replaceChildren();
  for (const e of rec.excluded) excluded.appendChild(el("li", {}, e.chip + ": " + e.why));
  for (const n of rec.notes) excluded.appendChild(el("li", {}, "Note: " + n));
  $("excluded-section").hidden = rec.excluded.length + rec.notes.length === 0;
}

function render(data) {
  const rec = data.recommendation;
  $("intro").hidden = true;
  renderAnswer(rec);
  renderCharts(data.charts);
  renderOptions(rec);
  renderReasons(rec);
  $("cli-text").textContent = data.text;
  $("cli-section").hidden = false;
  document.body.setAttribute("data-answered", "true");
}

// ---- start ---------------------------------------------------------------------------------

async function start() {
  document.querySelectorAll('input[name="phase"]').forEach((n) => n.addEventListener("change", onPhase));
  $("upload").addEventListener("change", onUpload);
  $("workload").addEventListener("change", () => {
    if ($("workload").value !== UPLOADED) $("upload-status").textContent = "";
  });
  $("load").addEventListener("change", onLoad);
  $("advise-form").addEventListener("submit", onSubmit);
  onPhase();
  onLoad();
  try {
    await Promise.all([loadWorkloads(), loadChips()]);
    document.body.setAttribute("data-ready", "true");
  } catch (err) {
    setStatus("cannot load the catalog: " + err.message, true);
  }
}

start();
