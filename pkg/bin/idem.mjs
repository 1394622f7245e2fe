#!/usr/bin/env node
// `npx idem`: the command line of the Rust binary `idem` (src/cli.rs), run by the full wasm
// module in Node on this process's files, streams and clock. Same flags, output, exit statuses
// and `--help`; `idem --help` lists them.
import { readFileSync, writeFileSync } from "node:fs";
import { initSync, runCli } from "../dist/idem.js";

initSync({ module: readFileSync(new URL("../dist/idem_bg.wasm", import.meta.url)) });

// A reader that stops early (`npx idem run ... | head`) ends the output quietly, as the Rust
// binary does, rather than with an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (e) => {
    if (e.code !== "EPIPE") throw e;
  });
}

// The exit status is set, not forced with process.exit, so Node writes out all of stdout first
// even when it is a pipe.
process.exitCode = runCli(process.argv.slice(2), {
  readFile: (path) => readFileSync(path),
  writeFile: (path, text) => writeFileSync(path, text),
  write: (stream, text) => process[stream].write(text),
  now: () => performance.now(),
});
