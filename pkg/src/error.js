// `IdemError`: the one class of every error idem throws, with a stable `code` and, where one
// applies, the JSON `path` of the offending value.
//
// The engine's errors are made inside a wasm module (src/wasm.rs), and there are two of them
// (the lean engine and the full one with the analysis), each with its own JavaScript glue: they
// cannot share this class's prototype. So each error carries a brand, `Symbol.for("idem.error")`,
// and `instanceof IdemError` asks for the brand: an error from either module passes, and so does
// one from another copy of this package. Subclasses (`ContentionError`, the stores' errors) test
// `instanceof` as any class does, by prototype.

/** The brand `instanceof IdemError` looks for; src/wasm.rs sets the same one. */
const BRAND = Symbol.for("idem.error");

export class IdemError extends Error {
  /**
   * @param {string} code the stable code (`invalid_payload`, `contention`, ...)
   * @param {string} message
   * @param {{ path?: string, cause?: unknown }} [options] `path`: JSON path of the offending value
   */
  constructor(code, message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "IdemError";
    this.code = code;
    if (options.path !== undefined) this.path = options.path;
  }

  /** @param {unknown} value */
  static [Symbol.hasInstance](value) {
    if (this !== IdemError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return value instanceof Error && /** @type {any} */ (value)[BRAND] === true;
  }
}

Object.defineProperty(IdemError.prototype, BRAND, { value: true });
