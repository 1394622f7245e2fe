//! Guards and computed values: JSONLogic, run by the `datalogic-rs` crate.
//!
//! Expressions are compiled once when the machine is loaded; evaluation sees a
//! scope `{ context, event: { id, type, payload }, state }`.

use crate::error::{Code, Error, Result};
use datalogic_rs::{Engine, FromDataValue, Logic};
use serde_json::Value;

/// Index of a compiled expression in [`Exprs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExprId(pub(crate) u32);

/// The compiled expressions of one machine, with the JSON path each came from.
pub struct Exprs {
    engine: Engine,
    compiled: Vec<(Logic, String, Value)>,
}

impl std::fmt::Debug for Exprs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Exprs({})", self.compiled.len())
    }
}

impl Default for Exprs {
    fn default() -> Self {
        Exprs { engine: Engine::new(), compiled: Vec::new() }
    }
}

impl Exprs {
    /// Compile `rule`, naming `path` in the error when it is not valid JSONLogic.
    pub fn compile(&mut self, rule: &Value, path: &str) -> Result<ExprId> {
        let logic = self
            .engine
            .compile(rule)
            .map_err(|e| Error::at(Code::InvalidExpression, path, format!("invalid expression ({e})")))?;
        self.compiled.push((logic, path.to_string(), rule.clone()));
        Ok(ExprId(self.compiled.len() as u32 - 1))
    }

    /// The expression as written in the definition.
    pub fn source(&self, id: ExprId) -> &Value {
        &self.compiled[id.0 as usize].2
    }

    pub fn path(&self, id: ExprId) -> &str {
        &self.compiled[id.0 as usize].1
    }

    /// Evaluate to a JSON value.
    pub fn eval(&self, id: ExprId, scope: &Value) -> Result<Value> {
        let (logic, path, _) = &self.compiled[id.0 as usize];
        let arena = datalogic_rs::bumpalo::Bump::new();
        let out = self
            .engine
            .evaluate(logic, scope, &arena)
            .map_err(|e| Error::at(Code::ExpressionFailed, path.as_str(), format!("expression failed ({e})")))?;
        <Value as FromDataValue>::from_arena(out)
            .map_err(|e| Error::at(Code::ExpressionFailed, path.as_str(), format!("expression failed ({e})")))
    }

    /// Evaluate with JSONLogic truthiness.
    pub fn test(&self, id: ExprId, scope: &Value) -> Result<bool> {
        let (logic, path, _) = &self.compiled[id.0 as usize];
        let arena = datalogic_rs::bumpalo::Bump::new();
        let out = self
            .engine
            .evaluate(logic, scope, &arena)
            .map_err(|e| Error::at(Code::ExpressionFailed, path.as_str(), format!("guard failed ({e})")))?;
        Ok(self.engine.truthy(out))
    }
}
