// Guards, actions and delays given to `new Machine(definition, { guards, actions, delays })` as
// functions, beside data, in the lean module (what node.js, workerd.js and deno.js reduce with)
// and the full one (web.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Machine as NodeMachine } from "../src/node.js";
import { checkedMachine } from "../src/checks.js";
import * as full from "../dist/idem.js";

full.initSync({ module: readFileSync(new URL("../dist/idem_bg.wasm", import.meta.url)) });
const MODULES = { lean: NodeMachine, full: checkedMachine(full.Machine) };

const NOW = 1_700_000_000_000;
const start = (role, id = "evt-1") => ({ id, type: "START", payload: { role } });

/** A build that only an admin starts; `assignBuild` counts builds, `notify` answers with its channel. */
const definition = () => ({
  id: "build",
  version: "1",
  initial: "idle",
  context: { count: 0 },
  states: {
    idle: {
      on: {
        START: [
          { guard: "isAdmin", target: "running", actions: ["assignBuild", { type: "notify", params: { channel: "ops" } }] },
          { target: "refused" },
        ],
      },
    },
    running: { after: { retryDelay: "idle" } },
    refused: {},
  },
});

/** Function implementations, each counting its calls in `calls`. */
function functions(calls = counts()) {
  return {
    guards: { isAdmin: ({ event }) => (calls.isAdmin++, event.payload.role === "admin") },
    actions: {
      assignBuild: ({ context, event }) => (calls.assignBuild++, { count: context.count + 1, by: event.payload.role }),
      notify: ({ params }) => (calls.notify++, [{ respond: { channel: params.channel } }]),
    },
    delays: { retryDelay: ({ context }) => 1000 + context.count },
  };
}

const counts = () => ({ isAdmin: 0, assignBuild: 0, notify: 0 });

for (const [name, Machine] of Object.entries(MODULES)) {
  test(`${name}: a function guard chooses the transition and function actions patch the context and respond`, () => {
    const calls = counts();
    const m = new Machine(definition(), functions(calls));
    const out = m.reduce(null, start("admin"), NOW, "b-1");
    assert.equal(out.status, "applied");
    assert.deepEqual(out.state, "running");
    assert.deepEqual(out.response, { channel: "ops" });
    assert.deepEqual(m.inspect(out.snapshot).context, { count: 1, by: "admin" });
    // The delay function was asked once, when the machine was built, over the initial context.
    assert.equal(out.nextDueAt, NOW + 1000);
    assert.deepEqual(calls, { isAdmin: 1, assignBuild: 1, notify: 1 });

    const refused = m.reduce(null, start("guest"), NOW, "b-2");
    assert.equal(refused.state, "refused");
    assert.deepEqual(m.inspect(refused.snapshot).context, { count: 0 });
  });

  test(`${name}: each action sees the context the one before it left`, () => {
    const def = definition();
    def.states.idle.on.START[0].actions = ["assignBuild", "assignBuild", { type: "notify", params: { channel: "twice" } }];
    const m = new Machine(def, functions());
    const out = m.reduce(null, start("admin"), NOW, "b-1");
    assert.deepEqual(m.inspect(out.snapshot).context, { count: 2, by: "admin" });
    const next = m.reduce(out.snapshot, start("admin", "evt-2"), NOW, "b-1");
    assert.equal(next.status, "ignored");
  });

  test(`${name}: a duplicate replays its recorded answer and calls no function`, () => {
    const calls = counts();
    const m = new Machine(definition(), functions(calls));
    const first = m.reduce(null, start("admin"), NOW, "b-1");
    assert.deepEqual(calls, { isAdmin: 1, assignBuild: 1, notify: 1 });
    const again = m.reduce(first.snapshot, start("admin"), NOW + 5, "b-1");
    assert.equal(again.status, "duplicate");
    assert.deepEqual(again.response, { channel: "ops" });
    assert.deepEqual(calls, { isAdmin: 1, assignBuild: 1, notify: 1 });
  });

  test(`${name}: a throw or a wrong answer refuses the event with implementation_failed, nothing stored`, () => {
    const cases = [
      [{ guards: { isAdmin: () => { throw new Error("boom"); } } }, "guards.isAdmin", "states.idle.on.START[0].guard", /threw: boom/],
      [{ guards: { isAdmin: () => "yes" } }, "guards.isAdmin", "states.idle.on.START[0].guard", /boolean/],
      [{ actions: { assignBuild: () => 5 } }, "actions.assignBuild", "states.idle.on.START[0].actions[0]", /context patch/],
      [{ actions: { notify: () => [{ explode: {} }] } }, "actions.notify", "states.idle.on.START[0].actions[1]", /explode/],
    ];
    for (const [broken, implName, path, why] of cases) {
      const impl = functions();
      const m = new Machine(definition(), { guards: { ...impl.guards, ...broken.guards }, actions: { ...impl.actions, ...broken.actions }, delays: impl.delays });
      const out = m.reduce(null, start("admin"), NOW, "b-1");
      assert.equal(out.status, "rejected", implName);
      assert.equal(out.changed, false);
      assert.equal(out.snapshot, null);
      assert.equal(out.error.code, "implementation_failed");
      assert.equal(out.error.path, path);
      assert.ok(out.error.message.includes(implName), out.error.message);
      assert.match(out.error.message, why);
    }
  });

  test(`${name}: data and functions mix; a name given both ways is refused when the machine is built`, () => {
    const impl = functions();
    const data = { assignBuild: [{ assign: { count: { "+": [{ var: "context.count" }, 10] } } }] };
    const m = new Machine(definition(), { guards: impl.guards, actions: { ...data, notify: impl.actions.notify }, delays: { retryDelay: 50 } });
    const out = m.reduce(null, start("admin"), NOW, "b-1");
    assert.equal(out.status, "applied");
    assert.deepEqual(m.inspect(out.snapshot).context, { count: 10 });
    assert.equal(out.nextDueAt, NOW + 50);

    const written = { ...definition(), implementations: { guards: { isAdmin: { "==": [{ var: "event.payload.role" }, "admin"] } } } };
    assert.throws(() => new Machine(written, impl), (e) => e.code === "invalid_definition" && e.path === "implementations.guards.isAdmin");
    // Given as data in the definition only, it runs.
    const fromData = new Machine(written, { actions: impl.actions, delays: impl.delays });
    assert.equal(fromData.reduce(null, start("admin"), NOW, "b-1").state, "running");
  });

  test(`${name}: a name nothing implements is unimplemented, whatever functions are given`, () => {
    const impl = functions();
    assert.throws(
      () => new Machine(definition(), { guards: impl.guards, delays: impl.delays }),
      (e) => e.code === "unimplemented" && /action "assignBuild"/.test(e.message) && /action "notify"/.test(e.message),
    );
    assert.throws(
      () => new Machine(definition(), { actions: impl.actions, delays: impl.delays }),
      (e) => e.code === "unimplemented" && e.path === "states.idle.on.START[0].guard" && /guard "isAdmin"/.test(e.message) && !/action/.test(e.message),
    );
  });

  test(`${name}: a delay function that throws or answers no whole ms refuses the machine`, () => {
    const impl = functions();
    for (const retryDelay of [() => { throw new Error("no"); }, () => -1, () => "soon"]) {
      assert.throws(() => new Machine(definition(), { ...impl, delays: { retryDelay } }), (e) => e.code === "implementation_failed" && e.path === "implementations.delays.retryDelay");
    }
  });
}

test("analyze names each function it cannot read and points at the data form", () => {
  const m = new NodeMachine(definition(), functions());
  const opaque = m.analyze().filter((f) => f.code === "opaque_implementation");
  assert.deepEqual(
    opaque.map((f) => [f.site, f.severity]).sort(),
    [
      ["states.idle.on.START[0].actions[0]", "info"],
      ["states.idle.on.START[0].actions[1]", "info"],
      ["states.idle.on.START[0].guard", "info"],
    ],
  );
  const at = (site) => opaque.find((f) => f.site === `states.idle.on.START[0].${site}`);
  assert.match(at("guard").message, /guard `isAdmin` is a function/);
  assert.match(at("guard").fix, /implementations\.guards\.isAdmin/);
  assert.match(at("actions[1]").message, /action `notify`/);
  // Given as data, the same names are read: no such finding.
  const data = new NodeMachine(definition(), {
    guards: { isAdmin: { "==": [{ var: "event.payload.role" }, "admin"] } },
    actions: { assignBuild: [{ assign: { by: { var: "event.payload.role" } } }], notify: [{ respond: { var: "params.channel" } }] },
    delays: { retryDelay: 10 },
  });
  assert.deepEqual(data.analyze().filter((f) => f.code === "opaque_implementation"), []);
});
