// Run by deno.test.mjs under Deno: load the package through its Deno entry (the
// source one, or the published one given as the argument, relative to this file)
// and print what the engine answered, as one JSON line (the test compares it
// with the same calls in Node).
import { implementedRun } from "./implemented.mjs";

const entry = await import(Deno.args[0] ?? "../../pkg/src/deno.js");

const { Machine, newEventId, version } = entry;

const definition = JSON.parse(await Deno.readTextFile(new URL("../machines/order.json", import.meta.url)));
const machine = new Machine(definition);
const pay = { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 40 } };
const first = machine.reduce(null, pay, 1000, "order-1");
const again = machine.reduce(first.snapshot, pay, 2000, "order-1");
let error = null;
try {
  new Machine({ ...definition, initial: "nowhere" });
} catch (err) {
  error = { isError: err instanceof Error, name: err.name, code: err.code, path: err.path };
}
console.log(JSON.stringify({ exports: Object.keys(entry).sort(), analyze: typeof machine.analyze, version: version(), eventId: newEventId(), first, again, error, implemented: implementedRun(Machine), runtime: typeof Deno.version.deno }));
