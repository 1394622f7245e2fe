//! The head: everything but the ledger (the machine reference, the state
//! value, the context, the revision, `done`, the outbox, the timers and the
//! history records), as one line of JSON.
//!
//! It is read member by member where it is laid out as the encoder writes it
//! (`read_head`: each member's JSON parsed where it stands), else parsed whole
//! and read through the tables of `fields`. It is written by hand, byte for
//! byte the text the `Serialize` derives give through serde_json. The machine
//! reference last written is kept per thread (`KNOWN`): the next head that
//! starts with its very bytes shares it instead of reading three new strings.
//!
//! The public types keep their serde derives as the reference: tests compare
//! the readers and the writer with them on every variant of a representative
//! head. The per-event path itself never goes through serde.

use super::*;

/// Everything but the ledger, as the serde derives write format 2 and 3's
/// head: what `Snapshot::write_head` is checked against.
#[cfg(test)]
#[derive(Serialize)]
pub(super) struct HeadRef<'a> {
    pub(super) machine: &'a MachineRef,
    #[serde(flatten)]
    pub(super) state: &'a ProcessState,
}

#[cfg(test)]
impl<'a> HeadRef<'a> {
    /// The head of `snap`, as the derives write it.
    pub(super) fn of(snap: &'a Snapshot) -> HeadRef<'a> {
        HeadRef { machine: &snap.machine, state: &snap.state }
    }
}

/// Everything but the ledger, as format 2 and 3 keep it in their JSON head.
/// Read by [`Head::from_value`]; the serde derive of [`FlatHead`] (tests only)
/// is what that reading is checked against.
#[cfg_attr(test, derive(Debug, PartialEq, Deserialize), serde(from = "FlatHead"))]
pub(super) struct Head {
    pub(super) machine: Arc<MachineRef>,
    pub(super) state: ProcessState,
}

/// The head's members as serde reads them, one level (tests only).
#[cfg(test)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FlatHead {
    machine: MachineRef,
    value: Value,
    context: Value,
    revision: u64,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    outbox: Vec<OutboxEntry>,
    #[serde(default)]
    timers: Vec<Timer>,
    #[serde(default)]
    history: Map<String, Value>,
}

#[cfg(test)]
impl From<FlatHead> for Head {
    fn from(h: FlatHead) -> Head {
        let FlatHead { machine, value, context, revision, done, outbox, timers, history } = h;
        Head { machine: Arc::new(machine), state: ProcessState { value, context, revision, done, outbox, timers, history } }
    }
}

/// The machine reference last written in a head, and its member's JSON
/// (`"machine":{...}`, see [`write_machine`]). Every snapshot of a process names the same machine, so the next
/// head read finds these very bytes: the reference is then shared instead of
/// parsed into three new strings, and written back by copying the bytes.
pub(super) struct KnownRef {
    pub(super) r: Arc<MachineRef>,
    pub(super) json: Vec<u8>,
}

thread_local! {
    pub(super) static KNOWN: RefCell<Option<KnownRef>> = const { RefCell::new(None) };
}

/// The head's first member, the machine reference: `"machine":{"id":..,"version":..,"hash":..}`.
pub(super) fn write_machine(r: &MachineRef, t: &mut Vec<u8>) {
    json::put(t, b"\"machine\":{\"id\":");
    json::write_str(&r.id, t);
    json::put(t, b",\"version\":");
    json::write_str(&r.version, t);
    json::put(t, b",\"hash\":");
    json::write_str(&r.hash, t);
    json::put(t, b"}");
}

// ---------------------------------------------------------------------------
// Writing the outbox and the timers
//
// By hand rather than through serde's `Serialize`, so the per-event path does
// not go through serde: the text is the derives' through serde_json, byte for
// byte (members in declaration order, renamed as
// the attributes say, `None` left out where `skip_serializing_if` says so; the
// tests compare the two on every variant).

/// An outbox entry's JSON, as its `Serialize` derive writes it.
pub(super) fn write_outbox_entry(e: &OutboxEntry, t: &mut Vec<u8>) {
    json::put(t, b"{\"key\":");
    json::write_str(&e.key, t);
    json::put(t, b",\"type\":");
    json::write_str(&e.effect_type, t);
    json::put(t, b",\"payload\":");
    json::write_json(&e.payload, t);
    json::put(t, if e.idempotent { b",\"idempotent\":true,\"state\":" } else { b",\"idempotent\":false,\"state\":" });
    json::write_str(e.state.as_str(), t);
    json::put(t, b",\"attempts\":");
    json::push_u64(e.attempts.into(), t);
    if let Some(id) = &e.attempt_id {
        json::put(t, b",\"attemptId\":");
        json::write_str(id, t);
    }
    if let Some(at) = e.due_at {
        json::put(t, b",\"dueAt\":");
        json::push_u64(at, t);
    }
    let r = &e.retry;
    json::put(t, b",\"retry\":{\"maxAttempts\":");
    json::push_u64(r.max_attempts.into(), t);
    json::put(t, b",\"baseMs\":");
    json::push_u64(r.base_ms, t);
    json::put(t, b",\"factor\":");
    json::push_u64(r.factor.into(), t);
    json::put(t, b",\"maxDelayMs\":");
    json::push_u64(r.max_delay_ms, t);
    json::put(t, b",\"jitterPct\":");
    json::push_u64(r.jitter_pct.into(), t);
    json::put(t, b"},\"eventId\":");
    json::write_str(&e.event_id, t);
    json::put(t, b",\"createdAt\":");
    json::push_u64(e.created_at, t);
    if let Some(at) = e.done_at {
        json::put(t, b",\"doneAt\":");
        json::push_u64(at, t);
    }
    if let Some(v) = &e.result {
        json::put(t, b",\"result\":");
        json::write_json(v, t);
    }
    if let Some(v) = &e.error {
        json::put(t, b",\"error\":");
        json::write_json(v, t);
    }
    json::put(t, b"}");
}

/// A timer's JSON, as its `Serialize` derive writes it.
pub(super) fn write_timer(timer: &Timer, t: &mut Vec<u8>) {
    json::put(t, b"{\"id\":");
    json::write_str(&timer.id, t);
    json::put(t, b",\"state\":");
    json::write_str(&timer.state, t);
    json::put(t, b",\"delay\":");
    json::push_u64(timer.delay, t);
    json::put(t, b",\"dueAt\":");
    json::push_u64(timer.due_at, t);
    json::put(t, b"}");
}

/// A JSON array of `items`, each written by `write`.
pub(super) fn write_array<T>(items: &[T], t: &mut Vec<u8>, write: fn(&T, &mut Vec<u8>)) {
    t.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            t.push(b',');
        }
        write(item, t);
    }
    t.push(b']');
}

impl Head {
    pub(super) fn into_snapshot(self, format: u32, ledger: Ledger) -> Snapshot {
        Snapshot { format, machine: self.machine, state: self.state, ledger }
    }
}

/// The head's JSON, with the nesting bound every input gets: field by field
/// when it is laid out as the encoder writes it (`read_head`), else parsed
/// whole and read by [`Head::from_value`], which shares its code with format 1.
pub(super) fn parse_head(text: &str, format: u32) -> Result<Head> {
    if let Some(head) = read_head(text) {
        return Ok(head);
    }
    let v = json::parse(text, Code::InvalidSnapshot, "snapshot head")?;
    let head = Head::from_value(v).map_err(|e| mismatch("snapshot head", format, e))?;
    json::check_depth(&head.state.context, "snapshot context")?;
    json::check_depth(&head.state.value, "snapshot state value")?;
    for e in &head.state.outbox {
        for v in [Some(&e.payload), e.result.as_ref(), e.error.as_ref()].into_iter().flatten() {
            json::check_depth(v, "snapshot outbox entry")?;
        }
    }
    Ok(head)
}

/// The head as [`Snapshot::write_head`] writes it (no whitespace, fields in
/// their order), read without building a `Value` of the whole head and then
/// converting that: each field's JSON is parsed on its own. `None` for
/// anything else, which `parse_head` then reads as any JSON, errors and all:
/// what this accepts it reads exactly as that would.
pub(super) fn read_head(text: &str) -> Option<Head> {
    // Each member's key as it follows the one before, at its index in `fields`.
    const FIELDS: [&str; 7] = ["\"machine\":", ",\"value\":", ",\"context\":", ",\"revision\":", ",\"done\":", ",\"outbox\":", ",\"timers\":"];
    const MACHINE: usize = 0;
    const VALUE: usize = 1;
    const CONTEXT: usize = 2;
    const REVISION: usize = 3;
    const DONE: usize = 4;
    const OUTBOX: usize = 5;
    const TIMERS: usize = 6;
    // The bytes of the last reference written are read as its value would be.
    let known = KNOWN.with(|k| {
        let k = k.borrow();
        let k = k.as_ref()?;
        text.as_bytes().get(1..)?.starts_with(&k.json).then(|| (k.r.clone(), k.json.len()))
    });
    let mut fields: [Value; FIELDS.len()] = Default::default();
    // The usual end (not done, no outbox entry, no timer), matched whole.
    let mut usual_end = false;
    // Every check before anything is moved out, and one way out when one fails.
    let mut read = || {
        let mut r = HeadReader { text, i: 0 };
        r.lit("{")?;
        let first = match &known {
            Some((_, len)) => {
                r.i += len;
                MACHINE + 1
            }
            None => MACHINE,
        };
        for i in first..FIELDS.len() {
            if i == DONE && r.lit(",\"done\":false,\"outbox\":[],\"timers\":[]").is_some() {
                usual_end = true;
                break;
            }
            r.lit(FIELDS[i])?;
            fields[i] = r.value()?;
        }
        r.lit("}")?;
        let whole = r.i == text.len()
            && fields[REVISION].is_u64()
            && (known.is_some() || check_kind(&fields[MACHINE], Kind::Struct(MACHINE_REF)).is_ok())
            && (usual_end
                || (fields[DONE].is_boolean()
                    && (none(&fields[OUTBOX]) || check_kind(&fields[OUTBOX], Kind::List(OUTBOX_ENTRY)).is_ok())
                    && (none(&fields[TIMERS]) || check_kind(&fields[TIMERS], Kind::List(TIMER)).is_ok())));
        whole.then_some(())
    };
    read()?;
    let (revision, done) = (fields[REVISION].as_u64().unwrap_or(0), fields[DONE].as_bool().unwrap_or(false));
    let (no_outbox, no_timers) = (usual_end || none(&fields[OUTBOX]), usual_end || none(&fields[TIMERS]));
    let mut take = |i: usize| std::mem::take(&mut fields[i]);
    let machine = match known {
        Some((r, _)) => r,
        None => Arc::new(MachineRef::read(take(MACHINE))),
    };
    let state = ProcessState {
        value: take(VALUE),
        context: take(CONTEXT),
        revision,
        done,
        outbox: if no_outbox { Vec::new() } else { items(take(OUTBOX), OutboxEntry::read) },
        timers: if no_timers { Vec::new() } else { items(take(TIMERS), Timer::read) },
        history: Map::new(),
    };
    Some(Head { machine, state })
}

/// An empty array: most heads have no outbox entry and no timer, read without a call.
pub(super) fn none(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty())
}

pub(super) struct HeadReader<'a> {
    text: &'a str,
    i: usize,
}

impl HeadReader<'_> {
    fn rest(&self) -> &[u8] {
        self.text.as_bytes().get(self.i..).unwrap_or_default()
    }

    fn lit(&mut self, lit: &str) -> Option<()> {
        self.rest().starts_with(lit.as_bytes()).then(|| self.i += lit.len())
    }

    /// A JSON value, within the nesting bound it has as a member of the head
    /// (`within_depth` at 2, the stricter of that and `json::parse`'s), read
    /// where it stands: the value a parse of the whole head finds there.
    fn value(&mut self) -> Option<Value> {
        let (v, len, depth) = json::parse_prefix(self.text.get(self.i..)?).ok()?;
        if depth >= json::MAX_DEPTH {
            return None;
        }
        self.i += len;
        Some(v)
    }
}

/// The outbox and timer writers, and the `Value`s built for the snapshot's
/// structs, against the serde derives they replace: generated entries in every
/// state, each optional member present, absent or null, strings with control
/// characters and non-ASCII, any float. Snapshots holding them re-encode byte
/// for byte.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod outbox_writer_tests {
    use super::*;
    use proptest::arbitrary::any;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9#:./-]{0,12}", "[a-z\u{0}-\u{1f}\"\\\\\u{7f}\u{e9}\u{2028}\u{1F600}]{0,12}", any::<String>()]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_filter_map("finite", |b| serde_json::Number::from_f64(f64::from_bits(b)).map(Value::Number)),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                // In key order, as idem writes every object (see `json::write_json`).
                prop::collection::vec((text(), inner), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<std::collections::BTreeMap<_, _>>().into_iter().collect())),
            ]
        })
    }

    fn entry() -> impl Strategy<Value = OutboxEntry> {
        use EffectState::*;
        let state = prop::sample::select(vec![Pending, InFlight, Unknown, Verifying, Succeeded, Failed]);
        let retry = (any::<u32>(), any::<u64>(), any::<u32>(), any::<u64>(), any::<u32>()).prop_map(|(a, b, c, d, e)| RetryPolicy {
            max_attempts: a,
            base_ms: b,
            factor: c,
            max_delay_ms: d,
            jitter_pct: e,
        });
        let first = (text(), text(), value(), any::<bool>(), state, any::<u32>(), prop::option::of(text()));
        let second =
            (prop::option::of(any::<u64>()), retry, text(), any::<u64>(), prop::option::of(any::<u64>()), prop::option::of(value()), prop::option::of(value()));
        (first, second).prop_map(|((key, effect_type, payload, idempotent, state, attempts, attempt_id), (due_at, retry, event_id, created_at, done_at, result, error))| {
            OutboxEntry { key, effect_type, payload, idempotent, state, attempts, attempt_id, due_at, retry, event_id, created_at, done_at, result, error }
        })
    }

    fn timer() -> impl Strategy<Value = Timer> {
        (text(), text(), any::<u64>(), any::<u64>()).prop_map(|(id, state, delay, due_at)| Timer { id, state, delay, due_at })
    }

    fn config() -> Config {
        Config { cases: 500, rng_seed: RngSeed::Fixed(0x0B07), failure_persistence: None, ..Config::default() }
    }

    fn written<T>(item: &T, write: fn(&T, &mut Vec<u8>)) -> String {
        let mut t = Vec::new();
        write(item, &mut t);
        String::from_utf8(t).unwrap()
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn entries_and_timers_are_written_as_the_derives_write_them(e in entry(), t in timer(), m in (text(), text(), text())) {
            prop_assert_eq!(written(&e, write_outbox_entry), serde_json::to_string(&e).unwrap());
            prop_assert_eq!(written(&t, write_timer), serde_json::to_string(&t).unwrap());
            prop_assert_eq!(json::to_value(&e), serde_json::to_value(&e).unwrap());
            prop_assert_eq!(json::to_value(&t), serde_json::to_value(&t).unwrap());
            prop_assert_eq!(json::to_value(&e.retry), serde_json::to_value(e.retry).unwrap());
            prop_assert_eq!(json::to_value(&e.state), serde_json::to_value(e.state).unwrap());
            let m = MachineRef { id: m.0, version: m.1, hash: m.2 };
            prop_assert_eq!(json::to_value(&m), serde_json::to_value(&m).unwrap());
        }

        #[test]
        fn snapshots_with_them_are_written_as_the_derives_write_them_and_reencode_byte_for_byte(
            outbox in prop::collection::vec(entry(), 0..4), timers in prop::collection::vec(timer(), 0..4),
            value in value(), context in value(), revision in any::<u64>(), done in any::<bool>(),
            history in prop::collection::btree_map(text(), value(), 0..3),
            records in prop::collection::vec((text(), text(), any::<u64>(), any::<u64>(), any::<u64>(), any::<bool>(), value()), 0..3),
            now in any::<u64>(),
        ) {
            let history: Map<String, Value> = history.into_iter().collect();
            let mut snap = Snapshot {
                format: FORMAT,
                machine: Arc::new(MachineRef { id: "order\u{e9}".into(), version: "1\"".into(), hash: "cd9d".into() }),
                state: ProcessState { value, context, revision, done, outbox, timers, history },
                ledger: Ledger::default(),
            };
            let head = HeadRef::of(&snap);
            prop_assert_eq!(written(&snap, Snapshot::write_head), serde_json::to_string(&head).unwrap());
            let v = snap.to_value();
            prop_assert_eq!(&v["machine"], &serde_json::to_value(&*snap.machine).unwrap());
            prop_assert_eq!(&v["outbox"], &serde_json::to_value(&snap.state.outbox).unwrap());
            prop_assert_eq!(&v["timers"], &serde_json::to_value(&snap.state.timers).unwrap());
            let history = (!snap.state.history.is_empty()).then(|| Value::Object(snap.state.history.clone()));
            prop_assert_eq!(v.get("history"), history.as_ref());
            // `due` lists what is due, each item's members in key order.
            let mut with_ledger = snap.clone();
            for (id, fp, at, exp, rev, ignored, response) in &records {
                with_ledger.ledger.push(id, fp, *at, *exp, *rev, *ignored, response);
            }
            for now in [now, 0, u64::MAX] {
                for item in crate::outbox::due_items(&with_ledger, now) {
                    let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
                    prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "{:?}", keys);
                }
            }
            // A result or error of null reads back as none (the derives read it so too).
            for e in &mut snap.state.outbox {
                e.result = e.result.take().filter(|v| !v.is_null());
                e.error = e.error.take().filter(|v| !v.is_null());
            }
            let text = snap.encode();
            // Every field of the process's state reads back as it was written.
            let mut back = Snapshot::decode(&text, usize::MAX).unwrap();
            prop_assert_eq!(&back.state, &snap.state);
            prop_assert_eq!(back.encode(), text);
        }
    }
}

#[cfg(test)]
mod read_head_tests {
    use super::*;
    use serde_json::json;

    /// What `parse_head` reads without `read_head`.
    fn general(text: &str) -> Option<Snapshot> {
        let v = json::parse(text, Code::InvalidSnapshot, "head").ok()?;
        let head = Head::from_value(v).ok()?;
        Some(head.into_snapshot(3, Ledger::default()))
    }

    fn agrees(text: &str) -> bool {
        let fast = read_head(text).map(|h| h.into_snapshot(3, Ledger::default()));
        if let Some(f) = &fast {
            assert_eq!(Some(f), general(text).as_ref(), "{text}");
        }
        fast.is_some()
    }

    fn head_of(value: Value, context: Value, outbox: Vec<OutboxEntry>, timers: Vec<Timer>, done: bool, revision: u64) -> String {
        let snap = Snapshot {
            format: FORMAT,
            machine: Arc::new(MachineRef { id: "order".into(), version: "1.\u{e9}".into(), hash: "cd9da19fa2174cabd96029ed88a5439f".into() }),
            state: ProcessState { value, context, revision, done, outbox, timers, history: Map::new() },
            ledger: Ledger::default(),
        };
        let mut t = Vec::new();
        snap.write_head(&mut t);
        String::from_utf8(t).unwrap()
    }

    #[test]
    fn read_head_reads_what_the_general_path_reads() {
        let entry = OutboxEntry {
            key: "k".into(),
            effect_type: "ship".into(),
            payload: json!({"b": [1, 0.1]}),
            idempotent: false,
            state: EffectState::Pending,
            attempts: 0,
            attempt_id: None,
            due_at: Some(5),
            retry: RetryPolicy::default(),
            event_id: "e".into(),
            created_at: 1,
            done_at: None,
            result: None,
            error: Some(json!({"code": "x"})),
        };
        let timer = Timer { id: "after:a:1:2".into(), state: "a".into(), delay: 1, due_at: 2 };
        let deep = |n: usize| (0..n).fold(json!(1), |v, _| json!([v]));
        let heads = [
            head_of(json!("pending"), json!({"lastNote": null, "paid": 0, "payments": [], "total": 100}), vec![], vec![], false, 0),
            head_of(json!({"a": {"b": "c"}}), json!({"s": "\u{1F600}\"\\", "f": -2.5e-7}), vec![entry], vec![timer], true, u64::MAX),
            head_of(json!("p"), json!({"d": deep(61)}), vec![], vec![], false, 10),
            head_of(json!("p"), json!({"d": deep(62)}), vec![], vec![], false, 10),
        ];
        for (i, h) in heads.iter().enumerate() {
            assert_eq!(agrees(h), i != 3, "{h}");
        }
        assert!(general(&heads[3]).is_none(), "too deep for either");
        let variants = [
            heads[0].replace("\"revision\":0", "\"revision\":00"),
            heads[0].replace("\"revision\":0", "\"revision\":-0"),
            heads[0].replace("\"revision\":0", "\"revision\":0.0"),
            heads[0].replace("\"revision\":0", "\"revision\":18446744073709551615"),
            heads[0].replace("\"revision\":0", "\"revision\":18446744073709551616"),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\\u0064er\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\\\"der\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":7"),
            heads[0].replace("\"value\":\"pending\"", "\"value\": \"pending\" "),
            heads[0].replace("\"value\":\"pending\"", "\"value\":7"),
            heads[0].replace("\"outbox\":[]", "\"outbox\":[{}]"),
            heads[0].replace("\"outbox\":[]", "\"outbox\":{}"),
            heads[0].replace("\"timers\":[]", "\"timers\":[{\"id\":\"a\",\"state\":\"b\",\"delay\":1,\"dueAt\":2,\"x\":1}]"),
            heads[0].replace("\"timers\":[]", "\"timers\":null"),
            heads[0].replace(",\"done\":false", ""),
            heads[0].replace(",\"done\":false", ",\"done\":0"),
            heads[0].replace("\"hash\":", "\"extra\":1,\"hash\":"),
            heads[0].clone() + " ",
            heads[0].clone() + "x",
            heads[1].replace("\"dueAt\":5", "\"dueAt\":-5"),
            // The forms `scalar` reads without a parser, and their neighbours.
            heads[0].replace("\"revision\":0", "\"revision\":1234567890123456789"),
            heads[0].replace("\"revision\":0", "\"revision\":9999999999999999999"),
            heads[0].replace("\"revision\":0", "\"revision\":12345678901234567890"),
            heads[0].replace("\"revision\":0", "\"revision\":99999999999999999999"),
            heads[0].replace("\"revision\":0", "\"revision\":7"),
            heads[0].replace("\"revision\":0", "\"revision\":1e3"),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\u{7f}d\u{e9}r\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\tder\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\""),
            heads[0].replace("\"value\":\"pending\"", "\"value\":[]"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":null"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":true"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":nul"),
            heads[0].replace("\"context\":{", "\"context\":{}"),
            heads[0].replace("\"done\":false", "\"done\":true"),
            heads[0].replace("\"done\":false", "\"done\":False"),
        ];
        assert!(agrees(&variants[variants.len() - 17]) && agrees(&variants[variants.len() - 15]), "19 and 20 digit revisions are read");
        assert!(agrees(&variants[variants.len() - 11]), "a string with DEL and raw non-ASCII is read");
        for v in &variants {
            agrees(v);
        }
        // Every byte of a head changed, dropped or doubled.
        for h in &heads[..2] {
            for i in 0..h.len() {
                if !h.is_char_boundary(i) || !h.is_char_boundary(i + 1) {
                    continue;
                }
                for c in ["", " ", "0", "9", "\"", "\\", "}", "]", ",", "{", "[", "\u{e9}", &h[i..i + 1], &h[i..i + 1].repeat(2)] {
                    agrees(&format!("{}{}{}", &h[..i], c, &h[i + 1..]));
                }
            }
        }
    }
}
