// machine.check: `idem check` from JavaScript, the same verdict object as the CLI's JSON
// (the full module, loaded by the node entry on first use).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Machine, IdemError } from "../../pkg/src/node.js";

const root = new URL("../../", import.meta.url);
const machine = (name) => new Machine(JSON.parse(readFileSync(new URL(`www/machines/${name}.json`, root), "utf8")));
const scenario = (name) => readFileSync(new URL(`tests/check/${name}.jsonl`, root), "utf8");

test("the fragile counter is violated with its shortest counterexample", () => {
  const v = machine("order-fragile").check(scenario("order-fragile"));
  assert.equal(v.verdict, "violated");
  assert.deepEqual(v.bounds, { deliveries: "unbounded", reorder: "all", expiries: 1, crashes: 1, effectFaults: 1, hosts: 2, freshResends: 0, hostDefects: [] });
  const cx = v.counterexample;
  assert.deepEqual(cx.actions.map((a) => a.do), ["deliver", "commit", "advance", "deliver", "commit"]);
  assert.equal(cx.expected.context.paid, 40);
  assert.equal(cx.actual.context.paid, 80);
  assert.match(cx.steps[2].action, /past a retention window/);
  assert.equal(cx.run.length, 2);
});

test("the robust order is proved, scenario as an array of events, progress reported", () => {
  const events = scenario("order-3").trim().split("\n").map((l) => JSON.parse(l));
  const seen = [];
  const v = machine("order-robust").check(events, { onProgress: (p) => seen.push(p) });
  assert.equal(v.verdict, "proved");
  assert.ok(v.states > 10_000, `${v.states} states`);
  assert.ok(seen.length >= 1 && seen.every((p) => p.states > 0 && p.seconds >= 0), JSON.stringify(seen));
  assert.ok(v.collisionProbability < 1e-20);
});

test("limits give inconclusive, and bad options are IdemErrors naming the option", () => {
  const v = machine("order-robust").check(scenario("order-3"), { maxStates: 100 });
  assert.equal(v.verdict, "inconclusive");
  assert.match(v.reason, /state limit of 100/);
  for (const [options, name] of [[{ reorder: 0 }, "reorder"], [{ hosts: -1 }, "hosts"], [{ property: "fast" }, "property"], [{ bogus: 1 }, "bogus"]]) {
    assert.throws(() => machine("order-robust").check(scenario("order-3"), options), (e) => e instanceof IdemError && e.code === "usage" && e.message.includes(name));
  }
  assert.throws(() => machine("order-robust").check('{"advance": "soon"}'), (e) => e instanceof IdemError && e.code === "invalid_event");
});
