//! Format 3, the one idem writes: the ledger's records, a trailer line with
//! their count and the next prune time, the head's JSON, and the checksum of
//! everything before it (layout in `mod.rs`).
//!
//! The decoded `Ledger` keeps the header line and the records as one `String`
//! (for an owned input, the input's own buffer: `Snapshot::decode_owned`), with
//! room to spare for appended records (`with_record_room`: an eighth of its
//! length; a text that runs short grows by an eighth, `grow_records`, since a
//! warm host appends to the same text event after event), and the checksum
//! stream's state after the records (`Synced`, not kept for records shorter than
//! `Synced::KEEP_FROM` bytes, which are hashed again). Encoding after an append
//! hashes only the new record, the trailer and the head, and returns the new
//! text as the old text's unchanged prefix plus a tail (`Snapshot::encode_split`:
//! `shared` counts the leading bytes that are the old text's), which the wasm
//! bindings pass on without copying the prefix back.
//!
//! The checksum state is only ever carried over unchanged bytes: `Synced` covers
//! the ledger text up to where it was decoded or last encoded, and any edit other
//! than an append (pruning, a batch past the cap) drops it, so the next encode
//! hashes everything again. A new snapshot never blesses bytes that were not
//! verified or written by this engine.
//!
//! Decoding verifies the checksum before it believes anything, even the format
//! number (damage is `invalid_snapshot`; a newer format with a valid checksum is
//! `unsupported_snapshot_format`), then hands formats 1 and 2 to `legacy`.
//! Non-ASCII text is escaped, so a snapshot is ASCII and moves between
//! JavaScript strings and wasm memory as one byte per character.

use super::*;

/// The first line of a format 3 snapshot.
pub(super) const V3_MAGIC: &str = "idem3\n";

impl Snapshot {
    /// Encode as format 3 text (ASCII), checksum last.
    pub fn encode(&mut self) -> String {
        self.encode_from().0
    }

    /// Encode, and say how many leading bytes the new text shares with the text
    /// this snapshot was decoded from or last encoded to (0 when none): the
    /// header line and the records up to where the ledger was only appended to.
    pub fn encode_from(&mut self) -> (String, usize) {
        let e = self.encode_split();
        let prefix = self.ledger.prefix(e.split);
        let mut out = String::with_capacity(prefix.len() + e.tail.len());
        out.push_str(prefix);
        out.push_str(&e.tail);
        (out, e.shared)
    }

    /// Encode without copying the records: the new text is
    /// `self.ledger.prefix(split)` followed by `tail`.
    pub fn encode_split(&mut self) -> Encoded {
        let ledger = &mut self.ledger;
        let split = ledger.text.len();
        // A kept stream is brought up to the end of the records in its own box;
        // records too short to be worth keeping one for are hashed again.
        let text = ledger.text.as_bytes();
        let (shared, state) = match ledger.synced.take() {
            Some(Synced { len, state: Some(mut state) }) => {
                state.update(&text[len..]);
                (len, Some(state))
            }
            Some(Synced { len, state: None }) => (len, Synced::keep(text)),
            None => (0, Synced::keep(text)),
        };
        let mut hasher = match &state {
            Some(state) => (**state).clone(),
            None => {
                let mut h = Xxh3::new();
                h.update(text);
                h
            }
        };
        ledger.synced = Some(Synced { len: split, state });
        // The trailer, the head and the checksum, written into one buffer; 512
        // bytes, as 256 were outgrown by even a new process's (its head is ~210).
        let mut t: Vec<u8> = Vec::with_capacity(512);
        t.push(b'#');
        json::push_u64(ledger.recs.len() as u64, &mut t);
        t.push(b' ');
        json::push_u64(ledger.prune_at, &mut t);
        t.push(b'\n');
        let head = t.len();
        self.write_head(&mut t);
        ascii_from(&mut t, head);
        t.push(b'\n');
        hasher.update(&t);
        push_hex(&mut t, hasher.digest(), 16);
        debug_assert!(t.is_ascii());
        // SAFETY: ASCII only: the trailer's digits, the head made ASCII by
        // `ascii_from`, newlines and hex digits (not checked again: a
        // UTF-8 check was as costly as making the head ASCII).
        Encoded { tail: unsafe { String::from_utf8_unchecked(t) }, split, shared }
    }

    /// The head's JSON: what serde_json writes for the head's fields in this
    /// order, byte for byte (a `Value`'s maps iterate in key order, so its
    /// canonical form is that text), non-ASCII characters included.
    pub(super) fn write_head(&self, t: &mut Vec<u8>) {
        t.push(b'{');
        KNOWN.with(|known| {
            let mut known = known.borrow_mut();
            match &*known {
                Some(k) if Arc::ptr_eq(&k.r, &self.machine) => json::put(t, &k.json),
                _ => {
                    let at = t.len();
                    write_machine(&self.machine, t);
                    *known = Some(KnownRef { r: self.machine.clone(), json: t[at..].to_vec() });
                }
            }
        });
        json::put(t, b",\"value\":");
        json::write_canonical(&self.state.value, t);
        json::put(t, b",\"context\":");
        json::write_canonical(&self.state.context, t);
        json::put(t, b",\"revision\":");
        json::push_u64(self.state.revision, t);
        json::put(t, if self.state.done { b",\"done\":true,\"outbox\":" } else { b",\"done\":false,\"outbox\":" });
        if self.state.outbox.is_empty() && self.state.timers.is_empty() && self.state.history.is_empty() {
            // The usual end, in one piece.
            return json::put(t, b"[],\"timers\":[]}");
        }
        write_array(&self.state.outbox, t, write_outbox_entry);
        json::put(t, b",\"timers\":");
        write_array(&self.state.timers, t, write_timer);
        if !self.state.history.is_empty() {
            json::put(t, b",\"history\":");
            json::write_json(&Value::Object(self.state.history.clone()), t);
        }
        json::put(t, b"}");
    }

    /// Decode a snapshot held in a `String` the caller gives up: a format 3
    /// ledger then keeps that very buffer instead of copying its records.
    pub fn decode_owned(text: String, max_bytes: usize) -> Result<Snapshot> {
        if text.starts_with(V3_MAGIC) && text.len() <= max_bytes {
            if let Some((body, expected)) = checked_tail(&text)? {
                let (snap, trailer_start) = decode_v3(body, expected)?;
                let mut text = text;
                text.truncate(trailer_start);
                return Ok(snap.with_records(text));
            }
        }
        Snapshot::decode(&text, max_bytes)
    }

    /// Decode any format this engine has written, verifying its checksum.
    pub fn decode(text: &str, max_bytes: usize) -> Result<Snapshot> {
        if text.len() > max_bytes {
            return Err(too_large(text.len(), max_bytes));
        }
        if text.starts_with('{') {
            return decode_v1(text);
        }
        if !text.starts_with("idem") {
            return Err(fail(Code::InvalidSnapshot, "not an idem snapshot"));
        }
        // Every text format from 2 on ends with the checksum of all that precedes it,
        // so integrity is checked before anything else is believed, even the format.
        let Some((body, expected)) = checked_tail(text)? else { return Err(corrupt("too short")) };
        if body.starts_with(V3_MAGIC) {
            let (snap, trailer_start) = decode_v3(body, expected)?;
            // Room for the record this reduce will add, so appending never copies the ledger again.
            let mut records = String::with_capacity(trailer_start + 1024);
            records.push_str(cut(body, ..trailer_start));
            return Ok(snap.with_records(records));
        }
        decode_v2(body, expected)
    }

    /// A fresh snapshot in `config` with the machine's initial context.
    pub fn initial(machine: &Machine, config: &[StateIdx]) -> Snapshot {
        Snapshot {
            format: FORMAT,
            machine: MachineRef::of(machine),
            state: ProcessState { value: machine.value_of_config(config), context: machine.initial_context.clone(), ..ProcessState::default() },
            ledger: Ledger { cap: machine.retention.max_entries, ..Ledger::default() },
        }
    }

    /// The readable form for people and tools (malformed ledger records, which
    /// only a forged snapshot can hold, are left out; [`Ledger::validate`] finds them).
    pub fn to_value(&self) -> Value {
        let ledger: Vec<Value> = self
            .ledger
            .iter()
            .filter_map(Result::ok)
            .map(|e| {
                object! {
                    "id": e.id(),
                    "fp": e.fp,
                    "at": e.at,
                    "exp": e.exp,
                    "rev": e.rev,
                    "status": e.status(),
                    "response": e.response().unwrap_or(Value::Null),
                }
            })
            .collect();
        let mut v = object! {
            "format": self.format,
            "machine": *self.machine,
            "value": self.state.value,
            "context": self.state.context,
            "revision": self.state.revision,
            "done": self.state.done,
            "ledger": ledger,
            "outbox": self.state.outbox,
            "timers": self.state.timers,
        };
        if !self.state.history.is_empty() {
            v["history"] = Value::Object(self.state.history.clone());
        }
        v
    }
}

/// A decimal number as `str::parse` reads it (an optional `+`, then digits),
/// one copy of that code for every number of the formats' header lines.
#[inline(never)]
pub(super) fn number(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// The checksum of formats 1 and 2, which are hashed in one piece.
#[inline(never)]
pub(super) fn checksum(body: &str) -> u64 {
    json::hash64(body.as_bytes())
}

/// The body of a format 2 or later text and the checksum that ends it.
pub(super) fn checked_tail(text: &str) -> Result<Option<(&str, u64)>> {
    let split = text.len().wrapping_sub(16);
    let (Some(body), Some(check)) = (text.get(..split), text.get(split..)) else { return Ok(None) };
    if body.len() < 8 {
        return Ok(None);
    }
    // Sixteen lowercase hex digits always fit a `u64`.
    match hex16(check.as_bytes()) {
        Some(expected) => Ok(Some((body, expected))),
        None => Err(corrupt("checksum is not lowercase hex")),
    }
}

/// A format 3 snapshot whose records are still to be indexed (see
/// [`V3::with_records`]), and where its trailer starts.
pub(super) struct V3 {
    pub(super) head: Head,
    pub(super) recs: Vec<Rec>,
    pub(super) prune_at: u64,
    /// The checksum stream after the records, when they are long enough to keep it (see [`Synced::keep`]).
    pub(super) state: Option<Box<Xxh3>>,
}

impl V3 {
    /// The snapshot, its ledger made of `text`: the header line and the records
    /// (the text the records were found in, or a copy of it).
    fn with_records(self, text: String) -> Snapshot {
        let mut ledger = Ledger::indexed(text, self.recs, self.prune_at);
        ledger.synced = Some(Synced { len: ledger.text.len(), state: self.state });
        self.head.into_snapshot(3, ledger)
    }
}

/// Format 3: `body` is everything before the checksum. The records come first,
/// so the checksum is taken as a stream and its state after the records is kept.
pub(super) fn decode_v3(body: &str, expected: u64) -> Result<(V3, usize)> {
    // The head is the last line, the trailer (`#<count> <prune at>`) the one before.
    let layout = body.strip_suffix('\n').and_then(|b| {
        let head_start = last_newline(b.as_bytes())? + 1;
        let trailer_start = last_newline(b.as_bytes().get(..head_start - 1)?)? + 1;
        (trailer_start >= V3_MAGIC.len()).then_some((trailer_start, head_start))
    });
    let Some((trailer_start, head_start)) = layout else {
        return Err(corrupt(if checksum(body) != expected { "checksum mismatch" } else { "no trailer" }));
    };
    // Hash and find the records block by block (what the walk finds is believed
    // only once the checksum matches).
    const BLOCK: usize = 16 << 10;
    let b = body.as_bytes();
    let mut hasher = Xxh3::new();
    let mut walk = Walk::new(trailer_start);
    let mut at = 0;
    while at < trailer_start {
        let end = (at + BLOCK).min(trailer_start);
        hasher.update(&b[at..end]);
        walk.advance(b, end);
        at = end;
    }
    // Boxed here, not moved out with the rest: the state is a large value.
    let state = (trailer_start > Synced::KEEP_FROM).then(|| Box::new(hasher.clone()));
    hasher.update(&b[trailer_start..]);
    if hasher.digest() != expected {
        return Err(corrupt("checksum mismatch"));
    }
    // `#<count> <prune at>`: a second space is left in the second number, which then does not parse.
    let trailer = body.get(trailer_start..head_start - 1).and_then(|t| t.strip_prefix('#')?.split_once(' '));
    let Some((count, prune_at)) = trailer.and_then(|(c, p)| Some((usize::try_from(number(c)?).ok()?, number(p)?))) else {
        return Err(corrupt("bad trailer"));
    };
    let recs = walk.finish(trailer_start, count)?;
    let head = parse_head(body.get(head_start..body.len() - 1).unwrap_or(""), 3)?;
    Ok((V3 { head, recs, prune_at, state }, trailer_start))
}

/// How [`Snapshot::encode_split`] wrote a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// Everything after the records: the trailer, the head and the checksum.
    pub tail: String,
    /// Where `tail` starts in the whole text (the length of the ledger's prefix).
    pub split: usize,
    /// Leading bytes that are as they were in the text last decoded or encoded.
    pub shared: usize,
}

/// JSON text with every non-ASCII character escaped as `\uXXXX`, so snapshots
/// are ASCII (cheap to move between JavaScript strings and wasm memory).
pub fn ascii_json(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    escape_non_ascii(text, &mut out);
    ascii_string(out)
}

pub(super) fn escape_non_ascii(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c as u8);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.extend_from_slice(b"\\u");
                push_hex(out, *u as u64, 4);
            }
        }
    }
}

/// [`ascii_json`] of the JSON text `t` holds from `from` on, in place.
pub(super) fn ascii_from(t: &mut Vec<u8>, from: usize) {
    if !t[from..].is_ascii() {
        let text = t.split_off(from);
        match std::str::from_utf8(&text) {
            Ok(text) => escape_non_ascii(text, t),
            // Never: the text was split off at the start of a piece of JSON text.
            Err(_) => unreachable!("JSON text is UTF-8"),
        }
    }
}

/// An id as its record holds it: a JSON string literal, made ASCII.
pub(super) fn id_literal(id: &str) -> String {
    let mut t = Vec::with_capacity(id.len() + 2);
    json::write_str(id, &mut t);
    ascii_from(&mut t, 0);
    ascii_string(t)
}

/// Bytes made ASCII by the writers here, as a `String`.
pub(super) fn ascii_string(bytes: Vec<u8>) -> String {
    json::utf8(bytes)
}

/// The low `dst.len()` hex digits of `v`, lowercase.
pub(super) fn put_hex(dst: &mut [u8], v: u64) {
    let digits = json::hex_digits(v);
    let mut from = digits.iter().rev();
    for d in dst.iter_mut().rev() {
        *d = *from.next().unwrap_or(&b'0');
    }
}

/// Digits `{:0width$x}` writes for `v`.
pub(super) fn hex_width(v: u64, width: usize) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(4).max(width)
}

/// `{:0width$x}`: lowercase hex, at least `width` digits.
pub(super) fn push_hex(t: &mut Vec<u8>, v: u64, width: usize) {
    let n = hex_width(v, width);
    if n > 16 {
        t.resize(t.len() + n - 16, b'0');
    }
    t.extend_from_slice(&json::hex_digits(v)[16 - n.min(16)..]);
}

/// The capacity to give a ledger text of `len` bytes that records will be
/// appended to: an eighth more, at least 1 KiB. The wasm boundary's copy of a
/// snapshot, which becomes the ledger's text, is made so (a warm host appends
/// to it event after event). Natively a decoded text gets 1 KiB: glibc hands a
/// block an eighth larger back to the system on every free, so a host reducing
/// a large snapshot per event would map and unmap it each time.
pub(crate) fn with_record_room(len: usize) -> usize {
    len + (len / 8).max(1024)
}

/// Room for a record at the end of a ledger's text: when less than 512 bytes
/// (a usual record's room) are left, an eighth of the text more, where a `Vec`
/// would double. A warm host appends to the same text event after event, and
/// wasm memory never shrinks: a 15 MB ledger kept decoded had doubled on its
/// fifth to eighth event, taking wasm memory from 22 MiB to 51; now its text
/// has room for thousands of records as the boundary copies it in, and grows by
/// an eighth after.
pub(super) fn grow_records(t: &mut Vec<u8>) {
    if t.capacity() - t.len() < 512 {
        t.reserve_exact(with_record_room(t.len()) - t.len());
    }
}

/// JSON text written by `body`, made ASCII and preceded by its length in hex
/// (`{:0width$x}`).
pub(super) fn sized(t: &mut Vec<u8>, width: usize, body: impl FnOnce(&mut Vec<u8>)) {
    let at = t.len();
    t.resize(at + width, b'0');
    body(t);
    ascii_from(t, at + width);
    let len = (t.len() - at - width) as u64;
    if hex_width(len, width) == width {
        put_hex(&mut t[at..at + width], len);
    } else {
        let text = t.split_off(at + width);
        t.truncate(at);
        push_hex(t, len, width);
        t.extend_from_slice(&text);
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use serde_json::json;

    #[allow(clippy::too_many_arguments)]
    fn old_push(l: &mut Ledger, id: &str, fp: &str, at: u64, exp: u64, rev: u64, ignored: bool, response: &Value) {
        let id_literal = ascii_json(&Value::String(id.to_string()).to_string());
        let response = ascii_json(&crate::json::tests::sorted(response).to_string());
        l.text.push_str(&format!("{:04x}{}", id_literal.len(), id_literal));
        l.text.push_str(&format!(
            "{fp}{at:016x}{exp:016x}{:012x}{}{:08x}{response}\n",
            rev & 0xffff_ffff_ffff,
            if ignored { 'i' } else { 'a' },
            response.len()
        ));
    }

    #[test]
    fn records_and_head_are_written_as_serde_json_and_format_wrote_them() {
        let long = "\u{e9}x".repeat(40_000);
        let ids = ["e1", "", "\u{e9}\"\\\n\u{1}\u{7f}\u{1F600}", long.as_str()];
        let responses = [
            Value::Null,
            json!({"state": "paid", "revision": 3}),
            json!({"z": [1, 2.5, -0.0, 1e300, -7, 18446744073709551615u64], "a": {"\u{e9}": "\u{1F600}", "": null}}),
            json!(long.clone()),
        ];
        let fp = "0123456789abcdef0123456789abcdef";
        for id in ids {
            for r in &responses {
                for (at, exp, rev, ignored) in [(0, 0, 0, false), (u64::MAX, 1, u64::MAX, true), (1_700_000_000_000, 1_700_086_400_000, 7, false)] {
                    let mut got = Ledger::default();
                    got.push(id, fp, at, exp, rev, ignored, r);
                    let mut want = Ledger::default();
                    old_push(&mut want, id, fp, at, exp, rev, ignored, r);
                    assert_eq!(got.text, want.text);
                }
            }
        }

        let machine = MachineRef { id: "order\u{e9}".into(), version: "1\"".into(), hash: "cd9d".into() };
        let retry = RetryPolicy::default();
        let entry = OutboxEntry {
            key: "k\u{1F600}".into(),
            effect_type: "ship".into(),
            payload: json!({"b": [1, 0.1], "a": "\u{2028}"}),
            idempotent: true,
            state: EffectState::InFlight,
            attempts: 2,
            attempt_id: Some("k#2".into()),
            due_at: Some(5),
            retry,
            event_id: "e".into(),
            created_at: 1,
            done_at: None,
            result: Some(json!({"ok": [1]})),
            error: None,
        };
        let timer = Timer { id: "after:a:1:2".into(), state: "a".into(), delay: 1, due_at: 2 };
        for (value, context, outbox, timers, done) in [
            (json!("pending"), json!({}), vec![], vec![], false),
            (json!({"a": {"b": "c"}}), json!({"x": [1, {"y": -2.5e-7}], "\u{e9}": "\u{10FFFF}"}), vec![entry.clone()], vec![timer.clone()], true),
            (json!("p"), json!({"n": 18446744073709551615u64, "m": -9223372036854775808i64}), vec![entry.clone(), entry], vec![timer.clone(), timer], false),
        ] {
            let sorted = crate::json::tests::sorted;
            let (value, context) = (sorted(&value), sorted(&context));
            let outbox: Vec<OutboxEntry> = outbox.into_iter().map(|e: OutboxEntry| OutboxEntry { payload: sorted(&e.payload), result: e.result.as_ref().map(sorted), ..e }).collect();
            let snap = Snapshot {
                format: FORMAT,
                machine: Arc::new(machine.clone()),
                state: ProcessState { value, context, revision: 12345, done, outbox, timers, history: Map::new() },
                ledger: Ledger::default(),
            };
            let head = HeadRef::of(&snap);
            let mut got = Vec::new();
            snap.write_head(&mut got);
            assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&head).unwrap());
            let mut snap = snap;
            let text = snap.encode();
            assert!(text.is_ascii());
            let mut back = Snapshot::decode(&text, usize::MAX).unwrap();
            assert_eq!(back.encode(), text);
        }
    }
}

#[cfg(test)]
mod growth_tests {
    use super::*;

    /// A ledger's text grows by an eighth when a record finds less than a
    /// usual record's room, never by doubling (wasm memory never shrinks), and
    /// not at all while the room lasts.
    #[test]
    fn a_ledger_text_grows_by_an_eighth() {
        for len in [0usize, 10_000, 1_000_000] {
            let mut t = Vec::with_capacity(with_record_room(len));
            t.resize(len, b'x');
            assert!(t.capacity() - len >= (len / 8).max(1024), "decoded with room: {len}");
            let cap = t.capacity();
            grow_records(&mut t);
            assert_eq!(t.capacity(), cap, "room left, nothing reserved: {len}");
            // Use the room up to less than 512 bytes, then grow once.
            t.resize(cap - 100, b'x');
            grow_records(&mut t);
            let used = t.len();
            assert!(t.capacity() >= used + (used / 8).max(1024), "an eighth more: {used} -> {}", t.capacity());
            assert!(t.capacity() < used + used / 4 + 4096, "not doubled: {used} -> {}", t.capacity());
        }
    }
}
