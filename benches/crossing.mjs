// The crossing alone: what any engine compiled to wasm and called from JavaScript
// pays for one round trip before it does any work, measured beside the peers.
//
// A module of 66 bytes (one exported memory, one function that copies bytes)
// stands for the engine. A call does what idem's glue does for a reduce that
// decodes the stored text (src/wasm/crossing.rs, `event_in`, `snapshot_in`,
// `outcome_plain`), and nothing else:
//   - the event's JSON text (`JSON.stringify` of the event object) and the stored
//     snapshot string written into wasm memory with `TextEncoder.encodeInto`,
//     and the process id the same way;
//   - the module called once, to copy the snapshot's bytes where the new snapshot
//     goes (the only "work": the engine writes a new snapshot of that size);
//   - the new snapshot, the state and the response read back with `TextDecoder`,
//     and the outcome object built with the keys idem's has.
// So it is a floor: an engine that stringifies the event, copies the snapshot in
// and hands back strings pays at least this, whatever its reducer costs.

// (module
//   (memory (export "memory") 4)
//   (func (export "run") (param i32 i32 i32)
//     (memory.copy (local.get 0) (local.get 1) (local.get 2))))
const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x07, 0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00,
  0x03, 0x02, 0x01, 0x00,
  0x05, 0x03, 0x01, 0x00, 0x04,
  0x07, 0x10, 0x02, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x00,
  0x0a, 0x0e, 0x01, 0x0c, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfc, 0x0a, 0x00, 0x00, 0x0b,
]);

const STATUS = ["applied", "duplicate", "conflict", "ignored", "rejected"];

/**
 * A round trip through the crossing alone, for stored texts of up to 64 KiB.
 * `reply` is what the engine would answer: the state and the response string
 * (written into memory once, as the engine would write them each call).
 * Returns `(snapshot, event, processId) => outcome`, the new snapshot a string
 * of the stored one's length.
 */
export function crossing({ state, response }) {
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(MODULE));
  const heap = new Uint8Array(exports.memory.buffer);
  const encoder = new TextEncoder();
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const EVENT = 0, PROCESS = 16 << 10, SNAPSHOT = 32 << 10, OUT = 96 << 10, REPLY = 160 << 10;
  const CAP = 64 << 10;
  const split = encoder.encodeInto(state, heap.subarray(REPLY)).written;
  const len = split + encoder.encodeInto(response, heap.subarray(REPLY + split)).written;
  return (snapshot, event, processId) => {
    const text = typeof event === "string" ? event : JSON.stringify(event);
    if (encoder.encodeInto(text, heap.subarray(EVENT, EVENT + CAP / 4)).read !== text.length) throw new Error("event too large");
    encoder.encodeInto(processId, heap.subarray(PROCESS, PROCESS + 256));
    const n = encoder.encodeInto(snapshot, heap.subarray(SNAPSHOT, SNAPSHOT + CAP)).written;
    exports.run(OUT, SNAPSHOT, n);
    const next = decoder.decode(heap.subarray(OUT, OUT + n));
    const s = decoder.decode(heap.subarray(REPLY, REPLY + split));
    const r = decoder.decode(heap.subarray(REPLY + split, REPLY + len));
    const o = { changed: true, duplicate: false, effects: [], nextDueAt: null, response: r, revision: 1, state: s, status: STATUS[0] };
    o.snapshot = next;
    return o;
  };
}
