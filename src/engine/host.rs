//! Implementations given as functions by the host: JavaScript's
//! `new Machine(definition, { guards, actions })` (XState's `setup`). The
//! definition names them as it names implementations given as data; the
//! builder, told which names the host implements, compiles each use into a
//! [`HostUse`], and the interpreter calls the host's one callback with the
//! use's index, its `params`, the context and the event as JSON text, and
//! reads the answer back as JSON text: a guard's boolean, or an action's
//! context patch (merged into the context) or idem actions, their values
//! literal (`preserve`, which the host wraps them in).
//!
//! They run inside `reduce`: they must be pure. A duplicate event replays the
//! outcome recorded for it and calls none of them. A callback that fails or
//! answers with the wrong type refuses the event (`implementation_failed`,
//! naming the implementation and its use), and nothing is stored.

use crate::error::{Code, Error, Result};
use crate::json;
use serde_json::Value;
use std::sync::OnceLock;

/// The host's callback: `(index, params, context, event)` as JSON texts, to
/// the answer as JSON text, or the reason it failed.
pub type HostFn = fn(u32, &str, &str, &str) -> std::result::Result<String, String>;

static HOST: OnceLock<HostFn> = OnceLock::new();

/// Install the host's callback (once per process: later calls keep the first).
pub fn set_host(f: HostFn) {
    let _ = HOST.set(f);
}

/// One use of a function implementation: which one (its index in the names
/// the machine was built with) and the `params` the use gives, as JSON text.
#[derive(Debug, Clone)]
pub struct HostUse {
    pub index: u32,
    /// `guards.NAME` or `actions.NAME`.
    pub name: String,
    pub params: String,
    /// Where the definition uses it.
    pub path: String,
}

impl HostUse {
    /// Call the implementation over `context` and the event; its answer as a value.
    #[inline(never)]
    pub fn call(&self, context: &Value, event_id: &str, event_type: &str, payload: &Value) -> Result<Value> {
        let host = HOST.get().ok_or_else(|| self.failed("no host runs function implementations here"))?;
        let mut event = Vec::with_capacity(64);
        event.extend_from_slice(b"{\"id\":");
        json::write_str(event_id, &mut event);
        event.extend_from_slice(b",\"type\":");
        json::write_str(event_type, &mut event);
        event.extend_from_slice(b",\"payload\":");
        json::write_json(payload, &mut event);
        event.push(b'}');
        let event = json::utf8(event);
        let answer = host(self.index, &self.params, &json::to_text(context), &event).map_err(|why| self.failed(&why))?;
        json::parse_value(&answer).map_err(|_| self.failed("its answer is not JSON"))
    }

    /// `implementation_failed`, naming the implementation and its use.
    pub fn failed(&self, why: &str) -> Error {
        Error::at(Code::ImplementationFailed, self.path.as_str(), ["implementation ", &self.name, " failed: ", why].concat())
    }
}

