// Timing helpers: medians and p95 of batched samples, number formatting, and
// the canonical JSON the harnesses compare outcomes by.
import { performance } from "node:perf_hooks";

/**
 * Time `fn(i)`: warm up (JIT) for about 50 ms, size batches so one lasts about
 * 200 µs, take at least `minSamples` batches, then more until `budgetMs` is
 * spent or `maxSamples` are taken. Returns per-call median and p95 (ns).
 */
export function measure(fn, { budgetMs = 400, maxSamples = 2000, minSamples = 5 } = {}) {
  let i = 0;
  const warmEnd = performance.now() + 50;
  let warm = 0;
  do {
    fn(i++);
    warm++;
  } while (performance.now() < warmEnd && warm < 2000);
  let t = performance.now();
  fn(i++);
  const one = Math.max(performance.now() - t, 1e-4);
  const batch = Math.min(100_000, Math.max(1, Math.floor(0.2 / one)));
  const samples = [];
  const start = performance.now();
  while (samples.length < minSamples || (performance.now() - start < budgetMs && samples.length < maxSamples)) {
    t = performance.now();
    for (let k = 0; k < batch; k++) fn(i++);
    samples.push(((performance.now() - t) * 1e6) / batch);
  }
  samples.sort((a, b) => a - b);
  const pick = (q) => samples[Math.round((samples.length - 1) * q)];
  return { medianNs: pick(0.5), p95Ns: pick(0.95), samples: samples.length, batch };
}

/**
 * Time several functions against each other: after warming each up, take one
 * batch of each in turn, round after round, so that load that comes and goes
 * on a shared machine hits every contender alike. Stops after `budgetMs` per
 * function (at least `minSamples` rounds, at most `maxSamples`). Returns
 * `{ name: { medianNs, p95Ns, samples, batch } }`. Self-contained (its source
 * is evaluated in a browser page by benches/ab.mjs --browser).
 */
export function measureGroup(fns, { budgetMs = 400, maxSamples = 2000, minSamples = 5, warmMs = 50, batchMs } = {}) {
  const names = Object.keys(fns);
  const state = {};
  let i = 0;
  for (const name of names) {
    const fn = fns[name];
    const warmEnd = performance.now() + warmMs;
    let warm = 0;
    do {
      fn(i++);
      warm++;
    } while (performance.now() < warmEnd && warm < 5000);
    const warmedMs = performance.now() - (warmEnd - warmMs);
    const t = performance.now();
    fn(i++);
    // One call's time sizes batches of 0.2 ms; with `batchMs` (a browser, whose clock is coarse) the warm-up's average does.
    const one = Math.max(batchMs === undefined ? performance.now() - t : warmedMs / warm, 1e-4);
    state[name] = { batch: Math.min(100_000, Math.max(1, Math.floor((batchMs ?? 0.2) / one))), samples: [] };
  }
  const start = performance.now();
  const total = budgetMs * names.length;
  let rounds = 0;
  while (rounds < minSamples || (performance.now() - start < total && rounds < maxSamples)) {
    for (const name of names) {
      const { batch, samples } = state[name];
      const fn = fns[name];
      const t = performance.now();
      for (let k = 0; k < batch; k++) fn(i++);
      samples.push(((performance.now() - t) * 1e6) / batch);
    }
    rounds++;
  }
  const out = {};
  for (const name of names) {
    const s = state[name].samples.sort((a, b) => a - b);
    const pick = (q) => s[Math.round((s.length - 1) * q)];
    out[name] = { medianNs: pick(0.5), p95Ns: pick(0.95), samples: s.length, batch: state[name].batch };
  }
  return out;
}

export function fmtNs(ns) {
  if (ns == null || Number.isNaN(ns)) return "—";
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(ns >= 1e8 ? 0 : ns >= 1e7 ? 1 : 2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(ns >= 1e5 ? 0 : ns >= 1e4 ? 1 : 2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

export function fmtOps(ns) {
  if (ns == null) return "—";
  const ops = 1e9 / ns;
  if (ops >= 1e6) return `${(ops / 1e6).toFixed(2)} M`;
  if (ops >= 1e3) return `${(ops / 1e3).toFixed(1)} k`;
  return ops >= 10 ? ops.toFixed(0) : ops.toFixed(1);
}

/** How idem compares with a reference: `ratio(reference, idem)` is "8.1× faster" or "3.2× slower". */
export function ratio(ref, idem) {
  if (ref == null || idem == null) return "—";
  const r = ref / idem;
  const f = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  return r >= 1 ? `${f(r)}× faster` : `${f(1 / r)}× slower`;
}

export function fmtBytes(b) {
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(1)} MiB`;
  if (b >= 1024) return `${(b / 1024).toFixed(1)} KiB`;
  return `${b} B`;
}

/** A markdown table: header row, then rows of cells (strings). */
export function table(header, rows, align) {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells) =>
    "| " + cells.map((x, c) => (align?.[c] === "l" ? String(x).padEnd(widths[c]) : String(x).padStart(widths[c]))).join(" | ") + " |";
  const sep = "|" + widths.map((w, c) => (align?.[c] === "l" ? ":" + "-".repeat(w + 1) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [line(header), sep, ...rows.map(line)].join("\n");
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

/** A value's JSON with object keys sorted: equal for values equal whatever their key order. */
export function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  if (v && typeof v === "object") return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.round((s.length - 1) * q)];
}
