// An idem definition as an XState 5 machine: the same states, targets and flags, with JSONLogic
// guards and assigns evaluated by `jsonlogic.mjs` over XState's `{ context, event }`, `raise` as
// XState's `raise`, and the state test as XState's `stateIn` (combined with `and`/`or`/`not`).

import * as XState from "xstate";
import { IN_STATE } from "./generate.mjs";
import { evaluate, truthy } from "./jsonlogic.mjs";

/**
 * The bound on microsteps in a macrostep on both sides (XState's `maxIterations`, idem's
 * `limits.maxMicrosteps`): an endless loop becomes an error, not a hang. Lower than idem's default
 * (10,000) because an endless loop's action log grows with every microstep.
 */
export const MAX_ITERATIONS = 500;

/**
 * @param {object} def an idem definition
 * @param {number} [maxIterations]
 * @param {typeof XState} [x] the XState module to build with (xstate-document-order.mjs gives another)
 */
export function toXState(def, maxIterations = MAX_ITERATIONS, x = XState) {
  const { context, version: _v, retention: _r, recordIgnored: _ri, limits: _l, ...rest } = def;
  return x.createMachine({ ...node(rest, x), context: structuredClone(context ?? {}), options: { maxIterations } });
}

function node(s, x) {
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    switch (k) {
      case "states":
        out.states = Object.fromEntries(Object.entries(v).map(([key, child]) => [key, node(child, x)]));
        break;
      case "on":
        out.on = Object.fromEntries(Object.entries(v).map(([type, t]) => [type, transitions(t, x)]));
        break;
      case "always":
      case "onDone":
        out[k] = transitions(v, x);
        break;
      case "entry":
      case "exit":
        out[k] = actions(v, x);
        break;
      case "id": case "initial": case "type": case "history": case "target": case "description": case "meta": case "tags":
        out[k] = v;
        break;
      default:
        throw new Error(`xstate adapter: state key "${k}" is not translated`);
    }
  }
  return out;
}

function transitions(t, x) {
  if (Array.isArray(t)) return t.map((one) => transitions(one, x));
  if (typeof t === "string") return { target: t };
  const out = {};
  if (t.target !== undefined) out.target = t.target;
  if (t.guard !== undefined) out.guard = guard(t.guard, x);
  if (t.actions !== undefined) out.actions = actions(t.actions, x);
  if (t.reenter !== undefined) out.reenter = t.reenter;
  return out;
}

const usesInState = (e) => JSON.stringify(e).includes(`"${IN_STATE}"`);

function guard(expr, x) {
  if (!usesInState(expr)) return ({ context, event }) => truthy(evaluate(expr, { context, event }));
  const [op] = Object.keys(expr);
  const args = Array.isArray(expr[op]) ? expr[op] : [expr[op]];
  switch (op) {
    case IN_STATE: return x.stateIn(args[0]);
    case "and": return x.and(args.map((a) => guard(a, x)));
    case "or": return x.or(args.map((a) => guard(a, x)));
    case "!": return x.not(guard(args[0], x));
    default: throw new Error(`xstate adapter: "${IN_STATE}" under "${op}" is not translated`);
  }
}

function actions(list, x) {
  return (Array.isArray(list) ? list : [list]).map((a) => {
    const [kind] = Object.keys(a);
    const body = a[kind];
    switch (kind) {
      case "assign": {
        const fields = Object.entries(body);
        // Every field is computed from the context as it was before this assign.
        return x.assign(({ context, event }) => Object.fromEntries(fields.map(([f, e]) => [f, evaluate(e, { context, event })])));
      }
      case "raise":
        return x.raise(({ context, event }) => {
          const raised = { type: body.type };
          if (body.payload !== undefined) raised.payload = evaluate(body.payload, { context, event });
          return raised;
        });
      default:
        throw new Error(`xstate adapter: action "${kind}" is not translated`);
    }
  });
}
