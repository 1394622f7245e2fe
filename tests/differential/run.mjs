#!/usr/bin/env node
// The randomized differential test against XState 5, on demand:
//
//   node tests/differential/run.mjs --seed N --cases M [--features parallel,history,raise,done,multi,in]
//                                   [--case I] [--show K] [--no-shrink] [--json]
//
// Case I of a run is generated from (seed, I) alone: `--seed N --case I` replays it. Every
// disagreement that no documented difference excuses is shrunk, and the first K (default 3) of each
// kind (value, context, taken, error, readback: a snapshot a fresh Machine reads otherwise) are
// printed with their minimal machine, stream and both traces. Exits 1 when any case disagreed.

import { parseArgs } from "node:util";
import { documented } from "./differences.mjs";
import { FEATURES, generateCase } from "./generate.mjs";
import { caseSeed } from "./rng.mjs";
import { runCase } from "./runner.mjs";
import { pretty, shrink } from "./shrink.mjs";

/** Whether `kase` disagrees in a way no documented difference excuses, on the same aspects as `what`. */
export function disagrees(kase, what) {
  const r = runCase(kase, { loopBound: 200 });
  if (r.refused || r.loops || !r.difference || documented(r, kase, runCase)) return false;
  return !what || r.difference.what.some((w) => what.includes(w));
}

/** The report of one disagreeing case: machine, stream and the two traces side by side. */
export function describe(kase, header = "") {
  const r = runCase(kase);
  const lines = [header, "machine:", pretty(kase.def), "events:"];
  kase.events.forEach((e, i) => lines.push(`  ${i}: ${JSON.stringify({ type: e.type, payload: e.payload })}`));
  if (r.refused) return [...lines, `idem refused it: ${r.refused.code}: ${r.refused.message}`].join("\n");
  const x0 = r.xstate.initial;
  lines.push(`xstate after start: ${JSON.stringify(x0.value)} ${JSON.stringify(x0.context)}`);
  r.idem.forEach((a, i) => {
    const b = r.xstate.steps[i];
    const mark = r.difference && r.difference.step === i ? `   <-- differ: ${r.difference.what.join(", ")}` : "";
    lines.push(`  ${i} ${kase.events[i].type}${mark}`);
    const readBack = a.readBack ? ` (a fresh Machine reads back: ${a.readBack})` : "";
    lines.push(`    idem:   ${a.status}${a.error ? ` (${a.error})` : ""} ${JSON.stringify(a.value)} ${JSON.stringify(a.context)}${readBack}`);
    lines.push(`    xstate: ${b.taken ? "taken" : "not taken"}${b.error ? ` (${b.error})` : ""} ${JSON.stringify(b.value)} ${JSON.stringify(b.context)}`);
  });
  return lines.join("\n");
}

/**
 * Run `cases` cases from `seed`. Returns the tallies and the shrunk disagreements.
 * @param {{ seed: number, cases: number, features?: string[], only?: number, doShrink?: boolean, log?: (s: string) => void }} o
 */
export function runMany({ seed, cases, features = [], only, doShrink = true, show = 3, log = () => {} }) {
  const tally = { cases: 0, agreed: 0, refused: {}, documented: {}, disagreed: 0 };
  const failures = [];
  const shown = {}; // shrunk and printed, per aspect that differed
  const indices = only === undefined ? [...Array(cases).keys()] : [only];
  for (const i of indices) {
    const kase = generateCase(caseSeed(seed, i), { features });
    const r = runCase(kase);
    tally.cases++;
    if (r.refused) {
      tally.refused[r.refused.code] = (tally.refused[r.refused.code] ?? 0) + 1;
      continue;
    }
    if (!r.difference) { tally.agreed++; continue; }
    const doc = documented(r, kase, runCase);
    if (doc) { tally.documented[doc.name] = (tally.documented[doc.name] ?? 0) + 1; continue; }
    tally.disagreed++;
    const failure = { index: i, what: r.difference.what, kase };
    const kind = failure.what.join("+");
    shown[kind] = (shown[kind] ?? 0) + 1;
    if (doShrink && shown[kind] <= show) {
      failure.minimal = shrink(kase, (k) => disagrees(k, r.difference.what)).kase;
      log(describe(failure.minimal, `--- case ${i} (--seed ${seed} --case ${i}${features.length ? ` --features ${features.join(",")}` : ""}), shrunk:`));
    }
    failures.push(failure);
  }
  return { tally, failures };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      seed: { type: "string" },
      cases: { type: "string", default: "200" },
      case: { type: "string" },
      features: { type: "string", default: "" },
      show: { type: "string", default: "3" },
      "no-shrink": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  const seed = values.seed === undefined ? (Math.random() * 2 ** 31) >>> 0 : Number(values.seed);
  const features = values.features ? values.features.split(",").map((s) => s.trim()).filter(Boolean) : [];
  for (const f of features) if (!FEATURES.includes(f)) throw new Error(`unknown feature "${f}" (known: ${FEATURES.join(", ")})`);
  const only = values.case === undefined ? undefined : Number(values.case);
  const started = Date.now();
  const { tally, failures } = runMany({
    seed, cases: Number(values.cases), features, only, doShrink: !values["no-shrink"], show: Number(values.show),
    log: (s) => console.log(s + "\n"),
  });
  if (values.json) console.log(JSON.stringify({ seed, features, tally, failures: failures.map((f) => ({ index: f.index, what: f.what })) }));
  const by = {};
  for (const f of failures) by[f.what.join("+")] = (by[f.what.join("+")] ?? 0) + 1;
  console.log(`seed ${seed}${features.length ? ` features ${features.join(",")}` : ""}: ${tally.cases} cases, ${tally.agreed} agreed, ` +
    `${tally.disagreed} disagreed ${JSON.stringify(by)}, documented ${JSON.stringify(tally.documented)}, ` +
    `refused by idem ${JSON.stringify(tally.refused)} (${Date.now() - started} ms)`);
  process.exitCode = tally.disagreed > 0 ? 1 : 0;
}
