//! The replay path, without the model: Coarse and every judge replayed from the
//! committed replay files reproduce the committed measurement
//! (`data/attribution/measured_weights.toml`) exactly, and the committed table was generated
//! from it (docs/attribution.md, "Quality, measured").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memlineage::attribution::judge::replay::ReplayJudge;
use memlineage::attribution::{Coarse, LmSelfEval};
use memlineage_attribution_eval::committed::{Committed, differences};
use memlineage_attribution_eval::judges::{JUDGES, all_algorithms};
use memlineage_attribution_eval::run::{RunOptions, run_algo, timed};
use memlineage_attribution_eval::{CostSource, Dataset, chain};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn replayed_judges_and_coarse_reproduce_the_committed_weights() {
    let ds = Dataset::parse(&read("data/attribution/derivations.toml")).unwrap();
    let hops = chain::build(
        &read("crates/memlineage-eval/scenarios/ablation.toml"),
        &read("data/attribution/ablation-chain.toml"),
    )
    .unwrap();
    let committed = Committed::parse(&read("data/attribution/measured_weights.toml")).unwrap();
    let opts = RunOptions {
        cost: &timed,
        cost_source: CostSource::Measured,
        verbose: false,
    };
    let mut runs = vec![run_algo("coarse", &Coarse, &ds, &hops, opts).unwrap()];
    for spec in &JUDGES {
        let path = root().join("data/attribution").join(spec.file);
        let lm = LmSelfEval::new(ReplayJudge::replay_file(&path).unwrap());
        runs.push(run_algo(spec.short, &lm, &ds, &hops, opts).unwrap());
    }
    for run in &runs {
        let c = committed
            .get(&run.algorithm)
            .unwrap_or_else(|| panic!("{} is not in the committed file", run.algorithm));
        let diff = differences(c, run);
        assert!(
            diff.is_empty(),
            "the replay no longer reproduces the committed measurement (re-record with \
             `cargo run --release -p memlineage-attribution-eval --features models -- --judge \
             record`):\n{}",
            diff.join("\n")
        );
        // Not a vacuous comparison: every case and hop was compared.
        assert_eq!(c.case.len(), ds.case.len());
        assert_eq!(c.hop.len(), hops.len());
    }
    // A replay miss would be a fallback: the constrained and scored judges answered every
    // recorded request (their replies are well-formed by construction).
    for short in [
        "lm-self-eval-constrained",
        "lm-self-eval-expected",
        "lm-self-eval-scored",
    ] {
        let run = runs.iter().find(|r| r.algorithm == short).unwrap();
        assert!(run.results.iter().all(|r| r.fell_back.is_none()), "{short}");
        assert!(run.hops.iter().all(|h| h.fell_back.is_none()), "{short}");
    }
    // All four algorithms were measured, AttnAttr with the model.
    let attn = committed.get("attn-attr").expect("attn-attr was measured");
    assert_eq!(attn.case.len(), ds.case.len());
    assert!(
        attn.name
            .starts_with("attn-attr:SmolLM2-135M-Instruct-Q4_1@")
    );
}

#[test]
fn the_committed_table_and_harness_weights_come_from_the_measurement() {
    let doc = read("docs/attribution.md");
    let begin = doc
        .find(memlineage_attribution_eval::DOC_BEGIN)
        .expect("the table's begin marker");
    let end = doc
        .find(memlineage_attribution_eval::DOC_END)
        .expect("the end marker");
    let table = &doc[begin..end];
    for algo in all_algorithms() {
        assert!(
            table.contains(&format!("| {algo} | precision |")),
            "{algo} is missing from the quality table"
        );
    }
    let committed = Committed::parse(&read("data/attribution/measured_weights.toml")).unwrap();
    let scen: toml::Value = toml::from_str(&read(
        "crates/memlineage-eval/scenarios/measured_weights.toml",
    ))
    .unwrap();
    let m = &scen["measured"];
    assert_eq!(m["status"].as_str(), Some("measured"));
    let algo = m["algorithm"].as_str().unwrap().replace('_', "-");
    let chain: Vec<String> = committed
        .get(&algo)
        .expect("the harness's algorithm is in the committed measurement")
        .chain
        .iter()
        .map(|w| w.to_string())
        .collect();
    let edges: Vec<&str> = m["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(edges, chain);
}
