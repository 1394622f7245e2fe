//! The head's structs read from JSON values: each struct a table of its
//! fields ([`Field`]: name, kind, required or optional), one checker
//! ([`check_struct`]) that walks a value against its table and makes every
//! error, and readers that run after it with no error paths of their own.
//!
//! The rules are those of the serde derives on the types (see their
//! attributes, and the tests that compare the two): every required field
//! present, no unknown field, each of its JSON type, integers within their
//! Rust type; an absent `done`, `outbox` or `timers` is false or empty; an
//! optional field that is absent or null is `None`. Two forms the derives also
//! read, which this engine never wrote, are refused: a struct written as an
//! array of its field values, and an effect state written as
//! `{"pending": null}`. A mismatch names the member
//! (`unknown field at outbox[0].retry.x`).

use super::*;

/// Why a JSON value is not the snapshot structure it should be: what is wrong,
/// and the path of the offending member (`outbox[0].retry.factor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mismatch {
    reason: &'static str,
    path: String,
}

pub(super) type Wire<T> = std::result::Result<T, Mismatch>;

impl Mismatch {
    #[cold]
    #[inline(never)]
    fn new(reason: &'static str) -> Mismatch {
        Mismatch { reason, path: String::new() }
    }

    /// The same mismatch, found inside member `name` of the value around it.
    #[cold]
    #[inline(never)]
    fn at(self, name: &str) -> Mismatch {
        self.within(name)
    }

    /// The same mismatch, found inside item `i` of an array.
    #[cold]
    #[inline(never)]
    fn at_index(self, i: usize) -> Mismatch {
        self.within(&format!("[{i}]"))
    }

    /// `segment` put before the path, with a `.` between two member names.
    fn within(mut self, segment: &str) -> Mismatch {
        let sep = if self.path.is_empty() || self.path.starts_with('[') { "" } else { "." };
        self.path = format!("{segment}{sep}{}", self.path);
        self
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(self.reason)
        } else {
            write!(f, "{} at {}", self.reason, self.path)
        }
    }
}

/// What a member of a wire struct holds. A value is checked against its kind
/// first (by [`check_kind`], which says what is wrong and where), and only then
/// read (by the struct's `read`), which then cannot fail: one checker for
/// every struct, and readers without an error path of their own.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Any,
    Str,
    Bool,
    /// A `u64`: a JSON integer from 0 (no fraction or exponent: serde_json reads
    /// those as floats, which a `u64` field refuses).
    U64,
    U32,
    /// An [`EffectState`] by its wire name.
    State,
    /// Any JSON object.
    Object,
    Struct(&'static [Field]),
    /// An array of structs.
    List(&'static [Field]),
}

/// Whether a member must be there: an `Optional` one may be absent or null
/// (`None`), a `Default` one absent (false or empty) but not null.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    Required,
    Optional,
    Default,
}

/// One field of a wire struct: its member name, what it holds, whether it must be there.
pub(super) struct Field {
    name: &'static str,
    kind: Kind,
    need: Need,
}

pub(super) const fn req(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Required }
}

pub(super) const fn opt(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Optional }
}

pub(super) const fn or_default(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Default }
}

// The fields of each struct, in declaration order (the order the derives read
// them in, so the first mismatch found is theirs), named as on the wire.
pub(super) const MACHINE_REF: &[Field] = &[req("id", Kind::Str), req("version", Kind::Str), req("hash", Kind::Str)];
pub(super) const RETRY: &[Field] = &[
    req("maxAttempts", Kind::U32),
    req("baseMs", Kind::U64),
    req("factor", Kind::U32),
    req("maxDelayMs", Kind::U64),
    req("jitterPct", Kind::U32),
];
pub(super) const OUTBOX_ENTRY: &[Field] = &[
    req("key", Kind::Str),
    req("type", Kind::Str),
    req("payload", Kind::Any),
    req("idempotent", Kind::Bool),
    req("state", Kind::State),
    req("attempts", Kind::U32),
    opt("attemptId", Kind::Str),
    opt("dueAt", Kind::U64),
    req("retry", Kind::Struct(RETRY)),
    req("eventId", Kind::Str),
    req("createdAt", Kind::U64),
    opt("doneAt", Kind::U64),
    opt("result", Kind::Any),
    opt("error", Kind::Any),
];
pub(super) const TIMER: &[Field] = &[req("id", Kind::Str), req("state", Kind::Str), req("delay", Kind::U64), req("dueAt", Kind::U64)];
pub(super) const HEAD: &[Field] = &[
    req("machine", Kind::Struct(MACHINE_REF)),
    req("value", Kind::Any),
    req("context", Kind::Any),
    req("revision", Kind::U64),
    or_default("done", Kind::Bool),
    or_default("outbox", Kind::List(OUTBOX_ENTRY)),
    or_default("timers", Kind::List(TIMER)),
    or_default("history", Kind::Object),
];
pub(super) const V1_ENTRY: &[Field] = &[
    req("id", Kind::Str),
    req("fp", Kind::Str),
    req("at", Kind::U64),
    req("exp", Kind::U64),
    req("rev", Kind::U64),
    req("status", Kind::Str),
    req("response", Kind::Any),
];
pub(super) const V1_BODY: &[Field] = &[
    req("format", Kind::U32),
    req("machine", Kind::Struct(MACHINE_REF)),
    req("value", Kind::Any),
    req("context", Kind::Any),
    req("revision", Kind::U64),
    or_default("done", Kind::Bool),
    req("ledger", Kind::List(V1_ENTRY)),
    or_default("outbox", Kind::List(OUTBOX_ENTRY)),
    or_default("timers", Kind::List(TIMER)),
];

/// Whether `v` is a `kind`; the first mismatch (in field order, depth first) otherwise.
pub(super) fn check_kind(v: &Value, kind: Kind) -> Wire<()> {
    let expected = match kind {
        Kind::Any => return Ok(()),
        Kind::Str if v.is_string() => return Ok(()),
        Kind::Str => "expected a string",
        Kind::Bool if v.is_boolean() => return Ok(()),
        Kind::Bool => "expected a boolean",
        Kind::U64 if v.is_u64() => return Ok(()),
        Kind::U64 => "expected a non-negative integer",
        Kind::U32 if v.as_u64().is_some_and(|n| n <= u32::MAX.into()) => return Ok(()),
        Kind::U32 => "expected an integer from 0 to 4294967295",
        Kind::State if v.as_str().and_then(EffectState::named).is_some() => return Ok(()),
        Kind::State => "expected an effect state",
        Kind::Object if v.is_object() => return Ok(()),
        Kind::Object => "expected an object",
        Kind::Struct(fields) => return check_struct(v, fields),
        Kind::List(fields) => {
            let Value::Array(items) = v else { return Err(Mismatch::new("expected an array")) };
            for (i, item) in items.iter().enumerate() {
                check_struct(item, fields).map_err(|e| e.at_index(i))?;
            }
            return Ok(());
        }
    };
    Err(Mismatch::new(expected))
}

/// Whether `v` is an object with `fields`: each required one present, each
/// present one of its kind (an optional one may be null), and no other member
/// (the first in key order is the unknown field).
pub(super) fn check_struct(v: &Value, fields: &[Field]) -> Wire<()> {
    let Value::Object(map) = v else { return Err(Mismatch::new("expected an object")) };
    let mut present = 0;
    for f in fields {
        match map.get(f.name) {
            None if f.need == Need::Required => return Err(Mismatch::new("missing field").at(f.name)),
            None => {}
            Some(v) => {
                present += 1;
                if !(f.need == Need::Optional && v.is_null()) {
                    check_kind(v, f.kind).map_err(|e| e.at(f.name))?;
                }
            }
        }
    }
    if present == map.len() {
        return Ok(());
    }
    match map.keys().find(|k| !fields.iter().any(|f| f.name == k.as_str())) {
        Some(name) => Err(Mismatch::new("unknown field").at(name)),
        None => Ok(()),
    }
}

/// The members of an object that [`check_kind`] accepted, taken out by name: what
/// the check accepted reads without an error (an absent member reads as
/// null). Taken by `get_mut`, not `remove`: nothing else on the lean path
/// removes from a map, so the B-tree's removal code stays out of the module.
pub(super) struct Members(pub(super) Map<String, Value>);

impl Members {
    pub(super) fn of(v: Value) -> Members {
        match v {
            Value::Object(map) => Members(map),
            _ => Members(Map::new()),
        }
    }

    // `take` and `get` are the only lookups every reader goes through.
    #[inline(never)]
    pub(super) fn take(&mut self, name: &str) -> Value {
        self.0.get_mut(name).map(std::mem::take).unwrap_or_default()
    }

    #[inline(never)]
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// Absent or null: `None`.
    fn opt(&mut self, name: &str) -> Option<Value> {
        Some(self.take(name)).filter(|v| !v.is_null())
    }

    pub(super) fn string(&mut self, name: &str) -> String {
        self.opt_string(name).unwrap_or_default()
    }

    #[inline(never)]
    fn opt_string(&mut self, name: &str) -> Option<String> {
        match self.take(name) {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn opt_uint(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    pub(super) fn uint(&self, name: &str) -> u64 {
        self.opt_uint(name).unwrap_or(0)
    }

    /// Checked to be at most `u32::MAX`.
    fn uint32(&self, name: &str) -> u32 {
        self.uint(name) as u32
    }

    fn boolean(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }

    /// An array of structs, each read by `read`; absent: empty.
    fn list<T>(&mut self, name: &str, read: fn(Value) -> T) -> Vec<T> {
        items(self.take(name), read)
    }
}

/// The items of an array, each read by `read`.
pub(super) fn items<T>(v: Value, read: fn(Value) -> T) -> Vec<T> {
    match v {
        Value::Array(items) if !items.is_empty() => items.into_iter().map(read).collect(),
        _ => Vec::new(),
    }
}

/// `v` read by `read` once it is checked to be a `kind`.
pub(super) fn wire<T>(v: Value, kind: Kind, read: fn(Value) -> T) -> Wire<T> {
    check_kind(&v, kind)?;
    Ok(read(v))
}

impl MachineRef {
    pub(super) fn read(v: Value) -> MachineRef {
        let mut m = Members::of(v);
        MachineRef { id: m.string("id"), version: m.string("version"), hash: m.string("hash") }
    }

    /// The reference that names `machine` (its own, shared).
    pub fn of(machine: &Machine) -> Arc<MachineRef> {
        machine.reference.clone()
    }

    /// Whether this reference names `machine`.
    pub fn names(&self, machine: &Machine) -> bool {
        std::ptr::eq(self, &*machine.reference)
            || (self.id == machine.id && self.version == machine.version && self.hash == machine.hash)
    }
}

impl EffectState {
    /// The state whose wire name ([`EffectState::as_str`]) is `name`.
    fn named(name: &str) -> Option<EffectState> {
        Some(match name {
            "pending" => EffectState::Pending,
            "in_flight" => EffectState::InFlight,
            "unknown" => EffectState::Unknown,
            "verifying" => EffectState::Verifying,
            "succeeded" => EffectState::Succeeded,
            "failed" => EffectState::Failed,
            _ => return None,
        })
    }
}

/// A retry policy as the outbox keeps it (camelCase, every field required).
pub(super) fn retry_policy(v: Value) -> RetryPolicy {
    let m = Members::of(v);
    RetryPolicy {
        max_attempts: m.uint32("maxAttempts"),
        base_ms: m.uint("baseMs"),
        factor: m.uint32("factor"),
        max_delay_ms: m.uint("maxDelayMs"),
        jitter_pct: m.uint32("jitterPct"),
    }
}

impl OutboxEntry {
    pub(super) fn read(v: Value) -> OutboxEntry {
        let mut m = Members::of(v);
        OutboxEntry {
            key: m.string("key"),
            effect_type: m.string("type"),
            payload: m.take("payload"),
            idempotent: m.boolean("idempotent"),
            state: m.get("state").and_then(Value::as_str).and_then(EffectState::named).unwrap_or(EffectState::Pending),
            attempts: m.uint32("attempts"),
            attempt_id: m.opt_string("attemptId"),
            due_at: m.opt_uint("dueAt"),
            retry: retry_policy(m.take("retry")),
            event_id: m.string("eventId"),
            created_at: m.uint("createdAt"),
            done_at: m.opt_uint("doneAt"),
            result: m.opt("result"),
            error: m.opt("error"),
        }
    }
}

impl Timer {
    pub(super) fn read(v: Value) -> Timer {
        let mut m = Members::of(v);
        Timer { id: m.string("id"), state: m.string("state"), delay: m.uint("delay"), due_at: m.uint("dueAt") }
    }
}

impl Head {
    pub(super) fn from_value(v: Value) -> Wire<Head> {
        wire(v, Kind::Struct(HEAD), Head::read)
    }

    /// The head's fields of an object checked to have them (other members are not read).
    pub(super) fn read(v: Value) -> Head {
        let mut m = Members::of(v);
        let machine = Arc::new(MachineRef::read(m.take("machine")));
        let state = ProcessState {
            value: m.take("value"),
            context: m.take("context"),
            revision: m.uint("revision"),
            done: m.boolean("done"),
            outbox: m.list("outbox", OutboxEntry::read),
            timers: m.list("timers", Timer::read),
            history: match m.take("history") {
                Value::Object(o) => o,
                _ => Map::new(),
            },
        };
        Head { machine, state }
    }
}

/// The readers of the wire format against the serde derives they replace: on
/// a representative head and format 1 body, and on every variant of them with
/// one member removed, made null, given another type or an out-of-range
/// number, or joined by an unknown member, both accept it with the same
/// result or both refuse it.
#[cfg(test)]
mod wire_tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    fn entry() -> Value {
        json!({
            "key": "k", "type": "ship", "payload": {"b": [1, 0.5]}, "idempotent": false, "state": "in_flight", "attempts": 2,
            "attemptId": "k#2", "dueAt": 5, "retry": {"maxAttempts": 5, "baseMs": 1000, "factor": 2, "maxDelayMs": 60000, "jitterPct": 20},
            "eventId": "e", "createdAt": 1, "doneAt": 9, "result": {"ok": true}, "error": null,
        })
    }

    fn head() -> Value {
        json!({
            "machine": {"id": "order", "version": "1", "hash": "cd9d"}, "value": {"a": "b"}, "context": {"n": 1},
            "revision": 7, "done": false, "outbox": [entry()], "timers": [{"id": "after:a:1:2", "state": "a", "delay": 1, "dueAt": 2}],
        })
    }

    fn v1() -> Value {
        let mut v = head();
        v["format"] = json!(1);
        v["ledger"] = json!([{"id": "e1", "fp": "0123456789abcdef0123456789abcdef", "at": 1, "exp": 2, "rev": 3, "status": "applied", "response": null}]);
        v
    }

    fn entry_of(v: Value) -> Wire<OutboxEntry> {
        wire(v, Kind::Struct(OUTBOX_ENTRY), OutboxEntry::read)
    }

    fn retry_of(v: Value) -> Wire<RetryPolicy> {
        wire(v, Kind::Struct(RETRY), retry_policy)
    }

    fn state_of(v: Value) -> Wire<EffectState> {
        wire(v, Kind::State, |v| v.as_str().and_then(EffectState::named).unwrap_or(EffectState::Pending))
    }

    fn timer_of(v: Value) -> Wire<Timer> {
        wire(v, Kind::Struct(TIMER), Timer::read)
    }

    fn machine_of(v: Value) -> Wire<MachineRef> {
        wire(v, Kind::Struct(MACHINE_REF), MachineRef::read)
    }

    fn v1_entry_of(v: Value) -> Wire<V1Entry> {
        wire(v, Kind::Struct(V1_ENTRY), V1Entry::read)
    }

    /// Both readers agree on `v`; true when they accept it.
    fn agree<T: DeserializeOwned + PartialEq + std::fmt::Debug>(v: &Value, ours: fn(Value) -> Wire<T>) -> bool {
        match (ours(v.clone()), serde_json::from_value::<T>(v.clone())) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{v}");
                true
            }
            (Err(_), Err(_)) => false,
            (a, b) => panic!("{v}: ours {a:?}, serde {:?}", b.map_err(|e| e.to_string())),
        }
    }

    /// JSON pointers to every value inside `v` (not `v` itself).
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, c)| (format!("{at}/{k}"), c)).collect(),
            Value::Array(a) => a.iter().enumerate().map(|(i, c)| (format!("{at}/{i}"), c)).collect(),
            _ => Vec::new(),
        };
        for (p, c) in children {
            out.push(p.clone());
            pointers(c, p, out);
        }
    }

    /// `v` and its variants, each differing from it in one place.
    fn variants(v: &Value) -> Vec<Value> {
        let others = [
            json!(null), json!(-1), json!(0), json!(1.5), json!(2.0), json!(4294967295u64), json!(4294967296u64), json!(u64::MAX),
            json!(-9223372036854775808i64), json!(""), json!("pending"), json!("x"), json!(true), json!([]), json!({}), json!({"x": 1}),
        ];
        let mut paths = Vec::new();
        pointers(v, String::new(), &mut paths);
        let mut out = vec![v.clone()];
        for p in &paths {
            for o in &others {
                let mut w = v.clone();
                *w.pointer_mut(p).unwrap() = o.clone();
                out.push(w);
            }
            let (parent, last) = p.rsplit_once('/').unwrap();
            let mut w = v.clone();
            match w.pointer_mut(parent).unwrap() {
                Value::Object(m) => drop(m.remove(last)),
                Value::Array(a) => drop(a.remove(last.parse::<usize>().unwrap())),
                _ => unreachable!(),
            }
            out.push(w);
        }
        for p in std::iter::once(String::new()).chain(paths) {
            let mut w = v.clone();
            if let Some(Value::Object(m)) = w.pointer_mut(&p) {
                m.insert("extra".into(), json!(1));
                out.push(w);
            }
        }
        out
    }

    #[test]
    fn readers_agree_with_the_derives() {
        let (mut accepted, mut refused) = (0, 0);
        let mut count = |ok: bool| if ok { accepted += 1 } else { refused += 1 };
        for v in variants(&head()) {
            count(agree(&v, Head::from_value));
        }
        for v in variants(&v1()) {
            count(agree(&v, V1::from_value));
        }
        for v in variants(&entry()) {
            count(agree(&v, entry_of));
            count(agree(&v["retry"], retry_of));
            count(agree(&v["state"], state_of));
        }
        for v in variants(&head()["timers"][0]) {
            count(agree(&v, timer_of));
        }
        for v in variants(&head()["machine"]) {
            count(agree(&v, machine_of));
        }
        for v in variants(&v1()["ledger"][0]) {
            count(agree(&v, v1_entry_of));
        }
        assert!(accepted > 100 && refused > 1000, "{accepted} accepted, {refused} refused");
    }

    #[test]
    fn defaults_and_optional_fields_read_as_the_derives_read_them() {
        let mut h = head();
        for k in ["done", "outbox", "timers"] {
            h.as_object_mut().unwrap().remove(k);
        }
        assert!(agree(&h, Head::from_value));
        let mut e = entry();
        for k in ["attemptId", "dueAt", "doneAt", "result", "error"] {
            let mut n = e.clone();
            n[k] = Value::Null;
            assert!(agree(&n, entry_of), "{k}: null");
            e.as_object_mut().unwrap().remove(k);
            assert!(agree(&e, entry_of), "{k}: absent");
        }
    }

    #[test]
    fn every_effect_state_is_read_by_its_wire_name() {
        use EffectState::*;
        for s in [Pending, InFlight, Unknown, Verifying, Succeeded, Failed] {
            assert!(agree(&json!(s.as_str()), state_of));
            assert_eq!(EffectState::named(s.as_str()), Some(s));
        }
    }

    /// Two forms the derives read that this engine never wrote are refused.
    #[test]
    fn forms_never_written_are_refused() {
        let timer = json!(["after:a:1:2", "a", 1, 2]);
        assert!(serde_json::from_value::<Timer>(timer.clone()).is_ok());
        assert!(timer_of(timer).is_err());
        let state = json!({"pending": null});
        assert!(serde_json::from_value::<EffectState>(state.clone()).is_ok());
        assert!(state_of(state).is_err());
    }

    #[test]
    fn mismatches_name_the_member() {
        let mut h = head();
        h["outbox"][0]["retry"]["factor"] = json!(-1);
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "expected an integer from 0 to 4294967295 at outbox[0].retry.factor");
        let mut h = head();
        h["timers"][0]["extra"] = json!(1);
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "unknown field at timers[0].extra");
        let mut h = head();
        h["machine"].as_object_mut().unwrap().remove("hash");
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "missing field at machine.hash");
        assert_eq!(Head::from_value(json!([])).unwrap_err().to_string(), "expected an object");
        let mut v = v1();
        v["ledger"][0]["at"] = json!(1.5);
        assert_eq!(V1::from_value(v).unwrap_err().to_string(), "expected a non-negative integer at ledger[0].at");
    }
}
