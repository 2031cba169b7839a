// corral's web board. Everything that comes from panes is set with
// textContent or as CSSOM values, never parsed as HTML.
"use strict";

const order = ["blocked", "error", "done", "working", "idle", "exited"];
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

function screen(rows) {
  const pre = el("pre", "screen");
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
  return pre;
}

function card(p) {
  const c = el("section", "card state-" + p.state);
  c.dataset.id = p.id;
  if (p.id === selected) c.classList.add("selected");
  c.addEventListener("click", () => { selected = p.id; render(); });
  const head = el("div", "head");
  head.append(el("span", "name", p.name || p.id), el("span", "state", p.state + (p.kind ? "/" + p.kind : "")),
    el("span", "meta", p.agent + (p.integration ? " (hooks)" : "") + " · " + ago(p.since) + " · " + p.cwd));
  c.append(head);
  if (p.integration_error && p.state !== "exited") c.append(el("div", "integration", "No hooks: " + p.integration_error));
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
  c.append(screen(p.screen));
  const actions = el("div", "actions");
  if (p.state === "blocked") {
    for (const a of p.answers) {
      const b = el("button", "answer", a[0].toUpperCase() + a.slice(1));
      b.addEventListener("click", ev => { ev.stopPropagation(); post(p.id, "answer", {choice: a}); });
      actions.append(b);
    }
    for (const n of ["1", "2", "3"]) {
      const b = el("button", "answer option", n);
      b.addEventListener("click", ev => { ev.stopPropagation(); post(p.id, "answer", {choice: n}); });
      actions.append(b);
    }
  }
  if (p.state !== "exited") {
    const k = el("button", "kill", "Kill");
    k.addEventListener("click", ev => { ev.stopPropagation(); if (confirm("Kill " + (p.name || p.id) + "?")) post(p.id, "kill", {}); });
    actions.append(k);
  }
  c.append(actions);
  const form = el("form", "send");
  const input = el("input");
  input.placeholder = "type into " + (p.name || p.id) + " and press Enter";
  const btn = el("button", "", "Send");
  const blocked = p.state === "blocked" || p.state === "exited";
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

// hostsOf lists the panes' hosts in order ("" alone outside a fleet).
function hostsOf(list) {
  return [...new Set(list.map(p => p.host || ""))].sort();
}

function render() {
  const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest(".card");
  if (focused && focused.querySelector("input") === document.activeElement) return; // don't steal a half-typed line
  const root = document.getElementById("groups");
  root.replaceChildren();
  // In a fleet, panes are grouped by host first, each host with its reachability.
  for (const host of hostsOf(panes)) {
    const mine = panes.filter(p => (p.host || "") === host);
    if (host) {
      const down = mine.some(p => p.unreachable);
      root.append(el("h2", "host" + (down ? " unreachable" : ""), host + (down ? " — unreachable: last known states" : "")));
    }
    for (const state of order) {
      const group = mine.filter(p => p.state === state);
      if (!group.length) continue;
      root.append(el(host ? "h3" : "h2", "", state + " (" + group.length + ")"));
      const cards = el("div", "cards");
      cards.dataset.state = state;
      for (const p of group) cards.append(card(p));
      root.append(cards);
    }
  }
  const blocked = panes.filter(p => p.state === "blocked").length;
  document.title = (blocked ? "(" + blocked + " blocked) " : "") + "corral";
  document.getElementById("summary").textContent = panes.length + " panes · " + blocked + " blocked";
}

function beep() {
  try {
    const ctx = new AudioContext(), o = ctx.createOscillator(), g = ctx.createGain();
    o.frequency.value = 880; g.gain.value = 0.1;
    o.connect(g); g.connect(ctx.destination); o.start(); o.stop(ctx.currentTime + 0.15);
  } catch (e) { /* no audio */ }
}

function update(next) {
  for (const p of next) {
    const was = lastState.get(p.id);
    if (notifyOn && p.state === "blocked" && was && was !== "blocked") {
      try { new Notification("corral: " + (p.host ? p.host + ":" : "") + (p.name || p.id) + " is blocked", {body: p.agent + " · " + (p.message || p.kind)}); } catch (e) { /* denied */ }
      beep();
    }
    lastState.set(p.id, p.state);
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
