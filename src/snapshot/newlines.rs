//! Finding the ledger's records: a record's only newline is its last byte
//! (ids and responses are JSON with control characters escaped, the fixed
//! fields hex), so the records are where the newlines are. The scan takes
//! sixteen bytes at a time with SIMD where the target has it, block by block
//! while the checksum stream passes over the same bytes ([`Walk`]); its result
//! is believed only once the checksum matches.

use super::*;

/// Where the last `\n` of `b` is, found eight bytes at a time from the end
/// (the head, which has none, is scanned on every decode).
pub(super) fn last_newline(b: &[u8]) -> Option<usize> {
    const L: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut end = b.len();
    // Sixteen bytes at a time where the processor compares them at once.
    #[cfg(any(all(target_arch = "wasm32", target_feature = "simd128"), all(target_arch = "x86_64", target_feature = "sse2")))]
    while end >= 16 {
        let m = newline_mask16(&b[end - 16..end]);
        if m != 0 {
            return Some(end - 1 - m.leading_zeros() as usize);
        }
        end -= 16;
    }
    while let Some(w) = end.checked_sub(8).and_then(|at| b.get(at..end)).and_then(|w| w.try_into().ok()) {
        // The high bit of each byte of `z` is set exactly where that byte of `x` is zero (see `newlines`).
        let x = u64::from_le_bytes(w) ^ (L * b'\n' as u64);
        let z = !(((x & LOW7) + LOW7) | x | LOW7);
        if z != 0 {
            return Some(end - 8 + (63 - z.leading_zeros() as usize) / 8);
        }
        end -= 8;
    }
    b.get(..end)?.iter().rposition(|&c| c == b'\n')
}

/// A bit for each byte of `b` (16 bytes) that is a newline, the first byte's lowest.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
pub(super) fn newline_mask16(b: &[u8]) -> u16 {
    use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_splat, v128};
    debug_assert!(b.len() == 16);
    // SAFETY: the caller passes 16 bytes; v128 loads need no alignment.
    let v = unsafe { (b.as_ptr() as *const v128).read_unaligned() };
    u8x16_bitmask(u8x16_eq(v, u8x16_splat(b'\n')))
}

/// A bit for each byte of `b` (16 bytes) that is a newline, the first byte's lowest.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn newline_mask16(b: &[u8]) -> u16 {
    use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    debug_assert!(b.len() == 16);
    // SAFETY: the caller passes 16 readable bytes, loaded unaligned; SSE2 is
    // enabled (the function's cfg).
    unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(b.as_ptr().cast()), _mm_set1_epi8(b'\n' as i8))) as u16 }
}

/// Finds the records of a ledger section by their newlines, the only ones in
/// it (see the record layout). Nothing else of a record is read here: its
/// lengths and fields are checked when it is used. Finding newlines needs no
/// record to be read before the next one's start is known, so it runs at the
/// speed of a scan, sixteen bytes at a time; it can run while the text is being
/// hashed, block by block, so the bytes are still in the processor's cache.
pub(super) struct Walk {
    /// Where the next record starts.
    pub(super) at: usize,
    /// How far the text has been scanned.
    pub(super) scanned: usize,
    pub(super) recs: Vec<Rec>,
}

impl Walk {
    pub(super) fn new(len: usize) -> Walk {
        Walk { at: V3_MAGIC.len(), scanned: V3_MAGIC.len(), recs: Vec::with_capacity(len / 64 + 64) }
    }

    /// Index every record that ends by `limit`.
    pub(super) fn advance(&mut self, b: &[u8], limit: usize) {
        let from = self.scanned;
        let Some(part) = b.get(from..limit) else { return };
        let (recs, at) = (&mut self.recs, &mut self.at);
        newlines(part, |i| {
            let end = from + i + 1;
            recs.push(Rec { start: *at as u32, end: end as u32 });
            *at = end;
        });
        self.scanned = limit;
    }

    /// The records, when they end exactly at `end` and are `count`.
    pub(super) fn finish(self, end: usize, count: usize) -> Result<Vec<Rec>> {
        if self.recs.len() != count {
            return Err(corrupt("malformed ledger record"));
        }
        if self.at != end {
            return Err(corrupt("ledger has trailing bytes"));
        }
        Ok(self.recs)
    }
}

/// Call `f` with the index of every `\n` in `b`, in order.
#[inline(always)]
pub(super) fn newlines(b: &[u8], mut f: impl FnMut(usize)) {
    #[cfg(target_feature = "simd128")]
    {
        use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_splat, v128, v128_any_true, v128_or};
        let nl = u8x16_splat(b'\n');
        let whole = b.len() - b.len() % 64;
        let mut base = 0;
        while base < whole {
            // SAFETY: the four 16-byte loads are inside `b[base..base + 64]`;
            // v128 loads need no alignment.
            let [e0, e1, e2, e3] = unsafe {
                let p = b.as_ptr().add(base) as *const v128;
                [0, 1, 2, 3].map(|k| u8x16_eq(p.add(k).read_unaligned(), nl))
            };
            // Records are about a hundred bytes: most 64-byte pieces have no newline.
            if v128_any_true(v128_or(v128_or(e0, e1), v128_or(e2, e3))) {
                let mut m = (u8x16_bitmask(e0) as u64)
                    | (u8x16_bitmask(e1) as u64) << 16
                    | (u8x16_bitmask(e2) as u64) << 32
                    | (u8x16_bitmask(e3) as u64) << 48;
                while m != 0 {
                    f(base + m.trailing_zeros() as usize);
                    m &= m - 1;
                }
            }
            base += 64;
        }
        for (i, &c) in b[whole..].iter().enumerate() {
            if c == b'\n' {
                f(whole + i);
            }
        }
    }
    #[cfg(not(target_feature = "simd128"))]
    {
        // Eight bytes at a time: the high bit of each byte of `z` is set exactly
        // where that byte of `x` is zero, i.e. where `b` has a newline.
        const L: u64 = 0x0101_0101_0101_0101;
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let mut chunks = b.chunks_exact(8);
        let mut base = 0;
        for c in &mut chunks {
            let x = u64::from_le_bytes(c.try_into().unwrap_or_default()) ^ (L * b'\n' as u64);
            let mut z = !(((x & LOW7) + LOW7) | x | LOW7);
            while z != 0 {
                f(base + (z.trailing_zeros() / 8) as usize);
                z &= z - 1;
            }
            base += 8;
        }
        for (i, &c) in chunks.remainder().iter().enumerate() {
            if c == b'\n' {
                f(base + i);
            }
        }
    }
}

#[cfg(test)]
mod newline_tests {
    use super::{last_newline, newlines};
    // Run in wasm too (`cargo test --target wasm32-unknown-unknown --lib`), where
    // the scan takes sixteen bytes at a time with SIMD128.
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The scan finds exactly the newlines a byte-by-byte loop finds, at every
    /// length and alignment, next to bytes one bit away from `\n` and above 0x7f.
    #[test]
    fn the_scan_finds_every_newline_and_nothing_else() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = [b'\n', b'\n' ^ 0x80, b'\n' ^ 1, b'\n' ^ 0x10, 0, 0xff, b'a', b'"'];
        for len in 0..300 {
            let b: Vec<u8> = (0..len).map(|_| alphabet[(next() % 8) as usize]).collect();
            let mut got = Vec::new();
            newlines(&b, |i| got.push(i));
            let want: Vec<usize> = (0..len).filter(|&i| b[i] == b'\n').collect();
            assert_eq!(got, want, "{b:?}");
            assert_eq!(last_newline(&b), want.last().copied(), "{b:?}");
            // And with newlines rarer than in a word, as in a head.
            let sparse: Vec<u8> = b.iter().map(|&c| if c == b'\n' && next() % 16 != 0 { b'a' } else { c }).collect();
            assert_eq!(last_newline(&sparse), sparse.iter().rposition(|&c| c == b'\n'), "{sparse:?}");
        }
    }
}
