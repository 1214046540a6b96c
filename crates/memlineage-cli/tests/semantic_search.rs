//! `memlineage search --mode semantic` with the real embedding model (feature `models`;
//! `scripts/fetch-embedding-model.sh`; without the model files these tests print why and pass,
//! except under `CI`): the vector index it builds is saved in `<store file>.vectors/` and used
//! by the next search; an altered saved index is refused and rebuilt, with the same answer.
#![cfg(feature = "models")]

mod common;

use common::{Store, model_present};

fn first_text(s: &Store, query: &str) -> String {
    let found = s.json(&["search", "--mode", "semantic", "--limit", "1", query]);
    assert_eq!(found["mode"], "semantic", "{found}");
    found["entries"][0]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no entry found: {found}"))
        .to_string()
}

#[test]
fn the_saved_vector_index_is_used_and_an_altered_one_rebuilt() {
    if !model_present() {
        return;
    }
    let s = Store::init();
    let dentist = "Alice's dentist is Dr. Okafor, at the clinic on Linden Street.";
    s.write(&[dentist]);
    s.write(&["The wifi password at home is sunflower-42."]);
    s.write(&["Bob is learning to play the cello on Thursdays."]);
    let question = "Which doctor takes care of Alice's teeth?";
    assert_eq!(first_text(&s, question), dentist);
    let vectors = s.dir.path().join("store.db.vectors");
    let (index, meta) = (
        vectors.join("vectors.usearch"),
        vectors.join("vectors.json"),
    );
    assert!(index.exists() && meta.exists());
    let described: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(described["next"].as_u64(), Some(s.size()));
    // Used again: the same answer.
    assert_eq!(first_text(&s, question), dentist);
    // Altered behind the program's back: refused (its digest), rebuilt, the same answer, and
    // saved again intact.
    let mut bytes = std::fs::read(&index).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&index, &bytes).unwrap();
    assert_eq!(first_text(&s, question), dentist);
    assert_ne!(std::fs::read(&index).unwrap(), bytes);
    // A new entry is caught up from the saved index.
    let cat = "Alice's cat is called Miso, a grey tabby.";
    s.write(&[cat]);
    assert_eq!(first_text(&s, "What is the name of Alice's pet?"), cat);
}
