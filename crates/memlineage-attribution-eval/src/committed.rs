//! The committed measurement (`data/attribution/measured_weights.toml`), read back and
//! compared with a new run — how the replay path is checked without the model.
//!
//! Coarse and the replayed LmSelfEval judges give exactly the committed weights on every
//! machine (no model runs). AttnAttr, re-measured with the model, may differ in the last
//! bits of a float between CPUs, so its comparison is left to the caller.

use crate::{AlgoRun, EvalError};
use memlineage_core::label::Weight;
use serde::Deserialize;

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Committed {
    /// One entry per algorithm.
    pub algorithm: Vec<CommittedRun>,
}

/// One algorithm's committed weights.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommittedRun {
    /// Short name.
    pub algorithm: String,
    /// Attribution name recorded in entries.
    pub name: String,
    /// Weight of the true edge of each chain hop.
    pub chain: Vec<Weight>,
    /// The chain hops, every parent's weight.
    #[serde(default)]
    pub hop: Vec<CommittedHop>,
    /// The labelled cases.
    #[serde(default)]
    pub case: Vec<CommittedCase>,
}

/// One committed chain hop.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommittedHop {
    /// Hop number.
    pub k: u32,
    /// Position of hop k−1 among the parents.
    pub true_parent: usize,
    /// Every parent's weight.
    pub weights: Vec<Weight>,
    /// Whether the algorithm fell back.
    pub fell_back: bool,
}

/// One committed case.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommittedCase {
    /// Case id.
    pub id: String,
    /// Case kind.
    pub kind: String,
    /// The labels.
    pub shaped: Vec<bool>,
    /// The weights.
    pub weights: Vec<Weight>,
    /// Whether the algorithm fell back.
    pub fell_back: bool,
}

impl Committed {
    /// Parses the file.
    pub fn parse(text: &str) -> Result<Committed, EvalError> {
        toml::from_str(text)
            .map_err(|e| EvalError::Data(format!("data/attribution/measured_weights.toml: {e}")))
    }

    /// The entry of algorithm `short`.
    pub fn get(&self, short: &str) -> Option<&CommittedRun> {
        self.algorithm.iter().find(|a| a.algorithm == short)
    }
}

/// Every way `run` differs from `committed` (empty when it reproduces it exactly).
pub fn differences(committed: &CommittedRun, run: &AlgoRun) -> Vec<String> {
    let mut out = Vec::new();
    let who = &run.algorithm;
    if committed.name != run.name {
        out.push(format!(
            "{who}: recorded name `{}`, committed `{}`",
            run.name, committed.name
        ));
    }
    if committed.case.len() != run.results.len() {
        out.push(format!(
            "{who}: {} cases, committed {}",
            run.results.len(),
            committed.case.len()
        ));
    }
    for (c, r) in committed.case.iter().zip(&run.results) {
        if c.id != r.case {
            out.push(format!(
                "{who}: case `{}` where `{}` is committed",
                r.case, c.id
            ));
        } else if c.weights != r.weights || c.fell_back != r.fell_back.is_some() {
            out.push(format!(
                "{who}: case `{}`: weights {} (fell back: {}), committed {} (fell back: {})",
                c.id,
                list(&r.weights),
                r.fell_back.is_some(),
                list(&c.weights),
                c.fell_back
            ));
        }
    }
    if committed.chain != run.chain() {
        out.push(format!(
            "{who}: chain {}, committed {}",
            list(&run.chain()),
            list(&committed.chain)
        ));
    }
    for (c, h) in committed.hop.iter().zip(&run.hops) {
        if c.k != h.k || c.weights != h.weights || c.fell_back != h.fell_back.is_some() {
            out.push(format!(
                "{who}: chain hop {}: weights {}, committed {}",
                h.k,
                list(&h.weights),
                list(&c.weights)
            ));
        }
    }
    out
}

fn list(ws: &[Weight]) -> String {
    let items: Vec<String> = ws.iter().map(Weight::to_string).collect();
    format!("[{}]", items.join(", "))
}
