// Shrinking a disagreeing case: drop events, states, transitions, actions and guards (and simplify
// guards) for as long as the smaller case still disagrees in a way no documented difference
// excuses. Greedy, one edit at a time, until no edit keeps the disagreement.

import { IN_STATE } from "./generate.mjs";

const clone = (x) => structuredClone(x);

/**
 * @param {{def: object, events: object[]}} kase
 * @param {(kase) => boolean} fails  whether a case still shows the disagreement
 * @param {number} [budget] most candidate cases to run
 */
export function shrink(kase, fails, budget = 2000, ms = 20_000) {
  let best = clone(kase);
  let tries = 0;
  let improved = true;
  const until = Date.now() + ms;
  while (improved && tries < budget && Date.now() < until) {
    improved = false;
    for (const candidate of candidates(best)) {
      if (++tries > budget) break;
      let ok = false;
      try { ok = fails(candidate); } catch { ok = false; }
      if (ok) { best = candidate; improved = true; break; }
    }
  }
  return { kase: best, tries };
}

/** Every case one edit smaller than `kase`, the biggest cuts first. */
function* candidates(kase) {
  const { def, events } = kase;
  // Events: halves, then one at a time.
  for (let n = events.length >> 1; n >= 1; n >>= 1) {
    for (let i = 0; i + n <= events.length; i += n) yield { def, events: [...events.slice(0, i), ...events.slice(i + n)] };
  }
  for (let i = 0; i < events.length; i++) {
    if (events[i].payload?.k !== 0) {
      const e = clone(events);
      e[i].payload = { k: 0 };
      yield { def, events: e };
    }
  }
  for (const d of defEdits(def)) {
    yield { def: d, events };
    const types = accepted(d);
    if (events.some((e) => !types.has(e.type))) yield { def: d, events: events.filter((e) => types.has(e.type)) };
  }
}

/** The event types some state of `def` takes. */
function accepted(def) {
  const types = new Set();
  (function walk(s) {
    for (const t of Object.keys(s.on ?? {})) types.add(t);
    for (const c of Object.values(s.states ?? {})) walk(c);
  })(def);
  return types;
}

/** The states of `def`: `{ key, parent, s, path }`, document order. */
function states(def) {
  const out = [];
  (function walk(s, parent) {
    for (const [key, c] of Object.entries(s.states ?? {})) {
      out.push({ key, parent: s, s: c });
      walk(c, c);
    }
  })(def, null);
  return out;
}

/** The names and ids a target or a state test can mention: a state's key, its declared id, its descendants'. */
function namesUnder(key, s) {
  const names = new Set([key]);
  if (s.id) names.add(s.id);
  for (const [k, c] of Object.entries(s.states ?? {})) for (const n of namesUnder(k, c)) names.add(n);
  return names;
}

const mentions = (value, names) => {
  const text = JSON.stringify(value ?? null);
  for (const n of names) if (new RegExp(`[#."]${n}(?=[."\\]]|$)`).test(text)) return true;
  return false;
};

/** Drop every transition whose target, and every guard whose state test, names one of `names`. */
function forget(s, names) {
  const keepT = (t) => typeof t === "string" ? !mentions(t, names) : !mentions(t.target, names);
  const fix = (t) => {
    if (typeof t === "object" && t.guard && mentions(t.guard, names) && JSON.stringify(t.guard).includes(IN_STATE)) {
      const { guard: _g, ...rest } = t;
      return rest;
    }
    return t;
  };
  const list = (v) => (Array.isArray(v) ? v : [v]).filter(keepT).map(fix);
  if (s.on) {
    for (const k of Object.keys(s.on)) {
      s.on[k] = list(s.on[k]);
      if (s.on[k].length === 0) delete s.on[k];
    }
    if (Object.keys(s.on).length === 0) delete s.on;
  }
  for (const k of ["always", "onDone"]) {
    if (s[k] !== undefined) {
      s[k] = list(s[k]);
      if (s[k].length === 0) delete s[k];
    }
  }
  if (s.type === "history" && s.target && names.has(s.target)) delete s.target;
  for (const c of Object.values(s.states ?? {})) forget(c, names);
}

/** A path into `def` as a list of keys, and a function to edit the value there in a copy. */
function edit(def, path, fn) {
  const d = clone(def);
  let at = d;
  for (const p of path.slice(0, -1)) at = at[p];
  fn(at, path[path.length - 1], d);
  return d;
}

function* defEdits(def) {
  // Remove a state (and whatever names it).
  const all = [];
  (function walk(s, path) {
    for (const [key, c] of Object.entries(s.states ?? {})) {
      all.push([...path, "states", key]);
      walk(c, [...path, "states", key]);
    }
  })(def, []);
  for (const path of all) {
    const d = edit(def, path, (parent, key, root) => {
      const names = namesUnder(key, parent[key]);
      delete parent[key];
      forget(root, names);
      // `parent` is the `states` object; its owner's initial must still name a child.
      const owner = path.length === 2 ? root : path.slice(0, -2).reduce((o, p) => o[p], root);
      const left = Object.keys(owner.states);
      if (left.length === 0) {
        delete owner.states;
        delete owner.initial;
        if (owner.type === "parallel") delete owner.type;
        delete owner.onDone;
      } else if (owner.initial === key || (owner.initial !== undefined && !left.includes(owner.initial))) {
        owner.initial = left.find((k) => owner.states[k].type !== "history") ?? left[0];
      }
    });
    if (Object.keys(d.states ?? {}).length > 0) yield d;
  }
  // Flatten a compound state into an atomic one.
  for (const path of all) {
    const s = path.reduce((o, p) => o[p], def);
    if (s.states && s.type !== "history") {
      yield edit(def, path, (parent, key, root) => {
        const names = namesUnder(key, parent[key]);
        names.delete(key);
        if (parent[key].id) names.delete(parent[key].id);
        delete parent[key].states;
        delete parent[key].initial;
        delete parent[key].onDone;
        if (parent[key].type === "parallel") delete parent[key].type;
        forget(root, names);
      });
    }
  }
  // Per state (and the root): transitions, actions, guards, flags.
  const nodes = [[], ...all];
  for (const path of nodes) {
    const s = path.reduce((o, p) => o[p], def);
    // One event type of `on`, and the events of that type when no other state takes them.
    for (const type of Object.keys(s.on ?? {})) {
      const d = edit(def, [...path, "on", type], (o, k) => delete o[k]);
      if (d !== null) yield d;
    }
    for (const k of ["on", "always", "onDone", "entry", "exit", "id"]) {
      if (s[k] !== undefined && !(k === "id" && path.length === 0)) {
        yield edit(def, [...path, k], (o, key, root) => {
          if (key === "id") {
            // A declared id: the targets that named it name the state by its path instead.
            const text = JSON.stringify(root).replaceAll(`"#${o.id}"`, `"#m.${path.filter((p) => p !== "states").join(".")}"`)
              .replaceAll(`"#${o.id}.`, `"#m.${path.filter((p) => p !== "states").join(".")}.`);
            const copy = JSON.parse(text);
            Object.keys(root).forEach((x) => delete root[x]);
            Object.assign(root, copy);
            const again = path.reduce((x, p) => x[p], root);
            delete again.id;
            return;
          }
          delete o[key];
        });
      }
    }
    if (s.type === "history" && s.target) yield edit(def, [...path, "target"], (o, k) => delete o[k]);
    if (s.type === "history" && s.history === "deep") yield edit(def, [...path, "history"], (o, k) => { o[k] = "shallow"; });
    for (const [slot, ts] of transitionSlots(s)) {
      const list = Array.isArray(ts) ? ts : [ts];
      for (let i = 0; i < list.length; i++) {
        const tpath = Array.isArray(ts) ? [...path, ...slot, i] : [...path, ...slot];
        if (Array.isArray(ts) && list.length > 1) yield edit(def, [...path, ...slot], (o, k) => { o[k] = o[k].filter((_, j) => j !== i); });
        const t = list[i];
        if (typeof t !== "object") continue;
        for (const k of ["guard", "reenter", "target", "actions"]) {
          if (t[k] !== undefined) yield edit(def, [...tpath, k], (o, key) => delete o[key]);
        }
        if (Array.isArray(t.target) && t.target.length > 1) {
          for (let j = 0; j < t.target.length; j++) yield edit(def, [...tpath, "target"], (o, key) => { o[key] = o[key].filter((_, x) => x !== j); });
        }
        if (t.guard) for (const g of simpler(t.guard)) yield edit(def, [...tpath, "guard"], (o, key) => { o[key] = g; });
        yield* actionEdits(def, [...tpath, "actions"], t.actions);
      }
    }
    yield* actionEdits(def, [...path, "entry"], s.entry);
    yield* actionEdits(def, [...path, "exit"], s.exit);
  }
}

function* transitionSlots(s) {
  for (const [type, ts] of Object.entries(s.on ?? {})) yield [["on", type], ts];
  if (s.always !== undefined) yield [["always"], s.always];
  if (s.onDone !== undefined) yield [["onDone"], s.onDone];
}

function* actionEdits(def, path, list) {
  if (!Array.isArray(list)) return;
  for (let i = 0; i < list.length; i++) yield edit(def, path, (o, k) => { o[k] = o[k].filter((_, j) => j !== i); });
}

/** Smaller guards: each operand of `and`/`or`, the operand of `!`. */
function simpler(g) {
  const [op] = Object.keys(g);
  if (op === "and" || op === "or") return g[op];
  if (op === "!") return [Array.isArray(g[op]) ? g[op][0] : g[op]];
  return [];
}

/** JSON with short objects and arrays on one line: a minimal machine fits on a screen. */
export function pretty(value, indent = "", width = 100) {
  const flat = JSON.stringify(value);
  if (flat === undefined) return "undefined";
  if (flat.length + indent.length <= width || value === null || typeof value !== "object") return flat;
  const inner = indent + "  ";
  if (Array.isArray(value)) return `[\n${value.map((v) => inner + pretty(v, inner, width)).join(",\n")}\n${indent}]`;
  return `{\n${Object.entries(value).map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pretty(v, inner, width)}`).join(",\n")}\n${indent}}`;
}
