// A machine with a guard and actions given as functions and a delay given as data, and what it
// answers to an admin's start, a duplicate of it and a guard that throws: run under Deno by
// deno-entry.js and in Node by deno.test.mjs, which compares the two.
const definition = {
  id: "build",
  version: "1",
  initial: "idle",
  context: { count: 0 },
  states: {
    idle: { on: { START: [{ guard: "isAdmin", target: "running", actions: ["assignBuild", { type: "notify", params: { channel: "ops" } }] }, { target: "refused" }] } },
    running: { after: { retryDelay: "idle" } },
    refused: {},
  },
};

/** @param {new (definition: object, implementations?: object) => any} Machine */
export function implementedRun(Machine) {
  let calls = 0;
  const machine = new Machine(definition, {
    guards: { isAdmin: ({ event }) => (calls++, event.payload.role === "admin") },
    actions: {
      assignBuild: ({ context, event }) => ({ count: context.count + 1, by: event.payload.role }),
      notify: ({ params }) => [{ respond: { channel: params.channel } }],
    },
    delays: { retryDelay: 1000 },
  });
  const start = { id: "s1", type: "START", payload: { role: "admin" } };
  const first = machine.reduce(null, start, 1000, "b-1");
  const again = machine.reduce(first.snapshot, start, 2000, "b-1");
  const throwing = new Machine(definition, { guards: { isAdmin: () => { throw new Error("boom"); } }, actions: { assignBuild: () => ({}), notify: () => [] }, delays: { retryDelay: 1 } });
  const failed = throwing.reduce(null, start, 1000, "b-2");
  return { first, again, context: machine.inspect(first.snapshot).context, calls, failed };
}
