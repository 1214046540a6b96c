//! Running one attributor over the labelled set and the ablation chain.

use crate::chain::Hop;
use crate::{AlgoRun, CaseResult, CostSource, Dataset, EvalError, HopResult, human_micros};
use memlineage::attribution::{Attribution, Attributor, ParentText};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, Hash256};
use std::time::Instant;

/// A stand-in entry id for the `i`-th parent (the algorithms read texts, not ids).
pub fn fake_id(i: usize) -> EntryId {
    EntryId(Hash256::of(&(i as u64).to_be_bytes()))
}

/// How a run reports the cost of one call: given the child, the parent texts and the wall
/// time just measured (µs), the cost to record (e.g. the time stored in a replay file).
pub type CostFn<'a> = &'a dyn Fn(&str, &[&str], u64) -> u64;

/// The cost as timed in this run.
pub fn timed(_: &str, _: &[&str], us: u64) -> u64 {
    us
}

/// Options of [`run_algo`].
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// The cost of each call.
    pub cost: CostFn<'a>,
    /// Where those costs come from.
    pub cost_source: CostSource,
    /// Print every call's weights to stderr.
    pub verbose: bool,
}

/// Runs `algo` (short name `short`) over every case of `ds` and every hop of `chain`.
pub fn run_algo(
    short: &str,
    algo: &dyn Attributor,
    ds: &Dataset,
    chain: &[Hop],
    opts: RunOptions<'_>,
) -> Result<AlgoRun, EvalError> {
    let call = |child: &str, texts: &[&str]| -> Result<(Attribution, u64), EvalError> {
        let parents: Vec<ParentText<'_>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| ParentText {
                id: fake_id(i),
                text: t,
            })
            .collect();
        let start = Instant::now();
        let a = algo
            .attribute_detailed(child, &parents)
            .map_err(|e| EvalError::Run(format!("{short}: {e}")))?;
        let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        if a.weights.len() != texts.len() {
            return Err(EvalError::Run(format!(
                "{short}: {} weights for {} parents",
                a.weights.len(),
                texts.len()
            )));
        }
        Ok((a, (opts.cost)(child, texts, us)))
    };
    let note = |a: &Attribution| {
        a.fell_back
            .as_ref()
            .map(|f| format!("  FELL BACK: {}", f.reason))
            .unwrap_or_default()
    };
    // The name each answer was recorded under (a judge with request modes names the mode
    // that answered; `Attributor::name` otherwise).
    let mut names = std::collections::BTreeSet::new();
    let mut name_of = |a: &Attribution| {
        names.insert(a.name.clone().unwrap_or_else(|| algo.name()));
    };
    let mut results = Vec::new();
    for c in &ds.case {
        let texts: Vec<&str> = c.parents.iter().map(|p| p.text.as_str()).collect();
        let (a, micros) = call(&c.child, &texts)?;
        name_of(&a);
        if opts.verbose {
            let ws: Vec<String> = a
                .weights
                .iter()
                .zip(&c.parents)
                .map(|(w, p)| format!("{w}{}", if p.shaped { "*" } else { "" }))
                .collect();
            eprintln!(
                "{short:>19} {:<26} [{}] {}{}",
                c.id,
                ws.join(", "),
                human_micros(micros),
                note(&a)
            );
        }
        results.push(CaseResult {
            case: c.id.clone(),
            weights: a.weights,
            fell_back: a.fell_back.map(|f| f.reason),
            micros,
        });
    }
    let mut hops = Vec::new();
    for hop in chain {
        let texts: Vec<&str> = hop.parents.iter().map(String::as_str).collect();
        let (a, _) = call(&hop.child, &texts)?;
        name_of(&a);
        if opts.verbose {
            let ws: Vec<String> = a.weights.iter().map(Weight::to_string).collect();
            eprintln!(
                "{short:>19} chain hop {} [{}] true parent {}{}",
                hop.k,
                ws.join(", "),
                hop.true_parent,
                note(&a)
            );
        }
        hops.push(HopResult {
            k: hop.k,
            true_parent: hop.true_parent,
            weights: a.weights,
            fell_back: a.fell_back.map(|f| f.reason),
        });
    }
    let name = if names.is_empty() {
        algo.name()
    } else {
        names.into_iter().collect::<Vec<_>>().join(" or ")
    };
    Ok(AlgoRun {
        algorithm: short.to_string(),
        name,
        cost_source: opts.cost_source,
        results,
        hops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage::attribution::Coarse;

    #[test]
    fn coarse_over_the_committed_set_and_chain() {
        let ds = Dataset::parse(include_str!("../../../data/attribution/derivations.toml"))
            .expect("set");
        let chain = crate::chain::build(
            include_str!("../../memlineage-eval/scenarios/ablation.toml"),
            include_str!("../../../data/attribution/ablation-chain.toml"),
        )
        .expect("chain");
        let opts = RunOptions {
            cost: &timed,
            cost_source: CostSource::Measured,
            verbose: false,
        };
        let run = run_algo("coarse", &Coarse, &ds, &chain, opts).expect("run");
        assert_eq!(run.results.len(), ds.case.len());
        assert_eq!(run.hops.len(), chain.len());
        assert!(run.chain().iter().all(|w| *w == Weight::ONE));
        assert!(run.results.iter().all(|r| r.fell_back.is_none()));
    }
}
