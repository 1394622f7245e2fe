//! Delays of `after`: milliseconds as XState writes them, ISO-8601 durations,
//! and named delays whose value the config gives.

use serde_json::Value;

/// Where a delay's milliseconds came from, for the diagnostic that says so.
pub(super) enum Delay {
    /// Already milliseconds.
    Millis(u64),
    /// Rewritten: the milliseconds and how they were read.
    Resolved(u64, &'static str),
    /// A named delay whose value is not known (code in the implementations): why.
    Named(String),
    /// Not a delay: why.
    Unknown(String),
}

/// Resolve the key of an `after` entry (or a v4 `delay` member).
pub(super) fn resolve(key: &Value, delays: &serde_json::Map<String, Value>) -> Delay {
    match key {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(ms), _) => Delay::Millis(ms),
            (None, Some(f)) => rounded(f).unwrap_or_else(|| Delay::Unknown(format!("delay {n} is not a number of milliseconds"))),
            (None, None) => Delay::Unknown(format!("delay {n} is not a number of milliseconds")),
        },
        Value::String(s) => {
            if let Ok(ms) = s.parse::<u64>() {
                return Delay::Millis(ms);
            }
            // An `after` key is a string: `{ [1.5 * 1000]: ... }` is "1500", `{ 2.5: ... }` "2.5".
            if let Some(d) = s.parse::<f64>().ok().and_then(rounded) {
                return d;
            }
            if let Some(ms) = iso8601(s) {
                return Delay::Resolved(ms, "an ISO-8601 duration");
            }
            let iso_like = s.starts_with('P') && s.bytes().any(|b| b.is_ascii_digit()) && s[1..].bytes().all(|b| b.is_ascii_digit() || b"YMWDTHS.,".contains(&b));
            if delays.get(s).is_none() && iso_like {
                return Delay::Named(format!("delay \"{s}\" is an ISO-8601 duration in months or years, which have no fixed length"));
            }
            match delays.get(s) {
                Some(Value::Number(n)) if n.as_u64().is_some() => Delay::Resolved(n.as_u64().unwrap_or(0), "the config's `delays`"),
                Some(Value::String(d)) if iso8601(d).is_some() => Delay::Resolved(iso8601(d).unwrap_or(0), "the config's `delays`"),
                Some(_) => Delay::Named(format!(
                    "named delay \"{s}\" is computed by a function (its value in `delays` is not a number of milliseconds)"
                )),
                None => Delay::Named(format!(
                    "named delay \"{s}\" has no value in the config's `delays` (XState keeps it in the implementations, which JSON does not carry)"
                )),
            }
        }
        other => Delay::Unknown(format!("a delay cannot be {other}")),
    }
}

/// A delay that is not whole milliseconds, rounded as the timers of
/// JavaScript hosts do; `None` for a negative or infinite one.
fn rounded(f: f64) -> Option<Delay> {
    (0.0..9.0e15).contains(&f).then(|| Delay::Resolved(f.round() as u64, "rounding to whole milliseconds"))
}

/// An ISO-8601 duration of days, hours, minutes and seconds (`PT1M30S`,
/// `P2D`, `PT0.5S`, `P1W`), in milliseconds. Years and months have no fixed
/// length and are not read.
pub(super) fn iso8601(s: &str) -> Option<u64> {
    let rest = s.strip_prefix('P').or_else(|| s.strip_prefix('p'))?;
    let (date, time) = match rest.split_once(['T', 't']) {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (rest, None),
    };
    let mut total = 0f64;
    let mut any = false;
    for (part, units) in [(date, &[('W', 604_800_000f64), ('D', 86_400_000f64)][..]), (time.unwrap_or(""), &[('H', 3_600_000f64), ('M', 60_000f64), ('S', 1_000f64)][..])] {
        let mut text = part;
        let mut unit_at = 0;
        while !text.is_empty() {
            let end = text.find(|c: char| c.is_ascii_alphabetic())?;
            let (num, tail) = text.split_at(end);
            let unit = tail.chars().next()?.to_ascii_uppercase();
            let pos = units[unit_at..].iter().position(|(u, _)| *u == unit)? + unit_at;
            if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',') {
                return None;
            }
            let n: f64 = num.replace(',', ".").parse().ok()?;
            total += n * units[pos].1;
            any = true;
            unit_at = pos + 1;
            text = &tail[1..];
        }
    }
    (any && total.is_finite() && total < 9.0e15).then(|| total.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::{iso8601, resolve, Delay};
    use serde_json::{json, Map};

    #[test]
    fn delays_by_kind() {
        let delays: Map<String, serde_json::Value> = json!({ "backoff": 2000, "later": "PT1S", "computed": {} }).as_object().cloned().unwrap();
        let ms = |d: Delay| match d {
            Delay::Millis(ms) | Delay::Resolved(ms, _) => Some(ms),
            Delay::Named(_) | Delay::Unknown(_) => None,
        };
        assert_eq!(ms(resolve(&json!("1500"), &delays)), Some(1500));
        assert_eq!(ms(resolve(&json!("2.5"), &delays)), Some(3), "an `after` key of a fraction, rounded");
        assert_eq!(ms(resolve(&json!(99.4), &delays)), Some(99));
        assert_eq!(ms(resolve(&json!("backoff"), &delays)), Some(2000));
        assert_eq!(ms(resolve(&json!("later"), &delays)), Some(1000));
        assert!(matches!(resolve(&json!("computed"), &delays), Delay::Named(why) if why.contains("computed by a function")));
        assert!(matches!(resolve(&json!("P1M"), &delays), Delay::Named(why) if why.contains("no fixed length")));
        assert!(matches!(resolve(&json!("Poll"), &delays), Delay::Named(why) if why.contains("no value in the config's `delays`")));
        assert!(matches!(resolve(&json!(-5), &delays), Delay::Unknown(_)));
        assert!(matches!(resolve(&json!(null), &delays), Delay::Unknown(_)));
    }

    #[test]
    fn iso_durations() {
        assert_eq!(iso8601("PT5S"), Some(5_000));
        assert_eq!(iso8601("PT1M30S"), Some(90_000));
        assert_eq!(iso8601("PT0.5S"), Some(500));
        assert_eq!(iso8601("P2D"), Some(172_800_000));
        assert_eq!(iso8601("P1DT1H"), Some(90_000_000));
        assert_eq!(iso8601("P1W"), Some(604_800_000));
        for bad in ["P", "PT", "P1M", "P1Y", "PT1S1M", "5000", "PTS", "PT1X", "P-1D"] {
            assert_eq!(iso8601(bad), None, "{bad}");
        }
    }
}
