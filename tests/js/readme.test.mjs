// The README's examples run, so they cannot rot: every ```js block of README.md
// runs as an ES module in Node.js, its `idem` imports resolved as
// pkg/package.json "exports" resolves them for Node, and what it prints must
// be exactly the lines its `// → ...` comments announce, in order.
// Its reference tables are checked against the package: every error code that
// pkg/src/index.d.ts declares, the five statuses, and the retention defaults.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = new URL("../../", import.meta.url);
const readme = readFileSync(new URL("README.md", root), "utf8");
const pkg = JSON.parse(readFileSync(new URL("pkg/package.json", root), "utf8"));

/** The ```js blocks of a markdown text, with the line each starts on. */
export function jsBlocks(markdown) {
  const blocks = [];
  const re = /^```js\n([\s\S]*?)^```$/gm;
  for (let m; (m = re.exec(markdown)); ) {
    blocks.push({ code: m[1], line: markdown.slice(0, m.index).split("\n").length + 1 });
  }
  return blocks;
}

/** A specifier of the package (`idem`, `idem/host`, ...) as a file URL, following pkg/package.json "exports" for Node. */
export function resolveIdem(specifier) {
  const sub = specifier === "idem" ? "." : `./${specifier.slice("idem/".length)}`;
  for (const [key, target] of Object.entries(pkg.exports)) {
    const star = key.indexOf("*");
    const matched = star < 0 ? (key === sub ? "" : null) : sub.startsWith(key.slice(0, star)) && sub.endsWith(key.slice(star + 1)) ? sub.slice(star, sub.length - (key.length - star - 1)) : null;
    if (matched === null) continue;
    const file = typeof target === "string" ? target : (target.node ?? target.default);
    return new URL(`pkg/${file.replace("*", matched).replace(/^\.\//, "")}`, root).href;
  }
  throw new Error(`the package does not export "${specifier}" (pkg/package.json exports)`);
}

/** Rewrite `from "idem..."` and `import("idem...")` to the files they name. */
export function linkIdem(code) {
  return code.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(idem(?:\/[^"']*)?)\2/g, (_, lead, q, spec) => `${lead}${q}${resolveIdem(spec)}${q}`);
}

/** The output a block announces: the text after `// →` on each line, in order. */
export function announced(code) {
  return code.split("\n").flatMap((line) => {
    const m = line.match(/\/\/ → (.*)$/);
    return m ? [m[1].trimEnd()] : [];
  });
}

const blocks = jsBlocks(readme);

test("README.md has JavaScript examples that announce their output", () => {
  assert.ok(blocks.length >= 1, "no ```js block in README.md");
  for (const b of blocks) assert.ok(announced(b.code).length >= 1, `the block at README.md:${b.line} announces no output (// → ...)`);
});

test("the helpers resolve and compare as they should", () => {
  assert.equal(resolveIdem("idem"), new URL("pkg/dist/js/node.js", root).href);
  assert.equal(resolveIdem("idem/stores/memory"), new URL("pkg/dist/js/stores/memory.js", root).href);
  assert.throws(() => resolveIdem("idem/nope"), /does not export "idem\/nope"/);
  assert.equal(linkIdem(`import { apply } from "idem/host";`), `import { apply } from "${new URL("pkg/dist/js/host.js", root).href}";`);
  assert.deepEqual(announced("a(); // → 1 2\nb();\nc(); // → x"), ["1 2", "x"]);
  assert.deepEqual(jsBlocks("t\n```js\nx();\n```\n```sh\ny\n```\n"), [{ code: "x();\n", line: 3 }]);
});

const dir = fileURLToPath(new URL("target/readme-test/", root));
for (const [i, block] of blocks.entries()) {
  test(`README.md:${block.line} runs and prints what it says`, () => {
    mkdirSync(dir, { recursive: true });
    const file = `${dir}block-${i + 1}.mjs`;
    writeFileSync(file, linkIdem(block.code));
    try {
      const out = execFileSync(process.execPath, [file], { encoding: "utf8", cwd: fileURLToPath(root) });
      const printed = out.split("\n").map((l) => l.trimEnd());
      if (printed.at(-1) === "") printed.pop();
      assert.deepEqual(printed, announced(block.code), `README.md:${block.line} (run as ${pathToFileURL(file).href})`);
    } finally {
      rmSync(file, { force: true });
    }
  });
}

test("the quick example is the one in the package's own README (pkg/README.md, which npm shows)", () => {
  const published = readFileSync(new URL("pkg/README.md", root), "utf8").match(/^```js example\.mjs\n([\s\S]*?)^```$/m);
  assert.ok(published, "pkg/README.md has no ```js example.mjs block");
  assert.equal(blocks[0].code, published[1]);
});

test("the machine definitions shown in README.md load, and the statechart example runs as described", async () => {
  const { Machine } = await import(resolveIdem("idem"));
  const defs = [...readme.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => JSON.parse(m[1])).filter((d) => d.states);
  assert.ok(defs.length >= 1, "no machine definition in a ```json block of README.md");
  for (const def of defs) new Machine(def);
  const order = new Machine(defs.find((d) => d.id === "order" && d.states.open?.type === "parallel"));
  let snapshot = null;
  const send = (id, type) => {
    const o = order.reduce(snapshot, { id, type }, 1_700_000_000_000, "order-1");
    if (o.changed) snapshot = o.snapshot;
    return o;
  };
  assert.deepEqual(send("e1", "PACK").state, { open: { payment: "collecting", shipping: "packed" } });
  assert.equal(send("e2", "SHIP").status, "ignored", "SHIP waits for the payment region");
  assert.equal(send("e3", "PAY").status, "applied");
  assert.equal(send("e4", "SHIP").state, "complete", "both regions final: onDone completes the order");
  assert.equal(send("e4", "SHIP").status, "duplicate");
});

/** The string members of a union type `export type NAME = "a" | "b" ...;` in the package's declarations. */
function unionOf(name) {
  const declarations = readFileSync(new URL("pkg/src/index.d.ts", root), "utf8").replace(/\/\/.*$/gm, "");
  const m = declarations.match(new RegExp(`export type ${name} =([^;]*);`));
  assert.ok(m, `pkg/src/index.d.ts declares no type ${name}`);
  return [...m[1].matchAll(/"([a-z_]+)"/g)].map((x) => x[1]);
}

/** The text of a markdown section, from its heading to the next heading of the same level. */
function section(markdown, heading) {
  const start = markdown.indexOf(`\n## ${heading}`);
  assert.ok(start >= 0, `no section "## ${heading}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The first cells of a section's table rows (not its header rows), without their backticks. */
function firstCells(text) {
  const lines = text.split("\n");
  return lines.flatMap((line, i) => {
    const m = line.match(/^\| `([^`]+)` \|/);
    return m && !lines[i + 1]?.startsWith("|-") ? [m[1]] : [];
  });
}

test("the README's error table names every code the package declares (ErrorCode, HostErrorCode)", () => {
  const errors = section(readme, "Errors: `IdemError` and its codes");
  const codes = [...unionOf("ErrorCode"), ...unionOf("HostErrorCode")];
  assert.ok(codes.length > 40, `only ${codes.length} codes read from pkg/src/index.d.ts`);
  assert.deepEqual(codes.filter((c) => !errors.includes(`\`${c}\``)), [], "codes the README's Errors section does not name");
});

test("both READMEs' status tables list the five statuses the package declares", () => {
  const statuses = unionOf("OutcomeStatus");
  assert.deepEqual(firstCells(section(readme, "Five statuses")), statuses);
  const published = readFileSync(new URL("pkg/README.md", root), "utf8");
  assert.deepEqual(firstCells(section(published, "What `apply` answers")), statuses);
});

test("the retention defaults the README gives are the engine's", async () => {
  const { Machine } = await import(resolveIdem("idem"));
  const defaults = new Machine({ id: "m", initial: "a", states: { a: {} } }).retention();
  const rows = [...section(readme, "Retention").matchAll(/^\| `(\w+)` \| `([^`]+)`/gm)].map((m) => [m[1], JSON.parse(m[2])]);
  assert.deepEqual(Object.fromEntries(rows), defaults);
  const published = section(readFileSync(new URL("pkg/README.md", root), "utf8"), "What `apply` answers");
  assert.match(published, new RegExp(`${defaults.defaultMs / 86_400_000} days\\s+and ${defaults.maxEntries.toLocaleString("en")} ids`));
});
