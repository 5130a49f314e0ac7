// The Graph-Unified page: a client of the JSON API (/health, /strategies, /ask, /eval/report).
// Every text from the index is set as text (textContent / text nodes), never as HTML.
"use strict";

const TABS = ["ask", "compare", "graph", "eval", "api"];
const PALETTE = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];
const state = { strategies: [], defaultStrategy: "auto", evalLoaded: false, graph: null };

// An element with properties (class, title, ...) and children (nodes or text, never parsed as HTML).
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const reply = await fetch(path, init);
  const data = await reply.json().catch(() => ({ detail: reply.statusText }));
  if (!reply.ok) throw new Error(`${reply.status}: ${detailText(data.detail)}`);
  return data;
}

// FastAPI's 422 list ({loc, msg}) or the guard's one line.
function detailText(detail) {
  if (Array.isArray(detail)) return detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

function number(value, digits = 3) {
  if (typeof value !== "number") return value === null || value === undefined ? "—" : String(value);
  return String(Number(value.toFixed(digits))); // 61.11, not 61.110; 100, not 100.000
}

function showTab(name) {
  const tab = TABS.includes(name) ? name : "ask";
  for (const other of TABS) document.getElementById(`tab-${other}`).hidden = other !== tab;
  for (const link of document.querySelectorAll("#tabs a")) {
    link.classList.toggle("active", link.dataset.tab === tab);
  }
  if (tab === "eval" && !state.evalLoaded) loadEval();
  if (tab === "graph" && state.graph) state.graph.resize();
}

// ---- the index and its strategies -------------------------------------------------------------

async function loadIndex() {
  try {
    const [health, described] = await Promise.all([api("/health"), api("/strategies")]);
    document.getElementById("home-line").textContent =
      `${health.home}: ${health.chunks} passages, generation ${health.generation}`;
    state.strategies = described.strategies;
    state.defaultStrategy = described.default;
    fillStrategies();
  } catch (error) {
    document.getElementById("home-line").textContent = `The index could not be read: ${error.message}`;
  }
}

function fillStrategies() {
  const select = document.getElementById("ask-strategy");
  const names = ["auto", ...state.strategies.map((s) => s.name)];
  for (const name of names) {
    const summary = name === "auto" ? "the router picks one per question" : summaryOf(name);
    select.append(el("option", { value: name, selected: name === state.defaultStrategy }, `${name} — ${summary}`));
  }
  const box = document.getElementById("compare-strategies");
  for (const strategy of state.strategies) {
    const input = el("input", {
      type: "checkbox", value: strategy.name, name: "strategy", checked: strategy.tier === "core",
    });
    box.append(el("label", { class: "check", title: strategy.summary }, input, ` ${strategy.name}`));
  }
}

function summaryOf(name) {
  const found = state.strategies.find((s) => s.name === name);
  return found ? found.summary : "";
}

// ---- Ask ---------------------------------------------------------------------------------------

async function ask(event) {
  event.preventDefault();
  const question = document.getElementById("ask-question").value.trim();
  const status = document.getElementById("ask-status");
  const result = document.getElementById("ask-result");
  if (!question) return;
  status.textContent = "asking…";
  result.replaceChildren();
  try {
    const body = {
      question,
      strategy: document.getElementById("ask-strategy").value,
      top_k: Number(document.getElementById("ask-top-k").value) || 5,
      retrieve_only: document.getElementById("ask-retrieve-only").checked,
    };
    const answer = await api("/ask", body);
    status.textContent = "";
    result.replaceChildren(...renderAnswer(body, answer));
  } catch (error) {
    status.textContent = error.message;
    status.classList.add("error");
    return;
  }
  status.classList.remove("error");
}

function renderAnswer(body, answer) {
  const meta = answer.metadata || {};
  const parts = [];
  parts.push(el("div", { class: "answer" },
    answer.answer === null ? el("span", { class: "muted" }, "retrieval only: no answer generated") : answer.answer));
  const routed = meta.requested_strategy === "auto" || meta.router_reason;
  parts.push(el("p", { class: "strategy-line" },
    "strategy: ", el("strong", { class: "chosen-strategy" }, answer.strategy),
    routed && meta.router_reason ? el("span", { class: "router-reason" }, ` — ${meta.router_reason}`) : null));
  parts.push(el("p", { class: "muted" }, figuresLine(meta)));
  parts.push(el("button", { type: "button", class: "open-graph", onclick: () => openGraph(body, answer) },
    "Evidence graph"));
  parts.push(el("h3", {}, "Sources"));
  parts.push(renderSources(answer));
  return parts;
}

function figuresLine(meta) {
  return `${number(meta.latency_ms, 0)} ms (retrieval ${number(meta.retrieval_latency_ms, 0)} ms), `
    + `${meta.llm_calls ?? 0} LLM calls, ${meta.tokens_used ?? 0} tokens, $${number(meta.cost_usd ?? 0, 4)}`
    + (meta.cached ? " (answer from the LLM cache)" : "");
}

// Numbered as the answer cites them: the contexts, then the expanded ones.
function cited(answer) {
  return [...answer.contexts, ...(answer.expanded_contexts || [])];
}

function renderSources(answer) {
  const list = el("ol", { class: "sources" });
  const own = answer.contexts.length;
  cited(answer).forEach((context, i) => {
    list.append(el("li", { class: "source", "data-n": String(i + 1) },
      sourceHeader(i + 1, context, i >= own),
      el("blockquote", { class: "passage" }, context.text)));
  });
  return list;
}

function sourceHeader(n, context, expanded) {
  const meta = context.metadata || {};
  return el("div", { class: "source-head" },
    el("span", { class: "n" }, `[${n}]`), " ",
    el("span", { class: "title" }, context.source), " ",
    el("span", { class: "score" }, `score ${number(context.score)}`), " ",
    el("span", { class: "kind" }, meta.kind || "chunk"),
    expanded ? el("span", { class: "kind" }, "linked") : null);
}

// ---- Compare -----------------------------------------------------------------------------------

async function compare(event) {
  event.preventDefault();
  const question = document.getElementById("compare-question").value.trim();
  const chosen = [...document.querySelectorAll("#compare-strategies input:checked")].map((i) => i.value);
  const status = document.getElementById("compare-status");
  const columns = document.getElementById("compare-result");
  if (!question) return;
  if (!chosen.length) {
    status.textContent = "pick at least one strategy";
    return;
  }
  columns.replaceChildren();
  const body = {
    question,
    top_k: Number(document.getElementById("compare-top-k").value) || 5,
    retrieve_only: document.getElementById("compare-retrieve-only").checked,
  };
  const answers = {};
  // One after another: the server answers one engine call at a time anyway.
  for (const [i, strategy] of chosen.entries()) {
    status.textContent = `asking ${strategy} (${i + 1} of ${chosen.length})…`;
    const column = el("div", { class: "column", "data-strategy": strategy }, el("h3", {}, strategy));
    columns.append(column);
    try {
      answers[strategy] = await api("/ask", { ...body, strategy });
      column.replaceChildren(...renderColumn({ ...body, strategy }, answers[strategy]));
    } catch (error) {
      column.append(el("p", { class: "error" }, error.message));
    }
  }
  status.textContent = markShared(answers);
}

function renderColumn(body, answer) {
  const strategy = body.strategy;
  const meta = answer.metadata || {};
  const figures = el("table", { class: "figures" },
    ...[["latency", `${number(meta.latency_ms, 0)} ms`], ["retrieval", `${number(meta.retrieval_latency_ms, 0)} ms`],
      ["tokens", number(meta.tokens_used ?? 0)], ["cost", `$${number(meta.cost_usd ?? 0, 4)}`],
      ["LLM calls", number(meta.llm_calls ?? 0)], ["contexts", String(answer.contexts.length)],
      ["result cache", meta.result_cache || "—"]]
      .map(([name, value]) => el("tr", {}, el("th", {}, name), el("td", {}, value))));
  const cards = cited(answer).map((context, i) => el("div", {
    class: "card", "data-key": passageKey(context),
  }, sourceHeader(i + 1, context, i >= answer.contexts.length), el("div", { class: "passage" }, context.text)));
  return [
    el("h3", {}, strategy),
    figures,
    answer.answer === null ? null : el("div", { class: "answer small" }, answer.answer),
    el("button", { type: "button", class: "open-graph", onclick: () => openGraph(body, answer) }, "Evidence graph"),
    ...cards,
  ];
}

// A passage is its chunk (an entity or relationship context cites its best supporting chunk).
function passageKey(context) {
  return context.chunk_id || `text:${context.text}`;
}

// Passages in two or more columns get one colour each and say which other strategies have them.
function markShared(answers) {
  const holders = new Map();
  for (const [strategy, answer] of Object.entries(answers)) {
    for (const context of cited(answer)) {
      const key = passageKey(context);
      if (!holders.has(key)) holders.set(key, new Set());
      holders.get(key).add(strategy);
    }
  }
  const shared = [...holders.entries()].filter(([, strategies]) => strategies.size > 1);
  const colour = new Map(shared.map(([key], i) => [key, PALETTE[i % PALETTE.length]]));
  for (const column of document.querySelectorAll("#compare-result .column")) {
    const own = column.dataset.strategy;
    for (const card of column.querySelectorAll(".card")) {
      const key = card.dataset.key;
      if (!colour.has(key)) continue;
      card.classList.add("shared");
      card.style.borderLeftColor = colour.get(key);
      const others = [...holders.get(key)].filter((s) => s !== own);
      card.prepend(el("div", { class: "shared-with" }, `also in ${others.join(", ")}`));
    }
  }
  const asked = Object.keys(answers).length;
  return `${asked} strategies answered; ${shared.length} passage(s) shared by two or more`;
}

// ---- Evidence graph ----------------------------------------------------------------------------

// The evidence costs the server ~10 ms per answer, so an answer comes without it and the graph
// asks for it: the same request, retrieval only (the contexts come from the server's result cache).
async function openGraph(body, answer) {
  location.hash = "#graph";
  showTab("graph");
  const summary = document.getElementById("graph-summary");
  summary.classList.remove("error");
  if (!answer.evidence) {
    summary.textContent = "finding the entities behind the contexts…";
    try {
      const found = await api("/retrieve", { ...body, strategy: answer.strategy, evidence: true });
      answer.evidence = found.evidence;
    } catch (error) {
      summary.textContent = error.message;
      summary.classList.add("error");
      return;
    }
  }
  drawGraph(body.question, answer);
}

function drawGraph(question, answer) {
  const { nodes, edges } = answer.evidence;
  document.getElementById("graph-title").textContent = `${answer.strategy}: ${question}`;
  document.getElementById("graph-summary").textContent =
    `${nodes.length} entities, ${edges.length} relationships behind ${cited(answer).length} contexts`
    + (nodes.length ? "; pick a context to see its part" : ": these contexts mention no entity of the graph");
  document.getElementById("graph-detail").textContent = "";
  const list = document.getElementById("graph-contexts");
  list.replaceChildren(...cited(answer).map((context, i) => el("li", {
    class: "graph-context", "data-n": String(i + 1), onclick: () => highlight(i + 1),
  }, sourceHeader(i + 1, context, i >= answer.contexts.length))));
  const types = [...new Set(nodes.map((n) => n.type))];
  const elements = [
    ...nodes.map((n) => ({ data: {
      id: `n:${n.id}`, label: n.id, type: n.type, contexts: n.contexts,
      colour: PALETTE[types.indexOf(n.type) % PALETTE.length],
    } })),
    ...edges.filter((e) => nodes.some((n) => n.id === e.source) && nodes.some((n) => n.id === e.target))
      .map((e, i) => ({ data: {
        id: `e:${i}`, source: `n:${e.source}`, target: `n:${e.target}`, label: e.type,
        description: e.description, contexts: e.contexts,
      } })),
  ];
  if (state.graph) state.graph.destroy();
  state.graph = window.cytoscape({
    container: document.getElementById("graph"),
    elements,
    layout: { name: "cose", animate: false, randomize: false, nodeRepulsion: () => 8000 },
    style: [
      { selector: "node", style: {
        label: "data(label)", "background-color": "data(colour)", "font-size": 11, color: "#111827",
        "text-valign": "bottom", "text-margin-y": 4, width: 18, height: 18 } },
      { selector: "edge", style: {
        "font-size": 8, color: "#6b7280", width: 1.5, "line-color": "#9ca3af",
        "target-arrow-shape": "triangle", "target-arrow-color": "#9ca3af", "curve-style": "bezier" } },
      { selector: ".faded", style: { opacity: 0.15 } },
      // Edge labels only on a picked context's relationships: on all of them they hide the graph.
      { selector: ".lit", style: {
        label: "data(label)", "line-color": "#dc2626", "target-arrow-color": "#dc2626", width: 3 } },
    ],
  });
  state.graph.on("tap", "node, edge", (event) => {
    const data = event.target.data();
    const what = event.target.isNode() ? `${data.label} (${data.type})` : `${data.label}: ${data.description}`;
    document.getElementById("graph-detail").textContent = `${what} — contexts ${data.contexts.join(", ")}`;
  });
  window.evidenceGraph = state.graph; // for the browser test and the console
}

// One context's entities and relationships; the rest fade.
function highlight(n) {
  for (const item of document.querySelectorAll(".graph-context")) {
    item.classList.toggle("active", item.dataset.n === String(n));
  }
  const cy = state.graph;
  if (!cy) return;
  cy.elements().removeClass("faded lit");
  const part = cy.elements().filter((e) => e.data("contexts").includes(n));
  cy.elements().difference(part).addClass("faded");
  part.edges().addClass("lit");
  if (part.length) { // a passage's few entities, large enough to read, and not more
    cy.fit(part, 80);
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(part); }
  }
  document.getElementById("graph-detail").textContent =
    `context [${n}]: ${part.nodes().length} entities, ${part.edges().length} relationships`;
}

// ---- Eval report -------------------------------------------------------------------------------

async function loadEval() {
  const box = document.getElementById("eval-result");
  try {
    const report = await api("/eval/report");
    state.evalLoaded = true;
    box.replaceChildren(...renderEval(report));
  } catch (error) {
    box.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function renderEval(report) {
  if (!report.available) return [el("p", { class: "muted" }, report.note)];
  const names = Object.keys(report.strategies);
  const columns = [...new Set(names.flatMap((name) => Object.keys(report.strategies[name])))];
  const table = el("table", { class: "eval-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "strategy"), ...columns.map((c) => el("th", {}, c)))),
    el("tbody", {}, ...names.map((name) => el("tr", {}, el("th", {}, name),
      ...columns.map((c) => el("td", {}, number(report.strategies[name][c])))))));
  return [
    el("h2", {}, `Evaluation: ${report.dataset}`),
    el("p", { class: "muted" }, `${report.questions_evaluated} questions`),
    el("div", { class: "scroll" }, table),
    el("div", { class: "plots" }, ...report.plots.map((name) => el("figure", {},
      el("img", { src: `/eval/plots/${encodeURIComponent(name)}`, alt: name }), el("figcaption", {}, name)))),
    report.report ? el("details", {}, el("summary", {}, "report.md"), el("pre", {}, report.report)) : null,
  ];
}

// ---- start -------------------------------------------------------------------------------------

document.getElementById("ask-form").addEventListener("submit", ask);
document.getElementById("compare-form").addEventListener("submit", compare);
window.addEventListener("hashchange", () => showTab(location.hash.slice(1)));
showTab(location.hash.slice(1));
loadIndex();
