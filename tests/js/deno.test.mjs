// The Deno entry (pkg/src/deno.js) under real Deno: it loads the lean wasm
// module, and the engine there answers byte for byte as the full one in Node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Machine, version } from "../../pkg/src/node.js";
import { implementedRun } from "./implemented.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const deno = `${root}node_modules/.bin/deno`;

for (const [entry, arg] of [["pkg/src/deno.js", []], ["pkg/dist/js/deno.js (published)", ["../../pkg/dist/js/deno.js"]]]) {
  test(`${entry} loads the lean engine under Deno, which answers as the full one in Node does`, async () => {
    const out = execFileSync(deno, ["run", "--no-prompt", "--no-config", "--no-lock", `--allow-read=${root}`, "tests/js/deno-entry.js", ...arg], {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
    });
    const got = JSON.parse(out);
    assert.equal(got.runtime, "string", "ran under Deno");
    assert.equal(got.version, version());
    // The lean engine has no analysis and no XState import; the host API is the same everywhere.
    const full = Object.keys(await import("../../pkg/src/node.js")).sort();
    assert.deepEqual(got.exports, full.filter((name) => name !== "importXState" && name !== "loadAnalysis"));
    assert.equal(got.analyze, "undefined");
    assert.match(got.eventId, /^[0-9A-HJKMNP-TV-Z]{26}$/);

    const definition = JSON.parse(readFileSync(`${root}tests/machines/order.json`, "utf8"));
    const machine = new Machine(definition);
    const pay = { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 40 } };
    const first = machine.reduce(null, pay, 1000, "order-1");
    const again = machine.reduce(first.snapshot, pay, 2000, "order-1");
    assert.equal(got.first.snapshot, first.snapshot, "the same snapshot string in Deno and in Node");
    assert.deepEqual(got.first, JSON.parse(JSON.stringify(first)));
    assert.deepEqual(got.again, JSON.parse(JSON.stringify(again)));
    assert.equal(got.again.status, "duplicate");
    assert.equal(got.again.response, got.first.response);
    assert.deepEqual(got.error, { isError: true, name: "IdemError", code: "invalid_initial", path: "initial" });

    // Functions given as implementations run under Deno as in Node: a duplicate calls none of them.
    const implemented = implementedRun(Machine);
    assert.deepEqual(got.implemented, JSON.parse(JSON.stringify(implemented)));
    assert.equal(got.implemented.first.status, "applied");
    assert.deepEqual(got.implemented.context, { count: 1, by: "admin" });
    assert.deepEqual(got.implemented.first.response, { channel: "ops" });
    assert.equal(got.implemented.again.status, "duplicate");
    assert.equal(got.implemented.calls, 1);
    assert.equal(got.implemented.failed.error.code, "implementation_failed");
  });
}
