//! Named implementations as data, in XState 5's shape (`setup({ guards,
//! actions, delays })`): a definition's `implementations` holds
//! `guards: { NAME: <expression> }`, `actions: { NAME: [<idem actions>] }` and
//! `delays: { NAME: <expression giving ms> }`, and its transitions name them
//! as XState does (`"guard": "isAdmin"`, `{"type": "notify", "params": {…}}`,
//! `"after": {"retryDelay": …}`).
//!
//! A name is resolved when the machine is built, into the same compiled
//! guards, actions and delays as code written inline: the interpreter and the
//! hazard analysis never see a name. `params` is bound where the name is used:
//! every `{"var": "params…"}` of the implementation (outside the item scope of
//! `map`, `filter`, `reduce`, `all`, `none`, `some`, where `var` reads the
//! item) becomes the value the use gives, as data. A name used and not
//! implemented is refused (`unimplemented`), every such name listed with the
//! path of its use.

use super::build::{fail, join};
use super::*;
use crate::expr::PRESERVE;
use crate::host::HostUse;

const KEYS: &[&str] = &["guards", "actions", "delays"];
const REFERENCE_KEYS: &[&str] = &["type", "params"];

/// The implementations of one definition, and the names used that none of them implements.
#[derive(Default)]
pub(super) struct Implementations<'a> {
    guards: Option<&'a Map<String, Value>>,
    actions: Option<&'a Map<String, Value>>,
    delays: Option<&'a Map<String, Value>>,
    /// `guards.NAME` and `actions.NAME` the host implements as functions, one
    /// a line, in the order of the indices its callback is called with.
    hosted: &'a str,
    /// `(kind, name, path of the use)`, in the order the builder met them.
    missing: Vec<(&'static str, String, String)>,
}

/// A use of a named implementation: its name and the `params` it gives.
pub(super) struct Named<'v> {
    pub name: &'v str,
    params: Option<&'v Value>,
}

impl<'a> Implementations<'a> {
    /// Read the definition's `implementations`, each one checked on its own
    /// (at `implementations.guards.NAME`...), used or not.
    pub fn parse(v: Option<&'a Value>, hosted: &'a str) -> Result<Self> {
        let mut imps = Implementations { hosted, ..Implementations::default() };
        let Some(v) = v else { return Ok(imps) };
        let Some(o) = v.as_object() else {
            return Err(fail(Code::InvalidDefinition, "implementations", &["implementations must be an object of guards, actions and delays"]));
        };
        for (key, section) in members(o) {
            let path = join("implementations", key);
            let Some(k) = KEYS.iter().position(|k| k == key) else {
                return Err(fail(Code::InvalidDefinition, &path, &["unknown key \"", key, "\" (implementations are guards, actions and delays)"]));
            };
            let Some(map) = section.as_object() else {
                return Err(fail(Code::InvalidDefinition, &path, &[key, " must be an object of named implementations"]));
            };
            match k {
                0 => imps.guards = Some(map),
                1 => imps.actions = Some(map),
                _ => imps.delays = Some(map),
            }
        }
        // Checked once as written, so that a mistake in one no use reaches is found too.
        let mut scratch = Exprs::default();
        for (name, g) in imps.guards.into_iter().flat_map(members) {
            scratch.compile_guard(g, &join("implementations.guards", name))?;
        }
        for (name, a) in imps.actions.into_iter().flat_map(members) {
            super::build::parse_actions(&mut scratch, &mut NameSet::default(), None, a, &join("implementations.actions", name))?;
        }
        for (name, d) in imps.delays.into_iter().flat_map(members) {
            delay_ms(d, &join("implementations.delays", name))?;
        }
        Ok(imps)
    }

    /// The use of a function the host implements for `named` in `section`
    /// (`guards` or `actions`), if it implements one.
    pub fn hosted(&self, section: &str, named: &Named<'_>, at: &str) -> Option<HostUse> {
        let (index, name) = self.hosted.lines().enumerate().find(|(_, h)| h.strip_prefix(section).and_then(|r| r.strip_prefix('.')) == Some(named.name))?;
        let params = crate::json::to_text(named.params.unwrap_or(&Value::Null));
        Some(HostUse { index: index as u32, name: owned(name), params, path: owned(at) })
    }

    /// The guard `named` uses, its params bound, or `None` (noted as missing).
    pub fn guard(&mut self, named: &Named<'_>, at: &str) -> Option<(Value, String)> {
        self.find(self.guards, "guard", named, at).map(|g| (g, join("implementations.guards", named.name)))
    }

    /// The actions `named` uses, their params bound, or `None` (noted as missing).
    pub fn action(&mut self, named: &Named<'_>, at: &str) -> Option<(Value, String)> {
        self.find(self.actions, "action", named, at).map(|a| (a, join("implementations.actions", named.name)))
    }

    /// The milliseconds of the delay `name` (an `after` key that is not a
    /// number), or `None` (noted as missing).
    pub fn delay(&mut self, name: &str, at: &str) -> Result<Option<u64>> {
        match self.delays.and_then(|d| d.get(name)) {
            Some(d) => delay_ms(d, &join("implementations.delays", name)).map(Some),
            None => {
                self.missing.push(("delay", owned(name), owned(at)));
                Ok(None)
            }
        }
    }

    fn find(&mut self, section: Option<&Map<String, Value>>, kind: &'static str, named: &Named<'_>, at: &str) -> Option<Value> {
        match section.and_then(|s| s.get(named.name)) {
            Some(v) => Some(bind(v, named.params.unwrap_or(&Value::Null))),
            None => {
                self.missing.push((kind, owned(named.name), owned(at)));
                None
            }
        }
    }

    /// `unimplemented`, naming every name used that nothing implements and
    /// where it is used, at the first of them.
    pub fn check(&self) -> Result<()> {
        let Some((_, _, first)) = self.missing.first() else { return Ok(()) };
        let mut message = String::from("no implementation for ");
        for (i, (kind, name, at)) in self.missing.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            message.push_str(&[sep, kind, " \"", name, "\" (used at ", at, ")"].concat());
        }
        message.push_str(": give each one in implementations");
        Err(fail(Code::Unimplemented, first, &[&message]))
    }
}

/// Whether `v` names an implementation: a string, or `{"type": NAME, "params": …}`.
/// A guard or an action of that shape meant nothing before (a string guard
/// was refused, an action object's one key is assign, effect, respond or raise).
pub(super) fn named(v: &Value) -> Option<Named<'_>> {
    match v {
        Value::String(name) => Some(Named { name, params: None }),
        Value::Object(o) if o.keys().all(|k| REFERENCE_KEYS.contains(&k.as_str())) => match o.get("type") {
            Some(Value::String(name)) => Some(Named { name, params: o.get("params") }),
            _ => None,
        },
        _ => None,
    }
}

/// A delay's milliseconds: its expression, evaluated when the machine is
/// built, must give a whole number of ms. It reads no `var`: a delay that
/// depends on the context or the event is not supported (idem schedules an
/// `after` from the definition).
fn delay_ms(d: &Value, path: &str) -> Result<u64> {
    if reads_var(d) {
        let message = "a delay must be a constant number of ms (a delay read from the context or the event is not supported)";
        return Err(fail(Code::InvalidDefinition, path, &[message]));
    }
    // Compiled where its errors name the delay, and evaluated over nothing.
    let mut exprs = Exprs::default();
    let id = exprs.compile(d, path)?;
    match exprs.eval(id, crate::expr::Data::Value(&Value::Null)).map(|v| v.as_u64()) {
        Ok(Some(ms)) => Ok(ms),
        Ok(None) => Err(fail(Code::InvalidDefinition, path, &["a delay must give a whole number of ms"])),
        Err(e) => Err(e),
    }
}

fn reads_var(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, x)| k == "var" || k == "missing" || k == "missing_some" || reads_var(x)),
        Value::Array(items) => items.iter().any(reads_var),
        _ => false,
    }
}

/// `rule` with each `{"var": "params…"}` replaced by that part of `params`
/// (or the `var`'s default when it is missing), as data.
fn bind(rule: &Value, params: &Value) -> Value {
    match rule {
        Value::Array(items) => Value::Array(items.iter().map(|x| bind(x, params)).collect()),
        Value::Object(o) if o.len() == 1 => {
            let Some((op, args)) = members(o).next() else { return rule.clone() };
            if op == PRESERVE {
                return rule.clone();
            }
            if op == "var" {
                return bind_var(args, params).unwrap_or_else(|| rule.clone());
            }
            let scoped = match op.as_str() {
                // The body `var` reads the item (reduce's: `current`, `accumulator`).
                "map" | "filter" | "all" | "none" | "some" | "reduce" => &[1][..],
                _ => &[][..],
            };
            let args = match args {
                Value::Array(items) => {
                    Value::Array(items.iter().enumerate().map(|(i, x)| if scoped.contains(&i) { x.clone() } else { bind(x, params) }).collect())
                }
                one => bind(one, params),
            };
            let mut out = Map::new();
            out.insert(op.clone(), args);
            Value::Object(out)
        }
        Value::Object(o) => {
            // Member by member: collecting into a map would bring a sort to the build.
            let mut out = Map::new();
            for (k, x) in members(o) {
                out.insert(k.clone(), bind(x, params));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The value a `var` whose path starts at `params` reads, as a literal; `None`
/// for any other `var`.
fn bind_var(args: &Value, params: &Value) -> Option<Value> {
    let (path, default) = match args {
        Value::String(p) => (p.as_str(), None),
        Value::Array(items) => match items.first() {
            Some(Value::String(p)) => (p.as_str(), items.get(1)),
            _ => return None,
        },
        _ => return None,
    };
    let rest = match path.strip_prefix("params") {
        Some("") => None,
        Some(r) => Some(r.strip_prefix('.')?),
        None => return None,
    };
    let mut at = Some(params);
    for part in rest.into_iter().flat_map(|r| r.split('.')) {
        at = at.and_then(|v| match v {
            Value::Object(o) => o.get(part),
            Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        });
    }
    match (at, default) {
        (Some(Value::Null) | None, Some(d)) => Some(d.clone()),
        (found, _) => {
            let mut out = Map::new();
            out.insert(owned(PRESERVE), found.cloned().unwrap_or(Value::Null));
            Some(Value::Object(out))
        }
    }
}
