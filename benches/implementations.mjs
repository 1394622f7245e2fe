// A reduce with one guard and one action given as functions (`new Machine(definition,
// { guards, actions })`) against the same machine with both written inline as data, in the same
// run, contenders in turns (measureGroup): what the host callback adds per reduce.
//   node benches/implementations.mjs [--budget-ms 2000]
import { Machine } from "../pkg/src/node.js";
import { measureGroup, fmtNs } from "./measure.mjs";

const budgetMs = Number(process.argv[process.argv.indexOf("--budget-ms") + 1]) || 2000;
const NOW = 1_700_000_000_000;

/** A counter that only an admin bumps: one guard, one assign, on a targetless transition. */
const definition = (guard, action) => ({
  id: "counter",
  version: "1",
  initial: "open",
  context: { count: 0, by: null },
  states: { open: { on: { BUMP: [{ guard, actions: [action] }] } } },
});

const inline = new Machine(
  definition({ "==": [{ var: "event.payload.role" }, "admin"] }, { assign: { count: { "+": [{ var: "context.count" }, 1] }, by: { var: "event.payload.role" } } }),
);
const functions = new Machine(definition("isAdmin", "bump"), {
  guards: { isAdmin: ({ event }) => event.payload.role === "admin" },
  actions: { bump: ({ context, event }) => ({ count: context.count + 1, by: event.payload.role }) },
});

/** Each machine's process one event in, then fresh events on that snapshot (each applied). */
function contender(machine, name) {
  const first = machine.reduce(null, { id: "e0", type: "BUMP", payload: { role: "admin" } }, NOW, name);
  const snapshot = first.snapshot;
  return (i) => {
    const out = machine.reduce(snapshot, { id: `e${i + 1}`, type: "BUMP", payload: { role: "admin" } }, NOW, name);
    if (out.status !== "applied") throw new Error(`${name}: ${out.status} ${JSON.stringify(out.error)}`);
  };
}

// Both give the same state and context.
const a = inline.reduce(null, { id: "x", type: "BUMP", payload: { role: "admin" } }, NOW, "check");
const b = functions.reduce(null, { id: "x", type: "BUMP", payload: { role: "admin" } }, NOW, "check");
if (JSON.stringify(inline.inspect(a.snapshot).context) !== JSON.stringify(functions.inspect(b.snapshot).context)) throw new Error("the two machines disagree");

const r = measureGroup({ inline: contender(inline, "inline"), functions: contender(functions, "functions") }, { budgetMs });
console.log("reduce, ledger 1, one guard + one action (median, p95):");
for (const [name, m] of Object.entries(r)) console.log(`  ${name.padEnd(10)} ${fmtNs(m.medianNs).padStart(10)}  p95 ${fmtNs(m.p95Ns)}  (${m.samples} samples)`);
console.log(`  functions add ${fmtNs(r.functions.medianNs - r.inline.medianNs)} per reduce`);
