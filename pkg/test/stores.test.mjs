import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Machine } from "../src/node.js";
import { MemoryStore } from "../src/stores/memory.js";
import { diffChunks, eventLogRow } from "../src/stores/common.js";
import { logThreeCommits } from "./event-log.mjs";

const robust = () => new Machine(JSON.parse(readFileSync(new URL("../../www/machines/order-robust.json", import.meta.url), "utf8")));
const pay = (i) => ({ id: `e${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}`, amount: 1 } });

test("the memory store logs the one event-log row every store writes", async () => {
  const { rows, expected } = await logThreeCommits(new MemoryStore(), robust(), "m1", pay);
  assert.deepEqual(rows, expected);
});

test("a commit without an event has no log row; one without the host's clock has the store's", () => {
  const outcome = { revision: 3, status: "applied", response: undefined };
  assert.equal(eventLogRow({ outcome, extras: {} }, 5), null);
  assert.equal(eventLogRow({ outcome }, 5), null);
  assert.deepEqual(eventLogRow({ outcome, extras: { event: { id: "a", type: "T" } } }, 5), {
    eventId: "a",
    revision: 3,
    type: "T",
    status: "applied",
    response: null,
    receivedAt: 5,
  });
  assert.equal(eventLogRow({ outcome, extras: { event: { id: "a", type: "T" }, now: 9 } }, 5).receivedAt, 9);
});

test("diffChunks marks the chunks whose characters the stored text has at the same place", () => {
  const same = (text, stored, count) => diffChunks(text, 4, stored, count).map((c) => `${c.text}${c.same ? "=" : "+"}`);
  assert.deepEqual(same("aaaabbbbcc", "aaaabbbbc", undefined), ["aaaa=", "bbbb=", "cc+"]);
  assert.deepEqual(same("aaaaxbbbcc", "aaaabbbbcc", undefined), ["aaaa=", "xbbb+", "cc="]);
  assert.deepEqual(same("aaaabbbbcc", null, undefined), ["aaaa+", "bbbb+", "cc+"]);
  assert.deepEqual(same("aaaabbbbcc", "aaaa", 2), ["aaaa=", "bbbb+"], "only the full chunks when counted so");
  assert.deepEqual(same("", "aaaa", undefined), []);
});
