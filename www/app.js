// The demo page. Two ways to run the same order process:
//
// - local (default): the wasm engine in this tab, the host loop (`apply`) and the outbox
//   dispatcher from pkg/, processes stored in IndexedDB, and a fake payment gateway;
// - worker: when the page is served by the Cloudflare Worker, events can go to its HTTP API
//   (`POST /processes/:id/events` with an `Idempotency-Key` header) instead; see remote.js.
//
// The page holds no business logic: every outcome shown comes from the engine.

import { Machine, loadAnalysis, newEventId, version } from "../pkg/dist/js/web.js";
import { apply } from "../pkg/dist/js/host.js";
import { dispatch, nextDueAt } from "../pkg/dist/js/dispatch.js";
import { openIndexedDBStore } from "../pkg/dist/js/stores/indexeddb.js";
import { FakeGateway, gatewayEffects } from "../pkg/dist/js/testing/fake-gateway.js";
import { parseDefinition, render, activePaths, findingPath } from "./diagram.js";
import { detectWorker, RemoteProcess } from "./remote.js";

const VARIANTS = {
  robust: { file: "machines/order-robust.json", gateway: "keys", name: "robust (set)" },
  fragile: { file: "machines/order-fragile.json", gateway: "keys", name: "fragile (counter)" },
  "robust-nokeys": { file: "machines/order-robust-nokeys.json", gateway: "nokeys", name: "robust, gateway without keys" },
  parallel: { file: "machines/order-parallel.json", gateway: "keys", name: "parallel (payment ∥ fulfilment)" },
};
// The order's process ids: "order-42-robust" and so on in this browser; on the Worker, whose
// D1 database other visitors share, an order number made for this browser (reset makes a new one).
const ORDER = "order-42";
const processId = (variant) => `${useWorker() ? settings.workerOrder : ORDER}-${variant}`;
const SETTINGS_KEY = "idem-demo";
const DISPATCH_TIMEOUT_MS = 1500; // how long the dispatcher waits for the gateway before "unknown"
const FAULTS = { timeout: "timeout", drop: "drop", fail: "transient", decline: "permanent" };

const $ = (id) => document.getElementById(id);

// "Prove it": the scenario `machine.check` explores in the page, built from the events the page
// lets a visitor send, and bounds that keep it well under a second in a browser tab (no effect
// fault: with one the robust order takes about four times as long). The CLI proves more.
const PROVE_SCENARIO = [
  { id: "pay-1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 60 } },
  { id: "pay-2", type: "PAYMENT_PARTIAL", payload: { paymentId: "p2", amount: 40 } },
  { id: "ship-1", type: "SHIP", payload: {} },
  { id: "cancel-1", type: "CANCEL", payload: {} },
];
const PROVE_BOUNDS = { reorder: "all", expiries: 1, crashes: 1, effectFaults: 0, hosts: 2, maxStates: 200_000, timeout: 10 };

// ---------------------------------------------------------------- settings
// UI state that is not a process: which machine is shown, the clock offset, the last event
// sent (so "deliver it again" works after a reload), the list of deliveries and the fake
// gateways' books. Processes themselves live in IndexedDB.
function loadSettings() {
  try {
    return { ...defaults(), ...JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? "{}") };
  } catch {
    return defaults();
  }
}
function defaults() {
  return { variant: "robust", target: "local", workerOrder: null, clockOffset: 0, last: {}, lastPayment: {}, history: {}, gateways: {}, calls: {}, seq: 1 };
}
const settings = loadSettings();
const saveSettings = () => localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));

// The engine's clock in this tab: real time plus what "advance the clock" added (the Worker
// keeps its own time).
const clock = () => Date.now() + (useWorker() ? 0 : settings.clockOffset);

// ---------------------------------------------------------------- gateways
function restoreGateway(kind) {
  const gw = new FakeGateway({ idempotent: kind === "keys", timeoutMs: null });
  const saved = settings.gateways[kind];
  if (saved) {
    gw.charges = new Map(saved.charges);
    gw.keys = new Map(saved.keys);
    gw.seq = saved.seq;
    gw.requests = saved.requests;
  }
  return gw;
}
const gateways = { keys: restoreGateway("keys"), nokeys: restoreGateway("nokeys") };
function saveGateways() {
  for (const [kind, gw] of Object.entries(gateways)) {
    settings.gateways[kind] = { charges: [...gw.charges], keys: [...gw.keys], seq: gw.seq, requests: gw.requests };
  }
  saveSettings();
}

// The dispatcher's handlers: the charge effect's payload is the gateway request
// (`{ amount, currency }`); the key the engine chose is the idempotency key and reference.
function effectsFor(variant) {
  const pid = processId(variant);
  const gw = gateways[VARIANTS[variant].gateway];
  const fx = gatewayEffects(gw);
  const count = () => (settings.calls[pid] = (settings.calls[pid] ?? 0) + 1);
  return {
    handlers: {
      charge: (payload, meta) => (count(), fx.handlers.charge(payload, meta)),
      ship: async (_payload, { key }) => ({ shipment: `sh_${key.slice(-6)}` }),
    },
    verifiers: { charge: (payload, meta) => (count(), fx.verifiers.charge(payload, meta)) },
  };
}

// ---------------------------------------------------------------- engine state
const machines = {}; // variant -> { machine, def, parsed, findings }
let store = null;
let remote = null; // RemoteProcess when the Worker API is reachable
let workerInfo = null;
let lastView = null;
const timers = {};
let queue = Promise.resolve();
let pending = 0;
/**
 * Run UI operations one after another (clicks queue up instead of interleaving).
 * `body[data-busy]` counts the queued operations (the end-to-end tests wait for "0").
 */
function serial(fn) {
  document.body.dataset.busy = String(++pending);
  queue = queue
    .then(() => fn())
    .catch(showError)
    .finally(() => (document.body.dataset.busy = String(--pending)));
  return queue;
}

async function loadMachines() {
  // The hazard analysis is a second module: fetched alongside the definitions.
  const analysis = typeof loadAnalysis === "function" ? loadAnalysis() : null;
  analysis?.catch(() => {});
  await Promise.all(
    Object.entries(VARIANTS).map(async ([variant, v]) => {
      const def = await (await fetch(v.file)).json();
      const machine = new Machine(def);
      let findings = null;
      if (typeof machine.analyze === "function") {
        try {
          await analysis;
          findings = machine.analyze();
        } catch (err) {
          findings = [{ code: err.code ?? "analyze_failed", severity: "error", message: String(err.message ?? err) }];
        }
      }
      machines[variant] = { machine, def, parsed: parseDefinition(def), findings };
    }),
  );
}

const current = () => machines[settings.variant];
const pid = () => processId(settings.variant);
const useWorker = () => remote && settings.target === "worker";

// ---------------------------------------------------------------- deliveries
function history() {
  return (settings.history[pid()] ??= []);
}
function record(entry) {
  const h = history();
  h.unshift({ n: (h[0]?.n ?? 0) + 1, at: clock(), ...entry });
  h.length = Math.min(h.length, 60);
  saveSettings();
}

/** Send one event to the current process; returns the outcome (local) or the HTTP result (worker). */
async function deliver(event, { note = "", lost = false } = {}) {
  const wasKnown = history().some((h) => h.id === event.id && h.status === "applied");
  let out;
  if (useWorker()) {
    const res = await remote.send(pid(), event);
    const v = await remote.inspect(pid());
    out = { ...res.outcome, http: res.http, replayed: res.replayed, state: v?.value ?? null, revision: res.outcome.revision ?? v?.revision };
    followWorker();
  } else {
    out = await apply(store, current().machine, pid(), event, { now: clock });
    if (out.changed) kick(settings.variant);
  }
  record({
    id: event.id,
    type: event.type,
    payload: event.payload,
    status: out.status,
    http: out.http,
    replayed: out.replayed,
    response: out.response,
    error: out.error,
    note,
    lost,
    late: wasKnown && out.status !== "duplicate" && out.status !== "conflict",
  });
  return out;
}

// The Worker dispatches effects after its reply: look again a few times so the page follows.
function followWorker() {
  for (const ms of [300, 1000, 2500, 5000]) setTimeout(() => serial(refresh), ms);
}

function remember(event) {
  settings.last[pid()] = event;
  if (event.type === "PAYMENT_PARTIAL") settings.lastPayment[pid()] = event;
  saveSettings();
}

function paymentFromForm() {
  const paymentId = $("payment-id").value.trim() || `p${settings.seq}`;
  const amount = Number($("amount").value);
  return { id: newEventId(), type: "PAYMENT_PARTIAL", payload: { paymentId, amount } };
}
function advancePaymentForm(event) {
  // propose the next payment: p1 -> p2, and the rest of the order's total
  const m = /^(.*?)(\d+)$/.exec(event.payload.paymentId);
  if (m) $("payment-id").value = `${m[1]}${Number(m[2]) + 1}`;
  const total = lastView?.context?.total;
  const paid = lastView?.context?.paid;
  if (typeof total === "number" && typeof paid === "number" && total - paid > 0) $("amount").value = String(total - paid);
}

// ---------------------------------------------------------------- dispatcher
function kick(variant) {
  clearTimeout(timers[variant]);
  serial(() => runDispatch(variant));
}

async function runDispatch(variant) {
  if (useWorker()) return;
  const { machine } = machines[variant];
  const id = processId(variant);
  const report = await dispatch(store, machine, id, { ...effectsFor(variant), now: clock, timeoutMs: DISPATCH_TIMEOUT_MS });
  saveGateways();
  if (report.steps.length) logSteps(variant, report.steps);
  clearTimeout(timers[variant]);
  if (report.nextDueAt != null) {
    const wait = Math.max(0, Math.min(report.nextDueAt - clock(), 60_000));
    timers[variant] = setTimeout(() => kick(variant), wait + 20);
  }
  if (variant === settings.variant) await refresh();
}

function logSteps(variant, steps) {
  const log = (settings.dispatchLog ??= {});
  const list = (log[processId(variant)] ??= []);
  for (const s of steps) {
    const what =
      s.kind === "attempt"
        ? `attempt ${s.attempt} of ${s.type}: ${s.result}`
        : s.kind === "verify"
          ? `verify ${s.type} (attempt ${s.attempt}): ${s.result}`
          : `${s.kind} ${s.type ?? ""}: ${s.result}`;
    list.unshift(`${new Date(clock()).toISOString().slice(11, 19)} ${what}${s.state ? ` → ${stateText(s.state, machines[variant].parsed)}` : ""}`);
  }
  list.length = Math.min(list.length, 40);
  saveSettings();
  // a fault consumed by the gateway: back to normal in the selector
  const gw = gateways[VARIANTS[variant].gateway];
  if (gw.faults.length === 0) $("gateway-mode").value = "normal";
}

// ---------------------------------------------------------------- status line
// The active atomic states: one path for a flat machine, one per region in a parallel state
// ("open.payment.collecting ∥ open.fulfilment.packing"), regions in the order the definition
// writes them (a state value is a JSON object: its keys carry no order).
function stateText(value, parsed = current()?.parsed) {
  const paths = activePaths(value);
  const order = (p) => parsed?.all.findIndex((n) => n.path === p) ?? 0;
  const leaves = paths.filter((p) => !paths.some((q) => q.startsWith(`${p}.`))).sort((a, b) => order(a) - order(b));
  return leaves.length ? leaves.join(" ∥ ") : "—";
}

function describe(event, out, { lostRetry = false } = {}) {
  const id = `<code>${esc(shortId(event.id))}</code>`;
  const what = `${esc(event.type)}${event.type === "PAYMENT_PARTIAL" ? ` ${esc(event.payload?.paymentId)} (${esc(event.payload?.amount)})` : ""}`;
  const http = out.http ? ` · HTTP ${out.http}${out.replayed ? " · replayed" : ""}` : "";
  const resp = out.response != null ? ` · response <q>${esc(fmt(out.response))}</q>` : "";
  const code = out.error?.code ? ` <code>${esc(out.error.code)}</code>` : "";
  switch (out.status) {
    case "applied":
      return `${what} applied, id ${id} → <strong>${esc(stateText(out.state))}</strong>, revision ${out.revision}${resp}${http}`;
    case "duplicate":
      return `${lostRetry ? "The client retried with the same id: " : ""}id ${id} was already applied, so nothing changed; the first response comes back${resp}${http}`;
    case "conflict":
      return `id ${id} was already used for a different payload: not applied${code}${http}`;
    case "ignored":
      return `${what}, id ${id}: no transition of <strong>${esc(stateText(out.state))}</strong> accepts it (no such transition, or its guard said no); nothing written${http}`;
    case "rejected":
      return `${what} rejected${code}: ${esc(out.error?.message ?? "")}${http}`;
    default:
      return `${what}: ${esc(out.status ?? "no outcome")}${code}${http}`;
  }
}

let statusSeq = 0;
function setStatus(status, html) {
  const el = $("status");
  el.dataset.status = status;
  el.dataset.seq = String(++statusSeq);
  el.innerHTML = `<span class="badge ${esc(status)}">${esc(status)}</span> ${html}`;
}

function showError(err) {
  console.error(err);
  setStatus("error", esc(`${err?.code ? `${err.code}: ` : ""}${err?.message ?? err}`));
}

// ---------------------------------------------------------------- rendering
async function view(variant) {
  const { machine, def } = machines[variant];
  if (useWorker()) {
    // a process this browser never sent an event to does not exist on the Worker (skip the 404)
    const id = processId(variant);
    const v = settings.history[id]?.length ? await remote.inspect(id) : null;
    if (v) return v;
  } else {
    const row = await store.load(processId(variant));
    if (row) return { ...machine.inspect(row.snapshot), version: row.version, snapshot: row.snapshot };
  }
  return { value: initialValue(machines[variant].parsed.root), context: def.context ?? {}, ledger: [], outbox: [], revision: 0, fresh: true };
}

function initialValue(n) {
  if (!n.children.length) return null;
  if (n.parallel) return Object.fromEntries(n.children.map((c) => [c.key, initialValue(c) ?? {}]));
  const first = n.children.find((c) => c.key === n.initial) ?? n.children[0];
  const inner = initialValue(first);
  return inner === null ? first.key : { [first.key]: inner };
}

async function refresh() {
  const variant = settings.variant;
  const m = current();
  const v = await view(variant);
  const previous = lastView && lastView.variant === variant ? lastView : null;
  lastView = { ...v, variant };
  const now = clock();

  $("process-id").textContent = pid();
  $("state-name").textContent = stateText(v.value);
  $("revision").textContent = v.fresh ? "(not started: send an event)" : `revision ${v.revision}`;
  $("machine-desc").textContent = m.def.description ?? "";

  // diagram
  const findings = (m.findings ?? []).map((f) => ({ ...f, path: findingPath(f.state ?? f.path ?? f.statePath, m.def.id) }));
  // while a counterexample is stepped through, the diagram shows the state at that step
  const stepping = proofStep();
  render($("diagram"), m.parsed, { active: activePaths(stepping ? stepping.value : v.value), findings, focus: focusPath });
  $("diagram").closest("figure").classList.toggle("replaying", !!stepping);
  renderReplayBar(stepping);
  renderFindings(findings);
  renderProof();

  // context
  const ctx = $("context");
  ctx.replaceChildren();
  for (const [k, val] of Object.entries(v.context ?? {})) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = fmt(val);
    dd.dataset.key = k;
    if (previous && fmt(previous.context?.[k]) !== fmt(val)) dd.classList.add("changed");
    ctx.append(dt, dd);
  }

  // ledger
  rows(
    $("ledger"),
    (v.ledger ?? []).slice().reverse(),
    (e) => [
      shortId(e.id),
      (e.fp ?? "").slice(0, 8),
      e.rev ?? "",
      e.at != null ? duration(now - e.at) : "",
      e.exp != null ? (e.exp > now ? duration(e.exp - now) : "past (dropped at the next write)") : "",
      e.response != null ? fmt(e.response) : e.status && e.status !== "applied" ? e.status : "",
    ],
    "Empty: no event applied yet.",
    // ids with "#" are the ones the engine chose for the dispatcher's reports
    (e) => ({ "data-id": e.id, ...(String(e.id).includes("#") ? { class: "engine", title: "an effect report: its id was chosen by the engine" } : {}) }),
  );

  // outbox
  rows(
    $("outbox"),
    v.outbox ?? [],
    (e) => [
      e.key,
      e.type,
      e.state,
      e.attempts,
      e.dueAt != null && !["succeeded", "failed"].includes(e.state) ? (e.dueAt > now ? `in ${duration(e.dueAt - now)}` : "now") : "",
      e.result != null ? fmt(e.result) : e.error != null ? fmt(e.error) : "",
    ],
    "Empty: no effect emitted yet.",
    (e) => ({ "data-key": e.key, "data-state": e.state }),
  );
  const dl = $("dispatch-log");
  dl.replaceChildren(
    ...((settings.dispatchLog ?? {})[pid()] ?? []).map((t) => {
      const li = document.createElement("li");
      li.textContent = t;
      return li;
    }),
  );

  // deliveries
  rows(
    $("history"),
    history(),
    (h) => [
      h.n,
      shortId(h.id),
      h.type,
      fmt(h.payload ?? {}),
      badge(h.lost ? "lost" : h.status, h.lost ? "applied, response lost" : `${h.status}${h.http ? ` (HTTP ${h.http}${h.replayed ? ", replayed" : ""})` : ""}${h.late ? " — late: id forgotten" : ""}`),
      h.error?.code ?? (h.response != null ? fmt(h.response) : ""),
    ],
    "No delivery yet.",
    (h) => ({ "data-status": h.status }),
  );

  renderGateway();
  renderControls(v);
  await renderPaidSummaries();
}

function renderGateway() {
  const variant = settings.variant;
  const kind = VARIANTS[variant].gateway;
  const gw = gateways[kind];
  $("gateway-kind").textContent = useWorker()
    ? "In Worker mode the charges go to the Worker's own gateway; the outbox below shows each attempt and its result."
    : kind === "keys"
      ? "This gateway honours idempotency keys: a retry with the same key returns the first charge."
      : "This gateway ignores idempotency keys: every call charges again. After an unknown outcome the engine asks it (findByReference) whether the charge exists before retrying.";
  const prefix = `${pid()}/`;
  const mine = useWorker() ? [] : [...gw.charges.values()].filter((c) => String(c.reference ?? "").startsWith(prefix));
  const byRef = new Map();
  for (const c of mine) {
    const r = byRef.get(c.reference) ?? { reference: c.reference, count: 0, amount: 0 };
    r.count++;
    r.amount += c.amount;
    byRef.set(c.reference, r);
  }
  rows($("gateway-rows"), [...byRef.values()], (r) => [r.reference, r.count, r.amount], "No charge yet.", (r) => ({ "data-charges": r.count }));
  $("gateway-calls").textContent = String(settings.calls[pid()] ?? 0);
  $("gateway-charges").textContent = String(mine.length);
  $("gateway-charges").dataset.amount = String(mine.reduce((a, c) => a + c.amount, 0));
}

function renderControls(v) {
  const m = current();
  // events a visitor can send: those of the definition that do not come from the outbox
  const accepted = acceptedEvents(m.parsed, activePaths(v.value));
  const userEvents = [...new Set(m.parsed.all.flatMap((n) => n.transitions.map((t) => t.event)))].filter(
    (e) => !e.includes(".") && e !== "always" && !e.startsWith("after ") && e !== "PAYMENT_PARTIAL",
  );
  const box = $("event-buttons");
  const existing = [...box.querySelectorAll("button")].map((b) => b.dataset.event).join();
  if (existing !== userEvents.join()) {
    box.replaceChildren(
      ...userEvents.map((e) => {
        const b = document.createElement("button");
        b.type = "button";
        b.id = `send-${e}`;
        b.dataset.event = e;
        b.textContent = `Send ${e}`;
        b.addEventListener("click", () => serial(() => sendSimple(e)));
        return b;
      }),
    );
  }
  for (const b of document.querySelectorAll("#send-form button[data-event]")) {
    const ok = accepted.has(b.dataset.event);
    b.classList.toggle("accepted", ok);
    b.title = ok ? "accepted in the current state" : "not accepted in the current state: it will be ignored";
    b.setAttribute("aria-description", b.title);
  }
  const last = settings.last[pid()];
  const lastPay = settings.lastPayment[pid()];
  $("again").disabled = !last;
  $("conflict").disabled = !last;
  $("new-id").disabled = !lastPay;
  $("last-event").textContent = last
    ? `Last event: ${last.type} ${fmt(last.payload)}, id ${last.id}`
    : "No event sent yet.";

  // clock
  const ret = m.machine.retention();
  const window = ret.perType?.PAYMENT_PARTIAL ?? ret.defaultMs;
  $("advance").textContent = `Advance the clock ${duration(window + 60_000)}`;
  $("retention").textContent = `The ledger keeps PAYMENT_PARTIAL ids for ${duration(window)}, other ids for ${duration(ret.defaultMs)}. Past that, a late duplicate is judged by the state it finds.`;
  $("clock").textContent =
    settings.clockOffset === 0 ? "real time" : `real time + ${duration(settings.clockOffset)}`;
  const worker = useWorker();
  $("advance").disabled = worker;
  $("gateway-mode").disabled = worker;
  if (worker) $("clock").textContent = "the Worker's own clock";
  const due = v.snapshot && !worker ? nextDueAt(m.machine, v.snapshot) : null;
  $("next-due").disabled = due == null;
  $("next-due").textContent = due == null ? "Skip to the next retry (nothing due)" : `Skip to the next retry (${due > clock() ? `in ${duration(due - clock())}` : "now"})`;
  for (const input of document.querySelectorAll('input[name="variant"]')) input.checked = input.value === settings.variant;
}

async function renderPaidSummaries() {
  for (const variant of Object.keys(VARIANTS)) {
    const v = variant === settings.variant && lastView ? lastView : await view(variant);
    const el = document.querySelector(`.paid[data-variant="${variant}"]`);
    const c = v.context ?? {};
    el.textContent = v.fresh ? "" : `— paid ${c.paid} of ${c.total}, ${stateText(v.value, machines[variant].parsed)}`;
  }
}

function acceptedEvents(parsed, active) {
  const set = new Set();
  for (const p of active) for (const t of parsed.byPath.get(p)?.transitions ?? []) set.add(t.event);
  return set;
}

let focusPath = null;
let findingsKey = null;
// The list is rebuilt only when the machine changes, so a focused finding keeps its focus
// through the periodic refreshes.
function renderFindings(findings) {
  const panel = $("findings-panel");
  const m = current();
  if (!m.findings) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  const ul = $("findings");
  if (findingsKey !== settings.variant) {
    findingsKey = settings.variant;
    const item = (f) => {
      const li = document.createElement("li");
      li.dataset.code = f.code;
      li.dataset.severity = String(f.severity).toLowerCase();
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.path = f.path;
      b.innerHTML = `<span class="sev sev-${esc(String(f.severity).toLowerCase())}">${esc(f.severity)}</span> <code>${esc(f.code)}</code> at <code>${esc(f.path || "machine")}</code>${f.event ? ` on <code>${esc(f.event)}</code>` : ""}<br>${esc(f.message ?? "")}${f.fix ? `<br><span class="muted">Fix: ${esc(f.fix)}</span>` : ""}`;
      b.addEventListener("click", () => {
        focusPath = focusPath === f.path ? null : f.path;
        serial(refresh);
      });
      li.append(b);
      return li;
    };
    const serious = findings.filter((f) => String(f.severity).toLowerCase() !== "info");
    const info = findings.filter((f) => String(f.severity).toLowerCase() === "info");
    const nodes = serious.length ? serious.map(item) : [Object.assign(document.createElement("li"), { className: "muted", textContent: "No hazard: no repeat of any event is applied twice." })];
    if (info.length) {
      const li = document.createElement("li");
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = `${info.length} informational finding${info.length > 1 ? "s" : ""} (transitions a repeat cannot harm, and why)`;
      const inner = document.createElement("ul");
      inner.append(...info.map(item));
      details.append(summary, inner);
      li.append(details);
      nodes.push(li);
    }
    ul.replaceChildren(...nodes);
  }
  for (const b of ul.querySelectorAll("button")) b.setAttribute("aria-pressed", String(focusPath !== null && focusPath === b.dataset.path));
}

// ---------------------------------------------------------------- actions
async function sendSimple(type) {
  const event = { id: newEventId(), type, payload: {} };
  remember(event);
  const out = await deliver(event);
  setStatus(out.status, describe(event, out));
  await refresh();
}

async function sendPayment() {
  const event = paymentFromForm();
  remember(event);
  const out = await deliver(event);
  setStatus(out.status, describe(event, out));
  await refresh();
  if (out.status === "applied") advancePaymentForm(event);
}

async function again() {
  const event = settings.last[pid()];
  if (!event) return;
  const late = history().some((h) => h.id === event.id && h.status === "applied") ;
  const out = await deliver(event, { note: "again" });
  let html = describe(event, out);
  if (late && out.status !== "duplicate") {
    html = `The ledger no longer remembers id <code>${esc(shortId(event.id))}</code> (older than the retention window), so the state decides: ${html}`;
  }
  setStatus(out.status, html);
  await refresh();
}

async function conflict() {
  const last = settings.last[pid()];
  if (!last) return;
  const payload =
    last.type === "PAYMENT_PARTIAL"
      ? { ...last.payload, amount: Number(last.payload.amount) + 1 }
      : { ...last.payload, changed: true };
  const event = { ...last, payload };
  const out = await deliver(event, { note: "conflict" });
  setStatus(out.status, describe(event, out));
  await refresh();
}

async function newId() {
  const last = settings.lastPayment[pid()];
  if (!last) return;
  const event = { ...last, id: newEventId() };
  remember(event);
  const out = await deliver(event, { note: "new id" });
  setStatus(
    out.status,
    `Same payment ${esc(last.payload.paymentId)} under a new event id, so the ledger cannot know it: ${describe(event, out)}`,
  );
  await refresh();
}

async function lostResponse() {
  const event = paymentFromForm();
  remember(event);
  const first = await deliver(event, { lost: true });
  setStatus("lost", `${esc(event.type)} ${esc(event.payload.paymentId)} sent (id <code>${esc(shortId(event.id))}</code>): ${esc(first.status)} on the server, but the response was lost; the client retries with the same id…`);
  await refresh();
  const second = await deliver(event, { note: "client retry" });
  setStatus(second.status, describe(event, second, { lostRetry: true }));
  await refresh();
  if (first.status === "applied") advancePaymentForm(event);
}

async function advanceClock() {
  const ret = current().machine.retention();
  settings.clockOffset += (ret.perType?.PAYMENT_PARTIAL ?? ret.defaultMs) + 60_000;
  saveSettings();
  setStatus("clock", `The clock moved forward: engine time is now real time + ${duration(settings.clockOffset)}. Deliver the last event again to send a late duplicate.`);
  for (const variant of Object.keys(VARIANTS)) kick(variant);
  await refresh();
}

async function skipToNextDue() {
  const row = await store.load(pid());
  if (!row) return;
  const due = nextDueAt(current().machine, row.snapshot);
  if (due == null) return;
  if (due > clock()) settings.clockOffset += due - clock();
  saveSettings();
  await runDispatch(settings.variant);
  setStatus("clock", `Clock moved to the next due work; the dispatcher ran it.`);
}

async function reset() {
  for (const t of Object.values(timers)) clearTimeout(t);
  if (store) await store.clear();
  const { variant, target } = settings;
  Object.assign(settings, defaults(), { variant, target });
  // the Worker's processes stay in its database: start a new order there
  if (remote) settings.workerOrder = newOrderId();
  for (const gw of Object.values(gateways)) {
    gw.charges.clear();
    gw.keys.clear();
    gw.faults.length = 0;
    gw.seq = 0;
    gw.requests = 0;
  }
  saveSettings();
  $("payment-id").value = "p1";
  $("amount").value = "60";
  $("gateway-mode").value = "normal";
  lastView = null;
  setStatus("reset", "Everything cleared: processes, deliveries, gateway books and the clock.");
  await refresh();
}

function setGatewayMode(mode) {
  const gw = gateways[VARIANTS[settings.variant].gateway];
  gw.faults.length = 0;
  if (FAULTS[mode]) gw.failNext(FAULTS[mode]);
}

// ---------------------------------------------------------------- prove it
const proofs = {}; // variant -> { verdict, step } once checked; step: the counterexample step shown
let proofKey = null;

/** Check the shown machine on the demo's scenario, in a worker: the page stays responsive. */
async function prove() {
  const variant = settings.variant;
  const { def } = machines[variant];
  $("prove").disabled = true;
  const out = $("prove-result");
  out.dataset.verdict = "";
  delete out.dataset.progress;
  out.innerHTML = '<p class="muted small">Checking…</p>';
  try {
    const verdict = await checkInWorker(def, (p) => {
      out.dataset.progress = String(p.states);
      out.innerHTML = `<p class="muted small">Checking… ${esc(p.states.toLocaleString("en"))} states so far, depth ${esc(p.depth)}</p>`;
    });
    proofs[variant] = { verdict, step: verdict.counterexample ? 0 : null };
  } catch (err) {
    proofs[variant] = { error: err };
  } finally {
    $("prove").disabled = false;
  }
  proofKey = null;
  await refresh();
}

// One module worker for every check (check-worker.js), started on the first; a check is
// answered by messages carrying its id: progress while it runs, then the verdict or an error.
let checker = null;
let checks = 0;
function checkInWorker(def, onProgress) {
  checker ??= new Worker(new URL("./check-worker.js", import.meta.url), { type: "module" });
  const id = ++checks;
  return new Promise((resolve, reject) => {
    const listen = ({ data }) => {
      if (data.id !== id) return;
      if (data.progress) return onProgress(data.progress);
      checker.removeEventListener("message", listen);
      checker.removeEventListener("error", failed);
      data.error ? reject(data.error) : resolve(data.verdict);
    };
    const failed = (e) => {
      checker.removeEventListener("message", listen);
      checker.removeEventListener("error", failed);
      checker = null; // a worker that failed to load is started afresh next time
      reject({ code: "check_worker_failed", message: e.message || "the check worker failed to start" });
    };
    checker.addEventListener("message", listen);
    checker.addEventListener("error", failed);
    checker.postMessage({ id, def, scenario: PROVE_SCENARIO, bounds: PROVE_BOUNDS });
  });
}

/** The counterexample step the diagram shows (its state value), or null. */
function proofStep() {
  const p = proofs[settings.variant];
  const steps = p?.verdict?.counterexample?.steps;
  if (!steps || p.step == null) return null;
  // a step without a state (a commit, the clock) leaves the state of the step before it
  let value = initialValue(current().parsed.root);
  for (const s of steps.slice(0, p.step + 1)) if (s.state != null) value = s.state;
  return { index: p.step, value };
}

/** Show counterexample step `i` (0-based) on the diagram; null: back to the process's own state. */
function showStep(i) {
  const p = proofs[settings.variant];
  const n = p.verdict.counterexample.steps.length;
  p.step = i == null ? null : Math.max(0, Math.min(n - 1, i));
  proofKey = null;
  serial(refresh);
}

// Above the diagram while it shows a counterexample step: which step, and the same prev/next as
// the panel (the panel is further down the page than the diagram is tall).
function renderReplayBar(stepping) {
  const bar = $("replay-bar");
  bar.hidden = !stepping;
  if (!stepping) return bar.replaceChildren();
  const n = proofs[settings.variant].verdict.counterexample.steps.length;
  const i = stepping.index;
  const button = (text, label, to, disabled) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.setAttribute("aria-label", label);
    b.disabled = disabled;
    b.addEventListener("click", () => showStep(to));
    return b;
  };
  const text = document.createElement("span");
  text.textContent = `counterexample step ${i + 1} of ${n}`;
  bar.replaceChildren(
    text,
    button("◀", "previous step", i - 1, i === 0),
    button("▶", "next step", i + 1, i === n - 1),
    button("back to the process", "show the process's own state", null, false),
  );
}

// Rebuilt only when the machine, the verdict or the step changes (the page refreshes every 5 s).
function renderProof() {
  const panel = $("prove-panel");
  const m = current();
  if (typeof m.machine.check !== "function" || !m.findings) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  $("prove-scenario").innerHTML = PROVE_SCENARIO.map((e) => `<code>${esc(e.id)}</code> ${esc(e.type)}${e.payload.paymentId ? ` ${esc(e.payload.paymentId)} (${esc(e.payload.amount)})` : ""}`).join(", ");
  const p = proofs[settings.variant];
  const key = `${settings.variant}/${p ? (p.step ?? "-") : "none"}`;
  if (key === proofKey) return;
  proofKey = key;
  const out = $("prove-result");
  out.dataset.verdict = p?.verdict?.verdict ?? (p?.error ? "error" : "");
  if (!p) {
    out.replaceChildren();
    return;
  }
  if (p.error) {
    out.innerHTML = `<p><span class="badge error">error</span> ${esc(`${p.error.code ? `${p.error.code}: ` : ""}${p.error.message ?? p.error}`)}</p>`;
    return;
  }
  const v = p.verdict;
  const b = v.bounds;
  const file = VARIANTS[settings.variant].file;
  const took = v.seconds < 1 ? `${Math.max(1, Math.round(v.seconds * 1000))} ms` : `${v.seconds.toFixed(2)} s`;
  const summary = `${v.states.toLocaleString("en")} states, depth ${v.depth}, in ${took}`;
  const head =
    v.verdict === "proved"
      ? `<p><span class="badge proved">proved</span> No schedule applies a repeat again: ${esc(summary)}.</p>`
      : v.verdict === "violated"
        ? `<p><span class="badge violated">violated</span> ${esc(v.counterexample.violation)} (shortest schedule: ${v.counterexample.steps.length} steps; ${esc(summary)}).</p>`
        : `<p><span class="badge inconclusive">inconclusive</span> ${esc(v.reason ?? "")} (${esc(summary)}): neither proved nor violated.</p>`;
  const bounds = `<p class="small" id="prove-bounds">Within: deliveries ${esc(b.deliveries)}, reorder ${esc(b.reorder)}, expiries ${b.expiries}, crashes ${b.crashes}, effect faults ${b.effectFaults}, hosts ${b.hosts}, fresh re-sends ${b.freshResends}.</p>`;
  const cli = `<p class="muted small">The command line proves more (six events, an effect fault, the defaults): <code>idem check ${esc(`www/${file}`)} --scenario tests/check/order-6.jsonl</code></p>`;
  out.innerHTML = head + bounds;
  if (v.counterexample) out.append(counterexampleView(v.counterexample, p.step));
  out.insertAdjacentHTML("beforeend", cli);
}

function counterexampleView(cx, current) {
  const box = document.createElement("div");
  box.className = "counterexample";
  const nav = document.createElement("div");
  nav.className = "buttons stepper";
  const button = (id, text, to, disabled) => {
    const b = document.createElement("button");
    b.type = "button";
    b.id = id;
    b.textContent = text;
    b.disabled = disabled;
    b.addEventListener("click", () => showStep(to));
    return b;
  };
  const where = document.createElement("span");
  where.id = "prove-step";
  where.className = "small";
  where.textContent = current == null ? "the diagram shows the process: click a step to show it" : `step ${current + 1} of ${cx.steps.length}: the diagram shows the state it leaves`;
  const at = current ?? -1;
  nav.append(button("prove-prev", "◀ Previous", Math.max(0, at - 1), at <= 0), button("prove-next", "Next ▶", at + 1, at === cx.steps.length - 1), where);
  const ol = document.createElement("ol");
  ol.className = "steps small";
  for (const [i, s] of cx.steps.entries()) {
    const li = document.createElement("li");
    li.dataset.step = String(i + 1);
    if (i === current) {
      li.className = "current";
      li.setAttribute("aria-current", "step");
    }
    const b = document.createElement("button");
    b.type = "button";
    b.innerHTML = `${esc(s.action)}${s.status ? ` → <span class="badge ${esc(s.status)}">${esc(s.status)}</span>` : ""}${s.response != null ? ` <q>${esc(fmt(s.response))}</q>` : ""}${s.state != null ? ` · <strong>${esc(stateText(s.state))}</strong>` : ""}`;
    b.addEventListener("click", () => showStep(i));
    li.append(b);
    ol.append(li);
  }
  const diff = document.createElement("table");
  diff.className = "compact";
  diff.setAttribute("aria-label", "Expected against actual");
  const effects = (list) => list.join(", ") || "none";
  diff.innerHTML =
    '<thead><tr><th scope="col"></th><th scope="col">Without repeats (expected)</th><th scope="col">This schedule (actual)</th></tr></thead><tbody>' +
    `<tr><th scope="row">State</th><td>${esc(stateText(cx.expected.value))}</td><td>${esc(stateText(cx.actual.value))}</td></tr>` +
    `<tr><th scope="row">Context</th><td>${esc(fmt(cx.expected.context))}</td><td>${esc(fmt(cx.actual.context))}</td></tr>` +
    `<tr><th scope="row">Effects</th><td>${esc(effects(cx.expected.effects))}</td><td>${esc(effects(cx.actual.effectsPerformed.map((e) => (e.times > 1 ? `${e.key} ×${e.times}` : e.key))))}</td></tr></tbody>`;
  box.append(nav, ol, diff);
  return box;
}

// ---------------------------------------------------------------- helpers
function rows(tbody, items, cells, empty, attrs = () => ({})) {
  if (!items.length) {
    tbody.innerHTML = `<tr><td colspan="${tbody.closest("table").querySelectorAll("th").length}" class="muted">${esc(empty)}</td></tr>`;
    return;
  }
  tbody.replaceChildren(
    ...items.map((item) => {
      const tr = document.createElement("tr");
      for (const [k, v] of Object.entries(attrs(item))) tr.setAttribute(k, String(v));
      for (const c of cells(item)) {
        const td = document.createElement("td");
        if (c instanceof Node) td.append(c);
        else td.textContent = c == null ? "" : String(c);
        tr.append(td);
      }
      return tr;
    }),
  );
}
function badge(cls, text) {
  const s = document.createElement("span");
  s.className = `badge ${cls}`;
  s.textContent = text;
  return s;
}
const fmt = (v) => (typeof v === "string" ? v : JSON.stringify(v));
// Ids as a reader needs them: without this process's prefix (effect reports carry it).
const shortId = (id) => {
  const s = String(id ?? "");
  const p = `${pid()}/`;
  return s.startsWith(p) ? s.slice(p.length) : s;
};
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
function duration(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h${m % 60 ? ` ${m % 60} min` : ""}`;
  return `${Math.floor(h / 24)} d`;
}

// ---------------------------------------------------------------- start
async function start() {
  $("engine-version").textContent = `idem ${version()}`;
  await loadMachines();
  store = await openIndexedDBStore({ name: "idem-demo" });
  workerInfo = await detectWorker();
  if (workerInfo) {
    remote = new RemoteProcess(workerInfo);
    settings.workerOrder ??= newOrderId();
    $("worker-panel").hidden = false;
  } else if (settings.target === "worker") {
    settings.target = "local";
  }
  saveSettings();
  updateMode();

  $("send-form").addEventListener("submit", (e) => {
    e.preventDefault();
    serial(sendPayment);
  });
  $("again").addEventListener("click", () => serial(again));
  $("conflict").addEventListener("click", () => serial(conflict));
  $("new-id").addEventListener("click", () => serial(newId));
  $("lost").addEventListener("click", () => serial(lostResponse));
  $("advance").addEventListener("click", () => serial(advanceClock));
  $("next-due").addEventListener("click", () => serial(skipToNextDue));
  $("reset").addEventListener("click", () => serial(reset));
  $("gateway-mode").addEventListener("change", (e) => setGatewayMode(e.target.value));
  $("prove").addEventListener("click", () => serial(prove));
  for (const input of document.querySelectorAll('input[name="variant"]')) {
    input.addEventListener("change", () => {
      settings.variant = input.value;
      focusPath = null;
      saveSettings();
      $("gateway-mode").value = "normal";
      setGatewayMode("normal");
      serial(async () => {
        setStatus("switch", `Now showing the ${esc(VARIANTS[input.value].name)} machine, process <code>${esc(pid())}</code>.`);
        await refresh();
      });
    });
  }
  for (const input of document.querySelectorAll('input[name="target"]')) {
    input.checked = input.value === settings.target;
    input.addEventListener("change", () => {
      settings.target = input.value;
      saveSettings();
      updateMode();
      serial(refresh);
    });
  }
  // a clock for the ages in the ledger and the outbox
  setInterval(() => {
    if (document.visibilityState === "visible") serial(refresh);
  }, 5000);

  await refresh();
  for (const variant of Object.keys(VARIANTS)) kick(variant);
  document.body.dataset.ready = "true";
}

function newOrderId() {
  return `order-${newEventId().slice(-8).toLowerCase()}`;
}

function updateMode() {
  const el = $("mode");
  if (useWorker()) {
    el.dataset.mode = "worker";
    el.textContent = `Events go to the Worker's HTTP API (${workerInfo.store ?? "D1"}); the status line shows status codes and the replay header.`;
  } else {
    el.dataset.mode = "local";
    el.textContent = "In-browser engine · stored in IndexedDB · the payment gateway is a fake in this tab";
  }
}

start().catch((err) => {
  const el = $("mode");
  el.dataset.mode = "error";
  el.textContent = `The engine failed to start: ${err?.message ?? err}`;
  console.error(err);
});
