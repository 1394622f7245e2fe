//! A scenario: the events a client sends, as JSON Lines (the lines `idem run`
//! reads), with `{"advance": ms}` lines that move the clock. The checker
//! chooses when each event arrives, so a line's `now` is not read.

use crate::{Code, Error, Machine};
use serde_json::Value;

/// One line of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Event(Value),
    Advance(u64),
}

/// The parsed scenario: its events (distinct ids) and clock advances, in file order.
#[derive(Clone, Debug, Default)]
pub struct Scenario {
    pub lines: Vec<Line>,
}

/// Events a scenario may hold: each id is a bit of the explored state's sets.
pub const MAX_EVENTS: usize = 24;

impl Scenario {
    pub fn events(&self) -> impl Iterator<Item = &Value> {
        self.lines.iter().filter_map(|l| match l {
            Line::Event(e) => Some(e),
            Line::Advance(_) => None,
        })
    }

    pub fn advances(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.iter().filter_map(|l| match l {
            Line::Advance(ms) => Some(*ms),
            Line::Event(_) => None,
        })
    }

    /// Read JSON Lines; every event must be one `m` accepts (`parse_event`), with
    /// an id no other line uses (a scenario lists distinct events: repeats are
    /// what the checker adds).
    pub fn parse(m: &Machine, text: &str) -> Result<Scenario, Error> {
        let mut lines = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let at = format!("scenario line {}", i + 1);
            if line.trim().is_empty() {
                continue;
            }
            let mut v = crate::json::parse(line, Code::InvalidEvent, &at)?;
            if let Some(ms) = v.get("advance") {
                let ms = ms.as_u64().filter(|_| v.as_object().is_some_and(|o| o.len() == 1));
                let ms = ms.ok_or_else(|| Error::new(Code::InvalidEvent, format!("{at}: an advance line is {{\"advance\": whole ms}} and nothing else")))?;
                lines.push(Line::Advance(ms));
                continue;
            }
            if let Some(o) = v.as_object_mut() {
                o.remove("now");
            }
            let e = m.parse_event(&v).map_err(|e| Error::new(e.code, format!("{at}: {}", e.message)))?;
            let id = e.id.to_string();
            if ids.contains(&id) {
                return Err(Error::new(Code::InvalidEvent, format!("{at}: event id \"{id}\" is already used by an earlier line")));
            }
            ids.push(id);
            lines.push(Line::Event(e.to_value()));
        }
        if ids.is_empty() {
            return Err(Error::new(Code::InvalidEvent, "scenario has no event".to_string()));
        }
        if ids.len() > MAX_EVENTS {
            return Err(Error::new(Code::InvalidEvent, format!("scenario has {} events, at most {MAX_EVENTS} are checked", ids.len())));
        }
        Ok(Scenario { lines })
    }
}
