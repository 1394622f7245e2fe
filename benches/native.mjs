// The native bench (benches/idem.rs, a `cargo bench` target run as a plain program), built and found.
import { spawnSync } from "node:child_process";
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
  const r = spawnSync("cargo", ["bench", "--bench", "idem", "--no-run", "--message-format=json"], {
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
    throw new Error(`cargo bench --bench idem --no-run exited with ${r.status}`);
  }
  const exe = r.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l))
    .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
  if (!exe) throw new Error("cargo did not report the bench executable");
  return exe;
}
