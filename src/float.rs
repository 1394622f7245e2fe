//! Decimal (and JavaScript's binary, octal and hex) text to the nearest `f64`,
//! rounding half to even, without tables.
//!
//! Core's `str::parse::<f64>` carries 10 KB of 128-bit powers of five and a
//! decimal-shift table; in the wasm module those random bits cost about 10 KiB
//! gzip. Here the common case is Clinger's fast path (a mantissa of at most
//! 2^53 and a power of ten that is an exact `f64`: one multiplication or
//! division, exactly rounded by the hardware); a mantissa of up to 19 digits
//! with a power of ten up to 10^±19 is exact in 128-bit integers; everything
//! else is exact big-integer arithmetic: the value as a fraction `N / M` of
//! integers, 64 quotient bits (estimated from the top bits, then corrected),
//! the remainder as the sticky bit. At most 800 significant digits are kept (a
//! digit 1 stands for the rest when more are given: no halfway point between
//! two `f64` needs more than 767), and exponents that certainly give zero or
//! infinity are settled before any arithmetic, so no input costs more than some
//! tens of thousands of limb operations. The results are those of core's `parse` bit for bit (the tests
//! compare them on hard cases and on random text).
//!
//! In wasm the big-integer path, and JavaScript's StringToNumber whole, are
//! the host's own `Number` (`wasm::number`): 2.5 KB smaller gzip, and only
//! texts the fast paths cannot take pay for the call. ECMAScript lets an
//! engine round after the 20th significant digit; V8 (Node, Deno, workerd,
//! Chromium) and SpiderMonkey round exactly, which tests/wasm_shared/numbers.rs
//! checks against core's `parse` in each of them.

/// The powers of ten that are exact `f64`s.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Significant digits kept (see the module's documentation).
#[cfg(not(target_arch = "wasm32"))]
const MAX_DIGITS: usize = 800;

const TWO_53: u64 = 1 << 53;

/// `f` with the sign asked for.
fn signed(negative: bool, f: f64) -> f64 {
    if negative {
        -f
    } else {
        f
    }
}

/// Clinger's fast path: `±m * 10^e` when it is exactly one correctly rounded
/// operation on exact operands (`m` at most 2^53, `10^|e|` an exact `f64`, or
/// `m * 10^(e - 22)` still an integer below 2^53), else `None`.
#[inline]
pub fn fast(negative: bool, m: u64, e: i64) -> Option<f64> {
    if m > TWO_53 {
        return None;
    }
    let f = m as f64;
    let f = if e >= 0 {
        let e = usize::try_from(e).ok()?;
        match POW10.get(e) {
            Some(p) => f * p,
            None => {
                let p = f * POW10.get(e - 22)?;
                if p >= TWO_53 as f64 {
                    return None;
                }
                p * 1e22
            }
        }
    } else {
        f / POW10.get(usize::try_from(e.unsigned_abs()).ok()?)?
    };
    Some(signed(negative, f))
}

/// The `f64` nearest to the decimal `±int.frac × 10^exp`. `int` and `frac` are
/// ASCII digits (either may be empty, leading and trailing zeros are allowed);
/// `exp` is the exponent as written. Too large is `±inf`, too small `±0`.
pub fn decimal_to_f64(negative: bool, int: &[u8], frac: &[u8], exp: i64) -> f64 {
    let digits = || int.iter().chain(frac).map(|d| d.wrapping_sub(b'0') as u64);
    // The exponent of the integer int·frac.
    let e = exp.saturating_sub(frac.len() as i64);
    let mut m = 0u64;
    for d in digits() {
        match m.checked_mul(10).and_then(|m| m.checked_add(d)) {
            Some(v) => m = v,
            None => return slow(negative, int, frac, e),
        }
    }
    if m == 0 {
        return signed(negative, 0.0);
    }
    from_mantissa(negative, m, e).unwrap_or_else(|| slow(negative, int, frac, e))
}

/// `±m × 10^e` by [`fast`] or, failing that, in 128-bit integers, when either
/// can; else `None` (then [`decimal_to_f64`] is the way).
#[inline]
pub fn from_mantissa(negative: bool, m: u64, e: i64) -> Option<f64> {
    fast(negative, m, e).or_else(|| exact_u128(negative, m, e))
}

/// `±m × 10^e` for a mantissa of up to 19 digits (more than [`fast`] takes,
/// such as the 17 digits of `0.30000000000000004`) and `|e| <= 19`, in `u128`
/// arithmetic: the product, or 64 quotient bits and the remainder, exactly.
/// Out of line: the JSON parser's number reader stays small for integers.
#[inline(never)]
fn exact_u128(negative: bool, m: u64, e: i64) -> Option<f64> {
    if m == 0 {
        return None;
    }
    // 10^k for k <= 19 is below 2^64 and an exact f64.
    let p = *POW10.get(usize::try_from(e.unsigned_abs()).ok().filter(|&k| k <= 19)?)? as u64;
    if e >= 0 {
        let q = m as u128 * p as u128;
        let z = q.leading_zeros();
        let q = q << z;
        return Some(round(negative, (q >> 64) as u64, 64 - z as i64, q as u64 != 0));
    }
    // m (its top bit moved to 2^63) × 2^(bits of p - 1) / p is in (2^62, 2^64).
    let z = m.leading_zeros();
    let m = m << z;
    let bp = 64 - p.leading_zeros();
    let (q, r) = div128(m >> (65 - bp), m << (bp - 1), p);
    Some(round(negative, q, -(z as i64) - (bp as i64 - 1), r != 0))
}

/// `(hi·2^64 + lo) / d` and its remainder, for `hi < d` (so the quotient fits
/// in 64 bits), in 64-bit operations (Hacker's Delight, `divlu`): in wasm a
/// `u128` division is a call to compiler-rt's general one.
fn div128(hi: u64, lo: u64, d: u64) -> (u64, u64) {
    const B: u64 = 1 << 32;
    let s = d.leading_zeros();
    let d = d << s;
    let (d1, d0) = (d >> 32, d & (B - 1));
    let top = if s == 0 { hi } else { hi << s | lo >> (64 - s) };
    let lo = lo << s;
    let (l1, l0) = (lo >> 32, lo & (B - 1));
    // One 32-bit quotient digit of (rest·2^32 + next) / d, at most 2 too large from the estimate.
    let digit = |rest: u64, next: u64| {
        let mut q = rest / d1;
        let mut r = rest - q * d1;
        while q >= B || q * d0 > (r << 32 | next) {
            q -= 1;
            r += d1;
            if r >= B {
                break;
            }
        }
        (q, (rest << 32 | next).wrapping_sub(q.wrapping_mul(d)))
    };
    let (q1, rest) = digit(top, l1);
    let (q0, rest) = digit(rest, l0);
    (q1 << 32 | q0, rest >> s)
}

/// [`decimal_to_f64`] beyond the fast paths, in wasm: the host's own `Number`
/// of the digits, `int·frac × 10^e`, which is as correctly rounded as the exact
/// arithmetic below and takes 3 KB less of the module.
#[cfg(target_arch = "wasm32")]
#[inline(never)]
fn slow(negative: bool, int: &[u8], frac: &[u8], e: i64) -> f64 {
    let mut t = Vec::with_capacity(int.len() + frac.len() + 24);
    if negative {
        t.push(b'-');
    }
    t.extend_from_slice(int);
    t.extend_from_slice(frac);
    t.extend_from_slice(if e < 0 { b"e-" } else { b"e" });
    crate::json::push_u64(e.unsigned_abs(), &mut t);
    crate::wasm::number(&t)
}

/// [`decimal_to_f64`] by exact arithmetic: the value is `int·frac × 10^e`.
#[cfg(not(target_arch = "wasm32"))]
#[inline(never)]
fn slow(negative: bool, int: &[u8], frac: &[u8], e: i64) -> f64 {
    let zero = signed(negative, 0.0);
    let all = || int.iter().chain(frac);
    let Some(lead) = all().position(|&d| d != b'0') else { return zero };
    let trail = all().rev().position(|&d| d != b'0').unwrap_or(0);
    // The significant digits are all()[lead..len - trail]; their integer times 10^e is the value.
    let n = (int.len() + frac.len()).saturating_sub(lead + trail);
    let e = e.saturating_add(trail as i64);
    // 10^(point - 1) <= value < 10^point.
    let point = e.saturating_add(n as i64);
    if point <= -324 {
        return zero;
    }
    if point >= 310 {
        return signed(negative, f64::INFINITY);
    }
    // The integer D of the first MAX_DIGITS digits, with a digit 1 after them
    // when there are more (the last digit is not 0, so the rest is not zero).
    let mut d = Big::default();
    let mut chunk = 0u32;
    let mut len = 0;
    let kept = all().skip(lead).take(n.min(MAX_DIGITS)).map(|d| d.wrapping_sub(b'0') as u32);
    for digit in kept.chain((n > MAX_DIGITS).then_some(1)) {
        chunk = chunk.wrapping_mul(10).wrapping_add(digit);
        len += 1;
        if len == 9 {
            d.mul_add(1_000_000_000, chunk);
            (chunk, len) = (0, 0);
        }
    }
    d.mul_add(10u32.pow(len), chunk);
    let e = if n > MAX_DIGITS { point - (MAX_DIGITS as i64 + 1) } else { e };
    // value = N / M
    let mut num = d;
    let mut den = Big(vec![1]);
    let pow = e.unsigned_abs() as u32;
    if e >= 0 { num.mul_pow10(pow) } else { den.mul_pow10(pow) }
    // Scale one of them by a power of two so that N has 63 bits more than M:
    // then 2^62 < N / M < 2^64, and value = N / M * 2^scale.
    let (bn, bm) = (num.bits() as i64, den.bits() as i64);
    let scale = bn - bm - 63;
    if scale > 0 {
        den.shl(scale.unsigned_abs());
    } else {
        num.shl(scale.unsigned_abs());
    }
    // The quotient from the top bits: with M's top 63 bits Mt (all of M when
    // shorter) and N's bits from the same place Nt, Nt / (Mt + 1) is at most 6
    // below N / M (Mt >= 2^62); the remainder's subtractions make it exact.
    let low = den.bits().saturating_sub(63);
    let (nt, mt) = (num.bits_from(low), den.bits_from(low) as u64);
    let mt = if low == 0 { mt.max(1) } else { mt + 1 };
    let (hi, lo) = ((nt >> 64) as u64, nt as u64);
    let mut q = if hi < mt { div128(hi, lo, mt).0 } else { u64::MAX };
    num.sub_if_not_less(&den.mul_u64(q));
    while num.sub_if_not_less(&den) {
        q = q.saturating_add(1);
    }
    round(negative, q, scale, !num.is_zero())
}

/// The `f64` nearest to `±(q + t) × 2^e`, where `0 <= t < 1` and `t > 0`
/// exactly when `sticky`.
fn round(negative: bool, q: u64, e: i64, sticky: bool) -> f64 {
    let zero = signed(negative, 0.0);
    if q == 0 {
        return zero;
    }
    let z = q.leading_zeros();
    let q = q << z;
    // The weight of q's top bit is 2^top.
    let top = e.saturating_sub(z as i64).saturating_add(63);
    // Bits dropped: 11 for a normal number, more below 2^-1022 (subnormals have fewer).
    let shift = if top >= -1022 { 11 } else { top.saturating_neg().saturating_sub(1011) };
    if top > 1023 {
        return signed(negative, f64::INFINITY);
    }
    if shift > 64 {
        return zero;
    }
    let (kept, rest, half) = match shift {
        64 => (0, q, 1 << 63),
        s => (q >> s, q & ((1 << s) - 1), 1 << (s - 1)),
    };
    let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
    // For a normal number, kept's top bit (2^52) adds 1 to the biased exponent
    // field, and a carry out of rounding to 2^53 one more; a subnormal rounded
    // up to 2^52 becomes the smallest normal number the same way.
    let biased = if shift == 11 { ((top + 1022) as u64) << 52 } else { 0 };
    let bits = biased + kept + up as u64;
    signed(negative, if bits >= f64::INFINITY.to_bits() { f64::INFINITY } else { f64::from_bits(bits) })
}

/// JavaScript's StringToNumber: `Number(s)` for a string. JavaScript white
/// space around is ignored; empty is 0; then an optional sign and `Infinity`
/// or a decimal literal (`5`, `5.`, `.5`, `5e-3`), or an unsigned `0x`, `0o`
/// or `0b` integer; anything else is NaN. In wasm, the host's `Number` itself.
#[cfg(target_arch = "wasm32")]
pub fn js_string_to_number(s: &str) -> f64 {
    crate::wasm::number(s.as_bytes())
}

/// JavaScript's StringToNumber (see the wasm version above), in Rust.
#[cfg(not(target_arch = "wasm32"))]
pub fn js_string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space).as_bytes();
    if t.is_empty() {
        return 0.0;
    }
    let radix_bits = match t {
        [b'0', b'x' | b'X', ..] => 4,
        [b'0', b'o' | b'O', ..] => 3,
        [b'0', b'b' | b'B', ..] => 1,
        _ => 0,
    };
    if radix_bits > 0 {
        return radix_to_f64(t.get(2..).unwrap_or_default(), radix_bits);
    }
    let (negative, t) = match t {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, t),
    };
    if t == b"Infinity" {
        return signed(negative, f64::INFINITY);
    }
    /// The leading digits of t, and what follows them.
    fn digits(t: &[u8]) -> (&[u8], &[u8]) {
        let i = t.iter().take_while(|c| c.is_ascii_digit()).count();
        t.split_at_checked(i).unwrap_or((t, &[]))
    }
    let (int, rest) = digits(t);
    let (frac, rest) = match rest {
        [b'.', rest @ ..] => digits(rest),
        _ => (&[][..], rest),
    };
    if int.is_empty() && frac.is_empty() {
        return f64::NAN;
    }
    let exp = match rest {
        [] => 0,
        [b'e' | b'E', rest @ ..] => {
            let (negative_exp, rest) = match rest {
                [b'-', rest @ ..] => (true, rest),
                [b'+', rest @ ..] => (false, rest),
                _ => (false, rest),
            };
            if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
                return f64::NAN;
            }
            let e = rest.iter().fold(0i64, |e, &c| e.saturating_mul(10).saturating_add((c - b'0') as i64));
            if negative_exp {
                -e
            } else {
                e
            }
        }
        _ => return f64::NAN,
    };
    decimal_to_f64(negative, int, frac, exp)
}

/// JavaScript's WhiteSpace and LineTerminator (Rust's `char::is_whitespace`
/// also has U+0085 and lacks U+FEFF).
#[cfg(not(target_arch = "wasm32"))]
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// The digits of a `0x`, `0o` or `0b` literal (`bits` per digit) as the nearest
/// `f64`; NaN when there are none or one is not a digit of the radix.
#[cfg(not(target_arch = "wasm32"))]
fn radix_to_f64(digits: &[u8], bits: u32) -> f64 {
    if digits.is_empty() {
        return f64::NAN;
    }
    // The first 61 or more significant bits in `m`, the rest counted in `e` and folded into `sticky`.
    let (mut m, mut e, mut sticky) = (0u64, 0i64, false);
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return f64::NAN,
        } as u64;
        if d >> bits != 0 {
            return f64::NAN;
        }
        if e == 0 && m >> (64 - bits) == 0 {
            m = m << bits | d;
        } else {
            e = e.saturating_add(bits as i64);
            sticky |= d != 0;
        }
    }
    round(false, m, e, sticky)
}

/// A natural number in base 2^32, least significant limb first, no zero limb on top.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Default)]
struct Big(Vec<u32>);

#[cfg(not(target_arch = "wasm32"))]
impl Big {
    /// self = self * k + add
    fn mul_add(&mut self, k: u32, add: u32) {
        let mut carry = add as u64;
        for x in &mut self.0 {
            let v = *x as u64 * k as u64 + carry;
            *x = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow10(&mut self, mut e: u32) {
        while e >= 9 {
            self.mul_add(1_000_000_000, 0);
            e -= 9;
        }
        self.mul_add(10u32.pow(e), 0);
    }

    fn bits(&self) -> u64 {
        self.0.last().map_or(0, |top| self.0.len() as u64 * 32 - top.leading_zeros() as u64)
    }

    /// Bits `low..low + 128` (the bits above them must be 0).
    fn bits_from(&self, low: u64) -> u128 {
        let limb = |i: usize| self.0.get(i).copied().unwrap_or(0) as u64;
        let (first, shift) = ((low / 32) as usize, low % 32);
        (0..4).rev().fold(0, |v, k| {
            let pair = limb(first + k) | limb(first + k + 1) << 32;
            v << 32 | (pair >> shift) as u32 as u128
        })
    }

    fn mul_u64(&self, k: u64) -> Big {
        let mut out = Vec::with_capacity(self.0.len() + 2);
        let mut carry = 0u128;
        for &x in &self.0 {
            let v = x as u128 * k as u128 + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        while carry != 0 {
            out.push(carry as u32);
            carry >>= 32;
        }
        Big(out)
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn shl(&mut self, n: u64) {
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        if bits > 0 {
            let mut carry = 0;
            for x in &mut self.0 {
                let v = (*x as u64) << bits | carry;
                *x = v as u32;
                carry = v >> 32;
            }
            if carry != 0 {
                self.0.push(carry as u32);
            }
        }
        if limbs > 0 && !self.0.is_empty() {
            let mut shifted = vec![0; limbs];
            shifted.extend_from_slice(&self.0);
            self.0 = shifted;
        }
    }

    /// Subtract `other` when it is not larger, and say whether it was.
    fn sub_if_not_less(&mut self, other: &Big) -> bool {
        let less = match self.0.len().cmp(&other.0.len()) {
            std::cmp::Ordering::Equal => self.0.iter().rev().lt(other.0.iter().rev()),
            o => o.is_lt(),
        };
        if less {
            return false;
        }
        let mut borrow = 0u64;
        let mut others = other.0.iter();
        for x in &mut self.0 {
            let y = others.next().copied().unwrap_or(0) as u64;
            let v = (*x as u64).wrapping_sub(y).wrapping_sub(borrow);
            *x = v as u32;
            borrow = v >> 63;
        }
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our reading of decimal text in Rust's float grammar (digits, optional
    /// point and digits, optional exponent), through `js_string_to_number`.
    fn ours(s: &str) -> f64 {
        js_string_to_number(s)
    }

    fn check(s: &str) {
        let want: f64 = s.parse().unwrap_or_else(|_| panic!("core refuses {s:?}"));
        let got = ours(s);
        assert_eq!(got.to_bits(), want.to_bits(), "{s:?}: ours {got:e}, core {want:e}");
    }

    #[test]
    fn hard_cases() {
        for s in [
            "0", "-0", "0.0", "-0.0", "0e999999", "-0e-999999", "1", "-1", "19.99", "0.5", "1e3", "1e22", "1e23", "9007199254740992",
            "9007199254740993", "9007199254740994", "9007199254740995", "9007199254740993.0000000000000000000001",
            "9007199254740992.9999999999999999999999", "18014398509481986", "18014398509481987", "18014398509481990",
            "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "-1.7976931348623159e308",
            "2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308",
            "2.225073858507201136057409796709131975934819546351645648e-308", "4.9406564584124654e-324", "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1e-400", "1e400", "-1e-400", "-1e400", "1e-323", "1e-324", "3e-324", "1e308", "1e309", "1e-308", "1e-307", "0.1", "0.2", "0.3",
            "0.30000000000000004", "123456789012345678901234567890", "1.00000000000000011102230246251565404236316680908203125",
            "1.00000000000000011102230246251565404236316680908203124", "1.00000000000000011102230246251565404236316680908203126",
            "123.456e-300", "7.2057594037927933e16", "8.98846567431158e307", "4.35", "1448997445238699", "5e-324", "1e-45",
            "3.4028235677973366e38", "0.000000000000000000000000000000000000000001", "100000000000000000000000000000000000000000000e-44",
            "1e0", "1e+0", "1e-0", "1.e5", ".5e-5", "5.", ".5",
        ] {
            check(s);
        }
        // The halfway points are written out by `Big` (native-only).
        #[cfg(not(target_arch = "wasm32"))]
        {
            // f64::MAX written out; the halfway points above it (rounds to infinity) and above 0 (rounds to 0), and just past them.
            check(&format!("{:.0}", f64::MAX));
            for f in [f64::MAX, 0.0, 5e-324, f64::MIN_POSITIVE] {
                let exact = halfway(f);
                check(&exact);
                let (digits, exp) = exact.split_once('e').unwrap_or((&exact, "0"));
                let exp: i64 = exp.parse().unwrap();
                check(&format!("{digits}001e{}", exp - 3));
                check(&format!("{digits}{}1e{}", "0".repeat(1000), exp - 1001));
            }
        }
    }

    // `Big` (the exact fallback) is native-only: wasm hands that case to the host.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn long_digit_strings_near_halfway_points() {
        // 2^53 + 1 (halfway between 2^53 and 2^53 + 2), then zeros, then a last digit that decides.
        for zeros in [0, 10, 700, 760, 800, 1000, 5000] {
            for last in ["", "0", "1", "000000001"] {
                check(&format!("9007199254740993.{}{last}", "0".repeat(zeros)));
                check(&format!("9007199254740993{}{last}e-{}", "0".repeat(zeros), zeros + last.len()));
                check(&format!("0.{}9007199254740993{}{last}e{}", "0".repeat(zeros), "0".repeat(zeros), zeros + 16));
            }
            check(&format!("9007199254740992.{}9", "9".repeat(zeros)));
            check(&format!("1{}e-{}", "0".repeat(zeros), zeros));
            check(&format!("0.{}1", "0".repeat(zeros)));
            check(&format!("1{}", "0".repeat(zeros.min(308))));
            check(&format!("1{}.5", "0".repeat(zeros)));
        }
        // The exact halfway points between neighbours of random doubles, written out in full, and one unit either side of the last digit.
        let mut rng = Rng(7);
        for _ in 0..300 {
            let f = f64::from_bits(rng.next() >> 1);
            if !f.is_finite() {
                continue;
            }
            let exact = halfway(f);
            check(&exact);
            let (digits, exp) = exact.split_once('e').unwrap_or((&exact, "0"));
            let exp: i64 = exp.parse().unwrap();
            for bump in ["1", "9", "0000000000000000000000000000000000000000000000000000000000000001"] {
                check(&format!("{digits}{bump}e{}", exp - bump.len() as i64));
            }
            let cut = &digits[..digits.len() - 1];
            check(&format!("{cut}e{}", exp + 1));
            check(&format!("{cut}4{}e{}", "9".repeat(40), exp - 40));
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    /// The exact decimal of the midpoint between `f` and the next `f64` up, as `<digits>.<digits>e<exp>`.
    fn halfway(f: f64) -> String {
        let bits = f.to_bits();
        let (e, m) = ((bits >> 52) as i64, bits & ((1 << 52) - 1));
        let (m, e) = if e == 0 { (m, -1074) } else { (m | 1 << 52, e - 1075) };
        // midpoint = (2m + 1) * 2^(e - 1)
        let m2 = 2 * m + 1;
        let mut n = Big(vec![m2 as u32, (m2 >> 32) as u32]);
        while n.0.last() == Some(&0) {
            n.0.pop();
        }
        let e = e - 1;
        if e >= 0 {
            n.shl(e as u64);
            to_decimal(n)
        } else {
            // (2m+1) * 5^-e / 10^-e
            for _ in 0..-e {
                n.mul_add(5, 0);
            }
            let s = to_decimal(n);
            format!("{s}e-{}", -e)
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn to_decimal(mut n: Big) -> String {
        let mut out = Vec::new();
        while !n.is_zero() {
            let mut rem = 0u64;
            for x in n.0.iter_mut().rev() {
                let v = rem << 32 | *x as u64;
                *x = (v / 10) as u32;
                rem = v % 10;
            }
            while n.0.last() == Some(&0) {
                n.0.pop();
            }
            out.push(b'0' + rem as u8);
        }
        if out.is_empty() {
            out.push(b'0');
        }
        out.reverse();
        String::from_utf8(out).unwrap()
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            // splitmix64
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn random_doubles_printed_and_perturbed() {
        let mut rng = Rng(1);
        for i in 0..200_000 {
            let f = f64::from_bits(rng.next());
            if !f.is_finite() {
                continue;
            }
            let printed = if i % 2 == 0 { format!("{f}") } else { format!("{f:e}") };
            check(&printed);
            // One digit changed, one dropped, or digits added.
            let (mantissa, exp) = match printed.split_once('e') {
                Some((m, e)) => (m.to_string(), format!("e{e}")),
                None => (printed.clone(), String::new()),
            };
            let mut m = mantissa.into_bytes();
            let positions: Vec<usize> = (0..m.len()).filter(|&j| m[j].is_ascii_digit()).collect();
            match rng.below(3) {
                0 => {
                    let j = positions[rng.below(positions.len() as u64) as usize];
                    m[j] = b'0' + rng.below(10) as u8;
                }
                1 if positions.len() > 1 => {
                    let j = *positions.last().unwrap();
                    m.remove(j);
                    if m.last() == Some(&b'.') {
                        m.pop();
                    }
                }
                _ => {
                    if !m.contains(&b'.') {
                        m.push(b'.');
                    }
                    for _ in 0..rng.below(30) {
                        m.push(b'0' + rng.below(10) as u8);
                    }
                    m.push(if rng.below(2) == 0 { b'5' } else { b'1' });
                }
            }
            check(&format!("{}{exp}", String::from_utf8(m).unwrap()));
        }
    }

    #[test]
    fn random_digit_strings() {
        let mut rng = Rng(2);
        for _ in 0..150_000 {
            let len = match rng.below(10) {
                0 => 1 + rng.below(900) as usize,
                1..=3 => 16 + rng.below(4) as usize,
                _ => 1 + rng.below(25) as usize,
            };
            let mut s = String::new();
            if rng.below(4) == 0 {
                s.push('-');
            }
            let point = rng.below(len as u64 + 1) as usize;
            for j in 0..len {
                if j == point && j > 0 {
                    s.push('.');
                }
                let d = match rng.below(8) {
                    0 => b'0',
                    1 => b'9',
                    _ => b'0' + rng.below(10) as u8,
                };
                s.push(d as char);
            }
            let exp = rng.below(701) as i64 - 350;
            s.push_str(&format!("e{exp}"));
            check(&s);
        }
    }

    #[test]
    fn fast_path_matches() {
        let mut rng = Rng(3);
        for _ in 0..100_000 {
            let bits = rng.below(55);
            let m = rng.below(1 << bits);
            let e = rng.below(60) as i64 - 25;
            check(&format!("{m}e{e}"));
            // Up to 20 digits, for exact_u128 (and the slow path past it).
            let m = rng.next() >> rng.below(12);
            let e = rng.below(50) as i64 - 25;
            check(&format!("{m}e{e}"));
            check(&format!("0.{m}"));
        }
    }

    #[test]
    fn zero_mantissas() {
        for e in -400..400 {
            for negative in [false, true] {
                let zero = if negative { -0.0f64 } else { 0.0 };
                if let Some(f) = from_mantissa(negative, 0, e) {
                    assert_eq!(f.to_bits(), zero.to_bits(), "{e}");
                }
                assert_eq!(decimal_to_f64(negative, b"000", b"00", e).to_bits(), zero.to_bits(), "{e}");
            }
        }
    }

    #[test]
    fn div128_is_u128_division() {
        let mut rng = Rng(4);
        for i in 0..200_000 {
            let d = rng.next() >> rng.below(64);
            let d = if d == 0 { 1 } else { d };
            let hi = if i % 3 == 0 { d - 1 } else { rng.next() % d };
            let lo = if i % 5 == 0 { u64::MAX } else { rng.next() };
            let n = (hi as u128) << 64 | lo as u128;
            assert_eq!(div128(hi, lo, d), ((n / d as u128) as u64, (n % d as u128) as u64), "{hi} {lo} {d}");
        }
    }

    #[test]
    fn hostile_inputs_are_cheap() {
        let t = std::time::Instant::now();
        for s in [
            format!("1e-{}", "9".repeat(40)),
            format!("1e{}", "9".repeat(40)),
            format!("0e{}", "9".repeat(40)),
            format!("{}e-5", "7".repeat(100_000)),
            format!("0.{}1", "0".repeat(100_000)),
            format!("1{}", "0".repeat(100_000)),
            format!("{}.{}", "3".repeat(50_000), "3".repeat(50_000)),
        ] {
            let want: f64 = s.parse().unwrap();
            assert_eq!(ours(&s).to_bits(), want.to_bits());
        }
        assert!(t.elapsed().as_secs() < 5);
    }

    #[test]
    fn javascript_string_to_number() {
        let nan = f64::NAN;
        let cases: &[(&str, f64)] = &[
            ("", 0.0), ("   ", 0.0), ("\t\n\u{b}\u{c}\r \u{a0}\u{feff}\u{2028}\u{3000}", 0.0), (" 12 ", 12.0), ("\u{feff}7\u{2029}", 7.0),
            ("\u{85}1", nan), ("\u{180e}1", nan), ("1\u{85}", nan), ("+1.5", 1.5), ("-1.5", -1.5), ("5.", 5.0), (".5", 0.5),
            ("-.5e1", -5.0),
            (".", nan), ("+", nan), ("-", nan), ("e5", nan), ("1e", nan), ("1e+", nan), ("1e5", 1e5), ("1E-2", 0.01), ("00012", 12.0),
            ("Infinity", f64::INFINITY), ("+Infinity", f64::INFINITY), ("-Infinity", f64::NEG_INFINITY), (" -Infinity ", f64::NEG_INFINITY),
            ("infinity", nan), ("inf", nan), ("-inf", nan), ("INF", nan), ("nan", nan), ("NaN", nan), ("Infinityx", nan),
            ("0x10", 16.0), ("0X1f", 31.0), ("0o17", 15.0), ("0O8", nan), ("0b101", 5.0), ("0B2", nan), ("0x", nan), ("0b", nan),
            ("-0x10", nan), ("+0x10", nan), ("0x1.8", nan), ("0x1p3", nan), ("0xg", nan), ("1_000", nan), ("1 2", nan), ("1e1.5", nan),
            ("0x1fffffffffffff", 9007199254740991.0), ("0x20000000000001", 9007199254740992.0), ("0x20000000000003", 9007199254740996.0),
            ("0x20000000000002", 9007199254740994.0), ("0xffffffffffffffffffff", 1208925819614629174706176.0),
            ("0x200000000000010000000000001", 4.056481920730335e31), ("0x200000000000000000000000000", 4.056481920730334e31),
            ("0b11111111111111111111111111111111111111111111111111111111", 7.205759403792794e16),
            ("1e99999999999999999999999", f64::INFINITY), ("1e-99999999999999999999999", 0.0), ("0e99999999999999999999", 0.0),
        ];
        for &(s, want) in cases {
            let got = js_string_to_number(s);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "Number({s:?}) = {got:e}, want {want:e}");
        }
        assert_eq!(js_string_to_number("-0").to_bits(), (-0.0f64).to_bits());
        assert!(js_string_to_number("-0x0").is_nan());
        let hex = format!("0x1{}", "0".repeat(300));
        assert_eq!(js_string_to_number(&hex), f64::INFINITY);
        assert_eq!(js_string_to_number(&format!("0x1{}", "0".repeat(255))), 2f64.powi(1020));
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn decimal_text_matches_core(int in "[0-9]{0,40}", frac in "[0-9]{0,40}", exp in -400i64..400, negative: bool) {
            prop_assume!(!int.is_empty() || !frac.is_empty());
            let text = format!("{}{int}.{frac}e{exp}", if negative { "-" } else { "" });
            let want: f64 = text.parse().unwrap();
            let got = super::decimal_to_f64(negative, int.as_bytes(), frac.as_bytes(), exp);
            prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", text);
        }

        #[test]
        fn doubles_round_trip(bits: u64) {
            let f = f64::from_bits(bits);
            prop_assume!(f.is_finite());
            for text in [format!("{f}"), format!("{f:e}"), format!("{f:.30e}")] {
                prop_assert_eq!(super::js_string_to_number(&text).to_bits(), f.to_bits(), "{}", text);
            }
        }
    }
}
