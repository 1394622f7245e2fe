// Assertions for the Deno tests (no download, no Node types needed).

export class AssertionError extends Error {
  constructor(message) {
    super(message);
    this.name = "AssertionError";
  }
}

export function assert(cond, message = "assertion failed") {
  if (!cond) throw new AssertionError(message);
}

function equal(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (ArrayBuffer.isView(a)) return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

const show = (v) => {
  const s = typeof v === "string" ? JSON.stringify(v) : Deno.inspect(v, { depth: 6 });
  return s.length > 2000 ? `${s.slice(0, 2000)}… (${s.length} chars)` : s;
};

/** Deep, strict equality (same prototypes, same keys, Object.is on leaves). */
export function assertEquals(actual, expected, message) {
  if (!equal(actual, expected)) {
    throw new AssertionError(`${message ? message + ": " : ""}values differ\n  actual:   ${show(actual)}\n  expected: ${show(expected)}`);
  }
}

/** Await `fn()`, expect it to reject with an instance of `ErrorClass`; return the error. */
export async function assertRejects(fn, ErrorClass) {
  try {
    await fn();
  } catch (err) {
    if (ErrorClass && !(err instanceof ErrorClass)) throw new AssertionError(`expected ${ErrorClass.name}, got ${err?.name}: ${err?.message}`);
    return err;
  }
  throw new AssertionError("expected a rejection, got none");
}
