// The statechart scenarios of tests/scenarios/ whose expectations are XState 5's answers:
// `node tests/differential/scenarios.mjs` writes tests/machines/<name>.json and
// tests/scenarios/<name>.json for each, after checking that idem gives the same answers. Every
// state logs its entry and exit, every transition its label, so the files record action order.
import { writeFileSync } from "node:fs";
import { loadIdem, runIdem, runXState } from "./runner.mjs";

const tests = new URL("../", import.meta.url);

const log = (l) => ({ assign: { log: { merge: [{ var: "context.log" }, [l]] } } });
function decorate(node, name) {
  const out = { ...node };
  if (name !== null && node.type !== "history") {
    out.entry = [...(node.entry ?? []), log(`en:${name}`)];
    out.exit = [...(node.exit ?? []), log(`ex:${name}`)];
  }
  const tr = (t, label) => {
    if (typeof t === "string") return { target: t, actions: [log(label)] };
    if (Array.isArray(t)) return t.map((x, i) => tr(x, `${label}${t.length > 1 ? `[${i}]` : ""}`));
    return { ...t, actions: [...(t.actions ?? []), log(label)] };
  };
  if (node.on) out.on = Object.fromEntries(Object.entries(node.on).map(([e, t]) => [e, tr(t, `t:${name ?? "m"}:${e}`)]));
  if (node.always) out.always = tr(node.always, `t:${name ?? "m"}:always`);
  if (node.onDone) out.onDone = tr(node.onDone, `t:${name ?? "m"}:done`);
  if (node.states) out.states = Object.fromEntries(Object.entries(node.states).map(([k, v]) => [k, decorate(v, k)]));
  return out;
}

function scenario(name, def, events, notes) {
  const machine = decorate({ ...def, context: { log: [], ...(def.context ?? {}) } }, null);
  machine.entry = [...(def.entry ?? [])]; machine.exit = [...(def.exit ?? [])];
  const { machine: m, refused } = loadIdem(machine);
  if (refused) throw new Error(`${name}: idem refused: ${refused.message}`);
  const idem = runIdem(m, events);
  const xs = runXState(machine, events).steps;
  const steps = events.map((e, i) => {
    const a = idem[i], b = xs[i];
    const same = JSON.stringify(a.value) === JSON.stringify(b.value) || (typeof a.value === "object" && JSON.stringify(Object.entries(a.value).sort()) === JSON.stringify(Object.entries(b.value).sort()));
    if (!same || a.taken !== b.taken || (a.context && JSON.stringify(a.context) !== JSON.stringify(b.context))) {
      throw new Error(`${name} step ${i}: idem ${JSON.stringify(a)} xstate ${JSON.stringify({ taken: b.taken, value: b.value, context: b.context })}`);
    }
    const expect = { status: a.status, state: b.value };
    if (a.status === "applied") expect.context = b.context;
    return { event: { id: `e${i + 1}`, type: e.type, ...(e.payload ? { payload: e.payload } : {}) }, expect };
  });
  writeFileSync(new URL(`machines/${name}.json`, tests), JSON.stringify(machine, null, 1) + "\n");
  writeFileSync(new URL(`scenarios/${name}.json`, tests), JSON.stringify({ notes, machine: `${name}.json`, process: "p-1", steps }, null, 1) + "\n");
  console.log(`${name}: ${steps.length} steps agree with XState`);
}

const inc = { assign: { n: { "+": [{ var: "context.n" }, 1] } } };

// Issue 30: an ancestor target exits and re-enters; the root's reenter; final state exits.
scenario("ancestor-target", {
  id: "m", initial: "p", context: { n: 0 },
  on: { RESET: { target: ".p", reenter: true } },
  states: {
    p: { initial: "c", states: {
      c: { on: { UP: "#m.p", NEXT: "d" } },
      d: { on: { UP: { target: "#m.p", reenter: true }, OUT: "#m.q" } } } },
    q: { on: { FINISH: "end" } },
    end: { type: "final" },
  },
}, [{ type: "NEXT" }, { type: "UP" }, { type: "NEXT" }, { type: "UP" }, { type: "RESET" }, { type: "NEXT" }, { type: "OUT" }, { type: "FINISH" }, { type: "FINISH" }],
"A transition to an ancestor exits and re-enters it (its initial child again); a reenter transition of the machine runs the machine's own exit and entry; reaching a final state of the machine runs every active state's exit actions, innermost first (issue 30)");

// Issue 30: eventless transitions after an event no state takes; a done event seen by an always guard.
scenario("eventless-after-any-event", {
  id: "m", initial: "idle", context: { n: 0 },
  states: {
    idle: { always: { guard: { "==": [{ var: "event.payload.go" }, true] }, target: "job" }, on: { PING: { guard: false, target: "job" } } },
    job: { initial: "step", states: { step: { on: { DONE: "finished" } }, finished: { type: "final" } },
      always: { guard: { "==": [{ var: "event.type" }, "xstate.done.state.m.job"] }, target: "#m.after" } },
    after: {},
  },
}, [{ type: "PING", payload: { go: false } }, { type: "PING", payload: { go: true } }, { type: "DONE" }],
"An event that no state takes still lets eventless transitions run, and their guards read it; the done event of a compound state is the event later eventless guards see (issue 30)");

// Issue 26: parallel regions.
scenario("parallel-regions", {
  id: "order", initial: "open", context: { n: 0 },
  states: {
    open: { type: "parallel", onDone: "complete",
      on: { CANCEL: "cancelled" },
      states: {
        payment: { initial: "collecting", states: {
          collecting: { on: { PAY: "paid", CHECK: { actions: [inc] } } },
          paid: { type: "final" } } },
        shipping: { initial: "packing", states: {
          packing: { on: { PACK: "packed", CHECK: { actions: [inc] } } },
          packed: { on: { SHIP: { guard: { in_state: "#order.open.payment.paid" }, target: "shipped" } } },
          shipped: { type: "final" } } },
      } },
    complete: { type: "final" },
    cancelled: {},
  },
}, [{ type: "CHECK" }, { type: "PACK" }, { type: "SHIP" }, { type: "PAY" }, { type: "SHIP" }],
"Both regions active at once; one event taken in every region that has a transition (document order); SHIP waits for in_state payment.paid; both regions final raise the parallel state's done event and onDone completes the order, running every exit action");

scenario("parallel-conflicts", {
  id: "m", initial: "p", context: { n: 0 },
  states: {
    p: { type: "parallel", on: { GO: "#m.out", STAY: { actions: [inc] } },
      states: {
        a: { initial: "a1", states: { a1: { on: { GO: "a2", STAY: "a2" } }, a2: {} } },
        b: { initial: "b1", states: { b1: { on: { GO: "#m.out" } }, b2: {} } },
      } },
    out: { on: { BACK: { target: ["#m.p.a.a2", "#m.p.b.b2"] } } },
  },
}, [{ type: "STAY" }, { type: "GO" }, { type: "BACK" }, { type: "GO" }],
"Conflicts: a descendant's transition preempts its ancestor's; of two transitions that exit the same states, the first in document order wins; a transition with two targets enters both regions");

// Issue 26: history.
scenario("history", {
  id: "m", initial: "work",
  states: {
    work: { initial: "a", on: { PAUSE: "paused" },
      states: {
        a: { on: { NEXT: "b" } },
        b: { initial: "b1", states: { b1: { on: { NEXT: "b2" } }, b2: {} } },
        shallow: { type: "history" },
        deep: { type: "history", history: "deep" },
      } },
    paused: { on: { RESUME: "#m.work.shallow", RESUME_DEEP: "#m.work.deep", RESTART: "work" } },
  },
}, [{ type: "RESUME" }, { type: "NEXT" }, { type: "NEXT" }, { type: "PAUSE" }, { type: "RESUME" }, { type: "NEXT" }, { type: "PAUSE" }, { type: "RESUME_DEEP" }, { type: "PAUSE" }, { type: "RESTART" }],
"A history state restores what its parent held when last exited: shallow its child (entered by default below it), deep every atomic descendant; with nothing recorded, the parent's initial state");

// Issue 26: raised events and the initial step.
scenario("raise-and-initial-step", {
  id: "m", initial: "boot", context: { n: 0 },
  states: {
    boot: { always: "ready" },
    ready: { on: { START: { target: "running", actions: [{ raise: { type: "TICK", payload: { preserve: { by: 2 } } } }, { raise: { type: "TICK", payload: { preserve: { by: 3 } } } }] } } },
    running: { on: { TICK: { actions: [{ assign: { n: { "+": [{ var: "context.n" }, { var: "event.payload.by" }] } } }] } },
      always: { guard: { ">=": [{ var: "context.n" }, 5] }, target: "done" } },
    done: { type: "final" },
  },
}, [{ type: "TICK", payload: { by: 1 } }, { type: "START" }, { type: "START" }],
"A new process settles its initial step (boot -> ready) before its first event is judged; raised events are handled after the raising microstep, eventless transitions first, all in the one macrostep of the external event");
