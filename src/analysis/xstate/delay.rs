//! Delays of `after`: milliseconds as XState writes them, ISO-8601 durations,
//! and named delays whose value the config gives.

use serde_json::Value;

/// Where a delay's milliseconds came from, for the diagnostic that says so.
pub(super) enum Delay {
    /// Already milliseconds.
    Millis(u64),
    /// Rewritten: the milliseconds and how they were read.
    Resolved(u64, &'static str),
    /// No value known: why.
    Unknown(String),
}

/// Resolve the key of an `after` entry (or a v4 `delay` member).
pub(super) fn resolve(key: &Value, delays: &serde_json::Map<String, Value>) -> Delay {
    match key {
        Value::Number(n) => match n.as_u64() {
            Some(ms) => Delay::Millis(ms),
            None => Delay::Unknown(format!("delay {n} is not a whole number of milliseconds")),
        },
        Value::String(s) => {
            if let Ok(ms) = s.parse::<u64>() {
                return Delay::Millis(ms);
            }
            if let Some(ms) = iso8601(s) {
                return Delay::Resolved(ms, "an ISO-8601 duration");
            }
            match delays.get(s) {
                Some(Value::Number(n)) if n.as_u64().is_some() => Delay::Resolved(n.as_u64().unwrap_or(0), "the config's `delays`"),
                Some(Value::String(d)) if iso8601(d).is_some() => Delay::Resolved(iso8601(d).unwrap_or(0), "the config's `delays`"),
                Some(_) => Delay::Unknown(format!(
                    "named delay \"{s}\" is computed by a function (its value in `delays` is not a number of milliseconds)"
                )),
                None => Delay::Unknown(format!("named delay \"{s}\" is code and has no value in the config's `delays`")),
            }
        }
        other => Delay::Unknown(format!("a delay cannot be {other}")),
    }
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
    use super::iso8601;

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
