//! The ledger: the applied event ids a snapshot remembers, each with the
//! fingerprint of its event and the response frozen for it. This is where a
//! repeated event is recognised (`Ledger::find`).
//!
//! The records are kept as text, one per line, exactly as the snapshot holds
//! them (never parsed as JSON; `newlines` finds them), and a record is read only
//! when it is used: its two length fields are read, and checked against where
//! its newline is, only then, and a lookup compares the length and the last
//! eight bytes of each id first, reading the rest of only the one that matches.
//!
//! A ledger looked up a second time (one kept decoded between events: a Durable
//! Object's, a warm isolate's resident snapshots) builds an [`IdIndex`] (record
//! places by a hash of the id, open addressing) and finds ids in a few probes;
//! appended records join it at the next lookup, and pruning, which renumbers the
//! records, drops it. A ledger decoded for one event is scanned.
//!
//! Expired records are dropped in batches: `prune at` (in the trailer) is the
//! time at which at least an eighth of the records (and at least one) will have
//! expired; before it nothing is scanned, and an expired record still in the text
//! is never matched (`find` checks its expiry). The `maxEntries` cap is kept the
//! same way: only the newest `maxEntries` records are matched or listed
//! (`Ledger::set_cap`, set when a snapshot is loaded for its machine), and the
//! older ones are dropped once they are an eighth of the cap. What is remembered
//! is exactly the live records within the cap, and most events only append.

use super::*;

/// Where one ledger record sits in [`Ledger::text`]: from its first byte to
/// just past its newline. A decode finds records by their newlines alone;
/// their lengths and fixed fields are read (and checked) when they are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rec {
    pub(super) start: u32,
    pub(super) end: u32,
}

// Record layout, one per line, all ASCII:
//   <id literal length: 4 hex><id as a JSON string literal>
//   <fingerprint: 32 hex><at: 16 hex><exp: 16 hex><rev: 12 hex><a|i>
//   <response length: 8 hex><response JSON>\n
// The id literal and the response are JSON written by this engine, with
// control characters escaped, so a record's newline is its only one: the
// newlines of a ledger are its record boundaries.
pub(super) const FP_LEN: usize = 32;
pub(super) const FIXED: usize = FP_LEN + 16 + 16 + 12 + 1 + 8;

/// The ledger of remembered event ids, kept as text records so that a reduce
/// copies it instead of parsing it: finding an id is a scan of fixed-width
/// fields, an event appends one record, and expired records are dropped in
/// batches (see [`Ledger::prune`]).
#[derive(Clone)]
pub struct Ledger {
    /// The header line of format 3, then the records, contiguous, oldest first:
    /// the text's own prefix, so encoding copies it (or not) as it is.
    pub(super) text: String,
    pub(super) recs: Vec<Rec>,
    /// Before this time no scan of the expiries is needed: fewer records than a
    /// batch (an eighth of them, at least one) can have expired. 0: look now.
    pub(super) prune_at: u64,
    /// The checksum stream over the header line and `text[..len]`, where those
    /// bytes are still as they were in the text last decoded or encoded.
    pub(super) synced: Option<Synced>,
    /// The records by their id, once the ledger is looked up a second time.
    pub(super) index: IdIndex,
    /// How many of the newest records are remembered (the machine's
    /// `retention.maxEntries`, set when the ledger is loaded for it or pruned;
    /// all of them until then). The older ones wait in the text, never matched
    /// nor listed, until they are an eighth of the cap and dropped together
    /// (see [`Ledger::prune`]).
    pub(super) cap: usize,
}

/// Where each record is by a hash of its id literal, so that a ledger kept
/// decoded between events (a Durable Object's, a warm isolate's: the resident
/// snapshot) finds an id in a few probes instead of a scan of every record.
/// Built on the second lookup of the same decoded ledger: one decoded for a
/// single event is looked up once, and a scan costs less than building this.
/// Appended records are added at the next lookup; pruning, which renumbers the
/// records, drops it and the count of lookups with it.
#[derive(Clone, Default)]
pub(super) struct IdIndex {
    /// Lookups since the ledger was decoded or pruned (counted to 2).
    pub(super) finds: u8,
    /// Open addressing with linear probing, at most half full: a record `r`
    /// is `(hash >> 32) << 32 | (r + 1)`, 0 is empty. Empty until built.
    pub(super) slots: Vec<u64>,
    /// Records `0..indexed` are in `slots`.
    pub(super) indexed: usize,
}

impl IdIndex {
    /// Ledgers with fewer records are always scanned.
    const FROM: usize = 64;

    fn hash(literal: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_128(literal) as u64
    }

    /// Records `r` whose id literal may be the one hashed to `h`, any order.
    fn candidates(&self, h: u64) -> impl Iterator<Item = usize> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let tag = h >> 32;
        let start = h as usize & mask;
        (0..self.slots.len())
            .map(move |k| self.slots[(start + k) & mask])
            .take_while(|&slot| slot != 0)
            .filter(move |&slot| slot >> 32 == tag)
            .map(|slot| (slot as u32 as usize) - 1)
    }

    fn insert(&mut self, h: u64, r: usize) {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (h >> 32) << 32 | (r as u64 + 1);
    }
}

#[derive(Clone)]
pub(super) struct Synced {
    pub(super) len: usize,
    /// The stream's state after those bytes; `None` when they are at most
    /// [`Synced::KEEP_FROM`] bytes, hashed again rather than kept.
    pub(super) state: Option<Box<Xxh3>>,
}

impl Synced {
    /// Records up to this length are hashed again at each encode rather than
    /// kept: a short text costs about as much to hash again as a kept state
    /// costs to box and clone.
    pub(super) const KEEP_FROM: usize = 1024;

    /// The stream over `text`, boxed to be kept, when `text` is long enough
    /// for that to pay.
    pub(super) fn keep(text: &[u8]) -> Option<Box<Xxh3>> {
        (text.len() > Synced::KEEP_FROM).then(|| {
            let mut h = Box::new(Xxh3::new());
            h.update(text);
            h
        })
    }
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger { text: V3_MAGIC.to_string(), recs: Vec::new(), prune_at: 0, synced: None, index: IdIndex::default(), cap: usize::MAX }
    }
}

impl PartialEq for Ledger {
    /// Same records, same pruning schedule (what the text holds).
    fn eq(&self, other: &Ledger) -> bool {
        self.prune_at == other.prune_at
            && self.recs.len() == other.recs.len()
            && self.recs.iter().zip(&other.recs).all(|(a, b)| self.raw(a) == other.raw(b))
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("entries", &self.recs.len()).field("prune_at", &self.prune_at).finish()
    }
}

/// One record, read in place.
pub struct Entry<'a> {
    id_literal: &'a str,
    pub fp: &'a str,
    pub at: u64,
    pub exp: u64,
    pub rev: u64,
    ignored: bool,
    response_json: &'a str,
}

impl Entry<'_> {
    pub fn id(&self) -> String {
        match json::parse_value(self.id_literal) {
            Ok(Value::String(id)) => id,
            _ => String::new(),
        }
    }
    pub fn status(&self) -> &'static str {
        if self.ignored {
            "ignored"
        } else {
            "applied"
        }
    }
    /// The frozen response.
    pub fn response(&self) -> Result<Value> {
        json::parse_value(self.response_json).map_err(|_| corrupt("ledger response is not json"))
    }
}

/// Lowercase hex digit values; 0xff for every other byte.
pub(super) static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Lowercase hex, at most 16 digits (what `Ledger::push` writes). Branch-free:
/// it runs for every record of every ledger a reduce reads.
pub(super) fn hex(s: &str) -> Option<u64> {
    let mut v = 0u64;
    let mut bad = 0u8;
    for &c in s.as_bytes() {
        let d = HEX[c as usize];
        bad |= d;
        v = (v << 4) | (d & 0x0f) as u64;
    }
    (bad & 0xf0 == 0).then_some(v)
}

/// Eight lowercase hex digits (most significant first) at once, as one u64
/// lane per byte. `None` unless every byte is `0-9` or `a-f`.
#[inline(always)]
pub(super) fn hex8(b: &[u8]) -> Option<u64> {
    hex_lanes(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

/// Eight ASCII hex digits held one per byte of `x`, most significant first.
#[inline(always)]
pub(super) fn hex_lanes(x: u64) -> Option<u64> {
    const L: u64 = 0x0101_0101_0101_0101;
    const H: u64 = 0x8080_8080_8080_8080;
    // For bytes below 0x80, `((x | H) - c * L) & H` has the high bit of each byte
    // set where that byte is >= c (the OR keeps borrows inside their byte).
    let ge = |c: u64| ((x | H) - c * L) & H;
    let digit = ge(0x30) & !ge(0x3a);
    let letter = ge(0x61) & !ge(0x67);
    if x & H != 0 || (digit | letter) != H {
        return None;
    }
    let mut v = (x & 0x0f0f_0f0f_0f0f_0f0f) + (letter >> 7) * 9;
    v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff;
    v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff;
    v = (v | (v >> 16)) & 0x0000_0000_ffff_ffff;
    Some(v)
}

/// Sixteen lowercase hex digits.
#[inline(always)]
pub(super) fn hex16(b: &[u8]) -> Option<u64> {
    Some((hex8(b.get(..8)?)? << 32) | hex8(b.get(8..16)?)?)
}

/// Four lowercase hex digits.
#[inline(always)]
pub(super) fn hex4(b: &[u8]) -> Option<u64> {
    let b = b.get(..4)?;
    let (d0, d1, d2, d3) = (HEX[b[0] as usize], HEX[b[1] as usize], HEX[b[2] as usize], HEX[b[3] as usize]);
    ((d0 | d1 | d2 | d3) & 0xf0 == 0).then_some(((d0 as u64) << 12) | ((d1 as u64) << 8) | ((d2 as u64) << 4) | d3 as u64)
}

impl Ledger {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// The first `len` bytes of the encoded text (see [`Snapshot::encode_split`]).
    pub fn prefix(&self, len: usize) -> &str {
        cut(&self.text, ..len.min(self.text.len()))
    }

    fn raw(&self, r: &Rec) -> &str {
        cut(&self.text, r.start as usize..r.end as usize)
    }

    /// Where the fixed fields of `r` begin (the end of its id literal), once
    /// its two lengths agree with where its newline is.
    fn id_end(&self, r: &Rec) -> Option<usize> {
        let (start, end) = (r.start as usize, r.end as usize);
        let rec = self.text.as_bytes().get(start..end)?;
        let id_len = hex4(rec)? as usize;
        let fixed_end = (4 + id_len).checked_add(FIXED)?;
        let resp_len = hex8(rec.get(fixed_end.checked_sub(8)?..)?)? as usize;
        let well_formed = id_len >= 2
            && rec[4] == b'"'
            && rec[3 + id_len] == b'"'
            && fixed_end.checked_add(resp_len)?.checked_add(1)? == rec.len()
            && rec[rec.len() - 1] == b'\n';
        well_formed.then_some(start + 4 + id_len)
    }

    fn entry(&self, r: &Rec) -> Result<Entry<'_>> {
        self.read_entry(r).ok_or_else(|| corrupt("malformed ledger record"))
    }

    fn read_entry(&self, r: &Rec) -> Option<Entry<'_>> {
        let f = self.id_end(r)?;
        // `id_end` checked every length against the record's bytes; `get` keeps
        // a forged, non-ASCII record from cutting a character.
        let t = &self.text;
        let fixed = t.get(f..f + FIXED)?;
        let fp = fixed.get(..FP_LEN)?;
        // One record is read per duplicate: the table's digits, not the wider ones of `hex16`.
        let fx = |range: std::ops::Range<usize>| fixed.get(range).and_then(hex);
        hex(fp.get(..16)?)?;
        hex(fp.get(16..)?)?;
        Some(Entry {
            id_literal: t.get(r.start as usize + 4..f)?,
            fp,
            at: fx(32..48)?,
            exp: fx(48..64)?,
            rev: fx(64..76)?,
            ignored: match fixed.as_bytes()[76] {
                b'a' => false,
                b'i' => true,
                _ => return None,
            },
            response_json: t.get(f + FIXED..r.end as usize - 1)?,
        })
    }

    /// Read every record once, remembered or not: an `invalid_snapshot` error
    /// for a malformed one.
    pub fn validate(&self) -> Result<()> {
        self.recs.iter().try_for_each(|r| self.entry(r).and_then(|e| e.response()).map(|_| ()))
    }

    fn exp_of(&self, r: &Rec) -> Result<u64> {
        let f = self.id_end(r).ok_or_else(|| corrupt("malformed ledger record"))?;
        let fixed = &self.text.as_bytes()[f..f + FIXED];
        match (hex16(&fixed[48..64]), fixed[76]) {
            (Some(exp), b'a' | b'i') => Ok(exp),
            _ => Err(corrupt("malformed ledger record")),
        }
    }

    /// Every remembered record, oldest first; a malformed one is an
    /// `invalid_snapshot` error. Expired records not yet dropped are included
    /// (their `exp` says so); those beyond the cap are not.
    pub fn iter(&self) -> impl Iterator<Item = Result<Entry<'_>>> {
        self.recs[self.forgotten()..].iter().map(|r| self.entry(r))
    }

    /// The live record for an event id, if any (newest first): its place, for
    /// [`Ledger::entry_at`]. A ledger looked up before (kept decoded between
    /// events) is looked up in its [`IdIndex`]; otherwise only records whose
    /// id matches are read beyond their id.
    pub fn find(&mut self, id: &str, now: u64) -> Result<Option<usize>> {
        if self.recs.is_empty() {
            return Ok(None);
        }
        let literal = id_literal(id);
        if self.recs.len() >= IdIndex::FROM && self.index.finds >= 1 {
            return self.find_indexed(literal.as_bytes(), now);
        }
        let forgotten = self.forgotten();
        self.index.finds = 1;
        let (t, want) = (self.text.as_bytes(), literal.as_bytes());
        // A record starts with its id literal's length in four hex digits, then
        // the literal. Ids that differ mostly differ at their end (a counter, the
        // random part of a ULID), so the length and the last eight bytes are
        // compared first, inline.
        let mut len_hex = [0u8; 4];
        put_hex(&mut len_hex, want.len() as u64);
        let want_len = u32::from_le_bytes(len_hex);
        let last8 = |b: &[u8]| b.len().checked_sub(8).map(|i| u64::from_le_bytes(b[i..].try_into().unwrap_or_default()));
        let want_last = last8(want);
        for (i, r) in self.recs.iter().enumerate().skip(forgotten).rev() {
            let (start, end) = (r.start as usize, r.end as usize);
            let Some(rec) = t.get(start..end) else { continue };
            let Some(got) = rec.get(4..4 + want.len()) else { continue };
            if u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) == want_len
                && last8(got) == want_last
                && got == want
                && self.entry(r)?.exp > now
            {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// [`Ledger::find`] through the index, brought up to date first: the
    /// newest live record among those whose id literal is `want`.
    #[inline(never)]
    fn find_indexed(&mut self, want: &[u8], now: u64) -> Result<Option<usize>> {
        self.index_records();
        let h = IdIndex::hash(want);
        let forgotten = self.forgotten();
        let same = |i: usize| i >= forgotten && self.recs.get(i).and_then(|r| self.literal(r)) == Some(want);
        // Newest first, as the scan: the newest match below the last one tried.
        let mut below = usize::MAX;
        while let Some(i) = self.index.candidates(h).filter(|&i| i < below && same(i)).max() {
            if self.entry_at(i)?.exp > now {
                return Ok(Some(i));
            }
            below = i;
        }
        Ok(None)
    }

    /// Add the records appended since the index was last brought up to date,
    /// building it (or building it larger) when it has no room for them.
    fn index_records(&mut self) {
        let n = self.recs.len();
        if self.index.slots.len() < 2 * n {
            // Room for the ledger to double before it is built again.
            self.index.slots = vec![0; (4 * n).next_power_of_two()];
            self.index.indexed = 0;
        }
        for i in self.index.indexed..n {
            // A record whose id cannot be read is matched by no lookup.
            if let Some(literal) = self.literal(&self.recs[i]) {
                let h = IdIndex::hash(literal);
                self.index.insert(h, i);
            }
        }
        self.index.indexed = n;
        self.index.finds = 2;
    }

    /// How many of the oldest records are beyond the cap: no longer remembered.
    fn forgotten(&self) -> usize {
        self.recs.len().saturating_sub(self.cap)
    }

    /// Remember the newest `cap` records (a machine's `retention.maxEntries`).
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// The id literal of `r`, as its length says.
    fn literal(&self, r: &Rec) -> Option<&[u8]> {
        let rec = self.text.as_bytes().get(r.start as usize..r.end as usize)?;
        rec.get(4..4 + hex4(rec)? as usize)
    }

    /// Whether the last lookup went through the [`IdIndex`] (tests check
    /// that the index, not only the scan, answered).
    #[doc(hidden)]
    pub fn is_indexed(&self) -> bool {
        self.index.finds == 2
    }

    /// The record at `i`, a place [`Ledger::find`] gave.
    pub fn entry_at(&self, i: usize) -> Result<Entry<'_>> {
        self.recs.get(i).ok_or_else(|| corrupt("malformed ledger record")).and_then(|r| self.entry(r))
    }

    /// Append a record.
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, id: &str, fp: &str, at: u64, exp: u64, rev: u64, ignored: bool, response: &Value) {
        if self.recs.is_empty() && self.prune_at == 0 {
            self.prune_at = u64::MAX;
        }
        // A record that expires early can make a batch due earlier.
        self.prune_at = self.prune_at.min(exp);
        let start = self.text.len();
        // SAFETY: only UTF-8 is appended (JSON text, `fp`, ASCII digits), and
        // the text is cut only where such a piece starts.
        let t = unsafe { self.text.as_mut_vec() };
        grow_records(t);
        sized(t, 4, |t| json::write_str(id, t));
        t.extend_from_slice(fp.as_bytes());
        // `at` and `exp` in 16 digits, the revision's low 48 bits in 12, the
        // status: put together here and appended at once.
        let mut fixed = [0u8; 16 + 16 + 12 + 1];
        fixed[..16].copy_from_slice(&json::hex_digits(at));
        fixed[16..32].copy_from_slice(&json::hex_digits(exp));
        fixed[32..44].copy_from_slice(&json::hex_digits(rev)[4..]);
        fixed[44] = if ignored { b'i' } else { b'a' };
        t.extend_from_slice(&fixed);
        sized(t, 8, |t| json::write_json(response, t));
        t.push(b'\n');
        let end = t.len();
        self.recs.push(Rec { start: start as u32, end: end as u32 });
    }

    /// Forget the oldest records beyond `cap`, and the expired ones, once
    /// either is a batch: an eighth of the cap or of the ledger, at least one.
    /// Until then such a record stays in the text but is never matched (`find`
    /// reads only the newest `cap` records and checks expiry) nor listed
    /// (`iter`), so what is remembered is exactly the live records within the
    /// cap either way; batching keeps most events append-only, which is what
    /// makes them cheap to encode, also for a ledger that is full.
    pub fn prune(&mut self, now: u64, cap: usize) -> Result<()> {
        self.cap = cap;
        let over = self.recs.len().saturating_sub(cap);
        if over < (cap / 8).max(1) && now < self.prune_at {
            return Ok(());
        }
        self.prune_now(now, over)
    }

    /// [`Ledger::prune`] once the ledger is over its cap by a batch or the
    /// earliest expiry has passed: out of line, since most events append
    /// without it (and V8 compiles a function whole when first called).
    #[inline(never)]
    fn prune_now(&mut self, now: u64, over: usize) -> Result<()> {
        let mut exps = Vec::with_capacity(self.recs.len());
        for r in &self.recs {
            exps.push(self.exp_of(r)?);
        }
        let dead = exps.iter().filter(|&&e| e <= now).count();
        let drop_dead = dead > 0 && dead * 8 >= exps.len();
        if over > 0 || drop_dead {
            let keep = |i: usize| !drop_dead || exps[i] > now;
            let (mut count, mut size) = (0, 0);
            for i in (over..self.recs.len()).filter(|&i| keep(i)) {
                count += 1;
                size += self.raw(&self.recs[i]).len();
            }
            let mut text = String::with_capacity(size + 1024);
            text.push_str(V3_MAGIC);
            let mut recs = Vec::with_capacity(count + 1);
            let mut kept = Vec::with_capacity(count);
            for i in (over..self.recs.len()).filter(|&i| keep(i)) {
                let r = self.recs[i];
                let base = text.len() as u32;
                text.push_str(self.raw(&r));
                recs.push(Rec { start: base, end: base + (r.end - r.start) });
                kept.push(exps[i]);
            }
            self.text = text;
            self.recs = recs;
            self.synced = None;
            // Renumbered: looked up as a ledger decoded afresh.
            self.index = IdIndex::default();
            self.prune_at = next_batch(kept);
        } else {
            self.prune_at = next_batch(exps);
        }
        Ok(())
    }

    /// Index `count` records in `text`, the header line of format 3 followed by
    /// the records.
    pub(super) fn index(text: String, count: usize, prune_at: u64) -> Result<Ledger> {
        let mut walk = Walk::new(text.len());
        walk.advance(text.as_bytes(), text.len());
        let recs = walk.finish(text.len(), count)?;
        Ok(Ledger::indexed(text, recs, prune_at))
    }

    /// A ledger of `text` whose records `recs` were found while it was hashed.
    pub(super) fn indexed(text: String, recs: Vec<Rec>, prune_at: u64) -> Ledger {
        Ledger { text, recs, prune_at, synced: None, index: IdIndex::default(), cap: usize::MAX }
    }
}

/// When the next batch of expired records can be due: the expiry of the
/// record that makes expired ones an eighth of `exps` (at least one), found by
/// bisecting the time range (no sort: this runs once per batch, and a sort
/// would add its own code to the module).
pub(super) fn next_batch(exps: Vec<u64>) -> u64 {
    let k = exps.len().div_ceil(8);
    let (Some(&min), Some(&max)) = (exps.iter().min(), exps.iter().max()) else { return u64::MAX };
    // The earliest t with at least k expiries at or before it.
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if exps.iter().filter(|&&e| e <= mid).count() >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod hex_tests {
    use super::{hex, hex16, hex4, hex8};

    #[test]
    fn swar_hex_agrees_with_the_table_for_every_byte_in_every_position() {
        let base = *b"0123abcd";
        for pos in 0..8 {
            for byte in 0..=255u8 {
                let mut b = base;
                b[pos] = byte;
                let text = String::from_utf8_lossy(&b).into_owned();
                let expected = if text.len() == 8 { hex(&text) } else { None };
                assert_eq!(hex8(&b), expected, "byte {byte:#04x} at {pos}");
            }
        }
        assert_eq!(hex8(b"ffffffff"), Some(0xffff_ffff));
        assert_eq!(hex8(b"00000000"), Some(0));
        assert_eq!(hex16(b"0123456789abcdef"), Some(0x0123_4567_89ab_cdef));
        assert_eq!(hex16(b"0123456789abcdeF"), None);
        assert_eq!(hex4(b"00ff"), Some(255));
        assert_eq!(hex4(b"0 ff"), None);
        assert_eq!(hex8(b"0123"), None, "too short");
    }
}
