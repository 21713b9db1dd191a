"use strict";
// The page of `infill serve`: four modes over the JSON API. Fill, Rewrite and Augment run as jobs (progress,
// cancel; traces for the first two); Score & rank ask /api/score and /api/rank directly. Plots are drawn here as SVG.
const $ = (id) => document.getElementById(id);
const BLANK = /\[MASK[^\]]*\]/;
const SPAN = /\[MASK\s*\*\s*(\?|\d+\s*-)/;
let info = null;
const jobs = {fill: [], rewrite: [], augment: []};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}
function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
async function api(method, url, body) {
  const response = await fetch(url, {method, headers: {"Content-Type": "application/json"},
                                     body: body === undefined ? undefined : JSON.stringify(body)});
  const data = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
  if (!response.ok && !data.error) data.error = `HTTP ${response.status}`;
  return data;
}
const statusOf = (mode) => $(mode).querySelector(".status");
function setStatus(mode, text, error = false) {
  statusOf(mode).className = error ? "status error" : "status";
  statusOf(mode).replaceChildren(text);
}
// comma-separated words; a lone "," is the comma itself (as `--forbid ,` on the command line)
const words = (text) => text.trim() === "," ? [","] : text.split(",").map((w) => w.trim()).filter((w) => w);

// --- run settings shared by Fill and Rewrite (ids: "steps" in Fill, "rw-steps" in Rewrite) ---
const FIELDS = ["num_samples", "steps", "temperature", "top", "seed"];
function preset(prefix, values) {
  for (const f of FIELDS) if ($(prefix + f)) $(prefix + f).value = values[f] ?? "";
  if (values.method || values.sampler) $(prefix + "method").value = values.sampler ?? values.method;
}
// the fields a method takes: a one-pass method takes no steps (the search no temperature either)
function settings(prefix, method = $(prefix + "method").value) {
  const body = {sampler: method}, untaken = info.untaken[method] ?? [];
  for (const f of FIELDS)
    if (!untaken.includes(f) && $(prefix + f) && $(prefix + f).value !== "") body[f] = Number($(prefix + f).value);
  return body;
}

async function init() {
  info = await api("GET", "/api/info");
  $("model").textContent = `${info.model} · runs wait at most ${info.limits.seconds} s`;
  for (const select of document.querySelectorAll("select.methods"))
    for (const m of info.methods) select.append(el("option", {value: m}, m));
  info.examples.fill.forEach((e, i) => $("examples").append(el("option", {value: i}, e.template)));
  for (const e of info.examples.rewrite) $("rw-examples").append(el("option", {value: e}, e));
  preset("", {...info.defaults, ...info.fast});
  showExample(info.examples.fill[0]);
  preset("rw-", {...info.fast, ...info.rewrite});
  $("rw-change").value = info.rewrite.change;
  $("rw-text").value = info.examples.rewrite[0];
  $("sc-texts").value = info.examples.score.join("\n");
  $("rk-template").value = info.examples.rank.template;
  $("rk-options").value = info.examples.rank.options.join(", ");
  info.examples.augment.forEach((e, i) => $("au-examples").append(el("option", {value: i}, e.texts.join(" | "))));
  for (const f of ["n", "seed", "action", "keep_close"]) $("au-" + f).value = info.augment[f];
  $("au-pll").checked = info.augment.pll;
  keepClose();
  showAugmentExample(info.examples.augment[0]);
}
function showExample(example) {
  $("template").value = example.template;
  $("include").value = (example.include ?? []).join(", ");
  $("blank_unit").value = example.blank_unit ?? "token";
  $("method").value = example.sampler ?? "auto";  // word blanks take no named sampler
}

function showMode(mode) {
  for (const tab of document.querySelectorAll("nav button")) tab.setAttribute("aria-selected", tab.dataset.mode === mode);
  for (const section of document.querySelectorAll("section.mode")) section.hidden = section.id !== mode;
}

// --- jobs: queued runs with progress, shown in a panel ---
async function runJobs(mode, requests, panels, button) {
  const cancel = $(mode).querySelector("button.cancel");
  button.disabled = true; cancel.disabled = false;
  const started = performance.now();
  jobs[mode] = [];
  setStatus(mode, "");
  await Promise.all(requests.map(async ([body, render], i) => {
    const created = await api("POST", "/api/jobs", body);
    if (created.error) { panels[i].lastChild.textContent = created.error; setStatus(mode, created.error, true); return; }
    jobs[mode].push(created.id);
    await follow(mode, created.id, panels[i], render, started);
  }));
  button.disabled = false; cancel.disabled = true;
}

async function follow(mode, id, panel, render, started) {
  for (;;) {
    const job = await api("GET", `/api/jobs/${id}`);
    if (job.error && !job.state) { setStatus(mode, job.error, true); return; }
    if (job.result) { render(panel, job.result); setStatus(mode, `done in ${((performance.now() - started) / 1000).toFixed(1)} s`); return; }
    if (job.error) { panel.lastChild.textContent = job.error; setStatus(mode, job.error, job.status !== 409); return; }
    if (performance.now() - started > 2000) {
      const [done, total] = job.progress;
      setStatus(mode, job.state === "queued" ? `waiting in the queue (position ${job.position})` : "");
      const text = mode === "augment" ? `${done} of ${total} sentences done ` : `step ${done} of ${total} `;
      if (job.state === "running") statusOf(mode).replaceChildren(text, el("progress", {max: total || 1, value: done}));
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function cancel(mode) {
  for (const id of jobs[mode]) await api("DELETE", `/api/jobs/${id}`);
  setStatus(mode, "cancelled");
}

function panelFor(container, method) {
  const panel = el("section", {class: "run", "data-method": method}, el("h2", {}, method), el("p", {class: "note"}, "waiting…"));
  container.append(panel);
  return panel;
}

// --- Fill ---
function fillRequest(method) {
  const body = {task: "sample", template: $("template").value, ...settings("", method),
                blank_unit: $("blank_unit").value};
  if (words($("include").value).length) body.include = words($("include").value);
  if (words($("forbid").value).length) body.forbid = words($("forbid").value);
  return body;
}

function submitFill(event) {
  event.preventDefault();
  const method = $("method").value, spans = SPAN.test($("template").value) || $("blank_unit").value === "word";
  const methods = [method];
  if ($("baseline").checked && method !== "left-to-right" && !spans) methods.push("left-to-right");
  $("results").replaceChildren();
  const panels = methods.map((m) => panelFor($("results"), m));
  if ($("baseline").checked && spans)
    $("results").append(el("p", {class: "note"}, "no left-to-right baseline for word blanks: only the span sampler fills them"));
  runJobs("fill", methods.map((m) => [fillRequest(m), renderFill]), panels, $("run"));
}

function filled(template, fills, source = null) {
  // the template with its fills marked; with the `source` words (Rewrite), only the changed ones
  const parts = template.split(BLANK), node = el("span", {class: "filling"});
  parts.forEach((part, i) => {
    node.append(part);
    if (i === parts.length - 1) return;
    const fill = fills[i] ?? "?";
    if (source === null) node.append(el("mark", {}, fill));
    else node.append(fill === source[i] ? el("span", {class: "kept"}, fill) : el("mark", {class: "changed", title: `was: ${source[i]}`}, fill));
  });
  return node;
}

function bars(items, label, value, text) {
  const most = Math.max(...items.map(value), 1e-9), rows = [];
  for (const item of items)
    rows.push(el("div", {class: "bar"}, el("span", {title: label(item)}, label(item)),
      el("div", {style: `width: ${Math.max(1, 100 * value(item) / most)}%`}), el("span", {}, text(item))));
  return rows;
}
const percent = (x) => `${(100 * x).toFixed(1)}%`;

function summary(result) {
  const d = result.diagnostics;
  const acc = d.acceptance_rate === null ? "" : `, acceptance ${(100 * d.acceptance_rate).toFixed(0)}%`;
  return el("p", {class: "note"}, `${d.num_samples} samples × ${d.steps} steps, T = ${d.temperature}, seed ${d.seed}${acc}, ${d.seconds.toFixed(2)} s`);
}

function renderFill(panel, result) {
  const list = el("ol", {class: "fillings"});
  for (const s of result.samples) {
    const item = el("li", {title: s.text}, filled(result.template, s.fills));
    const energy = s.energy === null ? "" : `${result.diagnostics.energy === "pll" ? "PLL" : "score"} ${s.energy.toFixed(2)}`;
    item.append(el("span", {class: "energy"}, energy));
    list.append(item);
  }
  panel.replaceChildren(el("h2", {}, `${result.diagnostics.sampler}: ${result.samples.length} fillings`), list, summary(result));
  const marginals = el("div", {class: "marginals"});
  result.marginals.forEach((fills, b) => {
    const blank = el("div", {class: "blank"}, el("h3", {}, `blank ${b + 1}: most frequent fills (share of the visited states)`),
      el("div", {class: "fills"}, ...bars(fills.slice(0, 8), (f) => f.fill, (f) => f.frequency, (f) => percent(f.frequency))));
    const lengths = (result.lengths ?? [])[b];
    if (lengths) blank.append(el("div", {class: "lengths"}, el("h4", {}, `words chosen (share of the ${result.samples.length} fillings)`),
      ...bars(lengths, (l) => `${l.words} word${l.words === 1 ? "" : "s"}`, (l) => l.share, (l) => percent(l.share))));
    marginals.append(blank);
  });
  panel.append(marginals);
  traces(panel, result);
}

function traces(panel, result) {
  const t = result.trace;
  if (!t) return;
  const energy = result.samples.some((s) => s.terms) ? "energy / T per chain (the PLL plus the weighted constraint terms)"
    : "energy (PLL / T) per chain";
  panel.append(el("h3", {}, energy),
    t.energies.some((c) => c.some((v) => v !== null)) ? plot(t.energies, t.stride, "trace-energy")
      : el("p", {class: "note"}, "this run computed no energies along the chains (set Top to re-score visited states)"),
    el("h3", {}, "acceptance rate so far, per chain"), plot(t.accepted, t.stride, "trace-acceptance", [0, 1]));
}

function plot(series, stride, cls, range) {
  const W = 460, H = 150, L = 44, R = 8, T = 8, B = 22;
  const values = series.flat().filter((v) => v !== null);
  let [lo, hi] = range ?? [Math.min(...values), Math.max(...values)];
  if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
  const steps = Math.max(...series.map((c) => c.length), 2);
  const x = (i) => L + (W - L - R) * i / (steps - 1), y = (v) => T + (H - T - B) * (hi - v) / (hi - lo);
  const chart = svg("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: `trace ${cls}`});
  chart.append(svg("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#9aa5b1"}),
               svg("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#9aa5b1"}));
  for (const [v, yy] of [[hi, T + 8], [lo, H - B]]) {
    const label = svg("text", {x: L - 4, y: yy, "text-anchor": "end"}); label.textContent = v.toFixed(2); chart.append(label);
  }
  const last = svg("text", {x: W - R, y: H - 6, "text-anchor": "end"}); last.textContent = `step ${(steps - 1) * stride + 1}`;
  chart.append(last);
  series.forEach((chain, c) => {
    let d = "", pen = "M";
    chain.forEach((v, i) => { if (v === null) { pen = "M"; return; } d += `${pen}${x(i).toFixed(1)},${y(v).toFixed(1)} `; pen = "L"; });
    if (d) chart.append(svg("path", {d, fill: "none", "stroke-width": 1.2, "stroke-opacity": .75,
                                     stroke: `hsl(${(c * 360 / series.length) | 0} 65% 45%)`}));
  });
  return chart;
}

// --- Rewrite ---
function submitRewrite(event) {
  event.preventDefault();
  const text = $("rw-text").value;
  const body = {task: "rewrite", text, change: Number($("rw-change").value), ...settings("rw-")};
  $("rw-results").replaceChildren();
  const panel = panelFor($("rw-results"), body.sampler);
  runJobs("rewrite", [[body, (p, result) => renderRewrite(p, result, text)]], [panel], $("rw-run"));
}

function sourceWords(template, source) {
  // the words of `source` at the blanks of its rewrite template (the source with its words made [MASK])
  const parts = template.split(BLANK), out = [];
  let at = parts[0].length;
  for (let i = 1; i < parts.length; i++) {
    const end = i === parts.length - 1 ? source.length - parts[i].length : source.indexOf(parts[i], at);
    out.push(source.slice(at, end));
    at = end + parts[i].length;
  }
  return out;
}

function renderRewrite(panel, result, source) {
  const original = sourceWords(result.template, source);
  const list = el("ol", {class: "fillings"});
  for (const s of result.samples) {
    const changed = s.fills.filter((f, i) => f !== original[i]).length;
    list.append(el("li", {title: s.text}, filled(result.template, s.fills, original),
      el("span", {class: "energy"}, `${changed} of ${s.fills.length} words changed · PLL ${s.energy.toFixed(2)}` +
        (s.source_bleu == null ? "" : ` · BLEU to the source ${s.source_bleu.toFixed(1)}`))));
  }
  panel.replaceChildren(el("h2", {}, `${result.diagnostics.sampler}: ${result.samples.length} variants`),
    el("p", {class: "source"}, "source: ", el("b", {}, source)), list, summary(result));
  traces(panel, result);
}

// --- Score & rank ---
function scoreBars(items, label) {
  // one bar per item, from the lowest score (shortest) to the highest (full width)
  const scores = items.map((i) => i.score), lo = Math.min(...scores), hi = Math.max(...scores);
  return items.map((item) => {
    const width = hi - lo < 1e-9 ? 100 : 8 + 92 * (item.score - lo) / (hi - lo);
    const tokens = el("div", {class: "tokens"}, ...item.tokens.map((t) => el("span",
      {title: `log p = ${t.score.toFixed(2)}`, style: `background: rgba(214, 69, 65, ${Math.min(1, -t.score / 12).toFixed(2)})`}, t.token)));
    return el("div", {class: "scored"}, el("p", {}, label(item)),
      el("div", {class: "bar"}, el("div", {style: `width: ${width}%`}), el("span", {}, item.score.toFixed(2))), tokens);
  });
}

async function scoreOrRank(panel, url, body, title, label, key) {
  panel.hidden = false;
  panel.replaceChildren(el("h2", {}, title), el("p", {class: "note"}, "waiting…"));
  setStatus("score", "");
  const data = await api("POST", url, body);
  if (data.error) { panel.lastChild.textContent = data.error; setStatus("score", data.error, true); return; }
  const mode = body.mode === "pll" ? "PLL" : "PLL word-l2r";
  panel.replaceChildren(el("h2", {}, `${title} (${mode}, nats)`), ...scoreBars(data[key], label),
    el("p", {class: "note"}, "bars from the lowest score to the highest; each token shaded by how unlikely it is"));
}

function submitScore(event) {
  event.preventDefault();
  const texts = $("sc-texts").value.split("\n").map((t) => t.trim()).filter((t) => t);
  scoreOrRank($("sc-results"), "/api/score", {texts, mode: $("sc-mode").value}, "sentences", (s) => s.text, "scores");
}

function submitRank() {
  const body = {template: $("rk-template").value, options: words($("rk-options").value), mode: $("sc-mode").value};
  scoreOrRank($("rk-results"), "/api/rank", body, "options, best first",
    (r) => el("span", {}, el("b", {}, r.option), ` · ${r.text}`), "ranked");
}

// --- Augment ---
function showAugmentExample(example) {
  $("au-texts").value = example.texts.join("\n");
  $("au-protect").value = (example.protect ?? []).join(", ");
  $("au-change").value = example.change ?? info.augment.change;
}

// keep close weighs substituted words only
const keepClose = () => { $("au-keep_close").disabled = $("au-action").value !== "substitute"; };

function submitAugment(event) {
  event.preventDefault();
  const texts = $("au-texts").value.split("\n").filter((t) => t.trim());  // each as typed: only what changes changes
  const body = {task: "augment", texts, protect: words($("au-protect").value), action: $("au-action").value,
                pll: $("au-pll").checked};
  for (const f of ["n", "change", "seed", "keep_close"])
    if (!$("au-" + f).disabled && $("au-" + f).value !== "") body[f] = Number($("au-" + f).value);
  $("au-results").replaceChildren();
  const panel = panelFor($("au-results"), info.augment.sampler);
  runJobs("augment", [[body, (p, result) => renderAugment(p, result, body)]], [panel], $("au-run"));
}

function changedWords(variant) {
  // the variant's text with each edit marked: a new word (hover for the source's), a deleted one struck through
  const node = el("span", {class: "filling"});
  let at = 0;
  for (const e of variant.edits) {
    const [start, end] = e.variant_span;
    // the edit's word, its spaces outside the mark (an insert adds "word ", a delete removes " word")
    const [, before, word, after] = (e.new || e.old).match(/^(\s*)(.*?)(\s*)$/s);
    const marked = e.new ? el("mark", {class: "changed", title: e.old ? `was: ${e.old}` : "inserted"}, word)
      : el("del", {title: "deleted"}, word);
    node.append(variant.text.slice(at, start), before, marked, after);
    at = end;
  }
  node.append(variant.text.slice(at));
  return node;
}

function renderAugment(panel, result, body) {
  const score = body.action === "delete" ? null : body.pll ? "PLL" : "log p";  // a delete fills no blank
  const line = (v) => `${v.edits.length} changed (${percent(v.changed)} of the words)` +
    (score ? ` · ${score} ${v.score.toFixed(2)}` : "") + (v.closeness === null ? "" : ` · closeness ${v.closeness.toFixed(2)}`);
  const sentences = result.augmented.map((record) => {
    const list = el("ol", {class: "fillings"}, ...record.variants.map((v) => el("li", {title: v.text}, changedWords(v),
      el("span", {class: "energy"}, line(v)))));
    const block = el("div", {class: "augmented"}, el("p", {class: "source"}, "source: ", el("b", {}, record.source)), list);
    if (record.shortfall) block.append(el("p", {class: "note shortfall"},
      `${record.shortfall} fewer than asked for: the draws found no more distinct variants`));
    return block;
  });
  const how = body.action === "delete" ? "delete" : `${info.augment.sampler} ${body.action}`;
  panel.replaceChildren(el("h2", {}, `${how}: variants of ${result.augmented.length} sentences`), ...sentences,
    el("p", {class: "note"}, score ? `best ${score} (of the changed words, nats) first; the changed words marked, hover for the source's`
      : "the deleted words struck through"));
}

$("fill-form").addEventListener("submit", submitFill);
$("rewrite-form").addEventListener("submit", submitRewrite);
$("augment-form").addEventListener("submit", submitAugment);
$("score-form").addEventListener("submit", submitScore);
$("rk-run").addEventListener("click", submitRank);
for (const mode of ["fill", "rewrite", "augment"]) $(mode).querySelector("button.cancel").addEventListener("click", () => cancel(mode));
for (const tab of document.querySelectorAll("nav button")) tab.addEventListener("click", () => showMode(tab.dataset.mode));
$("fast").addEventListener("click", () => preset("", {...info.defaults, ...info.fast}));
$("defaults").addEventListener("click", () => preset("", info.defaults));
$("examples").addEventListener("change", (e) => { if (e.target.value) showExample(info.examples.fill[Number(e.target.value)]); });
$("rw-examples").addEventListener("change", (e) => { if (e.target.value) $("rw-text").value = e.target.value; });
$("au-action").addEventListener("change", keepClose);
$("au-examples").addEventListener("change", (e) => { if (e.target.value) showAugmentExample(info.examples.augment[Number(e.target.value)]); });
init().catch((e) => setStatus("fill", `cannot reach the server: ${e}`, true));
