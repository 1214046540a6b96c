//! The τ×K ablation: does the EXTERNAL label of a root still reach the tip of a chain of K
//! derivations, for each τ on a grid and each attribution weight model?
//!
//! The chain is an EXTERNAL root (a web page) and K summaries by the agent, each with one
//! parent, the previous hop; edge k joins hop k−1 to hop k. Every label is computed by the real
//! write path (`Memory::write`, τ and the fallback set on each entry), in one fresh store per
//! weight model and fallback.

use crate::SafeTau;
use crate::error::EvalError;
use crate::grammar::substitute;
use crate::scenario::{AblationConfig, AgentFile, Measured};
use crate::world::{self, Mem};
use memlineage::WriteRequest;
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::label::{Fallback, Weight};
use std::collections::BTreeMap;

/// One weight model's row set.
#[derive(Clone, Debug)]
pub(crate) struct ModelResult {
    /// `coarse`, `geometric` or `measured`.
    pub name: &'static str,
    /// Edge weights, edge 1 first; `None` when not measured.
    pub edges: Option<Vec<Weight>>,
    /// fallback → K (1-based index − 1) → τ index → the tip is untrusted.
    pub grid: BTreeMap<&'static str, Vec<Vec<bool>>>,
    /// fallback → K → largest safe τ.
    pub safe: BTreeMap<&'static str, BTreeMap<u32, SafeTau>>,
}

/// The whole ablation.
#[derive(Clone, Debug)]
pub(crate) struct Ablation {
    pub max_k: u32,
    /// The τ grid, in basis points.
    pub taus: Vec<u16>,
    pub models: Vec<ModelResult>,
    pub measured: Measured,
}

/// Geometric weights: edge k weighs w0·d^(k−1), rounded half up to basis points, computed
/// exactly in integers.
pub(crate) fn geometric(w0: Weight, d: Weight, max_k: u32) -> Vec<Weight> {
    (1..=max_k)
        .map(|k| {
            let mut num: u128 = u128::from(w0.bp());
            let mut den: u128 = 1;
            for _ in 1..k {
                num *= u128::from(d.bp());
                den *= 10_000;
            }
            let bp = (num + den / 2) / den;
            Weight::from_bp(u16::try_from(bp).unwrap_or(10_000)).unwrap_or(Weight::ONE)
        })
        .collect()
}

const FALLBACKS: [(&str, Fallback); 2] = [
    ("permissive", Fallback::Permissive),
    ("strict", Fallback::Strict),
];

/// Runs the ablation; `tick` after each chain.
pub(crate) fn run(
    agent: &AgentFile,
    cfg: &AblationConfig,
    measured: &Measured,
    tick: &mut dyn FnMut(),
) -> Result<Ablation, EvalError> {
    let step = cfg.tau_step.bp().max(1);
    let taus: Vec<u16> = (0..=10_000u16).step_by(usize::from(step)).collect();
    let models: Vec<(&'static str, Option<Vec<Weight>>)> = vec![
        ("coarse", Some(vec![Weight::ONE; cfg.max_k as usize])),
        (
            "geometric",
            Some(geometric(cfg.geometric_w0, cfg.geometric_d, cfg.max_k)),
        ),
        (
            "measured",
            measured.weights(cfg.max_k).map(<[Weight]>::to_vec),
        ),
    ];
    let mut out = Vec::new();
    for (name, edges) in models {
        let mut grid = BTreeMap::new();
        let mut safe = BTreeMap::new();
        for (fname, fallback) in FALLBACKS {
            let mut rows = vec![vec![false; taus.len()]; cfg.max_k as usize];
            let mut best = BTreeMap::new();
            match &edges {
                Some(edges) => {
                    let mem = world::new_memory_with(agent, Weight::ONE, Fallback::Permissive)?;
                    for (ti, tau) in taus.iter().enumerate() {
                        let tau = Weight::from_bp(*tau).unwrap_or(Weight::ONE);
                        let labels = chain(&mem, cfg, edges, tau, fallback)?;
                        for (k, untrusted) in labels.into_iter().enumerate() {
                            rows[k][ti] = untrusted;
                        }
                        tick();
                    }
                    for (k, row) in rows.iter().enumerate() {
                        let s = row
                            .iter()
                            .zip(&taus)
                            .filter(|(u, _)| **u)
                            .map(|(_, t)| *t)
                            .max()
                            .map_or(SafeTau::None, SafeTau::Tau);
                        best.insert(k as u32 + 1, s);
                    }
                }
                None => {
                    for _ in &taus {
                        tick();
                    }
                    for k in 1..=cfg.max_k {
                        best.insert(k, SafeTau::NotMeasured);
                    }
                }
            }
            grid.insert(fname, rows);
            safe.insert(fname, best);
        }
        out.push(ModelResult {
            name,
            edges,
            grid,
            safe,
        });
    }
    Ok(Ablation {
        max_k: cfg.max_k,
        taus,
        models: out,
        measured: measured.clone(),
    })
}

/// Number of chains [`run`] builds (for the progress total).
pub(crate) fn units(cfg: &AblationConfig) -> u64 {
    let step = u64::from(cfg.tau_step.bp().max(1));
    (10_000 / step + 1) * 3 * FALLBACKS.len() as u64
}

/// Writes the root and K hops; returns, for each hop, whether its label is untrusted.
fn chain(
    mem: &Mem,
    cfg: &AblationConfig,
    edges: &[Weight],
    tau: Weight,
    fallback: Fallback,
) -> Result<Vec<bool>, EvalError> {
    let root = mem.write(WriteRequest::new(
        &crate::world::principal(&cfg.root_writer)?,
        EntryKind::ToolOutput,
        cfg.root_content.as_str(),
    ))?;
    let mut prev = root.id;
    let mut out = Vec::with_capacity(edges.len());
    for (i, w) in edges.iter().enumerate() {
        let mut vars = BTreeMap::new();
        vars.insert("k".to_string(), (i + 1).to_string());
        let content = substitute(&cfg.hop_content, &vars);
        let hop = mem.write(
            WriteRequest::new(
                &crate::world::principal("agent")?,
                EntryKind::Derived,
                content,
            )
            .with_parents(
                vec![Parent {
                    id: prev,
                    weight: *w,
                }],
                crate::world::attribution("ablation")?,
            )
            .with_label_rule(Some(tau), Some(fallback)),
        )?;
        out.push(hop.label.is_untrusted());
        prev = hop.id;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_weights_in_basis_points() {
        let w0 = Weight::from_bp(9000).unwrap_or(Weight::ONE);
        let d = Weight::from_bp(7000).unwrap_or(Weight::ONE);
        let bp: Vec<u16> = geometric(w0, d, 8).iter().map(|w| w.bp()).collect();
        assert_eq!(bp, [9000, 6300, 4410, 3087, 2161, 1513, 1059, 741]);
    }
}
