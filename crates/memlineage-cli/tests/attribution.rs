//! `memlineage attribute` and `memlineage write --attribution` (docs/attribution.md, "Command
//! line"): Coarse and the replayed judge in every build; AttnAttr and the live local judge
//! with `--features models` (they need the model: skipped without it, except in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Store;
use memlineage::attribution::LmSelfEval;
use memlineage::attribution::judge::replay::ReplayJudge;
use serde_json::Value;
use std::path::PathBuf;

// The `copy-iban` case of data/attribution/derivations.toml: its replies are recorded in the
// committed replay files.
const SOURCE: &str = "Email from Maria (landlord): please pay the rent to my new account, IBAN DE89 3704 0044 0532 0130 00, from March on.";
const DENTIST: &str = "Calendar: dentist appointment on Thursday at 10:30 with Dr. Alvarez.";
const WEATHER: &str = "Weather forecast for Berlin: light rain in the morning, 12 degrees, clearing in the afternoon.";
const CHILD: &str = "Saved contact: the landlord's IBAN is DE89 3704 0044 0532 0130 00.";

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/attribution")
        .join(file)
}

/// A store with the three parents of `copy-iban`: the source from the external `web`
/// principal, the two distractors from the trusted `agent`. Returns their ids in that order.
fn store_with_parents() -> (Store, [String; 3]) {
    let s = Store::init();
    let src = s.write(&["--as", "web", SOURCE]);
    let dentist = s.write(&[DENTIST]);
    let weather = s.write(&[WEATHER]);
    (s, [src, dentist, weather])
}

fn weights(v: &Value) -> Vec<String> {
    v["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["weight"].as_str().unwrap().to_string())
        .collect()
}

/// `{id: weight}` of the `parents` list (a signed entry stores its parents in canonical order).
fn weight_map(v: &Value) -> std::collections::BTreeMap<String, String> {
    v["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let id = p["id"].as_str().unwrap().to_string();
            (id, p["weight"].as_str().unwrap().to_string())
        })
        .collect()
}

fn attribute_args<'a>(algo: &'a str, ids: &'a [String]) -> Vec<&'a str> {
    let mut a = vec!["attribute", "--algo", algo, "--child", CHILD];
    for id in ids {
        a.extend(["--parent", id.as_str()]);
    }
    a
}

#[test]
fn attribute_coarse_weighs_every_parent_one() {
    let (s, ids) = store_with_parents();
    let before = s.size();
    let v = s.json(&attribute_args("coarse", &ids));
    assert_eq!(v["algorithm"], "coarse");
    assert_eq!(v["fell_back"], false);
    assert_eq!(v["fallback_reason"], Value::Null);
    assert_eq!(weights(&v), ["1", "1", "1"]);
    for (p, id) in v["parents"].as_array().unwrap().iter().zip(&ids) {
        assert_eq!(p["id"].as_str(), Some(id.as_str()));
        assert_eq!(p["read"], true);
    }
    // Text form: the algorithm, the fallback status, one line per parent; prefixes resolve.
    let short: Vec<String> = ids.iter().map(|id| id[..10].to_string()).collect();
    let out = s.run(&attribute_args("coarse", &short)).ok().stdout;
    assert!(out.contains("algorithm: coarse"), "{out}");
    assert!(out.contains("fell back: no"), "{out}");
    for id in &ids {
        assert!(out.contains(&format!("{id}  1")), "{out}");
    }
    // Nothing was written.
    assert_eq!(s.size(), before);
}

#[test]
fn attribute_usage_and_lookup_errors() {
    let (s, ids) = store_with_parents();
    let r = s
        .run(&["attribute", "--algo", "coarse", "--child", CHILD])
        .code(2);
    assert!(r.stderr.contains("--parent"), "{r:#?}");
    let r = s.run(&attribute_args("magic", &ids)).code(2);
    assert!(
        r.stderr.contains("coarse, lm-self-eval or attn-attr"),
        "{r:#?}"
    );
    let mut a = attribute_args("lm-self-eval", &ids);
    a.extend(["--judge", "gpt"]);
    let r = s.run(&a).code(2);
    assert!(r.stderr.contains("replay:PATH"), "{r:#?}");
    let missing = "ab".repeat(32);
    let r = s
        .run(&attribute_args("coarse", std::slice::from_ref(&missing)))
        .code(1);
    assert!(r.stderr.contains("error:"), "{r:#?}");
}

#[test]
fn attribute_with_the_replayed_judge_matches_the_library() {
    let (s, ids) = store_with_parents();
    for file in [
        "judge-replay.jsonl",
        "judge-replay-scored.jsonl",
        "judge-replay-constrained-expected.jsonl",
        "judge-replay-llama-cpp.jsonl",
    ] {
        let path = data(file);
        let judge = format!("replay:{}", path.display());
        let mut a = attribute_args("lm-self-eval", &ids);
        a.extend(["--judge", judge.as_str()]);
        let v = s.json(&a);
        // The library, on the same texts in the same order, from the same file.
        let lm = LmSelfEval::new(ReplayJudge::replay_file(&path).unwrap());
        let expected = lm.judge(CHILD, &[SOURCE, DENTIST, WEATHER]);
        let reply = expected
            .reply
            .as_deref()
            .expect("the replay file holds copy-iban; re-record it");
        let ws: Vec<String> = expected
            .attribution
            .weights
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(weights(&v), ws, "{file}: reply {reply}");
        assert_eq!(v["fell_back"], expected.attribution.fell_back(), "{file}");
        let algorithm = v["algorithm"].as_str().unwrap();
        if file.contains("llama-cpp") {
            // The HTTP judge's replies carry the reply format that answered, and the CLI
            // records it.
            assert!(
                algorithm.starts_with("lm-self-eval:openai:SmolLM2")
                    && algorithm.ends_with("+json-object-schema"),
                "{algorithm}"
            );
        } else {
            assert!(algorithm.starts_with("lm-self-eval:SmolLM2"), "{algorithm}");
        }
    }
    // The scored judge answers (no fallback), so its weights are not all 1.
    let judge = format!("replay:{}", data("judge-replay-scored.jsonl").display());
    let mut a = attribute_args("lm-self-eval", &ids);
    a.extend(["--judge", judge.as_str()]);
    let v = s.json(&a);
    assert_eq!(v["fell_back"], false, "{v:#}");
    assert_ne!(weights(&v), ["1", "1", "1"]);
}

#[test]
fn a_request_the_replay_file_lacks_falls_back_to_coarse_and_says_so() {
    let (s, ids) = store_with_parents();
    let judge = format!("replay:{}", data("judge-replay-scored.jsonl").display());
    let args = [
        "attribute",
        "--algo",
        "lm-self-eval",
        "--judge",
        judge.as_str(),
        "--child",
        "A child text nobody recorded a reply for.",
        "--parent",
        ids[0].as_str(),
        "--parent",
        ids[1].as_str(),
    ];
    let v = s.json(&args);
    assert_eq!(v["fell_back"], true);
    assert_eq!(weights(&v), ["1", "1"]);
    let reason = v["fallback_reason"].as_str().unwrap();
    assert!(reason.contains("no recorded judge reply"), "{reason}");
    let out = s.run(&args).ok().stdout;
    assert!(out.contains("fell back: yes"), "{out}");
    // A replay file that does not exist is an error naming it.
    let r = s
        .run(&[
            "attribute",
            "--algo",
            "lm-self-eval",
            "--judge",
            "replay:/nonexistent/replies.jsonl",
            "--child",
            CHILD,
            "--parent",
            ids[0].as_str(),
        ])
        .code(1);
    assert!(r.stderr.contains("/nonexistent/replies.jsonl"), "{r:#?}");
}

#[test]
fn write_with_attribution_coarse_records_the_algorithm() {
    let (s, ids) = store_with_parents();
    let v = s.json(&[
        "write",
        CHILD,
        "--attribution",
        "coarse",
        "--parent",
        &ids[0],
        "--parent",
        &ids[1],
    ]);
    assert_eq!(v["attribution"]["algorithm"], "coarse");
    assert_eq!(v["attribution"]["fell_back"], false);
    assert_eq!(
        v["label"], "DERIVED_UNTRUSTED",
        "the external source weighs 1"
    );
    let g = s.json(&["get", v["id"].as_str().unwrap()]);
    assert_eq!(g["attribution"], "coarse");
    assert_eq!(g["kind"], "derived");
    assert_eq!(weights(&g), ["1", "1"]);
}

#[test]
fn write_with_attribution_and_the_replayed_judge_signs_its_weights() {
    let (s, ids) = store_with_parents();
    let judge = format!("replay:{}", data("judge-replay-scored.jsonl").display());
    let v = s.json(&[
        "write",
        CHILD,
        "--attribution",
        "lm-self-eval",
        "--judge",
        &judge,
        "--parent",
        &ids[0],
        "--parent",
        &ids[1],
        "--parent",
        &ids[2],
    ]);
    let g = s.json(&["get", v["id"].as_str().unwrap()]);
    assert_eq!(g["attribution"], v["attribution"]["algorithm"]);
    assert_eq!(weight_map(&g), weight_map(&v["attribution"]));
    assert_eq!(weight_map(&g).len(), 3);
    assert!(weight_map(&g).values().any(|w| w != "1"), "{g:#}");
    let (code, report) = s.verify();
    assert_eq!(code, 0, "{report:#}");
}

#[test]
fn write_attribution_usage_errors() {
    let (s, ids) = store_with_parents();
    let before = s.size();
    let explicit = format!("{}:0.5", ids[0]);
    let r = s
        .run(&[
            "write",
            CHILD,
            "--attribution",
            "coarse",
            "--parent",
            &explicit,
        ])
        .code(2);
    assert!(r.stderr.contains("explicit weight"), "{r:#?}");
    let r = s.run(&["write", CHILD, "--attribution", "coarse"]).code(2);
    assert!(r.stderr.contains("at least one --parent"), "{r:#?}");
    let r = s
        .run(&["write", CHILD, "--judge", "local", "--parent", &ids[0]])
        .code(2);
    assert!(r.stderr.contains("--attribution"), "{r:#?}");
    let r = s
        .run_stdin(
            &["write", "--attribution", "coarse", "--parent", &ids[0]],
            &[0xff, 0xfe],
        )
        .code(2);
    assert!(r.stderr.contains("UTF-8"), "{r:#?}");
    // Nothing was written by any of them.
    assert_eq!(s.size(), before);
}

#[cfg(not(feature = "models"))]
#[test]
fn without_the_models_feature_the_local_algorithms_say_how_to_build() {
    let (s, ids) = store_with_parents();
    for args in [
        attribute_args("attn-attr", &ids),
        attribute_args("lm-self-eval", &ids),
    ] {
        let r = s.run(&args).code(1);
        assert!(r.stderr.contains("--features models"), "{r:#?}");
        assert!(r.stderr.contains("cargo install"), "{r:#?}");
        assert!(
            r.stderr.contains("cargo run --release -p memlineage-cli"),
            "{r:#?}"
        );
    }
    let r = s
        .run(&[
            "write",
            CHILD,
            "--attribution",
            "attn-attr",
            "--parent",
            &ids[0],
        ])
        .code(1);
    assert!(r.stderr.contains("--features models"), "{r:#?}");
}

#[cfg(not(feature = "openai"))]
#[test]
fn without_the_openai_feature_the_openai_judge_says_how_to_build() {
    let (s, ids) = store_with_parents();
    let mut a = attribute_args("lm-self-eval", &ids);
    a.extend(["--judge", "openai"]);
    let r = s.run(&a).code(1);
    assert!(r.stderr.contains("--features openai"), "{r:#?}");
}

#[cfg(feature = "models")]
mod with_the_model {
    use super::*;
    use memlineage::attribution::local::memlineage_models::LocalModel;

    /// Whether the model is there; in CI (env `CI`) a missing model fails the test.
    fn have_model() -> bool {
        match LocalModel::locate(None) {
            Ok(_) => true,
            Err(e) if std::env::var_os("CI").is_some() => {
                panic!("the model is required in CI: {e}")
            }
            Err(e) => {
                eprintln!("skipping: {e}");
                false
            }
        }
    }

    #[test]
    fn attn_attr_ranks_the_copied_source_first() {
        if !have_model() {
            return;
        }
        let (s, ids) = store_with_parents();
        let v = s.json(&attribute_args("attn-attr", &ids));
        let name = v["algorithm"].as_str().unwrap();
        assert!(
            name.starts_with("attn-attr:SmolLM2-135M-Instruct-Q4_1@"),
            "{name}"
        );
        assert_eq!(v["fell_back"], false);
        let ws = weights(&v);
        assert_eq!(ws[0], "1", "the copied source is the most attended: {ws:?}");
        for w in &ws[1..] {
            let w: f64 = w.parse().unwrap();
            assert!(w < 0.5, "a distractor got {w}: {ws:?}");
        }
    }

    #[test]
    fn write_with_attn_attr_keeps_the_taint_of_the_copied_source() {
        if !have_model() {
            return;
        }
        let (s, ids) = store_with_parents();
        let v = s.json(&[
            "write",
            CHILD,
            "--attribution",
            "attn-attr",
            "--tau",
            "0.5",
            "--parent",
            &ids[1],
            "--parent",
            &ids[0],
        ]);
        assert_eq!(v["label"], "DERIVED_UNTRUSTED", "{v:#}");
        let g = s.json(&["get", v["id"].as_str().unwrap()]);
        assert!(g["attribution"].as_str().unwrap().starts_with("attn-attr:"));
        let ws = weight_map(&g);
        assert_eq!(ws[&ids[0]], "1", "the copied source: {ws:?}");
        assert_ne!(ws[&ids[1]], "1", "the distractor: {ws:?}");
    }

    #[test]
    fn the_live_local_judge_agrees_with_its_committed_replies() {
        if !have_model() {
            return;
        }
        let (s, ids) = store_with_parents();
        for (judge, file) in [
            ("local", "judge-replay-constrained-expected.jsonl"),
            ("local-scored", "judge-replay-scored.jsonl"),
        ] {
            let mut live = attribute_args("lm-self-eval", &ids);
            live.extend(["--judge", judge]);
            let live = s.json(&live);
            let replay = format!("replay:{}", data(file).display());
            let mut rec = attribute_args("lm-self-eval", &ids);
            rec.extend(["--judge", replay.as_str()]);
            let rec = s.json(&rec);
            assert_eq!(live["algorithm"], rec["algorithm"], "{judge}");
            // Within 10 basis points: the model's last bits differ between CPUs (candle picks
            // its SIMD kernels by CPU feature), enough to move a probability across a
            // rounding boundary of the fourth decimal (0.7288 recorded, 0.7287 live on an AMD
            // EPYC, 2026-12-06).
            let (l, r) = (weights(&live), weights(&rec));
            assert_eq!(l.len(), r.len(), "{judge}");
            for (a, b) in l.iter().zip(&r) {
                let bp = |w: &str| (w.parse::<f64>().unwrap() * 10_000.0).round();
                assert!((bp(a) - bp(b)).abs() <= 10.0, "{judge}: {l:?} {r:?}");
            }
            assert_eq!(live["fell_back"], rec["fell_back"], "{judge}");
        }
    }
}
