// The tables of docs/expressions.md: every operator on every kind of argument, answered by
// JSONLogic's reference implementation (json-logic-js) and by idem (the wasm engine, through a
// machine that assigns the expression). Both columns are measured here, never written by hand:
//
//   node tests/differential/expressions.mjs        rewrite the tables in docs/expressions.md
//
// expressions.test.mjs checks that the tables in the docs are what both engines answer today.

import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Machine } from "../../pkg/src/node.js";

const jsonLogic = createRequire(import.meta.url)("json-logic-js");

export const DOC = new URL("../../docs/expressions.md", import.meta.url);
const BEGIN = "<!-- tables: node tests/differential/expressions.mjs -->";
const END = "<!-- end of tables -->";

/** `A` in the tables: `{"var": "context.a"}`, with `context.a` each of these (none: missing). */
const KINDS = [
  ["a number", 5],
  ["a numeric string", "5"],
  ["a string, not a number", "abc"],
  ["an empty string", ""],
  ["missing", undefined],
  ["null", null],
  ["true", true],
  ["false", false],
  ["an empty array", []],
  ["an array of one number", [5]],
  ["an object", { x: 1 }],
];

const A = { var: "context.a" };

/** Operator tables: a title, then each column's label and expression (built from `A`). */
const TABLES = [
  ["Arithmetic: idem refuses what is not a number", [
    ["+", { "+": [A, 2] }], ["-", { "-": [A, 2] }], ["*", { "*": [A, 2] }], ["/", { "/": [A, 2] }],
    ["%", { "%": [A, 2] }], ["min", { min: [A, 2] }], ["max", { max: [A, 2] }],
  ]],
  ["Comparison: as JSONLogic", [
    ["==", { "==": [A, 0] }], ["===", { "===": [A, 0] }], ["!=", { "!=": [A, 0] }], ["!==", { "!==": [A, 0] }],
    ["<", { "<": [A, 1] }], ["<=", { "<=": [A, 0] }], [">", { ">": [A, 0] }], [">=", { ">=": [A, 0] }],
  ]],
  ["Logic and strings: as JSONLogic", [
    ["!", { "!": [A] }], ["!!", { "!!": [A] }], ["and", { and: [A, "y"] }], ["or", { or: [A, "y"] }],
    ["if", { if: [A, "y", "n"] }], ["cat", { cat: [A, "!"] }], ["substr", { substr: [A, 1] }], ["in", { in: ["5", A] }],
  ]],
  ["Arrays and data: as JSONLogic", [
    ["var", A], ["missing", { missing: ["context.a"] }], ["merge", { merge: [A, [1]] }],
    ["map", { map: [A, { var: "" }] }], ["filter", { filter: [A, true] }],
    ["reduce", { reduce: [A, { cat: [{ var: "accumulator" }, { var: "current" }] }, ""] }],
    ["all", { all: [A, true] }], ["some", { some: [A, true] }], ["none", { none: [A, true] }],
  ]],
];

/** Expressions on their own, each a row: arithmetic's edges, and objects (operators or data). */
const ROWS = [
  { "+": [] }, { "*": [] }, { "-": [] }, { max: [] }, { "/": [1, 0] }, { "%": [1, 0] }, { "*": [1e308, 10] },
  { "+": "1e2" }, { "-": [" 7 ", "0x10"] }, { "+": [{ var: ["context.missing", 0] }, 2] },
  { plus: [1, 2] }, { preserve: { plus: [1, 2] } }, { eachKey: { amount: A } }, { amount: A, currency: "EUR" },
];

/** A value as the tables print it: JSON, with JavaScript's NaN and infinities named. */
function show(v) {
  if (v === undefined) return "undefined";
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  return JSON.stringify(v, (_k, x) => (typeof x === "number" && !Number.isFinite(x) ? String(x) : x));
}

/** json-logic-js's answer to `rule` over `{ context }`, or how it fails. */
export function reference(rule, context) {
  try {
    return show(jsonLogic.apply(rule, { context }));
  } catch (e) {
    return `throws (${String(e.message ?? e).split("\n")[0]})`;
  }
}

/** idem's answer: the value `assign` stores, or the code of the refusal. */
export function idem(rule, context) {
  let machine;
  try {
    machine = new Machine({ id: "x", initial: "s", context, states: { s: { on: { GO: { actions: [{ assign: { r: rule } }] } } } } });
  } catch (e) {
    return `refused on load (${e.code})`;
  }
  const out = machine.reduce(null, { id: "e1", type: "GO" }, 1_700_000_000_000, "p");
  if (out.status !== "applied") return `fails (${out.error.code})`;
  return show(machine.inspect(out.snapshot).context.r);
}

const code = (s) => `\`${s.replaceAll("|", "\\|")}\``;
const cell = (js, ours) => `${code(js)} · ${js === ours ? code(ours) : `**${code(ours)}**`}`;
const context = (value) => (value === undefined ? {} : { a: value });

/** The tables as markdown, measured now. */
export function render() {
  const out = [BEGIN, ""];
  for (const [title, columns] of TABLES) {
    out.push(`#### ${title}`, "", `| \`A\` is | ${columns.map(([label, rule]) => code(JSON.stringify(rule).replaceAll('{"var":"context.a"}', "A"))).join(" | ")} |`);
    out.push(`|---|${columns.map(() => "---").join("|")}|`);
    for (const [kind, value] of KINDS) {
      const ctx = context(value);
      out.push(`| ${kind}${value === undefined ? "" : ` ${code(JSON.stringify(value))}`} | ${columns.map(([, rule]) => cell(reference(rule, ctx), idem(rule, ctx))).join(" | ")} |`);
    }
    out.push("");
  }
  out.push("#### Edges and objects", "", "| expression (`A` is 5) | json-logic-js | idem |", "|---|---|---|");
  for (const rule of ROWS) {
    const js = reference(rule, { a: 5 }), ours = idem(rule, { a: 5 });
    out.push(`| ${code(JSON.stringify(rule).replaceAll('{"var":"context.a"}', "A"))} | ${code(js)} | ${js === ours ? code(ours) : `**${code(ours)}**`} |`);
  }
  out.push("", END);
  return out.join("\n");
}

/** The tables as docs/expressions.md has them now. */
export function documented() {
  const text = readFileSync(DOC, "utf8");
  const from = text.indexOf(BEGIN), to = text.indexOf(END);
  if (from < 0 || to < 0) throw new Error(`docs/expressions.md has no "${BEGIN}" ... "${END}" section`);
  return { text, from, to: to + END.length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { text, from, to } = documented();
  writeFileSync(DOC, text.slice(0, from) + render() + text.slice(to));
  console.log("docs/expressions.md: tables rewritten");
}
