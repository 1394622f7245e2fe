//! XXH3, the hash of xxHash 0.8, with its default secret and seed 0: the
//! 64-bit one as a stream ([`Xxh3`]: the snapshot checksum, [`crate::json::hash64`])
//! and the 128-bit one over a whole input ([`xxh3_128`]: the machine hash and
//! the event fingerprints). Written from the XXH3 specification
//! (doc/xxhash_spec.md in xxHash); the tests check it against the xxhash-rust
//! crate, bit for bit.
//!
//! Inputs of at most 240 bytes are hashed by the short-input algorithms, longer
//! ones in stripes of 64 bytes, 16 to a block, into eight 64-bit accumulators
//! that are scrambled after each block. One stripe loop and one merge serve
//! both widths. The stripe loop takes 16 bytes at a time ([`lanes`]): with
//! SIMD128 in wasm (every runtime idem targets has it), with SSE2 in native
//! builds on x86-64, in scalar code elsewhere.

const P32_1: u64 = 0x9E37_79B1;
const P32_2: u64 = 0x85EB_CA77;
const P32_3: u64 = 0xC2B2_AE3D;
const P64_1: u64 = 0x9E37_79B1_85EB_CA87;
const P64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P64_3: u64 = 0x1656_67B1_9E37_79F9;
const P64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const P64_5: u64 = 0x27D4_EB2F_1656_67C5;
const MX1: u64 = 0x1656_6791_9E37_79F9;
const MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// The default secret (`kSecret`).
#[rustfmt::skip]
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

/// Inputs up to this length are hashed by the short-input algorithms.
const MID_MAX: usize = 240;
const STRIPE: usize = 64;
/// Stripes in a block: the secret is stepped 8 bytes a stripe, to its last 64.
const BLOCK: usize = (SECRET.len() - STRIPE) / 8;
/// The secret's offset for an input's last stripe.
const LAST: usize = SECRET.len() - STRIPE - 7;
/// The stream's buffer: four stripes.
const BUF: usize = 4 * STRIPE;
/// The accumulators' starting values.
const ACC: [u64; 8] = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1];

/// Little-endian words of `b` at `i` (`k32`, `k64`: of the secret). Always
/// inlined: the short-input paths read the secret at fixed offsets, which fold.
#[inline(always)]
fn r32(b: &[u8], i: usize) -> u64 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64
}

#[inline(always)]
fn r64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

#[inline(always)]
fn k32(i: usize) -> u64 {
    r32(&SECRET, i)
}

#[inline(always)]
fn k64(i: usize) -> u64 {
    r64(&SECRET, i)
}

/// The 128-bit product of `a` and `b`, its halves xored.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    p as u64 ^ (p >> 64) as u64
}

/// XXH3's final mix.
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(MX1);
    h ^ h >> 32
}

/// XXH64's final mix (inputs of 0 to 3 bytes).
fn avalanche64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(P64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(P64_3);
    h ^ h >> 32
}

/// 16 bytes of `b` at `i` mixed with 16 of the secret at `s`. Inlined in
/// native builds, which are made at opt-level "z" (in wasm it stays a call: smaller).
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn mix16(b: &[u8], i: usize, s: usize) -> u64 {
    fold(r64(b, i) ^ k64(s), r64(b, i + 8) ^ k64(s + 8))
}

/// The first, middle and last bytes of 1 to 3, and the length, in 32 bits.
fn bytes3(b: &[u8]) -> u64 {
    let n = b.len();
    (b[0] as u64) << 16 | (b[n >> 1] as u64) << 24 | b[n - 1] as u64 | (n as u64) << 8
}

/// XXH3-64 of at most 240 bytes.
fn short64(b: &[u8]) -> u64 {
    let n = b.len();
    let len = n as u64;
    if n > 128 {
        let mut acc = len.wrapping_mul(P64_1);
        for i in 0..8 {
            acc = acc.wrapping_add(mix16(b, 16 * i, 16 * i));
        }
        acc = avalanche(acc);
        for i in 8..n / 16 {
            acc = acc.wrapping_add(mix16(b, 16 * i, 16 * (i - 8) + 3));
        }
        // The last 16 bytes with the secret at 136 - 17 (its least size, less 17).
        avalanche(acc.wrapping_add(mix16(b, n - 16, 119)))
    } else if n > 16 {
        // Pairs of 16 bytes from both ends, as many as reach the middle.
        let mut acc = len.wrapping_mul(P64_1);
        for i in 0..=(n - 1) / 32 {
            acc = acc.wrapping_add(mix16(b, 16 * i, 32 * i)).wrapping_add(mix16(b, n - 16 * (i + 1), 32 * i + 16));
        }
        avalanche(acc)
    } else if n > 8 {
        let lo = r64(b, 0) ^ k64(24) ^ k64(32);
        let hi = r64(b, n - 8) ^ k64(40) ^ k64(48);
        avalanche(len.wrapping_add(lo.swap_bytes()).wrapping_add(hi).wrapping_add(fold(lo, hi)))
    } else if n >= 4 {
        let mut h = (r32(b, n - 4) | r32(b, 0) << 32) ^ k64(8) ^ k64(16);
        h ^= h.rotate_left(49) ^ h.rotate_left(24);
        h = h.wrapping_mul(MX2);
        h ^= (h >> 35).wrapping_add(len);
        h = h.wrapping_mul(MX2);
        h ^ h >> 28
    } else if n > 0 {
        avalanche64(bytes3(b) ^ (k32(0) ^ k32(4)))
    } else {
        avalanche64(k64(56) ^ k64(64))
    }
}

/// XXH3-128's step over 16 bytes at each of `i` and `j`, with 32 of the secret at `s`.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn mix32(acc: (u64, u64), b: &[u8], i: usize, j: usize, s: usize) -> (u64, u64) {
    let lo = acc.0.wrapping_add(mix16(b, i, s)) ^ r64(b, j).wrapping_add(r64(b, j + 8));
    let hi = acc.1.wrapping_add(mix16(b, j, s + 16)) ^ r64(b, i).wrapping_add(r64(b, i + 8));
    (lo, hi)
}

/// XXH3-128 of at most 240 bytes, as (low, high) halves.
fn short128(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    let len = n as u64;
    if n > 16 {
        let mut acc = (len.wrapping_mul(P64_1), 0);
        if n > 128 {
            for i in 0..4 {
                acc = mix32(acc, b, 32 * i, 32 * i + 16, 32 * i);
            }
            acc = (avalanche(acc.0), avalanche(acc.1));
            for i in 4..n / 32 {
                acc = mix32(acc, b, 32 * i, 32 * i + 16, 32 * (i - 4) + 3);
            }
            // The last 32 bytes, reversed, with the secret at 136 - 17 - 16.
            acc = mix32(acc, b, n - 16, n - 32, 103);
        } else {
            for i in (0..=(n - 1) / 32).rev() {
                acc = mix32(acc, b, 16 * i, n - 16 * (i + 1), 32 * i);
            }
        }
        let (lo, hi) = acc;
        let h = lo.wrapping_mul(P64_1).wrapping_add(hi.wrapping_mul(P64_4)).wrapping_add(len.wrapping_mul(P64_2));
        (avalanche(lo.wrapping_add(hi)), avalanche(h).wrapping_neg())
    } else if n > 8 {
        let hi_in = r64(b, n - 8);
        let m = (r64(b, 0) ^ hi_in ^ k64(32) ^ k64(40)) as u128 * P64_1 as u128;
        let hi_in = hi_in ^ k64(48) ^ k64(56);
        let hi = ((m >> 64) as u64).wrapping_add(hi_in).wrapping_add((hi_in & 0xffff_ffff) * (P32_2 - 1));
        let lo = (m as u64).wrapping_add((len - 1) << 54) ^ hi.swap_bytes();
        let h = lo as u128 * P64_2 as u128;
        (avalanche(h as u64), avalanche(((h >> 64) as u64).wrapping_add(hi.wrapping_mul(P64_2))))
    } else if n >= 4 {
        let x = (r32(b, 0) | r32(b, n - 4) << 32) ^ k64(16) ^ k64(24);
        let m = x as u128 * P64_1.wrapping_add(len << 2) as u128;
        let hi = ((m >> 64) as u64).wrapping_add((m as u64) << 1);
        let mut lo = m as u64 ^ hi >> 3;
        lo ^= lo >> 35;
        lo = lo.wrapping_mul(MX2);
        (lo ^ lo >> 28, avalanche(hi))
    } else if n > 0 {
        let c = bytes3(b);
        let ch = (c as u32).swap_bytes().rotate_left(13) as u64;
        (avalanche64(c ^ (k32(0) ^ k32(4))), avalanche64(ch ^ (k32(8) ^ k32(12))))
    } else {
        (avalanche64(k64(64) ^ k64(72)), avalanche64(k64(80) ^ k64(88)))
    }
}

/// Whole stripes of `data` into the accumulators, the secret stepped from the
/// `n`th stripe of a block: `n` is left at the stripes taken of the last block,
/// and every block completed is scrambled.
fn stripes(acc: &mut [u64; 8], n: &mut usize, mut data: &[u8]) {
    while data.len() >= STRIPE {
        let k = (BLOCK - *n).min(data.len() / STRIPE);
        let (now, rest) = data.split_at(k * STRIPE);
        accumulate(acc, now, &SECRET[8 * *n..], *n + k == BLOCK);
        *n = (*n + k) % BLOCK;
        data = rest;
    }
}

/// The stripes of `data` (at most a block's) into the accumulators, the `j`th
/// with the secret from `secret[8 * j]`, then the accumulators scrambled if
/// `scramble` (the block is complete). Two 16-byte lanes at a time, with the
/// four pairs of accumulators held in [`lanes::V`]s throughout.
fn accumulate(acc: &mut [u64; 8], data: &[u8], secret: &[u8], scramble: bool) {
    use lanes::*;
    /// The `i`th 16 bytes of a stripe.
    #[inline(always)]
    fn lane(b: &[u8; STRIPE], i: usize) -> V {
        load(b[16 * i..16 * i + 16].try_into().unwrap())
    }
    let mut a = [set([acc[0], acc[1]]), set([acc[2], acc[3]]), set([acc[4], acc[5]]), set([acc[6], acc[7]])];
    for (j, d) in data.chunks_exact(STRIPE).enumerate() {
        let d: &[u8; STRIPE] = d.try_into().unwrap();
        let k: &[u8; STRIPE] = secret[8 * j..8 * j + STRIPE].try_into().unwrap();
        [a[0], a[1]] = two([a[0], a[1]], [lane(d, 0), lane(d, 1)], [lane(k, 0), lane(k, 1)]);
        [a[2], a[3]] = two([a[2], a[3]], [lane(d, 2), lane(d, 3)], [lane(k, 2), lane(k, 3)]);
    }
    if scramble {
        let k: &[u8; STRIPE] = SECRET[SECRET.len() - STRIPE..].try_into().unwrap();
        [a[0], a[1]] = mix([a[0], a[1]], [lane(k, 0), lane(k, 1)]);
        [a[2], a[3]] = mix([a[2], a[3]], [lane(k, 2), lane(k, 3)]);
    }
    [acc[0], acc[1]] = get(a[0]);
    [acc[2], acc[3]] = get(a[1]);
    [acc[4], acc[5]] = get(a[2]);
    [acc[6], acc[7]] = get(a[3]);
}

/// The stripe step on two 16-byte lanes of input `d` and secret `k` (`two`):
/// for each 64-bit word of the input and `x`, it xored with its key, the
/// product of the 32-bit halves of `x` is added to its accumulator and the word
/// itself to the other accumulator of its pair; and the scramble of two lanes
/// of accumulators with two of the secret (`mix`). With SIMD128 the halves of
/// both lanes are brought together for the two products by one pair of shuffles.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::*;
    pub type V = v128;

    #[inline(always)]
    pub fn load(b: &[u8; 16]) -> V {
        // SAFETY: 16 readable bytes; v128 loads need no alignment.
        unsafe { v128_load(b.as_ptr().cast()) }
    }

    #[inline(always)]
    pub fn set(a: [u64; 2]) -> V {
        u64x2(a[0], a[1])
    }

    #[inline(always)]
    pub fn get(v: V) -> [u64; 2] {
        [u64x2_extract_lane::<0>(v), u64x2_extract_lane::<1>(v)]
    }

    #[inline(always)]
    pub fn two([a0, a1]: [V; 2], [d0, d1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        let (x0, x1) = (v128_xor(d0, k0), v128_xor(d1, k1));
        let lo = i32x4_shuffle::<0, 2, 4, 6>(x0, x1);
        let hi = i32x4_shuffle::<1, 3, 5, 7>(x0, x1);
        let p0 = i64x2_add(u64x2_extmul_low_u32x4(lo, hi), i64x2_shuffle::<1, 0>(d0, d0));
        let p1 = i64x2_add(u64x2_extmul_high_u32x4(lo, hi), i64x2_shuffle::<1, 0>(d1, d1));
        [i64x2_add(a0, p0), i64x2_add(a1, p1)]
    }

    #[inline(always)]
    pub fn mix([a0, a1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        let p = u64x2_splat(super::P32_1);
        let x0 = v128_xor(v128_xor(a0, u64x2_shr(a0, 47)), k0);
        let x1 = v128_xor(v128_xor(a1, u64x2_shr(a1, 47)), k1);
        [i64x2_mul(x0, p), i64x2_mul(x1, p)]
    }
}

/// [`lanes`] with SSE2 (native builds on x86-64: the CLI, the tests and benches).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod lanes {
    use core::arch::x86_64::*;
    pub type V = __m128i;

    #[inline(always)]
    pub fn load(b: &[u8; 16]) -> V {
        // SAFETY: 16 readable bytes, loaded unaligned; SSE2 is enabled (the module's cfg).
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    #[inline(always)]
    pub fn set(a: [u64; 2]) -> V {
        // SAFETY: SSE2 is enabled (the module's cfg); no memory is touched.
        unsafe { _mm_set_epi64x(a[1] as i64, a[0] as i64) }
    }

    #[inline(always)]
    pub fn get(v: V) -> [u64; 2] {
        let mut a = [0u64; 2];
        // SAFETY: `a` is 16 writable bytes, stored unaligned.
        unsafe { _mm_storeu_si128(a.as_mut_ptr().cast(), v) };
        a
    }

    #[inline(always)]
    pub fn two([a0, a1]: [V; 2], [d0, d1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        [one(a0, d0, k0), one(a1, d1, k1)]
    }

    /// One lane: `pmuludq` multiplies the low halves of the 64-bit words, and
    /// a shuffle (which leaves `x` as it is, unlike a shift) brings the high ones down.
    #[inline(always)]
    fn one(a: V, d: V, k: V) -> V {
        // SAFETY: register operations only, with SSE2 enabled (the module's cfg).
        unsafe {
            let x = _mm_xor_si128(d, k);
            let p = _mm_mul_epu32(x, _mm_shuffle_epi32::<0b00_11_00_01>(x));
            _mm_add_epi64(a, _mm_add_epi64(p, _mm_shuffle_epi32::<0b01_00_11_10>(d)))
        }
    }

    #[inline(always)]
    pub fn mix([a0, a1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        [scramble(a0, k0), scramble(a1, k1)]
    }

    /// One lane, multiplied by the 32-bit prime in two halves.
    #[inline(always)]
    fn scramble(a: V, k: V) -> V {
        // SAFETY: register operations only, with SSE2 enabled (the module's cfg).
        unsafe {
            let x = _mm_xor_si128(_mm_xor_si128(a, _mm_srli_epi64::<47>(a)), k);
            let p = _mm_set1_epi32(super::P32_1 as i32);
            let hi = _mm_mul_epu32(_mm_srli_epi64::<32>(x), p);
            _mm_add_epi64(_mm_mul_epu32(x, p), _mm_slli_epi64::<32>(hi))
        }
    }
}

/// [`lanes`] in scalar code, for other targets (tested as wasm32 without SIMD128:
/// `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS=-Ctarget-feature=-simd128`).
#[cfg(not(any(all(target_arch = "wasm32", target_feature = "simd128"), all(target_arch = "x86_64", target_feature = "sse2"))))]
mod lanes {
    pub type V = [u64; 2];

    pub fn load(b: &[u8; 16]) -> V {
        [super::r64(b, 0), super::r64(b, 8)]
    }

    pub fn set(a: [u64; 2]) -> V {
        a
    }

    pub fn get(v: V) -> [u64; 2] {
        v
    }

    pub fn two([a0, a1]: [V; 2], [d0, d1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        [one(a0, d0, k0), one(a1, d1, k1)]
    }

    fn one(a: V, d: V, k: V) -> V {
        let (x0, x1) = (d[0] ^ k[0], d[1] ^ k[1]);
        let p0 = (x0 & 0xffff_ffff) * (x0 >> 32);
        let p1 = (x1 & 0xffff_ffff) * (x1 >> 32);
        [a[0].wrapping_add(p0).wrapping_add(d[1]), a[1].wrapping_add(p1).wrapping_add(d[0])]
    }

    pub fn mix([a0, a1]: [V; 2], [k0, k1]: [V; 2]) -> [V; 2] {
        [scramble(a0, k0), scramble(a1, k1)]
    }

    fn scramble(a: V, k: V) -> V {
        let x = |i: usize| (a[i] ^ a[i] >> 47 ^ k[i]).wrapping_mul(super::P32_1);
        [x(0), x(1)]
    }
}

/// The accumulators, from `acc` and `n` on, over a long input's `body` (its
/// whole stripes but the last) and `last` (its last 64 bytes).
fn long(mut acc: [u64; 8], mut n: usize, body: &[u8], last: &[u8]) -> [u64; 8] {
    stripes(&mut acc, &mut n, body);
    accumulate(&mut acc, last, &SECRET[LAST..], false);
    acc
}

/// The accumulators merged into 64 bits, with the secret from `s`.
fn merge(acc: &[u64; 8], s: usize, start: u64) -> u64 {
    let mut h = start;
    for i in 0..4 {
        h = h.wrapping_add(fold(acc[2 * i] ^ k64(s + 16 * i), acc[2 * i + 1] ^ k64(s + 16 * i + 8)));
    }
    avalanche(h)
}

/// XXH3-128 of `b`, its low half in the low 64 bits. Out of line: the machine
/// hash and the fingerprints share one copy of the short-input paths, which the
/// compiler would otherwise copy into each caller.
#[inline(never)]
pub fn xxh3_128(b: &[u8]) -> u128 {
    let n = b.len();
    let (lo, hi) = if n <= MID_MAX {
        short128(b)
    } else {
        let len = n as u64;
        let acc = long(ACC, 0, &b[..(n - 1) / STRIPE * STRIPE], &b[n - STRIPE..]);
        (merge(&acc, 11, len.wrapping_mul(P64_1)), merge(&acc, SECRET.len() - STRIPE - 11, !len.wrapping_mul(P64_2)))
    };
    (hi as u128) << 64 | lo as u128
}

/// XXH3-64 as a stream: the input may come in pieces of any length, and
/// [`Xxh3::digest`] may be taken at any point and the stream continued.
#[derive(Clone)]
pub struct Xxh3 {
    acc: [u64; 8],
    /// Stripes taken of the current block.
    n: usize,
    total: u64,
    /// The input not yet taken into the accumulators, `buf[..len]`: all of it
    /// up to [`BUF`] bytes, and at least its last byte once it is longer (the
    /// last stripe is hashed differently). Behind it, the buffer's last 64
    /// bytes hold the input taken last.
    buf: [u8; BUF],
    len: usize,
}

impl Xxh3 {
    pub fn new() -> Xxh3 {
        Xxh3 { acc: ACC, n: 0, total: 0, buf: [0; BUF], len: 0 }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let free = BUF - self.len;
        if data.len() <= free {
            self.buf[self.len..self.len + data.len()].copy_from_slice(data);
            self.len += data.len();
            return;
        }
        if self.len > 0 {
            let (head, rest) = data.split_at(free);
            self.buf[self.len..].copy_from_slice(head);
            stripes(&mut self.acc, &mut self.n, &self.buf);
            data = rest;
        }
        if data.len() > BUF {
            // Straight from `data`: its whole stripes but the one holding its last byte.
            let end = (data.len() - 1) / STRIPE * STRIPE;
            stripes(&mut self.acc, &mut self.n, &data[..end]);
            self.buf[BUF - STRIPE..].copy_from_slice(&data[end - STRIPE..end]);
            data = &data[end..];
        }
        self.buf[..data.len()].copy_from_slice(data);
        self.len = data.len();
    }

    pub fn digest(&self) -> u64 {
        let n = self.len;
        if self.total <= MID_MAX as u64 {
            return short64(&self.buf[..n]);
        }
        // The last stripe: the buffer's last 64 bytes, or what it holds
        // preceded by the end of the input taken before.
        let mut last = [0; STRIPE];
        if n >= STRIPE {
            last.copy_from_slice(&self.buf[n - STRIPE..n]);
        } else {
            last[..STRIPE - n].copy_from_slice(&self.buf[BUF - STRIPE + n..]);
            last[STRIPE - n..].copy_from_slice(&self.buf[..n]);
        }
        let acc = long(self.acc, self.n, &self.buf[..(n - 1) / STRIPE * STRIPE], &last);
        merge(&acc, 11, self.total.wrapping_mul(P64_1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3 as crate_xxh3;
    // Run in wasm too (`cargo test --target wasm32-unknown-unknown --lib xxh3`),
    // where the stripes are taken with SIMD128.
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// Deterministic bytes (xorshift).
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn check(b: &[u8]) {
        let n = b.len();
        assert_eq!(xxh3_128(b), crate_xxh3::xxh3_128(b), "128, {n} bytes");
        let mut h = Xxh3::new();
        h.update(b);
        assert_eq!(h.digest(), crate_xxh3::xxh3_64(b), "64, {n} bytes");
    }

    #[test]
    fn every_length_to_2048() {
        let b = bytes(2048, 7);
        for n in 0..=2048 {
            check(&b[..n]);
            // A shifted window: other bytes at each length.
            check(&b[2048 - n..]);
        }
    }

    #[test]
    fn long_inputs() {
        let b = bytes(1 << 20, 11);
        for n in [2049, 4095, 4096, 4097, 16 << 10, (16 << 10) + 1, 65_536 + 63, 250_000, 999_999, 1 << 20] {
            check(&b[..n]);
        }
        check(&[0; 5000]);
        check(&[0xff; 5000]);
    }

    /// Feeds `b` in pieces ending at `cuts`, checking the digest after each
    /// piece against the crate's stream and one-shot hash, and a clone taken
    /// midway against the rest of the stream.
    fn stream(b: &[u8], cuts: &[usize]) {
        let mut h = Xxh3::new();
        let mut theirs = crate_xxh3::Xxh3Default::new();
        let mut at = 0;
        let mut fork = None;
        for (k, &cut) in cuts.iter().chain([&b.len()]).enumerate() {
            let cut = cut.clamp(at, b.len());
            h.update(&b[at..cut]);
            theirs.update(&b[at..cut]);
            at = cut;
            assert_eq!(h.digest(), theirs.digest(), "{at} bytes, cuts {cuts:?}");
            if k == cuts.len() / 2 {
                fork = Some((h.clone(), at));
            }
        }
        assert_eq!(h.digest(), crate_xxh3::xxh3_64(b));
        if let Some((mut f, from)) = fork {
            f.update(&b[from..]);
            assert_eq!(f.digest(), h.digest());
        }
    }

    #[test]
    fn streams_at_boundaries() {
        let b = bytes(5000, 3);
        for &len in &[0, 1, 63, 64, 65, 239, 240, 241, 255, 256, 257, 1023, 1024, 1025, 2048, 2049, 5000] {
            let b = &b[..len];
            for step in [1, 7, 63, 64, 65, 240, 256, 1024] {
                let cuts: Vec<usize> = (1..=len / step).map(|i| i * step).collect();
                stream(b, &cuts);
            }
            for &cut in &[0, 1, 64, 239, 240, 241, 256, 257, 1024, 1025] {
                stream(b, &[cut, cut, cut + 1, cut + 256, cut + 1024]);
            }
        }
    }

    #[test]
    fn streams_at_random_cuts() {
        let b = bytes(40_000, 5);
        for seed in 1..200u64 {
            let r = bytes(16, seed);
            let len = 1 + (r64(&r, 0) % 40_000) as usize;
            let k = r[8] as usize % 12;
            let mut cuts: Vec<usize> = bytes(8 * k, seed + 1000).chunks(8).map(|c| r64(c, 0) as usize % (len + 1)).collect();
            cuts.sort();
            stream(&b[..len], &cuts);
        }
    }
}
