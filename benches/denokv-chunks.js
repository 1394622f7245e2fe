// What a DenoKvStore commit writes per applied event on a large snapshot, and how long it takes:
// a process grown (by the engine alone) to about the given sizes, then events of 200-byte notes
// applied through the host loop (load -> reduce -> commit) on a real Deno KV file.
//
//   deno run --allow-all --unstable-kv benches/denokv-chunks.js [store module] [runs] [events]
//
// Snapshot bytes set per event come from the store's `chunkBytesWritten` (a store without that
// counter sets every chunk: the whole snapshot). Prints one line per size: medians over the runs
// of each run's median. Then the store's own work before a commit is sent, timed without the
// database (load-light, unlike the commit): cutting the new snapshot into chunks and finding the
// unchanged ones (`cutChunks`), against encoding the whole snapshot as the store did before.
import { apply } from "../pkg/src/host.js";
import { note, notesMachine, tempKvPath } from "../tests/deno/helpers.js";

const modulePath = Deno.args[0] ? new URL(Deno.args[0], `file://${Deno.cwd()}/`).href : "../pkg/src/stores/denokv.js";
const { DenoKvStore, CHUNK_BYTES, cutChunks } = await import(modulePath);
const runs = Number(Deno.args[1] ?? 5);
const events = Number(Deno.args[2] ?? 60);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function run(target) {
  const m = notesMachine();
  const tmp = await tempKvPath();
  const kv = await Deno.openKv(tmp.path);
  try {
    const store = new DenoKvStore(kv, { machine: m });
    const now = 1_800_000_000_000;
    let snapshot = null;
    let i = 0;
    while ((snapshot?.length ?? 0) < target - 30_000) snapshot = m.reduce(snapshot, note(i++, 30_000), now, "p").snapshot;
    const grown = m.reduce(snapshot, note(i, target - snapshot.length - 200), now, "p");
    const first = await store.commit("p", null, grown, { event: note(i++, 0), now });
    if (!first.ok) throw new Error("the first commit failed");
    const commitMs = [];
    const setBytes = [];
    const timed = {
      load: (pid) => store.load(pid),
      commit: async (pid, expected, out, extras) => {
        const before = store.chunkBytesWritten;
        const t = performance.now();
        const res = await store.commit(pid, expected, out, extras);
        commitMs.push(performance.now() - t);
        setBytes.push(before === undefined ? new TextEncoder().encode(out.snapshot).length : store.chunkBytesWritten - before);
        return res;
      },
    };
    let size = 0;
    for (let k = 0; k < events; k++) {
      const out = await apply(timed, m, "p", note(i++, 200), { now: now + k });
      if (out.status !== "applied") throw new Error(`event ${k}: ${out.status}`);
      size = out.snapshot.length;
    }
    return { size, chunks: Math.ceil(size / CHUNK_BYTES), commitMs: median(commitMs.slice(5)), setBytes: median(setBytes) };
  } finally {
    kv.close();
    await tmp.cleanup();
  }
}

for (const target of [150_000, 600_000]) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await run(target));
  const last = results.at(-1);
  console.log(
    `snapshot ~${last.size} B (${last.chunks} chunks): snapshot bytes set per event ${median(results.map((r) => r.setBytes))}, ` +
      `commit ${median(results.map((r) => r.commitMs)).toFixed(3)} ms (median of ${runs} runs x ${events} events; ` +
      `per-run medians ${results.map((r) => r.commitMs.toFixed(3)).join(" ")})`,
  );
}

// The store's work before it sends a commit, for an applied event's usual change (the last 200
// characters replaced, 300 more appended), against encoding the whole text and comparing each
// chunk's characters (what the store did before it encoded only the changed chunks).
const encoder = new TextEncoder();
function wholeEncode(text, stored) {
  const bytes = encoder.encode(text);
  let same = 0;
  for (let from = 0; from < bytes.length; from += CHUNK_BYTES) {
    if (from < stored.length && stored.slice(from, from + CHUNK_BYTES) === text.slice(from, from + CHUNK_BYTES)) same++;
  }
  return same;
}
for (const size of [168_000, 618_000]) {
  const base = Array.from({ length: size / 16 }, (_, i) => ((i * 2654435761) >>> 0).toString(16).padStart(16, "0")).join("");
  const olds = Array.from({ length: 64 }, (_, k) => base.slice(0, -200) + String(k).padStart(200, "x"));
  const news = olds.map((o, k) => o.slice(0, -200) + String(k + 1).padStart(500, "y"));
  const time = (f) => {
    const t = performance.now();
    for (let r = 0; r < 20; r++) for (let k = 0; k < 64; k++) f(news[k], olds[k]);
    return ((performance.now() - t) / (20 * 64)) * 1000;
  };
  const contenders = { whole: wholeEncode, ...(cutChunks ? { cut: (a, b) => cutChunks(a, b) } : {}) };
  const times = Object.fromEntries(Object.keys(contenders).map((k) => [k, []]));
  for (let r = 0; r < 10; r++) for (const [k, f] of Object.entries(contenders)) (r < 3 ? [] : times[k]).push(time(f));
  console.log(
    `cutting ~${size} B: whole text encoded ${median(times.whole).toFixed(1)} µs` +
      (cutChunks ? `, changed chunks encoded (cutChunks) ${median(times.cut).toFixed(1)} µs` : "") + " per commit",
  );
}
