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
