// Random machines in idem's definition format and random event streams for them, from a seed.
//
// Every state name is unique in its machine (`s0`, `s1`, ...) and every action list records its run
// by appending a label to `context.log` (`en:s3`, `ex:s3`, `t:s3:E1:0`), so the order of exit, entry
// and transition actions is compared exactly. The features idem is still gaining are behind flags:
// `parallel`, `history`, `raise`, `done` (onDone), `multi` (several targets), `in` (the state test).

import { rng } from "./rng.mjs";

/** The guard that tests whether a state is active: `{ [IN_STATE]: "#m.a.b" }`. One name, here. */
export const IN_STATE = "in_state";

export const FEATURES = ["parallel", "history", "raise", "done", "multi", "in"];

const EXTERNAL = ["E0", "E1", "E2", "E3"];
const INTERNAL = ["R0", "R1"];
/** Eventless, raised and done transitions count `n` up and are guarded by it, so none loops forever. */
const BOUND = 4;

const ctx = (field) => ({ var: `context.${field}` });
const log = (label) => ({ assign: { log: { merge: [ctx("log"), [label]] } } });
const bump = (by) => ({ assign: { n: { "+": [ctx("n"), by] } } });

/**
 * A case: `{ def, events }`; `events` are `{ type, payload }` (ids are given by the runner).
 * @param {number} seed
 * @param {{ features?: Iterable<string>, maxStates?: number, maxEvents?: number }} [options]
 */
export function generateCase(seed, options = {}) {
  const r = rng(seed);
  const f = new Set(options.features ?? []);
  const maxStates = options.maxStates ?? r.int(3, 12);
  const nodes = []; // every state, document order (root first)
  let count = 0;

  const root = { key: "m", path: [], parent: null, children: [], kind: "compound", depth: 0 };
  nodes.push(root);

  function addChildren(parent, depth, howMany, regionOf) {
    for (let i = 0; i < howMany && count < maxStates; i++) {
      const node = { key: `s${count++}`, path: [...parent.path], parent, children: [], depth, kind: "atomic" };
      node.path.push(node.key);
      parent.children.push(node);
      nodes.push(node);
      if (regionOf) {
        node.kind = "compound"; // a region of a parallel state
      } else if (depth < 3 && r.chance(f.has("parallel") ? 0.12 : 0)) {
        node.kind = "parallel";
      } else if (depth < 3 && r.chance(0.35)) {
        node.kind = "compound";
      } else if (parent.kind === "compound" && i > 0 && r.chance(0.2)) {
        node.kind = "final";
      }
      if (r.chance(0.15)) node.declaredId = `I${node.key}`;
      if (node.kind === "parallel") addChildren(node, depth + 1, r.int(2, 3), node);
      else if (node.kind === "compound") addChildren(node, depth + 1, r.int(1, 3), null);
      // A state with no room for children under maxStates is a leaf (idem refuses a parallel state with no region).
      if ((node.kind === "compound" || node.kind === "parallel") && node.children.length === 0) node.kind = "atomic";
    }
    const real = parent.children.filter((c) => c.kind !== "history");
    if ((parent.kind === "compound" || parent.kind === "parallel") && real.length && f.has("history") && parent !== root && r.chance(0.3)) {
      const h = { key: `s${count++}`, path: [...parent.path], parent, children: [], depth, kind: "history" };
      h.path.push(h.key);
      h.history = r.chance(0.5) ? "shallow" : "deep";
      if (r.chance(0.5)) h.target = r.pick(real).key;
      parent.children.push(h);
      nodes.push(h);
    }
  }
  addChildren(root, 1, r.int(2, 4), null);

  const index = new Map(nodes.map((n, i) => [n, i]));
  const isAncestor = (a, b) => { for (let p = b.parent; p; p = p.parent) if (p === a) return true; return false; };
  const absolute = (n) => (n === root ? "#m" : n.declaredId ? `#${n.declaredId}` : `#m.${n.path.join(".")}`);
  const hasFinalChild = (n) => n.children.some((c) => c.kind === "final");

  /** A way to name `target` from `source` as XState resolves it; several forms are tried. */
  function ref(source, target) {
    const forms = [absolute(target)];
    if (target !== root) forms.push(`#m.${target.path.join(".")}`);
    if (source !== root && target.parent === source.parent && target !== root) forms.push(target.key, target.key);
    if (target.parent === source) forms.push(`.${target.key}`, `.${target.key}`);
    return r.pick(forms);
  }

  // Not the root: idem refuses `#m` as a target (XState takes it as re-entering the machine).
  const targetable = nodes.filter((n) => n !== root && (n.kind !== "history" || f.has("history")));
  const labels = { t: 0 };

  function guard(kind) {
    const choices = [
      () => ({ "<": [ctx("n"), r.int(1, 4)] }),
      () => ({ ">=": [ctx("n"), r.int(1, 3)] }),
      () => ({ "==": [{ "%": [ctx("n"), 2] }, r.int(0, 1)] }),
      () => ({ in: [r.pick(nodes.filter((n) => n !== root).map((n) => `en:${n.key}`)), ctx("log")] }),
    ];
    if (kind !== "initial") choices.push(() => ({ [r.pick([">", "<", "=="])]: [{ var: "event.payload.k" }, r.int(0, 3)] }));
    if (f.has("in")) {
      const inside = nodes.filter((n) => n !== root && n.kind !== "history");
      choices.push(() => ({ [IN_STATE]: absolute(r.pick(inside)) }));
    }
    let g = r.pick(choices)();
    if (r.chance(0.15)) g = { [r.pick(["and", "or"])]: [g, r.pick(choices)()] };
    else if (r.chance(0.1)) g = { "!": [g] };
    return g;
  }

  /** The actions of a transition (or an entry/exit list): the label first, sometimes more. */
  function actions(label, { payload = false, raising = true } = {}) {
    const list = [log(label)];
    if (r.chance(0.25)) list.push(bump(payload && r.chance(0.5) ? { var: "event.payload.k" } : 1));
    if (raising && f.has("raise") && r.chance(0.2)) list.push({ raise: { type: r.pick(INTERNAL) } });
    if (r.chance(0.15)) list.reverse();
    return list;
  }

  /**
   * One transition from `source`. `progress`: eventless, raised and done transitions, which must
   * count `n` up under `n < BOUND` so that no macrostep runs forever.
   */
  function transition(source, name, i, { progress = false, external = false } = {}) {
    const t = {};
    const label = `t:${source.key}:${name}:${i}`;
    if (!r.chance(0.2)) {
      const parallels = nodes.filter((n) => n.kind === "parallel");
      if (f.has("multi") && parallels.length && r.chance(0.2)) {
        const p = r.pick(parallels);
        const all = p.children.filter((c) => c.kind !== "history");
        const regions = all.filter(() => r.chance(0.7));
        const picks = (regions.length >= 2 ? regions : all.slice(0, 2)).map((reg) => {
          const inside = nodes.filter((n) => n.kind !== "history" && (n === reg || isAncestor(reg, n)));
          return absolute(r.pick(inside));
        });
        t.target = picks;
      } else {
        t.target = ref(source, r.pick(targetable));
      }
      if (r.chance(0.25)) t.reenter = true;
    }
    if (progress) {
      const g = r.chance(0.5) ? guard(external || r.chance(0.5) ? "event" : "initial") : null;
      t.guard = g ? { and: [{ "<": [ctx("n"), BOUND] }, g] } : { "<": [ctx("n"), BOUND] };
      // Sometimes by the event's `k` (and one more, so that `n` still grows): a raised event has no payload.
      t.actions = [log(label), bump(r.chance(0.2) ? { "+": [{ var: "event.payload.k" }, 1] } : 1)];
      if (f.has("raise") && r.chance(0.15)) t.actions.push({ raise: { type: r.pick(INTERNAL) } });
    } else {
      if (r.chance(0.4)) t.guard = guard("event");
      t.actions = actions(label, { payload: external });
    }
    return t;
  }

  /** `n`'s proper ancestors, innermost first. */
  function ancestors(n) {
    const out = [];
    for (let p = n.parent; p; p = p.parent) out.push(p);
    return out;
  }

  /** An eventless transition from `source` to `target` that counts `n` up under `n < BOUND`. */
  function progressTo(source, target, i) {
    const label = `t:${source.key}:always:h${i}`;
    return { target, guard: { "<": [ctx("n"), BOUND] }, actions: [log(label), bump(1)] };
  }

  function build(n) {
    const s = {};
    if (n.declaredId) s.id = n.declaredId;
    if (n.kind === "history") {
      s.type = "history";
      s.history = n.history;
      if (n.target) s.target = n.target;
      return s;
    }
    if (n.kind === "final") s.type = "final";
    if (n.kind === "parallel") s.type = "parallel";
    if (r.chance(0.8)) s.entry = actions(`en:${n.key}`);
    if (r.chance(0.8)) s.exit = actions(`ex:${n.key}`);
    if (n.kind === "final") return s;
    if (n.kind === "compound") {
      const starts = n.children.filter((c) => c.kind !== "history" && c.kind !== "final");
      s.initial = (starts.length && !r.chance(0.05) ? r.pick(starts) : n.children[0]).key;
      // A history state may be initial: what it recorded, else its default target (which it then needs).
      const resumable = n.children.find((c) => c.kind === "history" && c.target);
      if (resumable && r.chance(0.3)) s.initial = resumable.key;
    }
    if (n.children.length) s.states = Object.fromEntries(n.children.map((c) => [c.key, build(c)]));

    if (r.chance(n === root ? 0.35 : 0.6)) {
      s.on = {};
      const alphabet = f.has("raise") ? [...EXTERNAL, ...INTERNAL] : EXTERNAL;
      for (let k = r.int(1, 2); k > 0; k--) {
        const type = r.pick(alphabet);
        const internal = INTERNAL.includes(type);
        const many = r.int(1, 2);
        const list = [];
        for (let i = 0; i < many; i++) list.push(transition(n, type, i, { progress: internal, external: true }));
        s.on[type] = many === 1 && r.chance(0.5) ? list[0] : list;
      }
    }
    if (r.chance(0.2)) {
      const list = [];
      for (let i = r.int(1, 2); i > 0; i--) list.push(transition(n, "always", list.length, { progress: true }));
      s.always = list;
    } else if (n.kind === "atomic" && r.chance(0.1)) {
      // Unguarded: only forward in document order, and never into a history state, so no cycle.
      const later = nodes.filter((m) => index.get(m) > index.get(n) && m.kind !== "history");
      if (later.length) s.always = { target: absolute(r.pick(later)), actions: [log(`t:${n.key}:always:u`)] };
    }
    if (f.has("history")) {
      // Inside a parallel state, eventless transitions to a sibling history state (which may restore
      // their own source) beside eventless transitions that leave the region for an ancestor: one
      // microstep may then take both (issue 38).
      const more = [];
      const inParallel = ancestors(n).some((a) => a.kind === "parallel");
      const h = n.parent?.children.find((c) => c.kind === "history");
      if (inParallel && h && n.kind === "atomic" && r.chance(0.4)) more.push(progressTo(n, h.key, more.length));
      const above = ancestors(n).filter((a) => a !== root);
      if ((n.kind === "parallel" || n.parent?.kind === "parallel") && above.length && r.chance(0.3)) {
        more.push(progressTo(n, ref(n, r.pick(above)), more.length));
      }
      if (more.length) s.always = [...(s.always === undefined ? [] : [s.always].flat()), ...more];
    }
    if (f.has("done") && (n.kind === "parallel" || (n.kind === "compound" && hasFinalChild(n))) && n !== root && r.chance(0.5)) {
      s.onDone = transition(n, "done", 0, { progress: true });
    }
    return s;
  }

  const def = { id: "m", context: { n: 0, log: [] }, ...build(root) };
  const types = new Set();
  (function collect(s) {
    for (const t of Object.keys(s.on ?? {})) types.add(t);
    for (const c of Object.values(s.states ?? {})) collect(c);
  })(def);
  if (types.size === 0) {
    def.on = { E0: { actions: [log("t:m:E0:0")] } };
    types.add("E0");
  }
  const alphabet = [...types].sort();
  const events = [];
  for (let i = r.int(1, options.maxEvents ?? 10); i > 0; i--) events.push({ type: r.pick(alphabet), ...(r.chance(0.85) ? { payload: { k: r.int(0, 3) } } : {}) });
  return { def: order(def), events };
}

/** The definition's keys in a readable order (id, type, initial first; states last). */
function order(s) {
  if (Array.isArray(s)) return s.map(order);
  if (s === null || typeof s !== "object") return s;
  const first = ["id", "type", "history", "target", "initial", "context", "entry", "exit", "on", "always", "onDone", "states"];
  const keys = Object.keys(s).sort((a, b) => {
    const ia = first.indexOf(a), ib = first.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  });
  const isStates = (k) => k === "states";
  return Object.fromEntries(keys.map((k) => [k, isStates(k) ? Object.fromEntries(Object.entries(s[k]).map(([c, v]) => [c, order(v)])) : k === "context" ? s[k] : orderValue(k, s[k])]));
}

function orderValue(key, v) {
  // Expressions and action bodies keep their own key order; transitions and states are reordered.
  if (["on", "always", "onDone"].includes(key)) return order(v);
  return v;
}
