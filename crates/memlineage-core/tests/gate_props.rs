//! Property tests: no input makes the gate panic, and the types' operations agree.

use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{
    ContextEntry, Decision, GateInput, Mode, Outcome, ParamType, Policy, PreparedContext, ToolCall,
    decide,
};
use memlineage_core::hash::{EntryId, Hash256};
use memlineage_core::label::{TrustLabel, Weight};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const FRAGMENTS: &[&str] = &[
    "GB29 NWBK 6016 1331 9268 19",
    "UK12345678901234567890",
    "gb29nwbk60161331926819",
    "98.70",
    "$1,000",
    "1.000,50",
    "EUR98",
    "-5",
    "10:30",
    "1,2,3",
    "2024-01-05",
    "05/01/2024",
    "5 Jan 2024",
    "January 5, 2024",
    "Sept 31 2024",
    "3rd",
    "bob@example.com",
    "a@b",
    "@",
    "https://x.org/a/",
    "HTTP://Y.org:80/?q=%2f",
    "://",
    "(",
    ")",
    "]",
    "EUR",
    "é",
    "€",
    "\u{a0}",
    "\n",
    " ",
    ".",
    ",",
    "-",
    "/",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(
            prop_oneof![
                prop::sample::select(FRAGMENTS).prop_map(str::to_string),
                "[A-Za-z0-9 .,:/@$%()+#?=_<>-]{0,8}",
            ],
            0..12,
        )
        .prop_map(|v| v.concat()),
        "\\PC{0,60}",
        any::<String>(),
    ]
}

fn types() -> Vec<ParamType> {
    vec![
        ParamType::Iban,
        ParamType::Amount,
        ParamType::Date,
        ParamType::Email,
        ParamType::Url,
        ParamType::FreeText,
        ParamType::regex("[A-Z]{3}").expect("regex"),
        ParamType::regex(r"\(?\d+\)?").expect("regex"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every extracted value is matched again in its text, and is a valid parameter value of
    /// its type with the same normal form (so a repaired call re-checks cleanly).
    #[test]
    fn extraction_agrees_with_matching_and_normalisation(t in text()) {
        for ty in types() {
            for v in ty.extract(&t) {
                prop_assert!(ty.occurs_in(&v, &t), "{} {v} not matched in {t:?}", ty.name());
                let again = ty.normalise_str(&v.to_string());
                prop_assert!(again.is_ok(), "{} {v} does not normalise: {again:?}", ty.name());
                let again = again.expect("checked");
                prop_assert!(again.iter().any(|x| *x == v), "{} {v} → {again:?}", ty.name());
                let json = v.to_json(&json!(1));
                let back = ty.normalise(&json);
                prop_assert!(back.is_ok_and(|b| b.iter().any(|x| *x == v)), "{} {v} via {json}", ty.name());
            }
        }
    }

    /// Normalising any string never panics.
    #[test]
    fn normalising_never_panics(s in text()) {
        for ty in types() {
            let _ = ty.normalise_str(&s);
            let _ = ty.normalise(&Value::String(s.clone()));
        }
    }

    /// Parsing any text as a policy or a tool call never panics.
    #[test]
    fn parsers_never_panic(s in text()) {
        let _ = Policy::parse(&s);
        let _ = ToolCall::from_openai_json(&s);
        let wrapped = json!({"name": "send_money", "arguments": s}).to_string();
        let _ = ToolCall::from_openai_json(&wrapped);
    }

    /// Random arguments, contexts, citations and attribution never make `decide` panic; its
    /// decisions are consistent.
    #[test]
    fn decide_never_panics(
        texts in prop::collection::vec(text(), 0..5),
        labels in prop::collection::vec(0usize..4, 5),
        values in prop::collection::vec(prop_oneof![
            text().prop_map(Value::String),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            Just(Value::Null),
            Just(json!([1])),
        ], 7),
        cite in prop::collection::vec(0usize..6, 0..3),
        weights in prop::collection::vec(0u16..=10000, 0..3),
        repair in any::<bool>(),
        record in any::<bool>(),
    ) {
        let mode = if record { "record" } else { "enforce" };
        let policy = Policy::parse(&format!(r#"
mode = "{mode}"
[tools.t.params]
iban = {{ type = "iban" }}
amount = {{ type = "amount", require = "TRUSTED", unjustified = "allow" }}
date = {{ type = "date", require = "EXTERNAL" }}
email = {{ type = "email" }}
url = {{ type = "url" }}
memo = {{ type = "free_text", unjustified = "allow" }}
code = {{ type = "regex", pattern = "[A-Z]{{3}}" }}
"#)).expect("policy");
        let names = ["iban", "amount", "date", "email", "url", "memo", "code"];
        let mut args = Map::new();
        for (n, v) in names.iter().zip(&values) {
            args.insert(n.to_string(), v.clone());
        }
        let call = ToolCall::new("t", args);
        let ctx: Vec<ContextEntry> = texts.iter().enumerate().map(|(i, t)| ContextEntry {
            id: EntryId(Hash256::of(&[i as u8])),
            label: TrustLabel::ALL[labels[i]],
            writer: "w".into(),
            kind: EntryKind::Observation,
            content: if i == 3 { None } else { Some(t.clone()) },
            taint_path: vec![EntryId(Hash256::of(&[i as u8]))],
        }).collect();
        let id_of = |k: usize| EntryId(Hash256::of(&[k as u8]));
        let citations = BTreeMap::from([(
            names[cite.len() % names.len()].to_string(),
            cite.iter().map(|&k| id_of(k)).collect::<Vec<_>>(),
        )]);
        let attribution = BTreeMap::from([(
            "memo".to_string(),
            weights.iter().enumerate()
                .map(|(k, &bp)| (id_of(k), Weight::from_bp(bp).expect("bp")))
                .collect::<Vec<_>>(),
        )]);
        let pool = ctx.clone();
        let mut input = GateInput::new(&call, &ctx, Weight::from_bp(5000).expect("tau"))
            .with_citations(&citations)
            .with_attribution(&attribution);
        if repair {
            input = input.with_repair(&pool);
        }
        // A prepared context gives exactly the same decision (or the same error).
        let prepared = PreparedContext::new(&ctx);
        prop_assert_eq!(decide(&policy, &input), decide(&policy, &input.with_prepared(&prepared)));
        if let Ok(d) = decide(&policy, &input) {
            prop_assert_eq!(d.dispatched, record || d.decision != Decision::Deny);
            prop_assert_eq!(d.mode, if record { Mode::Record } else { Mode::Enforce });
            let fails = d.reasons.iter().any(|r| r.outcome.fails());
            prop_assert_eq!(d.decision == Decision::Deny, fails);
            prop_assert_eq!(d.decision == Decision::Repair, !d.repairs.is_empty());
            for r in &d.repairs {
                let reason = d.reasons.iter().find(|x| x.param == r.param).expect("reason");
                prop_assert_eq!(reason.outcome, Outcome::Repaired);
                prop_assert!(reason.label.is_some());
            }
        }
    }

    /// Value matching over a prepared context equals scanning the text, for values that occur
    /// (taken from other texts' extracted values) and values that do not.
    #[test]
    fn prepared_context_matches_like_scanning(
        texts in prop::collection::vec(text(), 1..5),
        sources in prop::collection::vec(text(), 1..4),
        pick in any::<prop::sample::Index>(),
    ) {
        let policy = Policy::parse(r#"
[tools.t.params]
amount = { type = "amount" }
date = { type = "date" }
email = { type = "email" }
url = { type = "url" }
memo = { type = "free_text" }
"#).expect("policy");
        let ctx: Vec<ContextEntry> = texts.iter().enumerate().map(|(i, t)| ContextEntry {
            id: EntryId(Hash256::of(&[i as u8])),
            label: TrustLabel::Trusted,
            writer: "w".into(),
            kind: EntryKind::Observation,
            content: Some(t.clone()),
            taint_path: Vec::new(),
        }).collect();
        let prepared = PreparedContext::new(&ctx);
        let all: Vec<String> = texts.iter().chain(&sources).cloned().collect();
        for (name, ty) in [
            ("amount", ParamType::Amount),
            ("date", ParamType::Date),
            ("email", ParamType::Email),
            ("url", ParamType::Url),
        ] {
            let values: Vec<_> = all.iter().flat_map(|t| ty.extract(t)).collect();
            if values.is_empty() {
                continue;
            }
            let v = &values[pick.index(values.len())];
            let mut args = Map::new();
            args.insert(name.to_string(), v.to_json(&json!("x")));
            let call = ToolCall::new("t", args);
            let input = GateInput::new(&call, &ctx, Weight::from_bp(5000).expect("tau"));
            prop_assert_eq!(decide(&policy, &input), decide(&policy, &input.with_prepared(&prepared)));
        }
        // Free text: a slice of a context text (it occurs) and a source text.
        let t = &texts[pick.index(texts.len())];
        let cut: String = t.chars().skip(1).take(12).collect();
        for memo in [cut, sources[0].clone()] {
            if memo.trim().is_empty() {
                continue;
            }
            let mut args = Map::new();
            args.insert("memo".to_string(), Value::String(memo));
            let call = ToolCall::new("t", args);
            let input = GateInput::new(&call, &ctx, Weight::from_bp(5000).expect("tau"));
            prop_assert_eq!(decide(&policy, &input), decide(&policy, &input.with_prepared(&prepared)));
        }
    }

    /// An amount survives printing and parsing.
    #[test]
    fn amounts_round_trip(neg in any::<bool>(), m in 0u128..100_000_000_000_000_000_000, scale in 0u32..12) {
        let a = memlineage_core::gate::Amount::new(neg, m, scale).expect("amount");
        prop_assert_eq!(memlineage_core::gate::Amount::parse(&a.to_string()), Some(a));
        if let Some(n) = a.to_json_number() {
            let back = memlineage_core::gate::Amount::from_json(&n).expect("from json");
            if m < (1 << 53) {
                prop_assert_eq!(back, a);
            }
        }
    }
}

/// Rough speed of one decision on a small context: run with
/// `cargo test --release -p memlineage-core --test gate_props -- --ignored --nocapture`.
#[test]
#[ignore]
fn decision_speed() {
    let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor \
                  incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis \
                  nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. ";
    let mut ctx = Vec::new();
    for i in 0..8u8 {
        let mut content = String::new();
        while content.len() < 480 {
            content.push_str(filler);
        }
        content.truncate(480);
        if i == 2 {
            content.push_str(" Landlord IBAN: GB29 NWBK 6016 1331 9268 19, rent 1,250.00 EUR");
        }
        ctx.push(ContextEntry {
            id: EntryId(Hash256::of(&[i])),
            label: if i % 2 == 0 {
                TrustLabel::Trusted
            } else {
                TrustLabel::External
            },
            writer: "w".into(),
            kind: EntryKind::Observation,
            content: Some(content),
            taint_path: Vec::new(),
        });
    }
    let policy = Policy::parse(
        r#"[tools.send_money.params]
recipient = { type = "iban" }
amount = { type = "amount" }
date = { type = "date", unjustified = "allow" }"#,
    )
    .expect("policy");
    let call = ToolCall::new(
        "send_money",
        json!({"recipient": "GB29NWBK60161331926819", "amount": 1250, "date": "2024-01-05"})
            .as_object()
            .expect("object")
            .clone(),
    );
    let input = GateInput::new(&call, &ctx, Weight::from_bp(5000).expect("tau"));
    assert_eq!(
        decide(&policy, &input).expect("decides").decision,
        Decision::Allow
    );
    let n = 20_000;
    let start = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(decide(&policy, std::hint::black_box(&input)).expect("decides"));
    }
    let per = start.elapsed() / n;
    println!("gate decision, 8 entries x ~500 bytes, 3 params: {per:?}");
}
