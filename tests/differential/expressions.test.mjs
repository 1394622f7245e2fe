// docs/expressions.md's tables are what json-logic-js and idem answer today, and they show the
// rules the docs state: idem refuses arithmetic on what is not a number, and agrees with
// json-logic-js on everything else.

import assert from "node:assert/strict";
import { test } from "node:test";
import { documented, idem, reference, render } from "./expressions.mjs";

test("the tables of docs/expressions.md are measured, not written by hand", () => {
  const { text, from, to } = documented();
  assert.equal(text.slice(from, to), render(), "docs/expressions.md is out of date: run node tests/differential/expressions.mjs");
});

const A = { var: "context.a" };
const NOT_NUMBERS = [undefined, null, true, false, [], [5], { x: 1 }, "", " ", "abc"];

test("arithmetic on anything that is not a number fails in idem, where json-logic-js answers", () => {
  for (const op of ["+", "-", "*", "/", "%", "min", "max"]) {
    for (const a of NOT_NUMBERS) {
      for (const rule of [{ [op]: [A, 2] }, { [op]: [2, A] }]) {
        const context = a === undefined ? {} : { a };
        assert.equal(idem(rule, context), "fails (expression_failed)", `${JSON.stringify(rule)} with a = ${JSON.stringify(a)}`);
        assert.doesNotMatch(reference(rule, context), /^throws/, "json-logic-js makes an answer up");
      }
    }
  }
});

test("comparisons, logic and strings give json-logic-js's answers", () => {
  const ops = ["==", "===", "!=", "!==", "<", "<=", ">", ">=", "and", "or", "cat", "in", "merge"];
  const values = [...NOT_NUMBERS, 0, 1, 5, "5", "a"];
  for (const op of ops) {
    for (const a of values) {
      for (const b of [0, 5, "5", null, "a"]) {
        const rule = { [op]: [A, b] };
        const context = a === undefined ? {} : { a };
        assert.equal(idem(rule, context), reference(rule, context), `${JSON.stringify(rule)} with a = ${JSON.stringify(a)}`);
      }
    }
  }
});
