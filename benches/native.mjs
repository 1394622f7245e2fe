// The native bench (benches/idem.rs, a `cargo bench` target run as a plain program), built and found.
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Build the bench in `root/targetDir` and return its executable's path. Its own
 * target dir, and panic=unwind for every unit: with the release profile's
 * panic=abort, `cargo bench` builds the cdylib+rlib lib twice (abort for the CLI,
 * unwind for the bench) into the same file names and the two links race (cargo
 * "output filename collision", rust-lang/cargo#6313). `env` adds to cargo's environment.
 */
export function buildNativeBench(root, { targetDir = "target/bench", env = {} } = {}) {
  // Without the `analysis` feature: the engine as the lean module builds it.
  const r = spawnSync("cargo", ["bench", "--bench", "idem", "--no-run", "--no-default-features", "--message-format=json"], {
    cwd: root,
    env: {
      ...process.env,
      PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}`,
      CARGO_TARGET_DIR: path.join(root, targetDir),
      CARGO_PROFILE_RELEASE_PANIC: "unwind",
      ...env,
    },
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  if (r.status !== 0) {
    process.stderr.write(r.stderr ?? "");
    throw new Error(`cargo bench --bench idem --no-run --no-default-features exited with ${r.status}`);
  }
  const exe = r.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l))
    .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
  if (!exe) throw new Error("cargo did not report the bench executable");
  return exe;
}

/** The stored texts of ledger size `n` in an inputs directory (`writeInputs`): idem's and the peers'. */
export function inputFiles(dir, n) {
  return { idem: path.join(dir, `idem-${n}.snap`), xstate: path.join(dir, `xstate-${n}.json`), js: path.join(dir, `js-${n}.json`) };
}

/**
 * Build the bench and write into `dir` the bench machine (`machine.json`), idem's snapshots
 * (`--smoke --emit`) and the peers' stored texts of the same NOTE events (benches/peers.mjs),
 * for each ledger size, named as `inputFiles` has them.
 */
export async function writeInputs(root, dir, sizes) {
  execFileSync(buildNativeBench(root), ["--smoke", "--emit", dir, "--sizes", sizes.join(",")], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  const peers = await import("./peers.mjs");
  for (const n of sizes) {
    const events = peers.noteEvents(n);
    const f = inputFiles(dir, n);
    writeFileSync(f.xstate, peers.xstateStored(events));
    writeFileSync(f.js, peers.jsStored(events));
  }
}
