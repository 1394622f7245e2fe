// The JSONLogic subset the generator writes, evaluated for the XState side of the comparison as
// JSONLogic's reference, json-logic-js, evaluates it: where idem refuses arithmetic on a value that
// is not a number (a missing payload field, null), json-logic-js's `+` gives NaN, which XState
// then stores (the documented difference `nan-where-idem-refuses`, differences.mjs). `strictly(run)`
// evaluates as idem does instead, throwing there, which is how that difference is proved to be the
// whole disagreement. `in_state` is not evaluated here: guards that use it are turned into XState's
// `stateIn` by the adapter.

/** JSONLogic truthiness (as `expr::truthy`): null, false, 0, NaN, "" and [] are false. */
export function truthy(v) {
  if (Array.isArray(v)) return v.length > 0;
  return Boolean(v);
}

function isOperator(x) {
  return x !== null && typeof x === "object" && !Array.isArray(x) && Object.keys(x).length === 1;
}

/** `{"var": "context.n"}` (or `["context.n", default]`) read from `data`. */
function lookup(data, path, fallback) {
  if (path === "" || path === null || path === undefined) return data;
  let v = data;
  for (const part of String(path).split(".")) {
    if (v === null || v === undefined || typeof v !== "object") return fallback;
    v = Array.isArray(v) ? v[Number(part)] : v[part];
  }
  return v === undefined ? fallback : v;
}

/** Every operator idem knows (`src/engine/expr.rs`) and the state test: never an object literal. */
const IDEM_OPS = new Set(["var", "missing", "missing_some", "if", "?:", "==", "===", "!=", "!==", "!", "!!", "or",
  "and", ">", ">=", "<", "<=", "max", "min", "+", "-", "*", "/", "%", "map", "filter", "reduce", "all", "none", "some",
  "merge", "in", "cat", "substr", "in_state", "preserve", "eachKey"]);

const OPS = {
  var: (data, args) => lookup(data, evaluate(args[0], data), args.length > 1 ? evaluate(args[1], data) : null),
  "==": (d, a) => evaluate(a[0], d) == evaluate(a[1], d), // eslint-disable-line eqeqeq
  "===": (d, a) => evaluate(a[0], d) === evaluate(a[1], d),
  "!=": (d, a) => evaluate(a[0], d) != evaluate(a[1], d), // eslint-disable-line eqeqeq
  "!": (d, a) => !truthy(evaluate(a[0], d)),
  "!!": (d, a) => truthy(evaluate(a[0], d)),
  "<": (d, a) => compareChain(d, a, (x, y) => x < y),
  "<=": (d, a) => compareChain(d, a, (x, y) => x <= y),
  ">": (d, a) => evaluate(a[0], d) > evaluate(a[1], d),
  ">=": (d, a) => evaluate(a[0], d) >= evaluate(a[1], d),
  and: (d, a) => {
    let v = true;
    for (const x of a) { v = evaluate(x, d); if (!truthy(v)) return v; }
    return v;
  },
  or: (d, a) => {
    let v = false;
    for (const x of a) { v = evaluate(x, d); if (truthy(v)) return v; }
    return v;
  },
  // As json-logic-js: `+` reads each argument with parseFloat (null, a missing value: NaN), `-`
  // and `%` with JavaScript's own operators (null counts as 0).
  "+": (d, a) => a.reduce((s, x) => s + parseFloat(operand(evaluate(x, d))), 0),
  "-": (d, a) => (a.length === 1 ? -operand(evaluate(a[0], d)) : operand(evaluate(a[0], d)) - operand(evaluate(a[1], d))),
  "%": (d, a) => operand(evaluate(a[0], d)) % operand(evaluate(a[1], d)),
  merge: (d, a) => a.flatMap((x) => { const v = evaluate(x, d); return Array.isArray(v) ? v : [v]; }),
  cat: (d, a) => a.map((x) => { const v = evaluate(x, d); return v === null ? "" : String(v); }).join(""),
  in: (d, a) => {
    const needle = evaluate(a[0], d), hay = evaluate(a[1], d);
    if (typeof hay === "string") return hay.includes(String(needle));
    return Array.isArray(hay) && hay.includes(needle);
  },
};

let strict = false;

/**
 * Run `run` with arithmetic evaluated as idem evaluates it: an operand that is not a number, or a
 * string that is not one, throws (idem's `expression_failed`), as does a result that is not finite.
 */
export function strictly(run) {
  strict = true;
  try {
    return run();
  } finally {
    strict = false;
  }
}

/** An arithmetic operand: as it is, or (under `strictly`) a number, or an error. */
function operand(v) {
  if (!strict) return v;
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
  if (!Number.isFinite(n)) throw new Error(`expression_failed: arithmetic on ${JSON.stringify(v) ?? "a missing value"}`);
  return n;
}

/** `<` and `<=` take two arguments, or three ("between"). */
function compareChain(d, a, cmp) {
  const v = a.map((x) => evaluate(x, d));
  return v.length === 3 ? cmp(v[0], v[1]) && cmp(v[1], v[2]) : cmp(v[0], v[1]);
}

/** Evaluate `expr` against `data` (`{ context, event }`). */
export function evaluate(expr, data) {
  if (Array.isArray(expr)) return expr.map((x) => evaluate(x, data));
  if (!isOperator(expr)) {
    if (expr !== null && typeof expr === "object") {
      // idem's extension: an object of two or more members is built from its members' expressions.
      return Object.fromEntries(Object.entries(expr).map(([k, v]) => [k, evaluate(v, data)]));
    }
    return expr;
  }
  const [op] = Object.keys(expr);
  const raw = expr[op];
  // `preserve`: data, not evaluated; `eachKey`: an object built from expressions (json-logic-engine's).
  if (op === "preserve") return raw;
  if (op === "eachKey") return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, evaluate(v, data)]));
  const fn = OPS[op];
  if (!fn) {
    // idem refuses an unknown operator on load; one it knows is not written by the generator.
    throw new Error(`jsonlogic: operator "${op}" is ${IDEM_OPS.has(op) ? "not in the differential test's subset" : "unknown"}`);
  }
  return fn(data, Array.isArray(raw) ? raw : [raw]);
}
