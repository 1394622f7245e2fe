//! Fingerprints and hashes: what makes a repeated event recognisable. An
//! event's fingerprint is the hash of the canonical JSON of its type and
//! payload, so it does not depend on how its members were ordered.

use super::{write_canonical, write_str, utf8};
use serde_json::Value;

/// 128-bit xxh3 of the canonical JSON of `type` and `payload`, as 32 hex digits.
pub fn fingerprint(event_type: &str, payload: &Value) -> String {
    fingerprint_sized(event_type, payload).0
}

/// [`fingerprint`], and the length of the payload's canonical JSON: the length
/// of its compact JSON as serde_json writes it, since serde_json's maps iterate
/// in key order (so the canonical form is that text; see the tests).
pub fn fingerprint_sized(event_type: &str, payload: &Value) -> (String, usize) {
    let (fp, size) = fingerprint_digits(event_type, payload);
    (String::from(&*fp), size)
}

/// A fingerprint's 32 hex digits, held in place rather than in a `String` of
/// their own (read as a `str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl std::ops::Deref for Fingerprint {
    type Target = str;

    fn deref(&self) -> &str {
        // SAFETY: only `fingerprint_digits` makes one, of hex digits (ASCII).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

/// [`fingerprint_sized`], its digits in a [`Fingerprint`].
pub fn fingerprint_digits(event_type: &str, payload: &Value) -> (Fingerprint, usize) {
    let mut s = Vec::with_capacity(128);
    s.extend_from_slice(b"{\"payload\":");
    write_canonical(payload, &mut s);
    let size = s.len() - b"{\"payload\":".len();
    s.extend_from_slice(b",\"type\":");
    write_str(event_type, &mut s);
    s.push(b'}');
    let h = xxhash_rust::xxh3::xxh3_128(&s);
    let mut fp = [0u8; 32];
    fp[..16].copy_from_slice(&hex_digits((h >> 64) as u64));
    fp[16..].copy_from_slice(&hex_digits(h as u64));
    (Fingerprint(fp), size)
}

/// 64-bit xxh3 of bytes (used for deterministic jitter and content hashes).
pub fn hash64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

pub fn hex128(h: u128) -> String {
    let mut out = Vec::with_capacity(32);
    push_hex128(h, &mut out);
    utf8(out)
}

/// The 32 lowercase hex digits of `h`, appended.
fn push_hex128(h: u128, out: &mut Vec<u8>) {
    out.extend_from_slice(&hex_digits((h >> 64) as u64));
    out.extend_from_slice(&hex_digits(h as u64));
}

/// The 16 lowercase hex digits of `v`, most significant first, all at once:
/// each nibble moved to a byte of its own, the most significant to the lowest
/// byte (little-endian order: wasm has no byte swap), then made its digit
/// without a table or a branch: every ledger record and checksum is written
/// through here.
pub(crate) fn hex_digits(v: u64) -> [u8; 16] {
    const L: u64 = 0x0101_0101_0101_0101;
    const BYTES: u64 = 0x0000_00ff_0000_00ff;
    const NIBBLES: u64 = 0x000f_000f_000f_000f;
    let (mut hi, mut lo) = (v >> 48 | (v >> 32 & 0xffff) << 32, v >> 16 & 0xffff | (v & 0xffff) << 32);
    hi = (hi >> 8 & BYTES) | (hi & BYTES) << 16;
    lo = (lo >> 8 & BYTES) | (lo & BYTES) << 16;
    hi = (hi >> 4 & NIBBLES) | (hi & NIBBLES) << 8;
    lo = (lo >> 4 & NIBBLES) | (lo & NIBBLES) << 8;
    // A nibble plus 6 carries into bit 4 exactly when its digit is a letter,
    // which is 39 places further on than `'0' + nibble`.
    hi += b'0' as u64 * L + ((hi + 6 * L) >> 4 & L) * 39;
    lo += b'0' as u64 * L + ((lo + 6 * L) >> 4 & L) * 39;
    (hi as u128 | (lo as u128) << 64).to_le_bytes()
}
