// corral's web board. Everything that comes from panes is set with
// textContent or as CSSOM values, never parsed as HTML.
"use strict";

const order = ["blocked", "error", "done", "working", "idle", "exited", "lost"];
// The groups of a host's panes, in board order: the ones that need a
// person first, always whole; the others paged, pageSize at a time.
const groups = [["attention", ["blocked", "error"]], ["done", ["done"]], ["working", ["working"]], ["idle", ["idle"]],
  ["exited", ["exited"]], ["lost", ["lost"]], ["other", []]];
const pageSize = 50;
const byKey = new Map(); // every pane by host:id, as the server sends them
let panes = []; // every pane in board order
let fleetHosts = []; // in a fleet, every host ({host, reachable}), one with no pane too
let shown = []; // the panes on the page, in order: what j/k move through
let selected = null; // a pane's key
let filter = "";
let notifyOn = false;
const lastState = new Map();
const cache = new Map(); // key -> {json, el}: a card is built again only when its pane changed
const pages = new Map(); // group id -> how many of its cards are shown
const blocks = new Map(); // group id -> its section
const collapsed = new Set(); // group ids whose cards are hidden (a click on the heading)
// ?render=all draws every card again on every message, ungrouped and
// unpaged, as the board once did: a baseline to measure against.
const renderAll = new URLSearchParams(location.search).get("render") === "all";
// What the board did, for a person (or a test) asking in the console.
const stats = window.corralBoard = {messages: 0, built: 0, renders: 0, lastRenderMs: 0, maxRenderMs: 0, firstRender: 0,
  lastMessageMs: 0, messageMs: [], longTasks: 0, longTaskMs: 0, longestTaskMs: 0};
try {
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      stats.longTasks++;
      stats.longTaskMs += e.duration;
      stats.longestTaskMs = Math.max(stats.longestTaskMs, e.duration);
    }
  }).observe({type: "longtask", buffered: true});
} catch (e) { /* no long task timing in this browser */ }

function keyOf(p) { return (p.host || "") + ":" + p.id; }

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function ago(since) {
  const s = Math.max(0, (Date.now() - Date.parse(since)) / 1000);
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  return Math.floor(s / 3600) + "h";
}

async function post(id, what, body) {
  const r = await fetch("api/panes/" + encodeURIComponent(id) + "/" + what, {
    method: "POST", headers: {"Content-Type": "application/json", "X-Corral": "1"}, body: JSON.stringify(body),
  });
  if (!r.ok) {
    let msg = r.statusText;
    try { msg = (await r.json()).error; } catch (e) { /* not JSON */ }
    document.getElementById("summary").textContent = id + ": " + msg;
  }
}

// previewRows is how many rows of a screen a card shows: the bottom ones,
// where agents draw their prompts, blank rows below the last text dropped.
const previewRows = 18;

// A preview is scaled so the pane's whole width fits its card: the font
// size follows the card's width (a container query unit) and the pane's
// columns (--cols).
function screen(rows, cols) {
  const pre = el("pre", "screen");
  pre.style.setProperty("--cols", String(Math.max(20, cols || 80)));
  rows = rows || [];
  let end = rows.length;
  while (end > 0 && !(rows[end - 1] || []).some(r => r.t.trim() !== "" || r.b)) end--;
  rows = rows.slice(Math.max(0, end - previewRows), end);
  for (const row of rows) {
    for (const run of row || []) {
      const s = el("span", [run.B ? "b" : "", run.F ? "f" : "", run.I ? "i" : "", run.U ? "u" : ""].join(" ").trim(), run.t);
      let fg = run.f, bg = run.b;
      if (run.R) { [fg, bg] = [bg || "#dddddd", fg || "#000000"]; }
      if (fg) s.style.color = fg;
      if (bg) s.style.backgroundColor = bg;
      pre.appendChild(s);
    }
    pre.appendChild(document.createTextNode("\n"));
  }
  const wrap = el("div", "screenwrap");
  wrap.append(pre);
  return wrap;
}

const answerLabels = {yes: "Yes", always: "Always", no: "No", cancel: "Cancel"};

// answerButtons are the prompt's own choices: a question's numbered
// options (with their labels), a permission prompt's named answers, and
// the choices the prompt's rule declares (with their labels).
function answerButtons(p) {
  const out = [];
  const add = (choice, text, cls, title) => {
    const b = el("button", "answer " + cls, text);
    b.dataset.choice = choice;
    if (title) b.title = title;
    b.addEventListener("click", ev => { ev.stopPropagation(); post(p.id, "answer", {choice: choice}); });
    b.disabled = !!p.unreachable;
    out.push(b);
  };
  const names = p.answers || [], opts = p.options || [];
  const question = p.kind === "question";
  if (question || !names.length || p.kind === "") {
    for (const o of opts) add(o.n, o.label ? o.n + " " + o.label : o.n, "option", o.label ? "answer " + o.n + ": " + o.label : "answer " + o.n);
  }
  for (const n of names) {
    if (question && opts.length && n !== "cancel") continue; // a question with options is answered by them
    add(n, answerLabels[n] || n, n === "no" || n === "cancel" ? "negative" : "");
  }
  // The prompt's own choices, which its rule declares, by their labels.
  for (const c of (p.prompt && p.prompt.choices) || []) add(c.name, c.label, "choice", "answer " + c.name + ": " + c.label);
  return out;
}

function metaText(p) {
  return (p.host ? p.host + " · " : "") + p.agent + (p.integration ? " (hooks)" : "") + " · " + ago(p.since) + " · " + p.cwd;
}

function card(p) {
  stats.built++;
  const key = keyOf(p);
  const c = el("section", "card state-" + p.state);
  c.dataset.id = p.id;
  c.dataset.key = key;
  if (key === selected) c.classList.add("selected");
  c.addEventListener("click", () => select(key));
  const head = el("div", "head");
  head.append(el("span", "name", p.name || p.id), el("span", "state", p.state + (p.kind ? "/" + p.kind : "")),
    el("span", "meta", metaText(p)));
  c.append(head);
  if (p.worktree) {
    const w = p.worktree;
    const parts = ["⎇ " + w.branch];
    if (w.ahead) parts.push("↑" + w.ahead);
    if (w.behind) parts.push("↓" + w.behind);
    parts.push(w.dirty ? "dirty" : "clean");
    const d = el("div", "worktree" + (w.dirty ? " dirty" : ""), parts.join(" "));
    d.title = w.path + " (from " + w.base + ")" + (w.error ? ": " + w.error : "");
    c.append(d);
  }
  if (p.approval) {
    const a = el("div", "approval " + p.approval.decision, p.approval.text + " · " + ago(p.approval.time) + " ago");
    a.title = "policy " + p.approval.policy;
    c.append(a);
  }
  if (p.integration_error && !ended(p)) c.append(el("div", "integration", "No hooks: " + p.integration_error));
  if (p.message) c.append(el("div", "message", p.message));
  if (p.progress !== null && p.progress !== undefined) {
    const bar = el("div", "progress"), fill = el("div");
    fill.style.width = Math.max(0, Math.min(100, p.progress)) + "%";
    bar.append(fill);
    c.append(bar);
  }
  const children = (p.records || []).filter(r => r.id);
  if (children.length) {
    const ul = el("ul", "records");
    for (const r of children) {
      const li = el("li", "", r.id + " · " + r.state + (r.message ? " · " + r.message : "") + (r.progress !== null ? " · " + r.progress + "%" : ""));
      li.style.marginLeft = (r.id.split("/").length - 1) + "em";
      ul.append(li);
    }
    c.append(ul);
  }
  c.append(screen(p.screen, p.cols));
  // Another host's screen is a copy fetched now and then: say how old.
  if (p.screen_at) c.append(el("div", "screenage", screenAge(p)));
  const actions = el("div", "actions");
  if (p.state === "blocked") actions.append(...answerButtons(p));
  if (!ended(p)) {
    const k = el("button", "kill", "Kill");
    k.addEventListener("click", ev => { ev.stopPropagation(); if (confirm("Kill " + (p.name || p.id) + "?")) post(p.id, "kill", {}); });
    k.disabled = !!p.unreachable;
    actions.append(k);
  }
  c.append(actions);
  const form = el("form", "send");
  const input = el("input");
  input.placeholder = "type into " + (p.name || p.id) + " and press Enter";
  const btn = el("button", "", "Send");
  const blocked = p.state === "blocked" || ended(p) || !!p.unreachable;
  input.disabled = btn.disabled = blocked;
  form.append(input, btn);
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    if (!input.value) return;
    post(p.id, "send", {text: input.value, enter: true});
    input.value = "";
  });
  c.append(form);
  if (p.unreachable) c.append(el("div", "reason", "Host " + p.host + " is unreachable: its actions are off until it answers again"));
  else if (p.state === "blocked") c.append(el("div", "reason", "Sending is off while it waits for an answer: " + (p.message || p.kind || "a prompt")));
  return c;
}

function screenAge(p) { return "screen from " + p.host + ", " + ago(p.screen_at) + " ago"; }

// ended: a pane whose program is gone (exited, or lost: corral restore
// brings it back).
function ended(p) { return p.state === "exited" || p.state === "lost"; }

// hostsOf lists the panes' hosts in order ("" alone outside a fleet).
function hostsOf(list) {
  return [...new Set(list.map(p => p.host || "").concat(fleetHosts.map(h => h.host)))].sort();
}

function rank(state) {
  const i = order.indexOf(state);
  return i < 0 ? order.length : i;
}

function groupOf(state) {
  const g = groups.find(([, states]) => states.includes(state));
  return g ? g[0] : "other";
}

// matches: every word of the filter is in the pane's name, id, agent,
// state, kind, message, host or folder.
function matches(p, words) {
  if (!words.length) return true;
  const hay = [p.name, p.id, p.agent, p.state, p.kind, p.message, p.host, p.cwd].join(" ").toLowerCase();
  return words.every(w => hay.includes(w));
}

// setText changes a node's text only when it differs.
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

// reconcile makes parent's children exactly nodes, moving only what is
// out of place: cards that stay where they were are not touched.
function reconcile(parent, nodes) {
  let cur = parent.firstChild;
  for (const n of nodes) {
    if (n === cur) { cur = cur.nextSibling; continue; }
    parent.insertBefore(n, cur);
  }
  while (cur) { const next = cur.nextSibling; cur.remove(); cur = next; }
}

// cardFor is a pane's card: the one on the page unless the pane changed.
// A card whose send box holds a half-typed line is kept as it is.
function cardFor(p) {
  const key = keyOf(p);
  const json = JSON.stringify(p);
  const had = cache.get(key);
  if (had && !renderAll) {
    if (had.json === json) return had.el;
    const a = document.activeElement;
    if (a && a.tagName === "INPUT" && had.el.contains(a) && a.value) return had.el;
  }
  const c = card(p);
  cache.set(key, {json: json, el: c});
  return c;
}

// block is a group's section: a heading with its counts, its cards, and
// a button for the next page.
function block(id) {
  let b = blocks.get(id);
  if (!b) {
    const section = el("div", "group"), h = el("h2", "group"), cards = el("div", "cards"), more = el("button", "more");
    section.dataset.group = id;
    h.title = "show or hide these cards";
    h.addEventListener("click", () => { if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id); render(); });
    more.type = "button";
    more.addEventListener("click", () => { pages.set(id, (pages.get(id) || pageSize) + pageSize); render(); });
    section.append(h, cards);
    b = {section, h, cards, more};
    blocks.set(id, b);
  }
  return b;
}

let firstPending = false;

function render() {
  const t0 = performance.now();
  stats.renders++;
  const root = document.getElementById("groups");
  const words = filter.toLowerCase().split(/\s+/).filter(w => w);
  const top = [];
  shown = [];
  // In a fleet, panes are grouped by host first, each host with its
  // reachability and its own groups.
  for (const host of hostsOf(panes)) {
    const mine = panes.filter(p => (p.host || "") === host);
    if (host) {
      const known = fleetHosts.find(h => h.host === host);
      const down = mine.length ? mine.some(p => p.unreachable) : !!known && !known.reachable;
      const b = block("host:" + host);
      b.h.className = "host" + (down ? " unreachable" : "");
      setText(b.h, host + (!mine.length ? (down ? " — unreachable, no panes" : " — no panes") : down ? " — unreachable: last known states" : ""));
      reconcile(b.section, [b.h]);
      top.push(b.section);
    }
    if (renderAll) {
      const b = block(host + "/all");
      const cards = mine.map(cardFor);
      shown.push(...mine);
      reconcile(b.cards, cards);
      reconcile(b.section, [b.cards]);
      top.push(b.section);
      continue;
    }
    for (const [name, states] of groups) {
      const all = mine.filter(p => name === "other" ? groupOf(p.state) === "other" : states.includes(p.state));
      if (!all.length) continue;
      const list = all.filter(p => matches(p, words));
      const id = host + "/" + name;
      const b = block(id);
      const counts = new Map();
      for (const p of all) counts.set(p.state, (counts.get(p.state) || 0) + 1);
      const closed = collapsed.has(id) && !words.length;
      setText(b.h, (closed ? "▸ " : "") + [...counts].map(([s, n]) => n + " " + s).join(" · ") + (words.length ? " — " + list.length + " match" : ""));
      b.section.className = "group group-" + name;
      const limit = closed ? 0 : name === "attention" ? Infinity : (pages.get(id) || pageSize);
      const page = list.slice(0, limit);
      shown.push(...page);
      reconcile(b.cards, page.map(cardFor));
      const rest = list.length - page.length;
      if (rest > 0) setText(b.more, "Show " + Math.min(rest, pageSize) + " more (" + rest + " not shown)");
      reconcile(b.section, closed ? [b.h] : rest > 0 ? [b.h, b.cards, b.more] : [b.h, b.cards]);
      top.push(b.section);
    }
  }
  reconcile(root, top);
  const blocked = panes.filter(p => p.state === "blocked").length;
  document.title = (blocked ? "(" + blocked + " blocked) " : "") + "corral";
  const counts = order.map(s => [s, panes.filter(p => p.state === s).length]).filter(([, n]) => n);
  const summary = document.getElementById("summary");
  summary.replaceChildren(el("span", "", panes.length + " panes"));
  for (const [s, n] of counts) summary.append(" · ", el("span", "count state-" + s, n + " " + s));
  if (words.length) summary.append(" · ", el("span", "", shown.length + " shown"));
  const ms = performance.now() - t0;
  stats.lastRenderMs = ms;
  stats.maxRenderMs = Math.max(stats.maxRenderMs, ms);
  if (!firstPending && panes.length) {
    // The first state on screen: after the frame that lays it out and
    // paints it.
    firstPending = true;
    requestAnimationFrame(() => setTimeout(() => { stats.firstRender = performance.now(); }));
  }
}

// select marks one card as selected, touching only the two cards.
function select(key) {
  if (key === selected) return;
  for (const k of [selected, key]) {
    const c = cache.get(k);
    if (c) c.el.classList.toggle("selected", k === key);
  }
  selected = key;
}

// refreshTimes keeps each card's time in state current without
// building it again.
function refreshTimes() {
  for (const p of shown) {
    const c = cache.get(keyOf(p));
    const meta = c && c.el.querySelector(".head .meta");
    if (meta) setText(meta, metaText(p));
    const age = c && p.screen_at && c.el.querySelector(".screenage");
    if (age) setText(age, screenAge(p));
  }
}

function beep() {
  try {
    const ctx = new AudioContext(), o = ctx.createOscillator(), g = ctx.createGain();
    o.frequency.value = 880; g.gain.value = 0.1;
    o.connect(g); g.connect(ctx.destination); o.start(); o.stop(ctx.currentTime + 0.15);
  } catch (e) { /* no audio */ }
}

// blockSettle is how long a new block must last before it is notified.
const blockSettle = 1000;

function notice(p) {
  const key = keyOf(p);
  const was = lastState.get(key);
  if (notifyOn && p.state === "blocked" && was && was !== "blocked") {
    // A block that lasts: a policy's rule answers some at once, and the
    // agent may show "blocked" for a moment first.
    setTimeout(() => {
      if (lastState.get(key) !== "blocked") return;
      try { new Notification("corral: " + (p.host ? p.host + ":" : "") + (p.name || p.id) + " is blocked", {body: p.agent + " · " + (p.message || p.kind)}); } catch (e) { /* denied */ }
      beep();
    }, blockSettle);
  }
  lastState.set(key, p.state);
}

// update takes a message: the whole state ("state", on connecting) or the
// panes that changed and the keys of those gone ("delta").
function update(m) {
  const gone = new Set(m.gone || []);
  if (m.type === "state") {
    const now = new Set((m.panes || []).map(keyOf));
    for (const k of byKey.keys()) if (!now.has(k)) gone.add(k);
  }
  for (const k of gone) { byKey.delete(k); cache.delete(k); lastState.delete(k); }
  if ("hosts" in m) fleetHosts = m.hosts || [];
  for (const p of m.panes || []) {
    notice(p);
    byKey.set(keyOf(p), p);
  }
  const all = [...byKey.values()];
  const hosts = hostsOf(all);
  panes = all.map((p, i) => [p, i]).sort(([a, i], [b, j]) =>
    hosts.indexOf(a.host || "") - hosts.indexOf(b.host || "") || rank(a.state) - rank(b.state) || i - j).map(([p]) => p);
  render();
  if (!shown.some(p => keyOf(p) === selected)) select(shown.length ? keyOf(shown[0]) : null);
}

function connect() {
  // Every address is relative to the board's own /b/ID/ (its cookie's path).
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + location.pathname.replace(/[^/]*$/, "") + "ws");
  ws.onmessage = ev => {
    const t0 = performance.now();
    const m = JSON.parse(ev.data);
    if (m.type === "state" || m.type === "delta") update(m);
    stats.messages++;
    stats.lastMessageMs = performance.now() - t0;
    if (stats.messageMs.length < 10000) stats.messageMs.push(stats.lastMessageMs);
  };
  ws.onclose = () => { document.getElementById("summary").textContent = "disconnected; retrying…"; setTimeout(connect, 1000); };
}

function move(d) {
  if (!shown.length) return;
  const i = Math.max(0, Math.min(shown.length - 1, shown.findIndex(p => keyOf(p) === selected) + d));
  select(keyOf(shown[i]));
  const c = document.querySelector(".card.selected");
  if (c) c.scrollIntoView({block: "nearest"});
}

const filterBox = document.getElementById("filter");
// The / that opens the filter is not typed into it (some input paths
// deliver its character after the focus moved).
let slashOpened = false;
filterBox.addEventListener("beforeinput", ev => { if (slashOpened && ev.data === "/") ev.preventDefault(); slashOpened = false; });
document.addEventListener("keyup", ev => { if (ev.key === "/") slashOpened = false; });
filterBox.addEventListener("input", () => { filter = filterBox.value; render(); if (!shown.some(p => keyOf(p) === selected)) select(shown.length ? keyOf(shown[0]) : null); });
filterBox.addEventListener("keydown", ev => {
  if (ev.key === "Escape") { filterBox.value = ""; filter = ""; render(); filterBox.blur(); }
  if (ev.key === "Enter") { ev.preventDefault(); filterBox.blur(); }
});

document.addEventListener("keydown", ev => {
  if (ev.target.tagName === "INPUT") return;
  const p = shown.find(x => keyOf(x) === selected);
  switch (ev.key) {
    case "/": ev.preventDefault(); slashOpened = true; filterBox.focus(); filterBox.select(); break;
    case "Escape": if (filter) { filterBox.value = ""; filter = ""; render(); } break;
    case "j": move(1); break;
    case "k": move(-1); break;
    case "g": {
      const i = shown.findIndex(x => keyOf(x) === selected);
      const next = shown.slice(i + 1).concat(shown.slice(0, i + 1)).find(x => x.state === "blocked");
      if (next) { select(keyOf(next)); move(0); }
      break;
    }
    case "y": if (p && p.state === "blocked" && !p.unreachable) post(p.id, "answer", {choice: "yes"}); break;
    case "n": if (p && p.state === "blocked" && !p.unreachable) post(p.id, "answer", {choice: "no"}); break;
    case "1": case "2": case "3": case "4": case "5": case "6": case "7": case "8": case "9":
      if (p && p.state === "blocked" && !p.unreachable && (p.options || []).some(o => o.n === ev.key)) post(p.id, "answer", {choice: ev.key});
      break;
    case "Enter": {
      const input = document.querySelector(".card.selected input");
      if (input && !input.disabled) { ev.preventDefault(); input.focus(); }
      break;
    }
  }
});

document.getElementById("notify").addEventListener("click", async () => {
  if (!("Notification" in window)) return;
  notifyOn = (await Notification.requestPermission()) === "granted";
  document.getElementById("notify").textContent = notifyOn ? "Notifications on" : "Notifications blocked";
});

setInterval(refreshTimes, 5000); // times in state
connect();
