// The arguments of every call into idem, checked in JavaScript before anything crosses into a
// wasm module or a store. A wrong one is an `IdemError` with code `invalid_argument` (path: the
// argument's name) whose message names the argument and what it got. The engine's own codes stay
// for what they meant before: a process id that is missing or empty is `missing_process_id`, a
// `nowMs` that is missing (undefined, null, NaN) `missing_now`, one out of range `invalid_now`.
//
// What an event *says* is the engine's to judge (a missing id, an unknown type: a rejected
// outcome with its code, as a client's request is); what is not an event at all (a number, a
// function, an object JSON cannot write) never reaches it.
//
// The wasm-bindgen glue converts a `String` or `f64` parameter without looking at it (a number
// given as the process id made it call `realloc` on memory it never allocated), so every entry
// hands out the `Machine` that `checkedMachine` makes here, and src/wasm checks again for a
// caller that reaches the raw bindings.

import { IdemError } from "./error.js";
import { hostedNames, withImplementations } from "./implementations.js";

/** The longest process id, in bytes of UTF-8: an event id's limit, what the stores' keys are sized for. */
export const MAX_PROCESS_ID_BYTES = 256;

const encoder = new TextEncoder();

/**
 * What `value` is, for a message: `the number NaN`, `the string "p1"`, `an array`, ... A string
 * is quoted up to 32 characters, unless `conceal` (one that may be a secret: a token, a
 * principal, a request's URL), which says only its length.
 * @param {unknown} value
 * @param {{ conceal?: boolean }} [how]
 */
export function described(value, how = {}) {
  switch (typeof value) {
    case "undefined":
      return "undefined";
    case "string":
      if (value === "") return "an empty string";
      return value.length <= 32 && how.conceal !== true ? `the string ${JSON.stringify(value)}` : `a string of ${value.length} characters`;
    case "number":
      return `the number ${value}`;
    case "bigint":
      return "a bigint";
    case "boolean":
      return `${value}`;
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
    default:
      if (value === null) return "null";
      if (Array.isArray(value)) return "an array";
      if (ArrayBuffer.isView(value)) return `a ${value.constructor?.name ?? "typed array"}`;
      return "an object";
  }
}

/**
 * The `invalid_argument` error for `name`, which must be `expected` and is `value` (described as
 * `described` does; `conceal` for a value that may be a secret).
 * @param {string} name
 * @param {string} expected
 * @param {unknown} value
 * @param {{ conceal?: boolean }} [how]
 */
export function invalidArgument(name, expected, value, how) {
  return new IdemError("invalid_argument", `${name} must be ${expected}, got ${described(value, how)}`, { path: name });
}

/** Whether `value` is an object (not null, not an array, not a function). */
export const isRecord = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether a string has no lone surrogate (which UTF-8 would replace, so an id would change on the way in, or two read as one). */
export const wellFormed = typeof String.prototype.isWellFormed === "function" ? (s) => s.isWellFormed() : (s) => !/[\uD800-\uDFFF]/.test(s.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ""));

/**
 * A process id: a non-empty string of at most MAX_PROCESS_ID_BYTES bytes of UTF-8, without lone
 * surrogates. Missing or empty: `missing_process_id` (reduce scopes the effect keys by it).
 * @param {unknown} value
 * @param {string} [name]
 * @returns {string}
 */
export function processIdArg(value, name = "processId") {
  if (typeof value === "string" && value.length > 0 && value.length <= MAX_PROCESS_ID_BYTES / 3 && wellFormed(value)) return value;
  if (value === undefined || value === null || value === "") {
    throw new IdemError("missing_process_id", `${name} is missing or empty: reduce scopes the effect keys it makes by it`, { path: name });
  }
  if (typeof value !== "string") throw invalidArgument(name, "a non-empty string", value);
  if (!wellFormed(value)) throw invalidArgument(name, "a well-formed string (no lone surrogate)", value);
  const bytes = value.length > MAX_PROCESS_ID_BYTES ? Infinity : encoder.encode(value).length;
  if (bytes > MAX_PROCESS_ID_BYTES) throw invalidArgument(name, `at most ${MAX_PROCESS_ID_BYTES} bytes of UTF-8`, value);
  return value;
}

/**
 * The host's clock, `nowMs`: a finite number of milliseconds from 0 to 2^53 - 1. Undefined, null
 * or NaN: `missing_now`; another number: `invalid_now`; not a number (the string "123"):
 * `invalid_argument`.
 * @param {unknown} value
 * @param {string} [name]
 * @returns {number}
 */
export function nowArg(value, name = "nowMs") {
  if (typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER) return value;
  if (value === undefined || value === null || Number.isNaN(value)) {
    throw new IdemError("missing_now", `${name} is missing or not a number: pass the host's clock (Date.now())`, { path: name });
  }
  if (typeof value !== "number") throw invalidArgument(name, "a number of milliseconds", value);
  throw new IdemError("invalid_now", `${name} must be a number of milliseconds from 0 to 2^53 - 1, got ${value}`, { path: name });
}

/**
 * The time a host clock gives (`readClock`, `apply`'s `options.now`): a function returning ms, a
 * number of ms, or undefined for `Date.now()`; its errors name the clock `name`.
 * @param {unknown} now
 * @param {string} name
 * @returns {number}
 */
export function clockArg(now, name) {
  if (now === undefined) return Date.now();
  if (typeof now === "function") return nowArg(now(), `${name}()`);
  if (typeof now === "number") return nowArg(now, name);
  throw invalidArgument(name, "a function returning ms, a number of ms or undefined", now);
}

/**
 * A snapshot as `reduce` and `reduceBytes` take it: `null` for a new process, the stored string,
 * or its bytes as a `Uint8Array`. (`undefined` is refused: a misspelt field must not start a new
 * process.)
 * @param {unknown} value
 * @param {string} [name]
 */
export function snapshotArg(value, name = "snapshot") {
  if (value === null || typeof value === "string" || value instanceof Uint8Array) return value;
  throw invalidArgument(name, "null, a string or a Uint8Array", value);
}

/**
 * A stored snapshot (`due`, `inspect`): a string or a `Uint8Array`.
 * @param {unknown} value
 * @param {string} [name]
 */
export function storedSnapshotArg(value, name = "snapshot") {
  if (typeof value === "string" || value instanceof Uint8Array) return value;
  throw invalidArgument(name, "a string or a Uint8Array", value);
}

/**
 * An event as a reduce takes it: its JSON text, or an object, which is written as JSON here (so a
 * `toJSON` or getter runs before anything crosses, and one that throws is this call's error).
 * What the event says (its id, its type, its payload) is the engine's to judge.
 * @param {unknown} value
 * @param {string} [name]
 * @returns {string}
 */
export function eventArg(value, name = "event") {
  if (typeof value === "string") return value;
  if (!isRecord(value)) throw invalidArgument(name, "an object { id, type, payload } or its JSON text", value);
  return jsonText(value, name);
}

/**
 * `value` written as JSON, or an IdemError saying why it cannot be (a BigInt, a cycle, a
 * `toJSON` that throws, a function or a symbol, which JSON writes as nothing): code
 * `invalid_argument` with path `name` unless `how` says other.
 * @param {unknown} value
 * @param {string} name how the message names the value
 * @param {{ code?: string, path?: string }} [how]
 * @returns {string}
 */
export function jsonText(value, name, how = {}) {
  const code = how.code ?? "invalid_argument";
  const path = how.code === undefined ? (how.path ?? name) : how.path;
  let text;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    const why = (cause instanceof Error ? cause.message : String(cause)).split("\n")[0];
    throw new IdemError(code, `${name} cannot be written as JSON: ${why}`, { path, cause });
  }
  if (typeof text !== "string") throw new IdemError(code, `${name} cannot be written as JSON: got ${described(value)}`, { path });
  return text;
}

/**
 * A definition (`new Machine`) or an XState config (`importXState`): an object or its JSON text.
 * @param {unknown} value
 * @param {string} name
 */
export function jsonArg(value, name) {
  if (typeof value === "string" || isRecord(value)) return value;
  throw invalidArgument(name, "an object or its JSON text", value);
}

/**
 * An optional options object: undefined, or an object (its fields are checked where they are read).
 * @param {unknown} value
 * @param {string} [name]
 * @returns {Record<string, any>}
 */
export function optionsArg(value, name = "options") {
  if (value === undefined) return {};
  if (isRecord(value)) return value;
  throw invalidArgument(name, "an object or undefined", value);
}

/**
 * An optional field of an options object: `undefined`, or a value `ok` accepts.
 * @param {Record<string, any>} options
 * @param {string} key
 * @param {(v: any) => boolean} ok
 * @param {string} expected
 * @param {string} [name] the options argument's name
 */
export function optionalField(options, key, ok, expected, name = "options") {
  const v = options[key];
  if (v !== undefined && !ok(v)) throw invalidArgument(`${name}.${key}`, expected, v);
  return v;
}

/** Whether `v` is a whole number from 0 to 2^53 - 1. */
export const isCount = (v) => Number.isSafeInteger(v) && v >= 0;
/** Whether `v` is a whole number from 1 to 2^53 - 1 (a limit: bytes, ms). */
export const isPositiveInteger = (v) => Number.isSafeInteger(v) && v > 0;
/** Whether `v` is a finite number of at least 0. */
export const isDuration = (v) => typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
export const isFunction = (v) => typeof v === "function";
export const isBoolean = (v) => typeof v === "boolean";

/**
 * An object with the named methods (a store, a machine, a database binding).
 * @param {unknown} value
 * @param {string} name
 * @param {string[]} methods
 * @param {string} [what] how the message names what it must be
 */
export function withMethods(value, name, methods, what = `an object with ${methods.join(", ")}`) {
  if ((typeof value === "object" || typeof value === "function") && value !== null && methods.every((m) => typeof value[m] === "function")) return value;
  throw invalidArgument(name, what, value);
}

/** A store (`load`, `commit`), as `apply`, `inspect` and `dispatch` take it. */
export const storeArg = (value, name = "store") => withMethods(value, name, ["load", "commit"], "a store (an object with load and commit)");
/**
 * A machine as `apply`, `inspect`, `dispatch` and `nextDueAt` take it: an object with `reduce`,
 * `due` and `inspect` (a `reduce` alone is no sign: every typed array has one).
 */
export const machineArg = (value, name = "machine") => withMethods(value, name, ["reduce", "due", "inspect"], "a Machine (an object with reduce, due and inspect)");

/**
 * `apply`'s options (and the same fields of `dispatch`'s and `createHttpApi`'s), each checked.
 * @param {unknown} value
 * @param {string} [name]
 */
export function applyOptionsArg(value, name = "options") {
  const o = optionsArg(value, name);
  optionalField(o, "now", (v) => typeof v === "function" || isDuration(v), "a function returning ms or a number of ms", name);
  optionalField(o, "maxRetries", isCount, "a whole number", name);
  optionalField(o, "backoff", isFunction, "a function", name);
  optionalField(o, "onConflict", isFunction, "a function", name);
  optionalField(o, "lane", isBoolean, "true or false", name);
  optionalField(o, "laneStallMs", isDuration, "a number of ms", name);
  return o;
}

/** Whether `v` is an object whose every own value is a function (dispatch's handlers and verifiers). */
const isFunctions = (v) => isRecord(v) && Object.values(v).every(isFunction);

/**
 * `dispatch`'s options: `apply`'s, and its own.
 * @param {unknown} value
 */
export function dispatchOptionsArg(value) {
  const o = applyOptionsArg(value);
  optionalField(o, "handlers", isFunctions, "an object of functions by effect type");
  optionalField(o, "verifiers", isFunctions, "an object of functions by effect type");
  optionalField(o, "timeoutMs", isDuration, "a number of ms");
  optionalField(o, "maxRounds", isCount, "a whole number");
  optionalField(o, "stuckRetryMs", isDuration, "a number of ms");
  optionalField(o, "onStep", isFunction, "a function");
  return o;
}

/**
 * A store's version as `commit` takes it: null (create), a number or a string.
 * @param {unknown} value
 * @param {string} [name]
 */
export function versionArg(value, name = "expectedVersion") {
  if (value === null || typeof value === "string" || (typeof value === "number" && Number.isFinite(value))) return value;
  throw invalidArgument(name, "null, a number or a string", value);
}

/**
 * What a store's `commit` is given: the outcome to write (an object whose `snapshot` is a string,
 * or bytes where `bytes` allows them) and the optional extras (`event`, `now`).
 * @param {unknown} outcome
 * @param {unknown} extras
 * @param {{ bytes?: boolean, name?: string }} [how]
 */
export function commitArgs(outcome, extras, how = {}) {
  const name = how.name ?? "outcome";
  if (!isRecord(outcome)) throw invalidArgument(name, "an outcome object", outcome);
  const s = outcome.snapshot;
  if (!(typeof s === "string" || (how.bytes === true && s instanceof Uint8Array))) {
    throw invalidArgument(`${name}.snapshot`, how.bytes === true ? "a string or a Uint8Array" : "a string", s);
  }
  if (outcome.revision !== undefined && !isCount(outcome.revision)) throw invalidArgument(`${name}.revision`, "a whole number", outcome.revision);
  const x = optionsArg(extras, "extras");
  if (x.event !== undefined && !(isRecord(x.event) && typeof x.event.id === "string")) throw invalidArgument("extras.event", "an event object with a string id", x.event);
  optionalField(x, "now", isDuration, "a number of milliseconds", "extras");
  return x;
}

/**
 * The steps of a store's `commitMany`: a non-empty array of `{ outcome, extras }`.
 * @param {unknown} steps
 * @param {{ bytes?: boolean }} [how]
 */
export function stepsArg(steps, how = {}) {
  if (!Array.isArray(steps) || steps.length === 0) throw invalidArgument("steps", "a non-empty array of { outcome, extras }", steps);
  steps.forEach((step, i) => {
    if (!isRecord(step)) throw invalidArgument(`steps[${i}]`, "an object { outcome, extras }", step);
    commitArgs(step.outcome, step.extras, { ...how, name: `steps[${i}].outcome` });
  });
  return steps;
}

/**
 * The options of a store's `events`: `after` and `limit`, whole numbers.
 * @param {unknown} options
 */
export function eventsOptionsArg(options) {
  const o = optionsArg(options);
  optionalField(o, "after", isCount, "a whole number");
  optionalField(o, "limit", isCount, "a whole number");
  return o;
}

/**
 * The checked `Machine` of an entry: the wasm module's class `Base`, every argument checked before
 * it crosses (see above), and a machine that was freed, or a method called on something that is
 * not a machine, refused with `invalid_argument` where the bindings would follow a null pointer.
 * @template {new (definition: any) => any} T
 * @param {T} Base the wasm module's `Machine`
 * @returns {T}
 */
export function checkedMachine(Base) {
  class Machine extends Base {
    /** Whether this machine's wasm memory is still there (false once freed). */
    #live;

    /**
     * @param {object | string} definition
     * @param {object} [implementations] `{ guards, actions, delays }`, functions or data (implementations.js)
     */
    constructor(definition, implementations) {
      const built = withImplementations(jsonArg(definition, "definition"), implementations);
      super(built.definition, built.hosted, built.call);
      if (built.hosted !== undefined) hostedNames.set(this, built.hosted);
      this.#live = true;
    }

    /** Throws unless `m` is a machine made here and not freed. */
    static #usable(m) {
      if (typeof m !== "object" || m === null || !(#live in m)) throw invalidArgument("this", "a Machine", m);
      if (!m.#live) throw new IdemError("invalid_argument", "this machine was freed (free() or a using block): build another", { path: "this" });
    }

    reduce(snapshot, event, nowMs, processId) {
      Machine.#usable(this);
      const now = nowArg(nowMs);
      const process = processIdArg(processId);
      return super.reduce(snapshotArg(snapshot), eventArg(event), now, process);
    }

    reduceBytes(snapshot, event, nowMs, processId) {
      Machine.#usable(this);
      const now = nowArg(nowMs);
      const process = processIdArg(processId);
      return super.reduceBytes(snapshotArg(snapshot), eventArg(event), now, process);
    }

    due(snapshot, nowMs) {
      Machine.#usable(this);
      const now = nowArg(nowMs);
      return super.due(storedSnapshotArg(snapshot), now);
    }

    inspect(snapshot) {
      Machine.#usable(this);
      return super.inspect(storedSnapshotArg(snapshot));
    }

    retention() {
      Machine.#usable(this);
      return super.retention();
    }

    definition() {
      Machine.#usable(this);
      return super.definition();
    }

    eventTypes() {
      Machine.#usable(this);
      return super.eventTypes();
    }

    get id() {
      Machine.#usable(this);
      return super.id;
    }

    get version() {
      Machine.#usable(this);
      return super.version;
    }

    get hash() {
      Machine.#usable(this);
      return super.hash;
    }

    /** Release the wasm memory now (rather than when it is collected); the machine is unusable after. */
    free() {
      if (typeof this === "object" && this !== null && #live in this && this.#live) {
        this.#live = false;
        super.free();
      }
    }
  }
  // As the bindings do: `using m = new Machine(...)` frees it at the end of the block.
  if (Symbol.dispose) Object.defineProperty(Machine.prototype, Symbol.dispose, { value: Machine.prototype.free, writable: true, configurable: true });
  return Machine;
}
