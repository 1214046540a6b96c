//! The committed labelled set is exactly what the generator makes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use memlineage_retrieval_eval::dataset::{Dataset, SEED};

#[test]
fn committed_set_is_the_generated_one() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/retrieval/memory_queries.json"
    );
    let committed = std::fs::read_to_string(path).expect("committed set");
    assert_eq!(
        committed,
        Dataset::generate(SEED).to_json(),
        "run `cargo run -p memlineage-retrieval-eval -- generate` and commit the result"
    );
}
