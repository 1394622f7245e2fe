// `npx idem` from the packed package: `npm pack` in pkg/ (pkg/dist built by
// scripts/build-wasm.sh), installed in a fresh project outside the repository, and each command
// run there against the Rust binary (target/debug/idem, built here by `cargo build`) on the same
// inputs: the same stdout bytes, the same exit status, the same stderr for a usage error. The
// only figures allowed to differ are times (a check's seconds and states per second), masked.
//
//   node --test tests/consumer/      (scripts/test.sh runs it as "consumer: the packed package")

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TMP = mkdtempSync(join(tmpdir(), "idem-cli-"));
const APP = join(TMP, "app");
const ENV = { ...process.env, CI: "1", NO_COLOR: "1" };
const RUST = join(ROOT, "target/debug/idem");
const at = (path) => join(ROOT, path);

before(() => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "idem"], { cwd: ROOT, stdio: "inherit" });
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", TMP], { cwd: at("pkg"), env: ENV, encoding: "utf8" });
  const [packed] = JSON.parse(out.slice(out.indexOf("[")));
  mkdirSync(APP);
  writeFileSync(
    join(APP, "package.json"),
    JSON.stringify({ name: "shell", private: true, type: "module", dependencies: { idem: `file:${join(TMP, packed.filename)}` } }, null, 2),
  );
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: APP, env: ENV, stdio: "pipe" });
});

after(() => rmSync(TMP, { recursive: true, force: true }));

/** Both CLIs on `args`, in the project directory: `{ npx, rust }`, each `{ status, stdout, stderr }`. */
function both(...args) {
  const opts = { cwd: APP, env: ENV, encoding: "utf8" };
  const npx = spawnSync("npx", ["idem", ...args], opts);
  const rust = spawnSync(RUST, args, opts);
  return { npx, rust };
}

/** A check's report with its times masked (text and JSON forms). */
const untimed = (text) =>
  text
    .replace(/ in \d+\.\d+ s(, [\d,]+ states\/s)?;/g, " in <time>;")
    .replace(/"seconds":[\d.e+-]+/g, '"seconds":<time>');

/** Assert that both ran alike: the same status and stdout (times masked), and return it. */
function same({ npx, rust }, status) {
  assert.equal(npx.status, status, `npx idem exited ${npx.status}:\n${npx.stdout}\n${npx.stderr}`);
  assert.equal(rust.status, status, `idem exited ${rust.status}:\n${rust.stdout}\n${rust.stderr}`);
  assert.equal(untimed(npx.stdout), untimed(rust.stdout));
  return npx.stdout;
}

test("npx idem --help and --version print what the Rust binary prints", () => {
  const help = same(both("--help"), 0);
  assert.match(help, /^idem: statecharts/);
  assert.match(help, /idem check {3}MACHINE\.json --scenario SCENARIO\.jsonl/);
  assert.equal(same(both("lint", "-h"), 0), help);
  assert.match(same(both("--version"), 0), /^idem \d+\.\d+\.\d+\n$/);
});

test("npx idem lint: the same findings as text and JSON, exit 1 on an error-severity finding", () => {
  assert.match(same(both("lint", at("tests/machines/order.json")), 0), /order: 0 error\(s\)/);
  const json = JSON.parse(same(both("lint", at("tests/machines/fragile-counter.json"), "--format", "json"), 1));
  assert.ok(json.findings.some((f) => f.severity === "error"), JSON.stringify(json));
  same(both("lint", at("tests/xstate/auth-flow.json"), "--xstate"), 0);
});

test("npx idem run, reduce and inspect give the same outcomes and snapshots", () => {
  const events = join(TMP, "events.jsonl");
  writeFileSync(
    events,
    [
      '{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40},"now":1000}',
      '{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40}}',
      '{"id":"e2","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p2","amount":60}}',
    ].join("\n"),
  );
  const lines = same(both("run", "--machine", at("tests/machines/order.json"), "--events", events, "--process", "o1"), 0).trimEnd().split("\n");
  assert.deepEqual(lines.slice(0, 3).map((l) => JSON.parse(l).status), ["applied", "duplicate", "applied"]);

  const event = join(TMP, "event.json");
  writeFileSync(event, '{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40}}');
  const reduced = JSON.parse(same(both("reduce", "--machine", at("tests/machines/order.json"), "--event", event, "--now", "5", "--process", "o1"), 0));
  assert.equal(reduced.status, "applied");
  const snapshot = join(TMP, "snapshot.txt");
  writeFileSync(snapshot, reduced.snapshot);
  const inspected = JSON.parse(same(both("inspect", "--machine", at("tests/machines/order.json"), "--snapshot", snapshot), 0));
  assert.deepEqual(inspected.context.payments, ["p1"]);
});

test("npx idem check finds the fragile counter's counterexample, writes it with --out and replays it", () => {
  const fragile = at("www/machines/order-fragile.json");
  const scenario = at("tests/check/order-fragile.jsonl");
  const ce = join(TMP, "ce.json");
  const { npx, rust } = both("check", fragile, "--scenario", scenario, "--out", ce);
  assert.equal(npx.status, 1, npx.stdout + npx.stderr);
  assert.equal(rust.status, 1, rust.stdout + rust.stderr);
  assert.equal(untimed(npx.stdout), untimed(rust.stdout));
  assert.match(npx.stdout, /^ {2}1\. t=0 host 1 receives \(deliver\) pay-1/m);
  assert.match(npx.stdout, new RegExp(`replay: idem check --replay ${ce.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\n`));
  assert.match(npx.stdout.trimEnd().split("\n").at(-1), /^violated: /);
  // The file npx wrote (the Rust one wrote the same path last) replays the same way in both.
  const written = readFileSync(ce, "utf8");
  assert.equal(JSON.parse(written).counterexample.actual.context.paid, 80);
  const replay = JSON.parse(same(both("check", "--replay", ce, "--format", "json"), 1));
  assert.equal(replay.verdict, "violated");
});

test("npx idem check on the robust order proves it, as the Rust binary does", () => {
  const out = same(both("check", at("www/machines/order-robust.json"), "--scenario", at("tests/check/order-3.jsonl"), "--format", "json"), 0);
  assert.equal(JSON.parse(out).verdict, "proved");
});

test("npx idem refuses bad usage and unreadable files as the Rust binary does: JSON on stderr, exit 2", () => {
  const usage = both("frobnicate");
  same(usage, 2);
  assert.equal(usage.npx.stderr, usage.rust.stderr);
  assert.equal(JSON.parse(usage.npx.stderr).code, "usage");
  const noFlag = both("run", "--machine", at("tests/machines/order.json"));
  same(noFlag, 2);
  assert.equal(noFlag.npx.stderr, noFlag.rust.stderr);
  // The operating system's reason is worded by each runtime (Node: "ENOENT: no such file or
  // directory, open ..."; Rust: "No such file or directory (os error 2)"): the code and the path agree.
  const missing = both("lint", join(TMP, "absent.json"));
  same(missing, 2);
  for (const r of [missing.npx, missing.rust]) {
    const e = JSON.parse(r.stderr);
    assert.equal(e.code, "io");
    assert.ok(e.message.startsWith(`cannot read ${join(TMP, "absent.json")}: `), e.message);
  }
});

test("npx idem stops quietly, exit 0 as the Rust binary, when its reader closes the pipe early", () => {
  const events = join(TMP, "many.jsonl");
  const line = (i) => JSON.stringify({ id: `e${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}`, amount: 1 } });
  writeFileSync(events, Array.from({ length: 20_000 }, (_, i) => line(i)).join("\n"));
  const args = `run --machine ${at("tests/machines/order.json")} --events ${events} --process o1`;
  for (const cli of ["npx idem", RUST]) {
    const r = spawnSync("bash", ["-c", `set -o pipefail; ${cli} ${args} | head -c 100 >/dev/null`], { cwd: APP, env: ENV, encoding: "utf8" });
    assert.equal(r.status, 0, `${cli}: ${r.stderr}`);
    assert.equal(r.stderr, "", cli);
  }
});
