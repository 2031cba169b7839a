// corral's web board. Everything that comes from panes is set with
// textContent or as CSSOM values, never parsed as HTML.
"use strict";

const order = ["blocked", "error", "done", "working", "idle", "exited", "lost"];
let panes = [];
let selected = null;
let notifyOn = false;
const lastState = new Map();

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
// options (with their labels), a permission prompt's named answers.
function answerButtons(p) {
  const out = [];
  const add = (choice, text, cls, title) => {
    const b = el("button", "answer " + cls, text);
    b.dataset.choice = choice;
    if (title) b.title = title;
    b.addEventListener("click", ev => { ev.stopPropagation(); post(p.id, "answer", {choice: choice}); });
    out.push(b);
  };
  const names = p.answers || [], opts = p.options || [];
  const question = p.kind === "question";
  if (question || !names.length || p.kind === "") {
    for (const o of opts) add(o.n, o.label ? o.n + " " + o.label : o.n, "option", o.label ? "answer " + o.n + ": " + o.label : "answer " + o.n);
  }
  for (const n of names) {
    if (question && n !== "cancel") continue; // a question is answered by its options
    add(n, answerLabels[n] || n, n === "no" || n === "cancel" ? "negative" : "");
  }
  return out;
}

function card(p) {
  const c = el("section", "card state-" + p.state);
  c.dataset.id = p.id;
  if (p.id === selected) c.classList.add("selected");
  c.addEventListener("click", () => { selected = p.id; render(); });
  const head = el("div", "head");
  head.append(el("span", "name", p.name || p.id), el("span", "state", p.state + (p.kind ? "/" + p.kind : "")),
    el("span", "meta", (p.host ? p.host + " · " : "") + p.agent + (p.integration ? " (hooks)" : "") + " · " + ago(p.since) + " · " + p.cwd));
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
  const actions = el("div", "actions");
  if (p.state === "blocked") actions.append(...answerButtons(p));
  if (!ended(p)) {
    const k = el("button", "kill", "Kill");
    k.addEventListener("click", ev => { ev.stopPropagation(); if (confirm("Kill " + (p.name || p.id) + "?")) post(p.id, "kill", {}); });
    actions.append(k);
  }
  c.append(actions);
  const form = el("form", "send");
  const input = el("input");
  input.placeholder = "type into " + (p.name || p.id) + " and press Enter";
  const btn = el("button", "", "Send");
  const blocked = p.state === "blocked" || ended(p);
  input.disabled = btn.disabled = blocked;
  form.append(input, btn);
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    if (!input.value) return;
    post(p.id, "send", {text: input.value, enter: true});
    input.value = "";
  });
  c.append(form);
  if (p.state === "blocked") c.append(el("div", "reason", "Sending is off while it waits for an answer: " + (p.message || p.kind || "a prompt")));
  return c;
}

// ended: a pane whose program is gone (exited, or lost: corral restore
// brings it back).
function ended(p) { return p.state === "exited" || p.state === "lost"; }

// hostsOf lists the panes' hosts in order ("" alone outside a fleet).
function hostsOf(list) {
  return [...new Set(list.map(p => p.host || ""))].sort();
}

function render() {
  const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest(".card");
  if (focused && focused.querySelector("input") === document.activeElement) return; // don't steal a half-typed line
  // One grid for every pane (of a host), blocked first: the width holds
  // as many cards as fit, whatever their states.
  const root = document.getElementById("groups");
  root.replaceChildren();
  // In a fleet, panes are grouped by host first, each host with its
  // reachability and its own grid.
  for (const host of hostsOf(panes)) {
    const mine = panes.filter(p => (p.host || "") === host);
    if (host) {
      const down = mine.some(p => p.unreachable);
      root.append(el("h2", "host" + (down ? " unreachable" : ""), host + (down ? " — unreachable: last known states" : "")));
    }
    const cards = el("div", "cards");
    for (const p of mine) cards.append(card(p));
    root.append(cards);
  }
  const blocked = panes.filter(p => p.state === "blocked").length;
  document.title = (blocked ? "(" + blocked + " blocked) " : "") + "corral";
  const counts = order.map(s => [s, panes.filter(p => p.state === s).length]).filter(([, n]) => n);
  const summary = document.getElementById("summary");
  summary.replaceChildren(el("span", "", panes.length + " panes"));
  for (const [s, n] of counts) summary.append(" · ", el("span", "count state-" + s, n + " " + s));
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

function update(next) {
  for (const p of next) {
    const key = (p.host || "") + ":" + p.id;
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
  panes = hostsOf(next).flatMap(h => order.flatMap(s => next.filter(p => (p.host || "") === h && p.state === s)));
  if (!panes.some(p => p.id === selected)) selected = panes.length ? panes[0].id : null;
  render();
}

function connect() {
  // Every address is relative to the board's own /b/ID/ (its cookie's path).
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + location.pathname.replace(/[^/]*$/, "") + "ws");
  ws.onmessage = ev => { const m = JSON.parse(ev.data); if (m.type === "state") update(m.panes || []); };
  ws.onclose = () => { document.getElementById("summary").textContent = "disconnected; retrying…"; setTimeout(connect, 1000); };
}

function move(d) {
  if (!panes.length) return;
  const i = Math.max(0, Math.min(panes.length - 1, panes.findIndex(p => p.id === selected) + d));
  selected = panes[i].id;
  render();
  const c = document.querySelector(".card.selected");
  if (c) c.scrollIntoView({block: "nearest"});
}

document.addEventListener("keydown", ev => {
  if (ev.target.tagName === "INPUT") return;
  const p = panes.find(x => x.id === selected);
  switch (ev.key) {
    case "j": move(1); break;
    case "k": move(-1); break;
    case "g": {
      const i = panes.findIndex(x => x.id === selected);
      const next = panes.slice(i + 1).concat(panes.slice(0, i + 1)).find(x => x.state === "blocked");
      if (next) { selected = next.id; render(); }
      break;
    }
    case "y": if (p && p.state === "blocked") post(p.id, "answer", {choice: "yes"}); break;
    case "n": if (p && p.state === "blocked") post(p.id, "answer", {choice: "no"}); break;
    case "1": case "2": case "3": case "4": case "5": case "6": case "7": case "8": case "9":
      if (p && p.state === "blocked" && (p.options || []).some(o => o.n === ev.key)) post(p.id, "answer", {choice: ev.key});
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

setInterval(render, 5000); // times in state
connect();
