//! Writing JSON text: compact, byte for byte as serde_json's writer writes it,
//! with object members in key order (the canonical form) or in the map's order.
//!
//! `write_json` writes a `Value` as serde_json's compact `to_writer` does
//! (members in the map's order, strings escaped by `write_str`, integers in
//! decimal, floats by the formatter serde_json calls, called the same way);
//! `write_canonical` the same with keys sorted whatever the map's order.
//! `tests/json_writer.rs` compares them with serde_json on hand-picked and
//! generated values, floats from random bits among them. Nothing here formats
//! a serde_json error or displays a `Value` through `fmt`.

use serde_json::{Map, Value};

/// Canonical JSON: object keys sorted by code point, no insignificant whitespace.
/// Independent of how the parser orders maps, so fingerprints never depend on it.
pub fn canonical(value: &Value, out: &mut String) {
    let mut bytes = std::mem::take(out).into_bytes();
    write_canonical(value, &mut bytes);
    *out = utf8(bytes);
}

/// JSON text of `value`, appended to `out`: object members sorted by key
/// (everything idem writes has its keys sorted, whatever order a map keeps:
/// see `json::order`), strings escaped by [`write_str`], integers in decimal, floats
/// by zmij as serde_json formats them. The same text as [`write_canonical`].
pub fn write_json(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, true);
}

/// A finite `f64` as serde_json writes it (the formatter it calls, zmij, called
/// the same way). A `Value` holds no other: `Number::from_f64` refuses
/// infinities and NaN.
pub fn push_f64(f: f64, out: &mut Vec<u8>) {
    let mut buffer = zmij::Buffer::new();
    out.extend_from_slice(buffer.format_finite(f).as_bytes());
}

/// Compact JSON text of `value`, as its `Display` writes it. Not through
/// `Display`, which is serde_json's serializer (see [`write_json`]).
pub fn to_text(value: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_json(value, &mut out);
    utf8(out)
}

/// Bytes written by the JSON writers here, which write UTF-8 only, as a
/// `String`. Checked; a failure is a bug in a writer, never an input's fault.
pub fn utf8(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => unreachable!("the JSON writers write UTF-8"),
    }
}

/// JSON text of a string, quotes and escapes exactly as serde_json writes them:
/// `\"`, `\\`, `\b \t \n \f \r`, other control characters as `\u00xx`
/// (lowercase), everything else (DEL and non-ASCII included) as it is.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    // Eight bytes at a time while none of them is escaped.
    let mut i = 0;
    while i < bytes.len() && plain(bytes, i) {
        i += 8;
    }
    out.reserve(bytes.len() + 2);
    if i >= bytes.len() {
        // Nothing to escape (the usual): the quotes and the bytes written at
        // once, not as three appends.
        let at = out.len();
        // SAFETY: `reserve` left room for `bytes.len() + 2` bytes from `at`,
        // and all of them are written before the length takes them in.
        unsafe {
            let p = out.as_mut_ptr().add(at);
            p.write(b'"');
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(1), bytes.len());
            p.add(bytes.len() + 1).write(b'"');
            out.set_len(at + bytes.len() + 2);
        }
        return;
    }
    out.push(b'"');
    let mut start = 0;
    while i < bytes.len() {
        if plain(bytes, i) {
            i += 8;
            continue;
        }
        let b = bytes[i];
        i += 1;
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i - 1]);
        start = i;
        if short == b'u' {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The bytes of `word` that `write_str` escapes, each marked by its high bit:
/// control characters (below 0x20), `"` and `\\`. The lowest mark is always
/// one of them (so it is not zero exactly when one is there): a borrow in
/// `x - ONES` starts only at a byte that is zero, and in `word - 0x20..` only
/// at a byte below 0x20, and only bytes above it can be marked by mistake;
/// bytes from 0x80 on are never marked.
#[inline(always)]
pub(super) fn escaped(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control | zero_byte(word ^ (ONES * b'"' as u64)) | zero_byte(word ^ (ONES * b'\\' as u64))
}

/// Whether none of the (at most) eight bytes of `b` from `i` is escaped.
#[inline(always)]
fn plain(b: &[u8], i: usize) -> bool {
    let word = match b.get(i..i + 8).and_then(|w| w.try_into().ok()) {
        Some(w) => u64::from_le_bytes(w),
        None => last_word(b, i),
    };
    escaped(word) == 0
}

/// The last bytes of `b`, from `i` (fewer than eight), as a word whose other
/// bytes are spaces, which are never escaped: most strings end, or are, shorter
/// than eight bytes, read in one or two loads rather than byte by byte.
#[inline(always)]
fn last_word(b: &[u8], i: usize) -> u64 {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let n = b.len() - i;
    if n >= 8 || n == 0 {
        return SPACES;
    }
    let end = b.len();
    if let Some(w) = end.checked_sub(8).and_then(|at| b.get(at..)).and_then(|w| w.try_into().ok()) {
        // The last eight, those before `i` made spaces.
        let keep = !0u64 << ((8 - n) * 8);
        return (u64::from_le_bytes(w) & keep) | (SPACES & !keep);
    }
    // Two loads that overlap when `n` is not a power of two.
    let u32_at = |at: usize| b.get(at..at + 4).and_then(|w| w.try_into().ok()).map_or(0, u32::from_le_bytes) as u64;
    let u16_at = |at: usize| b.get(at..at + 2).and_then(|w| w.try_into().ok()).map_or(0, u16::from_le_bytes) as u64;
    let w = match n {
        4.. => u32_at(i) | u32_at(end - 4) << ((n - 4) * 8),
        2.. => u16_at(i) | u16_at(end - 2) << ((n - 2) * 8),
        _ => b.get(i).map_or(0, |&c| c as u64),
    };
    w | SPACES << (n * 8)
}

/// JSON text of a scalar (null, boolean, number, string) as serde_json writes it.
fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Integers in decimal as itoa writes them; floats as serde_json writes them.
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => push_u64(u, out),
            (None, Some(i)) => {
                out.push(b'-');
                push_u64(i.unsigned_abs(), out);
            }
            _ => match n.as_f64() {
                Some(f) => push_f64(f, out),
                None => out.extend_from_slice(b"null"),
            },
        },
        Value::String(s) => write_str(s, out),
        Value::Array(_) | Value::Object(_) => write_json(value, out),
    }
}

/// `bytes` appended to `out`, out of line: for the writers off the per-event
/// path (`inspect`, `due`), which append many literal pieces of JSON.
#[inline(never)]
pub fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
}

/// `v` in decimal, as serde_json writes a `u64`.
pub fn push_u64(mut v: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// As [`write_json`], but each object's members in the order the map keeps
/// them: the order in which a value crosses to JavaScript as an object.
pub fn write_in_order(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, false);
}

/// [`canonical`], appended to bytes; writes no intermediate strings.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, true);
}

/// [`write_json`] and, when `canonical`, [`write_canonical`]: one copy of the
/// code for both (they differ only for a map that does not iterate in key order).
fn write_value(value: &Value, out: &mut Vec<u8>, canonical: bool) {
    match value {
        Value::Object(map) => {
            // Code point order is byte order in UTF-8, the order of `String`'s `Ord`.
            // serde_json's map already iterates in it (a BTreeMap unless its
            // `preserve_order` feature is on), so sorting is needed only when
            // not: the order is checked as the members are written.
            let start = out.len();
            out.push(b'{');
            let mut prev: Option<&String> = None;
            for (k, v) in map {
                if let Some(p) = prev {
                    // Keys whose first bytes differ are ordered by those alone.
                    if canonical && p.as_bytes().first() >= k.as_bytes().first() && p >= k {
                        out.truncate(start);
                        return write_sorted(map, out);
                    }
                    out.push(b',');
                }
                prev = Some(k);
                write_str(k, out);
                out.push(b':');
                write_value(v, out, canonical);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out, canonical);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

/// The canonical JSON of an object whose map does not iterate in key order.
pub(super) fn write_sorted(map: &Map<String, Value>, out: &mut Vec<u8>) {
    // Insertion sort: run only for a map that keeps insertion order (the
    // `analysis` feature), on objects that are small.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    for i in 1..entries.len() {
        let mut j = i;
        while j > 0 && entries[j - 1].0 > entries[j].0 {
            entries.swap(j - 1, j);
            j -= 1;
        }
    }
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}
