// The corpus run: each machine of tests/xstate that has its implementations written as data
// (`<name>.implementations.json`) is imported, given them and run by idem beside XState running the
// machine of `<name>.mjs` with its own functions, on seeded random event streams, and the state
// value and the context agree after every event.
//
// A `<name>.implementations.json` holds
// - `implementations`: the named guards, actions and delays the import lists in `needs`, as data;
// - `inline`: the functions written inline in the machine, which JSON loses (an `assign` computed by
//   a function, a guard combinator over a guard that is code), as data at their site in the XState
//   config (the site its import diagnostic names): `{ "action": [...] }` or `{ "guard": <expr> }`.
//   Each is written into the JSON form as a named implementation `inline:<site>` before the import;
// - `events`: the payload fields of the events the machine accepts, each with its candidate values;
// - `actors`: for each invoked actor, the outputs and errors its work may end with;
// - `sideEffects`: actions that only reach the outside world (logging), which XState runs as no-ops.
//
// The streams mix the machine's events with the completions of its invoked work (idem: the outbox's
// started and result reports; XState: the actor's promise settled) and the firing of its earliest
// timer (idem: the `idem.after` event `due` gives, or the completion of the effect that stands for a
// delay that is code; XState: a simulated clock's callback). Side effects
// (an action that is only an effect, `emit`) are compared as nothing: state and context only. Idem's
// bookkeeping of invoked work (context keys starting with `$`) is left out of the comparison.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import * as xstate5 from "xstate";
import * as xstate4 from "xstate4";
import { importXState, Machine } from "../../pkg/src/node.js";
import { caseSeed, rng } from "../differential/rng.mjs";

const here = new URL(".", import.meta.url);
const MACHINES = readdirSync(here)
  .filter((f) => f.endsWith(".implementations.json"))
  .map((f) => f.slice(0, -".implementations.json".length))
  .sort();
const CASES = 200;
const LENGTH = 30;
const FAR = 1e15;

/** The JSON form with each inline function given as data named by its site. */
export function withInline(config, inline) {
  const out = structuredClone(config);
  for (const site of Object.keys(inline ?? {})) setAt(out, site, `inline:${site}`);
  return out;
}

/** The data implementations, the inline ones among them under their site names. */
export function implementationsOf(spec) {
  const { guards = {}, actions = {}, delays = {} } = spec.implementations ?? {};
  const out = { guards: { ...guards }, actions: { ...actions }, delays: { ...delays } };
  for (const [site, impl] of Object.entries(spec.inline ?? {})) {
    if (impl.action) out.actions[`inline:${site}`] = impl.action;
    if (impl.guard) out.guards[`inline:${site}`] = impl.guard;
  }
  return out;
}

function steps(site) {
  return site.split(".").flatMap((part) => {
    const m = /^([^[]+)((?:\[\d+\])*)$/.exec(part);
    if (!m) throw new Error(`bad site ${site}`);
    return [m[1], ...[...m[2].matchAll(/\[(\d+)\]/g)].map((x) => Number(x[1]))];
  });
}

function setAt(root, site, value) {
  const path = steps(site);
  let node = root;
  for (const k of path.slice(0, -1)) {
    node = node?.[k];
    if (node === undefined) throw new Error(`site ${site} is not in the config`);
  }
  const last = path.at(-1);
  if (!(last in node)) throw new Error(`site ${site} is not in the config`);
  node[last] = value;
}

/** Every event type the config's `on` maps name, but XState's own and the eventless `""` of XState 4. */
function eventTypes(config) {
  const types = new Set();
  const walk = (s) => {
    for (const t of Object.keys(s.on ?? {})) if (t !== "" && !t.startsWith("xstate.") && t !== "*") types.add(t);
    for (const c of Object.values(s.states ?? {})) walk(c);
  };
  walk(config);
  return [...types].sort();
}

/** A clock for XState whose timers fire only when the stream says so. */
function simulatedClock() {
  const timers = new Map();
  let next = 1;
  return {
    now: 0,
    setTimeout(fn, ms) {
      const id = next++;
      timers.set(id, { fn, at: this.now + ms, id });
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    fireEarliest() {
      const [first] = [...timers.values()].sort((a, b) => a.at - b.at || a.id - b.id);
      if (!first) return false;
      timers.delete(first.id);
      this.now = Math.max(this.now, first.at);
      first.fn();
      return true;
    },
  };
}

/**
 * XState's side: the machine with its invoked work settled by the stream, on a simulated clock;
 * an `-v4` machine under XState 4's interpreter, the others under XState 5's actor.
 */
function xstateRun(name, make, actorNames, sideEffects) {
  const quiet = Object.fromEntries(sideEffects.map((a) => [a, () => {}]));
  const pending = new Map();
  const work = (id) => () => new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  const clock = simulatedClock();
  if (name.endsWith("-v4")) {
    const services = Object.fromEntries(actorNames.map((id) => [id, work(id)]));
    // A parent that takes what `sendParent` sends (in idem an effect): the machine runs as a child would;
    // `log` writes nowhere.
    const parent = { id: "parent", send: () => {} };
    const service = xstate4.interpret(make(xstate4).withConfig({ services, actions: quiet }), { clock, parent, logger: () => {} }).start();
    const snapshot = () => ({ value: service.state.value, context: service.state.context });
    return { send: (e) => service.send(e), snapshot, done: () => service.state.done, stop: () => service.stop(), clock, pending };
  }
  const actors = Object.fromEntries(actorNames.map((id) => [id, xstate5.fromPromise(work(id))]));
  const actor = xstate5.createActor(make(xstate5).provide({ actors, actions: quiet }), { clock }).start();
  const snapshot = () => ({ value: actor.getSnapshot().value, context: actor.getSnapshot().context });
  return { send: (e) => actor.send(e), snapshot, done: () => actor.getSnapshot().status === "done", stop: () => actor.stop(), clock, pending };
}

const settle = () => new Promise((r) => setImmediate(r));

/** Idem's side: a process reduced event by event, its effects and timers reported as a host does. */
class IdemRun {
  constructor(machine, key) {
    this.machine = machine;
    this.key = key;
    this.snapshot = null;
    this.now = 1_000;
    this.n = 0;
  }

  send(event, at = this.now + 1) {
    this.now = Math.max(this.now + 1, at);
    const out = this.machine.reduce(this.snapshot, event, this.now, this.key);
    assert.notEqual(out.status, "rejected", `${JSON.stringify(event)}: ${JSON.stringify(out.error)}`);
    if (out.changed) this.snapshot = out.snapshot;
    return out;
  }

  due() {
    return this.snapshot === null ? [] : this.machine.due(this.snapshot, FAR);
  }

  /**
   * The attempts of the current invocations the outbox waits for, by work type: those started by an
   * entry their state recorded (`$invoke:<state>`), not ones left over from an earlier entry.
   */
  attempts() {
    if (this.snapshot === null) return new Map();
    const { context, value } = this.machine.inspect(this.snapshot);
    // A delay that is code is waited only while its state is active (XState clears its timer on exit).
    const waited = (k) => !k.includes("/after/") || isActive(value, k.slice("$invoke:".length).split("/after/")[0].split("/"));
    const entries = Object.entries(context).filter(([k, v]) => k.startsWith("$invoke:") && typeof v === "string" && waited(k)).map(([, v]) => v);
    const current = (d) => entries.some((entry) => `/${d.key}`.includes(`/${entry}:`));
    return new Map(this.due().filter((d) => d.kind === "attempt" && current(d)).map((d) => [d.type, d]));
  }

  timer() {
    return this.due().filter((d) => d.kind === "timer").sort((a, b) => a.dueAt - b.dueAt)[0] ?? null;
  }

  complete(item, ok, value) {
    this.send(item.started);
    const payload = ok ? { key: item.key, result: value } : { key: item.key, error: value };
    return this.send({ id: item.resultId, type: ok ? "idem.effect.succeeded" : "idem.effect.failed", payload });
  }

  view() {
    if (this.snapshot === null) return null;
    const { value, context } = this.machine.inspect(this.snapshot);
    return { value, context: Object.fromEntries(Object.entries(context).filter(([k]) => !k.startsWith("$"))) };
  }
}

/** Whether the state at `path` (keys from the root) is active in state value `value`. */
function isActive(value, path) {
  let v = value;
  for (const [i, key] of path.entries()) {
    if (typeof v === "string") return v === key && i === path.length - 1;
    if (v === null || typeof v !== "object" || !(key in v)) return false;
    v = v[key];
  }
  return true;
}

/**
 * What the stream may do besides sending an event: complete the current invocation of an actor
 * (both ways), fire the earliest timer, or end a delay that is code.
 */
function choicesAt(ours, theirs, actorNames) {
  const choices = [];
  const attempts = ours.attempts();
  for (const id of actorNames) {
    const item = attempts.get(id);
    if (item && theirs.pending.has(id)) choices.push({ kind: "done", id, item }, { kind: "error", id, item });
  }
  const timer = ours.timer();
  if (timer) choices.push({ kind: "timer", timer });
  // A delay that is code is an effect the host waits (`xstate.after.<name>`); in XState its own timer.
  for (const [type, item] of attempts) if (type.startsWith("xstate.after.")) choices.push({ kind: "delay", item });
  return choices;
}

/** One step to both sides (a timer's XState half is the caller's); its label for messages. */
function deliver(what, r, spec, ours, theirs, id) {
  switch (what.kind) {
    case "event": {
      const payload = payloadFor(r, spec.events?.[what.type]);
      theirs.clock.now = ours.now + 1;
      theirs.send({ type: what.type, ...payload });
      ours.send({ id, type: what.type, payload });
      return JSON.stringify({ type: what.type, ...payload });
    }
    case "timer":
      ours.send(what.timer.event, what.timer.dueAt);
      return `timer ${what.timer.state} ${what.timer.delay}`;
    case "delay":
      ours.complete(what.item, true, {});
      return `delay ${what.item.type}`;
    default: {
      const ok = what.kind === "done";
      const value = r.pick(ok ? spec.actors[what.id].output : spec.actors[what.id].error);
      const work = theirs.pending.get(what.id);
      theirs.pending.delete(what.id);
      ours.complete(what.item, ok, value);
      (ok ? work.resolve : work.reject)(value);
      return `${what.kind} ${what.id} ${JSON.stringify(value)}`;
    }
  }
}

function payloadFor(r, fields) {
  return Object.fromEntries(Object.entries(fields ?? {}).map(([k, values]) => [k, r.pick(values)]));
}

for (const name of MACHINES) {
  const spec = JSON.parse(readFileSync(new URL(`${name}.implementations.json`, here), "utf8"));
  const config = JSON.parse(readFileSync(new URL(`${name}.json`, here), "utf8"));

  test(`${name}: the implementations as data cover what the import needs`, async () => {
    const { definition, needs } = importXState(JSON.stringify(withInline(config, spec.inline)));
    const impl = implementationsOf(spec);
    for (const g of needs.guards) assert.ok(g in impl.guards, `guard ${g} has no implementation`);
    for (const a of needs.actions) assert.ok(a in impl.actions, `action ${a} has no implementation`);
    // Nothing lost is left standing in: no inline assign as an opaque effect, no flag for a guard.
    const text = JSON.stringify({ ...definition, implementations: undefined });
    assert.doesNotMatch(text, /"xstate\.assign"|\$guard/);
  });

  test(`${name}: with its implementations as data, idem agrees with XState after every event`, async () => {
    const { default: make } = await import(new URL(`${name}.mjs`, here));
    const { definition } = importXState(JSON.stringify(withInline(config, spec.inline)));
    const machine = new Machine({ ...definition, implementations: implementationsOf(spec) });
    const types = eventTypes(config);
    const actorNames = Object.keys(spec.actors ?? {});
    let compared = 0;
    const kinds = { event: 0, done: 0, error: 0, timer: 0, delay: 0 };
    for (let c = 0; c < CASES; c++) {
      const r = rng(caseSeed(35, c));
      const ours = new IdemRun(machine, `${name}-${c}`);
      const theirs = xstateRun(name, make, actorNames, spec.sideEffects ?? []);
      await settle();
      for (let i = 0; i < LENGTH; i++) {
        const choices = choicesAt(ours, theirs, actorNames);
        const what = choices.length > 0 && r.chance(0.3) ? r.pick(choices) : { kind: "event", type: r.pick(types) };
        const label = deliver(what, r, spec, ours, theirs, `e${i}`);
        if (what.kind === "timer" || what.kind === "delay") {
          assert.ok(theirs.clock.fireEarliest(), `case ${c} event ${i}: XState has no timer where idem has ${label}`);
        }
        kinds[what.kind]++;
        await settle();
        const view = ours.view();
        if (view === null) continue;
        assert.deepEqual(view, theirs.snapshot(), `case ${c} after event ${i} ${label}`);
        compared++;
        // A machine in its final state takes nothing more (XState 4's interpreter stops).
        if (theirs.done()) break;
      }
      theirs.stop();
    }
    // Not vacuous: events of every kind were delivered and compared.
    console.log(`${name}: ${compared} comparisons, ${JSON.stringify(kinds)}`);
    assert.ok(compared > CASES * LENGTH * 0.5, `only ${compared} comparisons`);
    const after = JSON.stringify(config).includes('"after"');
    const expected = { event: true, done: actorNames.length > 0, error: actorNames.length > 0, timer: after, delay: false };
    for (const [k, n] of Object.entries(kinds)) if (expected[k]) assert.ok(n > 0, `no ${k} delivered: ${JSON.stringify(kinds)}`);
  });
}
