// One case through both engines, compared after every event.
//
// idem: `Machine.reduce(snapshot, {id, type, payload}, now, processId)`, the context read back with
// `inspect`. XState: a fresh actor per case, `send` then `getSnapshot`. After each event the two
// must agree on the state value, the context (its `log` records every action in order) and whether
// the event was taken (idem `applied` against XState's snapshot changing or a transition taken).

import { isDeepStrictEqual } from "node:util";
import * as XState from "xstate";
import { Machine } from "../../pkg/src/node.js";
import { MAX_ITERATIONS, toXState } from "./xstate-adapter.mjs";

const PROCESS = "diff-1";
const T0 = 1_700_000_000_000;

/**
 * Load the definition in idem. `{ machine }`, or `{ refused: { code, message } }` when idem
 * refuses it (an unsupported feature, an unguarded `always` loop).
 */
export function loadIdem(def) {
  try {
    return { machine: new Machine({ ...def, limits: { ...def.limits, maxMicrosteps: MAX_ITERATIONS } }) };
  } catch (e) {
    if (!(e instanceof Error) || typeof e.code !== "string") throw e;
    return { refused: { code: e.code, message: e.message } };
  }
}

/**
 * Run `events` through idem: one step per event. Every snapshot written is also read by a fresh
 * `Machine` (built from the definition, holding no decoded copy of it), which must find the state
 * value the outcome answered and the context the reducing machine reads; where it does not, the
 * step has `readBack` (what differed), which `firstDifference` reports.
 */
export function runIdem(machine, events) {
  const definition = machine.definition();
  let snapshot = null;
  const steps = [];
  events.forEach((e, i) => {
    const out = machine.reduce(snapshot, { id: `ev-${i}`, type: e.type, payload: e.payload }, T0 + i * 1000, PROCESS);
    if (out.changed) snapshot = out.snapshot;
    const step = { status: out.status, taken: out.status === "applied", value: out.state };
    // A new process whose first events were ignored is not written: no context to read yet.
    step.context = snapshot === null ? null : machine.inspect(snapshot).context;
    if (out.error) step.error = out.error.code;
    if (out.changed) {
      const readBack = readFresh(definition, snapshot, out.state, step.context);
      if (readBack) step.readBack = readBack;
    }
    steps.push(step);
  });
  return steps;
}

/** What a fresh machine reads differently from a written snapshot, or null. */
export function readFresh(definition, snapshot, value, context) {
  let view;
  try {
    view = new Machine(definition).inspect(snapshot);
  } catch (e) {
    return `unreadable: ${e.code}: ${e.message}`;
  }
  const differs = [];
  if (!isDeepStrictEqual(view.value, value)) differs.push(`value ${JSON.stringify(view.value)}`);
  if (!isDeepStrictEqual(view.context, context)) differs.push(`context ${JSON.stringify(view.context)}`);
  return differs.length ? differs.join(", ") : null;
}

/**
 * Run `events` through a fresh XState actor. Each step also lists XState's microsteps (for the
 * documented differences): the transitions each took, as `{ source, eventless, reenter, order }`.
 * `x` is the XState module to run (xstate-document-order.mjs gives a variant).
 */
export function runXState(def, events, maxIterations, x = XState) {
  const machine = toXState(def, maxIterations, x);
  let microsteps = [];
  const inspect = (ev) => {
    if (ev.type !== "@xstate.microstep") return;
    microsteps.push({
      event: ev.event.type,
      transitions: ev._transitions.map((t) => ({
        source: t.source.id,
        sourceIsRoot: !t.source.parent,
        eventless: t.eventType === "",
        reenter: Boolean(t.reenter),
        order: t.source.order,
        targets: (t.target ?? []).map((n) => n.id),
      })),
    });
  };
  const actor = x.createActor(machine, { inspect });
  let failure = null;
  actor.subscribe({ error: (err) => { failure = err; } });
  actor.start();
  const steps = [];
  let prev = actor.getSnapshot();
  const initial = { value: prev.value, context: prev.context, status: prev.status, microsteps };
  events.forEach((e, i) => {
    microsteps = [];
    if (prev.status === "active") actor.send({ type: e.type, id: `ev-${i}`, payload: e.payload });
    const snap = actor.getSnapshot();
    // Taken: some microstep took a transition (a targetless transition without actions leaves
    // XState's snapshot as it was, yet it was taken).
    const taken = snap.status !== "error" && (snap !== prev || microsteps.some((m) => m.transitions.length > 0));
    const step = { status: snap.status, taken, value: snap.value, context: snap.context, microsteps };
    if (snap.status === "error") step.error = String(failure?.message ?? snap.error).slice(0, 200);
    steps.push(step);
    prev = snap;
  });
  actor.stop();
  return { initial, steps };
}

/**
 * The first step where the two disagree, or null. A step is compared on what both report; idem's
 * context is null while no process exists (its first events all ignored), and is then not compared.
 */
export function firstDifference(idem, xs) {
  for (let i = 0; i < idem.length; i++) {
    const a = idem[i], b = xs[i];
    const what = [];
    // A snapshot idem cannot read back as it answered is idem's fault, whatever XState did.
    if (a.readBack) return { step: i, what: ["readback"] };
    if (a.error || b.error) {
      // An endless loop is an error on both sides (idem: microstep_limit); anything else differs.
      if (!(a.error === "microstep_limit" && b.error)) what.push("error");
      if (what.length) return { step: i, what };
      return null;
    }
    if (!isDeepStrictEqual(a.value, b.value)) what.push("value");
    if (a.context !== null && !isDeepStrictEqual(a.context, b.context)) what.push("context");
    if (a.taken !== b.taken) what.push("taken");
    if (what.length) return { step: i, what };
  }
  return null;
}

/**
 * One case: `{ refused }` when idem will not load the definition, else
 * `{ idem, xstate, difference }` (difference null when they agree throughout).
 * With `loopBound`, XState runs first with that bound on microsteps per macrostep, and a case where
 * it is reached is `{ loops: true }` without running idem (the shrinker's candidates: an edit that
 * makes a macrostep endless would otherwise cost two engines 10,000 microsteps each).
 */
export function runCase({ def, events }, { loopBound } = {}) {
  const loaded = loadIdem(def);
  if (loaded.refused) return { refused: loaded.refused };
  let xstate;
  if (loopBound) {
    xstate = runXState(def, events, loopBound);
    if (xstate.initial.status === "error" || xstate.steps.some((s) => s.error)) return { loops: true };
  } else {
    xstate = runXState(def, events);
  }
  const idem = runIdem(loaded.machine, events);
  return { idem, xstate, difference: firstDifference(idem, xstate.steps) };
}
