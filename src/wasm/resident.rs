//! The resident snapshots: the decoded snapshot of each recent process, kept
//! between calls so that a host passing back the snapshot it was handed
//! skips copying and decoding it. Caches never change an answer: the outcome
//! is byte for byte the one a cold decode gives.
//!
//! A kept snapshot is used when the caller passes back the one the engine handed
//! out (the same process and the same value: the very string object is recognised
//! at once, an equal copy is compared whole, bytes must also end in the same
//! checksum). At most `RESIDENT_ENTRIES` processes and `RESIDENT_BYTES` are kept.
//! Before a snapshot that is not the kept one is copied in, the entries that
//! keeping it would push out (and the process's own stale entry) are dropped
//! (`Resident::make_room`), so their memory is reused: wasm memory never shrinks,
//! and a host reducing one large process after another would otherwise hold two
//! at once (benches/RESULTS.md, entry 44).

use super::*;

/// Decoded snapshots kept between calls (a Durable Object or a warm isolate
/// reduces the same process again and again), one per process id: a snapshot
/// the caller passes that is the kept one (see `Resident::take`) is used
/// without being copied into wasm memory or decoded; anything else is decoded
/// as usual. The outcome is the same either way, byte for byte.
#[derive(Default)]
pub(super) struct Resident {
    pub(super) entries: Vec<Kept>,
}

pub(super) struct Kept {
    pub(super) process: String,
    /// The snapshot string or bytes as the caller holds it.
    pub(super) value: JsValue,
    /// Its length in bytes (for an ASCII string, its characters).
    pub(super) len: usize,
    /// For bytes, their checksum (last 16 bytes): an array the caller changed
    /// in place is not the kept snapshot any more.
    pub(super) check: Option<Vec<u8>>,
    /// `value` is a `Uint8Array`.
    pub(super) bytes: bool,
    /// `value` is a string whose characters are its bytes, so byte offsets are
    /// character offsets (see `Machine::reduce_resident`).
    pub(super) ascii: bool,
    pub(super) records: Option<Records>,
    pub(super) loaded: Loaded,
}

/// A JavaScript string holding a snapshot's header line and records (its first
/// `len` characters), built by appending to the previous one.
pub(super) struct Records {
    pub(super) text: js_sys::JsString,
    pub(super) len: usize,
    /// Appends since it was last built flat.
    pub(super) appends: u32,
}

pub(super) const RESIDENT_ENTRIES: usize = 8;
/// Snapshot bytes kept at most (each is held twice: the caller's string and the
/// decoded copy), well inside a Worker isolate's 128 MB.
pub(super) const RESIDENT_BYTES: usize = 16 << 20;

impl Resident {
    /// The process's entry, which JavaScript found to be `snapshot` itself
    /// (`===`: the same string, or an equal copy compared whole, so a tampered
    /// copy never stands in for the kept one); an array must still hold the
    /// same bytes at its end, where its checksum is.
    pub(super) fn take_same(&mut self, process: &str, snapshot: &JsValue) -> Option<Kept> {
        let i = self.entries.iter().position(|e| e.process == process)?;
        let e = &self.entries[i];
        if e.bytes && (e.len != js_length(snapshot) || e.check != bytes_check(snapshot)) {
            return None;
        }
        Some(self.entries.remove(i))
    }

    pub(super) fn put(&mut self, kept: Kept) {
        self.make_room(&kept.process, kept.len);
        if kept.len <= RESIDENT_BYTES {
            self.entries.push(kept);
        }
    }

    /// Room for `process`'s snapshot of `len` bytes: its own entry goes, and
    /// the oldest ones that keeping it would exceed the bounds with. Called
    /// before a snapshot is copied in and decoded too, so that what keeping it
    /// will push out is not in wasm memory beside it (that memory never
    /// shrinks: a host reducing one large process after another would hold
    /// two at once).
    pub(super) fn make_room(&mut self, process: &str, len: usize) {
        self.entries.retain(|e| e.process != process);
        if len > RESIDENT_BYTES {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= RESIDENT_ENTRIES || self.entries.iter().map(|e| e.len).sum::<usize>() + len > RESIDENT_BYTES)
        {
            self.entries.remove(0);
        }
    }
}
