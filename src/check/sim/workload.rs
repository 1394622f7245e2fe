//! What the outside world sends: the distinct events of each process, and how
//! each one's sender behaves (how many copies the network makes, when they
//! arrive, whether the sender keeps retrying until it gets an answer).

use super::rng::Rng;
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// tests/machines/order.json: partial payments, `ship` effect on entry to `paid`.
    Order,
    /// tests/sim/checkout.json: a `charge` effect (idempotent, may be declined) and
    /// a `receipt` effect to a provider without idempotency keys (verify before retry).
    Checkout,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Order => "order",
            Kind::Checkout => "checkout",
        }
    }
}

/// One distinct event and its sender.
#[derive(Clone, Debug)]
pub struct Planned {
    pub process: usize,
    pub event: Value,
    /// Arrival times of the copies the network delivers (1 to 5 of them), relative to the start.
    pub copies: Vec<u64>,
    /// Keeps sending until it receives an answer.
    pub retrying: bool,
    /// Reuses the id of another event with another payload (a sender bug).
    pub impostor: bool,
}

/// Knobs of one execution; each can be turned off to shrink a failing seed.
#[derive(Clone, Debug)]
pub struct Chaos {
    pub crash_p: f64,
    pub lost_reply_p: f64,
    pub max_workers: usize,
    pub timeout_p: f64,
    pub network_p: f64,
    pub decline_p: f64,
    pub late_p: f64,
    pub max_copies: u64,
    /// Copies arrive within this many ms of their event's start (small: a burst of racing deliveries).
    pub spread_ms: u64,
}

/// Bits of a shrink mask (`SIM_SHRINK`).
pub const NO_CRASHES: u32 = 1;
pub const NO_LOST_REPLIES: u32 = 2;
pub const ONE_WORKER: u32 = 4;
pub const NO_TIMEOUTS: u32 = 8;
pub const NO_NETWORK_ERRORS: u32 = 16;
pub const NO_DECLINES: u32 = 32;
pub const NO_LATE_COPIES: u32 = 64;
pub const ONE_COPY: u32 = 128;
pub const SHRINK_BITS: &[(u32, &str)] = &[
    (NO_CRASHES, "no crashes"),
    (NO_LOST_REPLIES, "no lost replies"),
    (ONE_WORKER, "one worker"),
    (NO_TIMEOUTS, "no gateway timeouts"),
    (NO_NETWORK_ERRORS, "no network errors"),
    (NO_DECLINES, "no declines"),
    (NO_LATE_COPIES, "no late copies"),
    (ONE_COPY, "one copy per delivery"),
];

impl Chaos {
    pub fn draw(rng: &mut Rng) -> Chaos {
        Chaos {
            crash_p: rng.pick(&[0.0, 0.02, 0.05, 0.1, 0.2]),
            lost_reply_p: rng.pick(&[0.0, 0.1, 0.3]),
            max_workers: rng.range(1, 6) as usize,
            timeout_p: rng.pick(&[0.0, 0.1, 0.3]),
            network_p: rng.pick(&[0.0, 0.1, 0.25]),
            decline_p: rng.pick(&[0.0, 0.2, 0.5]),
            late_p: rng.pick(&[0.0, 0.1, 0.3]),
            max_copies: 5,
            spread_ms: rng.pick(&[5, 20, 60, 300]),
        }
    }

    pub fn shrink(&mut self, mask: u32) {
        let off = |bit: u32| mask & bit != 0;
        if off(NO_CRASHES) {
            self.crash_p = 0.0;
        }
        if off(NO_LOST_REPLIES) {
            self.lost_reply_p = 0.0;
        }
        if off(ONE_WORKER) {
            self.max_workers = 1;
        }
        if off(NO_TIMEOUTS) {
            self.timeout_p = 0.0;
        }
        if off(NO_NETWORK_ERRORS) {
            self.network_p = 0.0;
        }
        if off(NO_DECLINES) {
            self.decline_p = 0.0;
        }
        if off(NO_LATE_COPIES) {
            self.late_p = 0.0;
        }
        if off(ONE_COPY) {
            self.max_copies = 1;
        }
    }
}

/// The events of `processes` processes of `kind`. Event ids restart at `evt-1`
/// in every process, so they collide across processes on purpose.
pub fn plan(kind: Kind, processes: usize, rng: &mut Rng, chaos: &Chaos) -> Vec<Planned> {
    let mut out = Vec::new();
    for p in 0..processes {
        let events = match kind {
            Kind::Order => order_events(rng),
            Kind::Checkout => checkout_events(rng),
        };
        for (i, (event, start, impostor)) in events.into_iter().enumerate() {
            let n = rng.range(1, chaos.max_copies);
            let copies = (0..n)
                .map(|c| {
                    let jitter = if c > 0 && rng.chance(chaos.late_p) { rng.range(1_000, 120_000) } else { rng.below(chaos.spread_ms) };
                    start + i as u64 * rng.below(chaos.spread_ms / 2 + 1) + jitter
                })
                .collect();
            out.push(Planned { process: p, event, copies, retrying: rng.chance(0.7), impostor });
        }
    }
    out
}

type Ev = (Value, u64, bool);

fn ev(id: usize, ty: &str, payload: Value) -> Value {
    json!({ "id": format!("evt-{id}"), "type": ty, "payload": payload })
}

/// A copy of an earlier event's id with another payload.
fn impostor(rng: &mut Rng, events: &[Ev], change: impl Fn(&mut Value)) -> Option<Ev> {
    if events.is_empty() {
        return None;
    }
    let (orig, start, _) = &events[rng.below(events.len() as u64) as usize];
    let mut e = orig.clone();
    change(&mut e["payload"]);
    (e != *orig).then(|| (e, start + rng.below(200), true))
}

fn order_events(rng: &mut Rng) -> Vec<Ev> {
    let mut events: Vec<Ev> = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    let payments = rng.range(1, 5) as usize;
    for i in 1..=payments {
        let amount = rng.pick(&[10u64, 20, 25, 30, 40, 50, 60]);
        events.push((ev(next(), "PAYMENT_PARTIAL", json!({ "paymentId": format!("p{i}"), "amount": amount })), rng.below(30), false));
    }
    if rng.chance(0.3) {
        // The same payment sent again under a new event id: the machine's set guard absorbs it.
        let (e, _, _) = events[rng.below(events.len() as u64) as usize].clone();
        events.push((ev(next(), "PAYMENT_PARTIAL", e["payload"].clone()), rng.below(500), false));
    }
    if rng.chance(0.25) {
        events.push((ev(next(), "CANCEL", json!({})), rng.below(400), false));
    }
    if rng.chance(0.5) {
        events.push((ev(next(), "SHIP", json!({ "carrier": "post" })), rng.range(100, 2_000), false));
    }
    if rng.chance(0.1) {
        if let Some(e) = impostor(rng, &events, |p| p["amount"] = json!(1)) {
            events.push(e);
        }
    }
    events
}

fn checkout_events(rng: &mut Rng) -> Vec<Ev> {
    let mut events: Vec<Ev> = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    let items = rng.range(1, 4) as usize;
    for i in 1..=items {
        let price = rng.range(5, 50);
        events.push((ev(next(), "ADD_ITEM", json!({ "sku": format!("s{i}"), "price": price })), rng.below(30), false));
    }
    if rng.chance(0.3) {
        let (e, _, _) = events[rng.below(events.len() as u64) as usize].clone();
        events.push((ev(next(), "ADD_ITEM", e["payload"].clone()), rng.below(300), false));
    }
    if rng.chance(0.85) {
        // Otherwise the cart is left alone until its timer abandons it.
        events.push((ev(next(), "CHECKOUT", json!({})), rng.range(20, 1_000), false));
    }
    if rng.chance(0.5) {
        events.push((ev(next(), "RETRY_PAYMENT", json!({})), rng.range(500, 30_000), false));
    }
    if rng.chance(0.15) {
        events.push((ev(next(), "CANCEL", json!({})), rng.below(3_000), false));
    }
    if rng.chance(0.08) {
        if let Some(e) = impostor(rng, &events, |p| p["price"] = json!(1)) {
            events.push(e);
        }
    }
    events
}
