//! A parsed gate policy (`docs/gate.md`, "Policy file"), shared by every gate call that uses it:
//! parsed and its regular expressions compiled once.

use crate::errors::Fail;
use crate::guard::guard;
use memlineage_core::gate::Policy;
use pyo3::prelude::*;
use std::sync::Arc;

/// A gate policy, parsed from TOML.
#[pyclass(frozen, module = "memlineage._native", name = "NativePolicy")]
pub struct NativePolicy {
    pub(crate) policy: Arc<Policy>,
    text: String,
}

#[pymethods]
impl NativePolicy {
    /// Parses TOML text; `origin` (a file name) prefixes the message of an invalid policy, as
    /// `memlineage gate --policy FILE` does.
    #[staticmethod]
    #[pyo3(signature = (text, origin=None))]
    fn parse(text: String, origin: Option<String>) -> PyResult<NativePolicy> {
        guard(|| {
            let policy = Policy::parse(&text).map_err(|e| {
                Fail::Policy(match &origin {
                    Some(o) => format!("{o}: {e}"),
                    None => e.to_string(),
                })
            })?;
            Ok(NativePolicy {
                policy: Arc::new(policy),
                text,
            })
        })
    }

    /// The TOML text the policy was parsed from.
    #[getter]
    fn text(&self) -> &str {
        &self.text
    }

    /// `enforce` or `record`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.policy.mode.as_str()
    }

    /// Whether the policy names `tool` (its calls are checked).
    fn is_sensitive(&self, tool: &str) -> bool {
        self.policy.is_sensitive(tool)
    }

    /// The sensitive tools' names, sorted.
    fn tools(&self) -> Vec<String> {
        self.policy.tools.keys().cloned().collect()
    }

    /// Every parameter the policy checks: `[(tool, param, type)]`, sorted.
    fn params(&self) -> Vec<(String, String, &'static str)> {
        self.policy
            .tools
            .iter()
            .flat_map(|(t, tp)| {
                tp.params
                    .iter()
                    .map(move |(p, pp)| (t.clone(), p.clone(), pp.kind.name()))
            })
            .collect()
    }
}
