//! The one error type: a stable machine-readable `code`, a lowercase message
//! without a trailing period, and the JSON path it concerns where there is one.

use crate::json::members;
use std::fmt;

/// Stable error codes. The string form (`as_str`) is the public contract:
/// it appears in outcomes, in the CLI's stderr and on JavaScript errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    // definition
    InvalidJson,
    InvalidDefinition,
    UnknownTarget,
    InvalidInitial,
    DuplicateStateId,
    InvalidExpression,
    InvalidGuard,
    UnknownAction,
    /// A guard, action or delay named by the definition that nothing implements.
    Unimplemented,
    AlwaysLoop,
    DefinitionTooLarge,
    // event
    InvalidEvent,
    MissingEventId,
    MissingEventType,
    EventIdTooLong,
    PayloadTooLarge,
    NestingTooDeep,
    NumberOutOfRange,
    UnknownEventType,
    InvalidPayload,
    IdConflict,
    ReservedEvent,
    // snapshot
    InvalidSnapshot,
    SnapshotTooLarge,
    UnsupportedSnapshotFormat,
    WrongMachine,
    MissingState,
    // calls (the JavaScript API's arguments)
    MissingProcessId,
    MissingNow,
    InvalidNow,
    InvalidArgument,
    // runtime
    ExpressionFailed,
    /// A guard or action given as a function failed or answered with the wrong type.
    ImplementationFailed,
    MicrostepLimit,
    UnknownEffect,
    InvalidEffectReport,
    /// The engine itself went wrong (a configuration it must never reach):
    /// nothing was applied or written.
    InternalError,
    // command line
    Usage,
    Io,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        use Code::*;
        match self {
            InvalidJson => "invalid_json",
            InvalidDefinition => "invalid_definition",
            UnknownTarget => "unknown_target",
            InvalidInitial => "invalid_initial",
            DuplicateStateId => "duplicate_state_id",
            InvalidExpression => "invalid_expression",
            InvalidGuard => "invalid_guard",
            UnknownAction => "unknown_action",
            Unimplemented => "unimplemented",
            AlwaysLoop => "always_loop",
            DefinitionTooLarge => "definition_too_large",
            InvalidEvent => "invalid_event",
            MissingEventId => "missing_event_id",
            MissingEventType => "missing_event_type",
            EventIdTooLong => "event_id_too_long",
            PayloadTooLarge => "payload_too_large",
            NestingTooDeep => "nesting_too_deep",
            NumberOutOfRange => "number_out_of_range",
            UnknownEventType => "unknown_event_type",
            InvalidPayload => "invalid_payload",
            IdConflict => "id_conflict",
            ReservedEvent => "reserved_event",
            InvalidSnapshot => "invalid_snapshot",
            SnapshotTooLarge => "snapshot_too_large",
            UnsupportedSnapshotFormat => "unsupported_snapshot_format",
            WrongMachine => "wrong_machine",
            MissingState => "missing_state",
            MissingProcessId => "missing_process_id",
            MissingNow => "missing_now",
            InvalidNow => "invalid_now",
            InvalidArgument => "invalid_argument",
            ExpressionFailed => "expression_failed",
            ImplementationFailed => "implementation_failed",
            MicrostepLimit => "microstep_limit",
            UnknownEffect => "unknown_effect",
            InvalidEffectReport => "invalid_effect_report",
            InternalError => "internal_error",
            Usage => "usage",
            Io => "io",
        }
    }

    /// Every code, for documentation and for tests that check the list is stable.
    pub const ALL: &'static [Code] = &[
        Code::InvalidJson,
        Code::InvalidDefinition,
        Code::UnknownTarget,
        Code::InvalidInitial,
        Code::DuplicateStateId,
        Code::InvalidExpression,
        Code::InvalidGuard,
        Code::UnknownAction,
        Code::Unimplemented,
        Code::AlwaysLoop,
        Code::DefinitionTooLarge,
        Code::InvalidEvent,
        Code::MissingEventId,
        Code::MissingEventType,
        Code::EventIdTooLong,
        Code::PayloadTooLarge,
        Code::NestingTooDeep,
        Code::NumberOutOfRange,
        Code::UnknownEventType,
        Code::InvalidPayload,
        Code::IdConflict,
        Code::ReservedEvent,
        Code::InvalidSnapshot,
        Code::SnapshotTooLarge,
        Code::UnsupportedSnapshotFormat,
        Code::WrongMachine,
        Code::MissingState,
        Code::MissingProcessId,
        Code::MissingNow,
        Code::InvalidNow,
        Code::InvalidArgument,
        Code::ExpressionFailed,
        Code::ImplementationFailed,
        Code::MicrostepLimit,
        Code::UnknownEffect,
        Code::InvalidEffectReport,
        Code::InternalError,
        Code::Usage,
        Code::Io,
    ];
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a stable code, a message naming what is wrong, and the JSON
/// path of the offending value when there is one (`states.paid.on.SHIP[0].target`).
///
/// Its fields live behind one pointer (read them as `e.code`, `e.message`,
/// `e.path`): a `Result` carrying it is then as small as its `Ok` value allows,
/// and every function returning one moves less and compiles smaller.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Fields>);

/// What an [`Error`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    pub code: Code,
    pub message: String,
    pub path: Option<String>,
}

impl std::ops::Deref for Error {
    type Target = Fields;

    fn deref(&self) -> &Fields {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut Fields {
        &mut self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error").field("code", &self.code).field("message", &self.message).field("path", &self.path).finish()
    }
}

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error(Box::new(Fields { code, message: message.into(), path: None }))
    }

    pub fn at(code: Code, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::at_owned(code, path.into(), message.into())
    }

    // One copy of the formatting, not one per argument type of `at`.
    fn at_owned(code: Code, path: String, mut message: String) -> Self {
        message.push_str(" at ");
        message.push_str(if path.is_empty() { "(root)" } else { &path });
        Error(Box::new(Fields { code, message, path: Some(path) }))
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut v = members! { "code": self.code.as_str(), "message": self.message };
        if let Some(p) = &self.path {
            v.insert("path".into(), serde_json::Value::String(p.clone()));
        }
        serde_json::Value::Object(v)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
