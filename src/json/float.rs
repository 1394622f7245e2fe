//! Number text read as the engine's two readers need it: decimal literals
//! (the JSON parser's numbers), and JavaScript's StringToNumber, which
//! JSONLogic's `ToNumber` applies to strings.
//!
//! The decimal itself is core's `str::parse::<f64>` (correctly rounded, half to
//! even; benches/RESULTS.md has the measurement against `lexical-core`). What is
//! here is JavaScript's grammar around it: white space, `Infinity`, the sign,
//! and `0x`/`0o`/`0b` integers, which `parse` does not read and JavaScript
//! rounds to the nearest `f64` as well.

/// `f` with the sign asked for.
fn signed(negative: bool, f: f64) -> f64 {
    if negative {
        -f
    } else {
        f
    }
}

/// The `f64` nearest to a decimal literal the caller has checked: an optional
/// `-`, digits with an optional point (either side of it may be empty, not
/// both), an optional exponent (`e` or `E`, a sign, digits). Too large is
/// `±inf`, too small `±0`.
pub fn decimal(text: &[u8]) -> f64 {
    // The caller's grammar is a subset of `parse`'s, and ASCII.
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).unwrap_or(f64::NAN)
}

/// JavaScript's StringToNumber: `Number(s)` for a string. JavaScript white
/// space around is ignored; empty is 0; then an optional sign and `Infinity`
/// or a decimal literal (`5`, `5.`, `.5`, `5e-3`), or an unsigned `0x`, `0o`
/// or `0b` integer; anything else is NaN.
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
    let (negative, unsigned) = match t {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, t),
    };
    if unsigned == b"Infinity" {
        return signed(negative, f64::INFINITY);
    }
    if !is_decimal_literal(unsigned) {
        return f64::NAN;
    }
    signed(negative, decimal(unsigned))
}

/// JavaScript's StrUnsignedDecimalLiteral (without `Infinity`): digits, an
/// optional point and digits (at least one digit in all), an optional
/// exponent of `e`/`E`, an optional sign and at least one digit.
fn is_decimal_literal(t: &[u8]) -> bool {
    let digits = |t: &[u8]| t.iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(t);
    let mut at = int;
    let mut frac = 0;
    if t.get(at) == Some(&b'.') {
        frac = digits(&t[at + 1..]);
        at += 1 + frac;
    }
    if int + frac == 0 {
        return false;
    }
    if let Some(b'e' | b'E') = t.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = t.get(at) {
            at += 1;
        }
        let exp = digits(&t[at..]);
        if exp == 0 {
            return false;
        }
        at += exp;
    }
    at == t.len()
}

/// JavaScript's WhiteSpace and LineTerminator (Rust's `char::is_whitespace`
/// also has U+0085 and lacks U+FEFF).
pub fn is_js_space(c: char) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Our reading of decimal text in Rust's float grammar (digits, optional
    /// point and digits, optional exponent), through `js_string_to_number`:
    /// JavaScript's grammar accepts every such text and reads the same value.
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
    fn mantissas_and_exponents() {
        let mut rng = Rng(3);
        for _ in 0..100_000 {
            let bits = rng.below(55);
            let m = rng.below(1 << bits);
            let e = rng.below(60) as i64 - 25;
            check(&format!("{m}e{e}"));
            // Up to 20 digits.
            let m = rng.next() >> rng.below(12);
            let e = rng.below(50) as i64 - 25;
            check(&format!("{m}e{e}"));
            check(&format!("0.{m}"));
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
            let got = super::js_string_to_number(&text);
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
