// Implementations given to `new Machine(definition, { guards, actions, delays })`, as XState's
// `setup` takes them: each a function or data (a JSONLogic guard, a list of idem actions, a delay
// expression). Data joins the definition's `implementations`, where the analysis reads it like
// inline code. Guards and actions given as functions stay here: the wasm module is told their
// names and calls back with the index of one and its params, the context and the event as JSON
// text (one line each),
// and gets its answer back as JSON text. A delay function is called once, when the machine is
// built, with the initial context (idem schedules an `after` from the definition).
//
// They run inside `reduce` and must be pure: a duplicate event replays the outcome recorded for it
// and calls none of them. A throw, or an answer of the wrong type, refuses the event with
// `implementation_failed` naming the implementation, and nothing is stored.
import { IdemError } from "./error.js";

const SECTIONS = ["guards", "actions", "delays"];

/** The function names (`hosted`) each machine was built with, for the full module's analysis. */
export const hostedNames = new WeakMap();

/**
 * The definition to build (its data implementations joined in), the names of the function guards
 * and actions (`guards.NAME` a line), and the callback that runs them; `null` when none are given.
 * @param {object | string} definition
 * @param {unknown} implementations
 */
export function withImplementations(definition, implementations) {
  if (implementations === undefined) return { definition, hosted: undefined, call: undefined };
  if (!isRecord(implementations)) throw argument("implementations", "an object of guards, actions and delays");
  const parsed = typeof definition === "string" ? parseDefinition(definition) : definition;
  // Not an object: the engine refuses it with its own error.
  if (!isRecord(parsed)) return { definition, hosted: undefined, call: undefined };
  const def = { ...parsed };
  const given = isRecord(def.implementations) ? def.implementations : {};
  const data = { ...given };
  /** @type {string[]} */
  const hosted = [];
  /** @type {Function[]} */
  const fns = [];
  for (const [section, entries] of Object.entries(implementations)) {
    if (!SECTIONS.includes(section)) throw argument(`implementations.${section}`, "guards, actions or delays (no other key)");
    if (entries === undefined) continue;
    if (!isRecord(entries)) throw argument(`implementations.${section}`, "an object of named implementations");
    const written = isRecord(given[section]) ? given[section] : {};
    const joined = { ...written };
    for (const [name, impl] of Object.entries(entries)) {
      const path = `implementations.${section}.${name}`;
      if (Object.hasOwn(written, name)) {
        throw new IdemError("invalid_definition", `${section.slice(0, -1)} "${name}" is given both in the definition and to new Machine: give it once`, { path });
      }
      if (typeof impl !== "function") joined[name] = impl;
      else if (section === "delays") joined[name] = delayOf(impl, def, path);
      else {
        hosted.push(`${section}.${name}`);
        fns.push(impl);
      }
    }
    data[section] = joined;
  }
  def.implementations = data;
  if (hosted.length === 0) return { definition: def, hosted: undefined, call: undefined };
  return { definition: def, hosted: hosted.join("\n"), call: caller(hosted, fns) };
}

/**
 * The callback the wasm module calls: a guard's boolean, `=` and an action's answer as JSON text,
 * or `!` and why it failed.
 */
function caller(hosted, fns) {
  const guards = hosted.map((name) => name.startsWith("guards."));
  return (index, texts) => {
    try {
      const answer = fns[index](new Args(texts));
      if (guards[index]) return typeof answer === "boolean" ? answer : `!a guard must answer a boolean, got ${shown(answer)}`;
      if (typeof answer !== "object" || answer === null) {
        return `!an action must answer a context patch (an object) or a list of idem actions, got ${shown(answer)}`;
      }
      return `=${JSON.stringify(literalActions(answer))}`;
    } catch (e) {
      return `!it threw: ${e instanceof Error ? e.message : String(e)}`;
    }
  };
}

/** The last texts parsed and their values: the calls within one reduce mostly see the same event. */
const parsedText = { event: "", eventValue: undefined, context: "", contextValue: undefined };

/**
 * A function's argument, `{ context, event, params }`, from the params, context and event texts
 * (one line each): each parsed when first read. A function must not change them (it is pure): the
 * same values may be handed to the next call within the reduce.
 */
class Args {
  #texts;
  #params = null;
  #context = -1;
  constructor(texts) {
    this.#texts = texts;
  }
  get params() {
    if (this.#params === null) {
      const text = this.#texts.slice(0, this.#texts.indexOf("\n"));
      this.#params = { value: text === "null" ? undefined : JSON.parse(text) };
    }
    return this.#params.value;
  }
  get context() {
    const text = this.#texts.slice(this.#contextAt(), this.#texts.lastIndexOf("\n"));
    if (text !== parsedText.context) {
      parsedText.contextValue = JSON.parse(text);
      parsedText.context = text;
    }
    return parsedText.contextValue;
  }
  get event() {
    const text = this.#texts.slice(this.#texts.lastIndexOf("\n") + 1);
    if (text !== parsedText.event) {
      parsedText.eventValue = JSON.parse(text);
      parsedText.event = text;
    }
    return parsedText.eventValue;
  }
  #contextAt() {
    if (this.#context < 0) this.#context = this.#texts.indexOf("\n") + 1;
    return this.#context;
  }
}

/**
 * An action's answer as the engine reads it: a context patch as it is; in a list of idem actions,
 * whose values are data (the function computed them), each `assign`'s values, a `respond`'s body and a `raise`'s
 * or `effect`'s `payload` and `key` are wrapped in `preserve`.
 */
function literalActions(answer) {
  // A patch crosses as it is: the engine merges it into the context.
  if (!Array.isArray(answer)) return answer;
  return answer.map((action) => {
    if (!isRecord(action)) return action;
    const keys = Object.keys(action);
    if (keys.length !== 1) return action;
    const [kind] = keys;
    const body = action[kind];
    if (kind === "assign" && isRecord(body)) return { assign: literalValues(body) };
    if (kind === "respond") return { respond: { preserve: body } };
    if ((kind === "raise" || kind === "effect") && isRecord(body)) {
      const out = { ...body };
      for (const key of ["payload", "key"]) if (key in out) out[key] = { preserve: out[key] };
      return { [kind]: out };
    }
    return action;
  });
}

function literalValues(o) {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, { preserve: v }]));
}

/** A delay function's ms, asked once over the initial context. */
function delayOf(fn, def, path) {
  let ms;
  try {
    ms = fn({ context: structuredClone(def.context ?? {}), event: { type: "xstate.init" } });
  } catch (e) {
    throw new IdemError("implementation_failed", `implementation ${path} failed: it threw: ${e instanceof Error ? e.message : String(e)}`, { path });
  }
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new IdemError("implementation_failed", `implementation ${path} failed: a delay must answer a whole number of ms, got ${shown(ms)}`, { path });
  }
  return ms;
}

function parseDefinition(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new IdemError("invalid_json", `definition is not JSON: ${e instanceof Error ? e.message : String(e)}`, { path: "definition" });
  }
}

function shown(v) {
  return v === undefined ? "undefined" : typeof v === "function" ? "a function" : JSON.stringify(v);
}

function argument(path, expected) {
  return new IdemError("invalid_argument", `${path} must be ${expected}`, { path });
}

function isRecord(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
