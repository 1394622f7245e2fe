//! Event ids for hosts that have none: ULIDs, which sort by creation time.

use super::utf8;

/// A ULID-shaped id: 48-bit millisecond time then 80 bits of `rand`, in
/// Crockford base32 (26 characters), so ids sort by creation time.
pub fn ulid(ms: u64, rand: [u8; 10]) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut n: u128 = ((ms as u128) & ((1 << 48) - 1)) << 80;
    for (i, b) in rand.iter().enumerate() {
        n |= (*b as u128) << (8 * (9 - i));
    }
    let mut out = [0u8; 26];
    for i in (0..26).rev() {
        out[i] = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
    utf8(out.to_vec())
}

#[cfg(test)]
mod ulid_tests {
    #[test]
    fn ulid_is_time_ordered_and_26_chars() {
        let a = super::ulid(1_700_000_000_000, [255; 10]);
        let b = super::ulid(1_700_000_000_001, [0; 10]);
        assert_eq!(a.len(), 26);
        assert!(a < b);
        assert_eq!(super::ulid(0, [0; 10]), "0".repeat(26));
    }
}
