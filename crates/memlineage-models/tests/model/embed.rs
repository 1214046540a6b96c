//! The all-MiniLM-L6-v2 embedder against the Python reference (sentence-transformers 5.1.0 on
//! PyTorch, CPU, float32): `tests/data/minilm_reference.json`, written once by
//! `scripts/minilm-reference.py`.

use crate::common::embedder;

#[derive(serde::Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("../data/minilm_reference.json")).expect("reference JSON")
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn token_ids_match_the_reference_tokenizer() {
    let Some(e) = embedder() else { return };
    for case in reference().cases {
        assert_eq!(
            e.token_ids(&case.text).expect("ids"),
            case.ids,
            "{:?}",
            case.text
        );
    }
}

#[test]
fn embeddings_match_the_reference() {
    let Some(e) = embedder() else { return };
    assert!(e.is_reference_model(), "{}", e.sha256());
    assert_eq!(e.dim(), 384);
    let cases = reference().cases;
    let texts: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let got = e.embed(&texts).expect("embed");
    for (case, v) in cases.iter().zip(&got) {
        assert_eq!(v.len(), case.embedding.len(), "{:?}", case.text);
        let max = v
            .iter()
            .zip(&case.embedding)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // The reference is rounded to 7 decimals; float32 kernels differ in summation order.
        assert!(max < 2e-5, "{:?}: max |Δ| = {max}", case.text);
        assert!(dot(v, &case.embedding) > 0.99999, "{:?}", case.text);
        assert!((dot(v, v) - 1.0).abs() < 1e-5, "unit length");
    }
}

#[test]
fn embedding_is_independent_of_the_batch() {
    let Some(e) = embedder() else { return };
    let texts = [
        "the rent is due on the third",
        "the rent is due on the 3rd",
        "an unrelated remark about the weather in Lisbon today",
        "rent",
    ];
    let together = e.embed(&texts).expect("batch");
    for (t, v) in texts.iter().zip(&together) {
        let alone = e.embed_one(t).expect("one");
        assert_eq!(alone, *v, "{t}: bit-identical alone and in a batch");
        assert_eq!(e.embed_one(t).expect("again"), alone, "{t}: deterministic");
    }
}

#[test]
fn paraphrases_are_closer_than_unrelated_texts() {
    let Some(e) = embedder() else { return };
    let v = e
        .embed(&[
            "Alice's landlord is Mr. Okafor.",
            "Who does Alice rent her flat from?",
            "The quarterly report shows revenue growth in Asia.",
        ])
        .expect("embed");
    assert!(
        dot(&v[0], &v[1]) > dot(&v[0], &v[2]) + 0.1,
        "{} {}",
        dot(&v[0], &v[1]),
        dot(&v[0], &v[2])
    );
}

#[test]
fn long_texts_are_truncated_to_256_tokens() {
    let Some(e) = embedder() else { return };
    let long = "fact ".repeat(1000);
    let ids = e.token_ids(&long).expect("ids");
    assert_eq!(ids.len(), memlineage_models::embed::MAX_TOKENS);
    assert_eq!((ids[0], ids[255]), (101, 102), "[CLS] … [SEP] kept");
    assert_eq!(e.embed_one(&long).expect("embed").len(), 384);
}

/// Costs (`cargo test --release -p memlineage-models --test model -- --ignored --nocapture
/// embed_costs`): one short query, and a batch of entry-sized texts (~180 bytes).
#[test]
#[ignore]
fn embed_costs() {
    let Some(e) = embedder() else { return };
    let q = "Which doctor takes care of Alice's teeth?";
    let mut times = Vec::new();
    for _ in 0..30 {
        let t = std::time::Instant::now();
        e.embed_one(q).expect("embed");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "query ({} tokens): median {:.2} ms",
        e.token_ids(q).expect("ids").len(),
        times[15]
    );
    let texts: Vec<String> = (0..256)
        .map(|i| {
            format!(
                "Entry {i}: the tenant of flat {i} on Harbour Road reported that the heating \
                 failed again on Tuesday; the landlord promised a technician visit before the \
                 weekend and a rent reduction of {} euros.",
                i * 7
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = std::time::Instant::now();
    e.embed(&refs).expect("embed");
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "256 texts of ~{} tokens: {:.2} s, {:.0} texts/s",
        e.token_ids(refs[0]).expect("ids").len(),
        secs,
        256.0 / secs
    );
}
