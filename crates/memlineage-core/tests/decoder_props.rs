//! The strict decoders never panic, on random bytes or on truncated and mutated valid records,
//! and accept only the canonical encoding of what they return: entry leaves, control-record
//! contents and checkpoint notes (`memlineage_core::fuzz_checks`, the same checks the
//! cargo-fuzz targets run). Deterministic: a fixed RNG seed, so every run checks the same
//! cases; `PROPTEST_CASES` raises their number (`scripts/fuzz-decoder.sh` does).

use ed25519_dalek::SigningKey;
use memlineage_core::canonical::{self, Value};
use memlineage_core::checkpoint::{Checkpoint, NoteVerifier, open_checkpoint, sign_checkpoint};
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::fuzz_checks;
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::records::{Distrust, DistrustTarget, RegistryChange, Tombstone};
use memlineage_core::{EntryId, Hash256, keys};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::collections::BTreeMap;

fn config() -> Config {
    Config {
        rng_seed: RngSeed::Fixed(0x6d65_6d6c_696e_6561),
        failure_persistence: None,
        ..Config::default()
    }
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

fn leaf(parents: u8, meta: u8, text: &str) -> Vec<u8> {
    let k = key();
    let mut ps: Vec<Parent> = (0..parents)
        .map(|i| Parent {
            id: EntryId(Hash256::of(&[i])),
            weight: Weight::from_bp(u16::from(i) * 1000).unwrap_or(Weight::ONE),
        })
        .collect();
    EntryBody::normalise_parents(&mut ps);
    let metadata: BTreeMap<String, String> = (0..meta)
        .map(|i| (format!("k{i}"), text.repeat(usize::from(i))))
        .collect();
    let body = EntryBody {
        scope: Scope::new("acme/bot").unwrap(),
        writer: "agent".into(),
        key_id: keys::key_id(&k.verifying_key()),
        kind: if parents == 0 {
            EntryKind::Observation
        } else {
            EntryKind::Derived
        },
        content_hash: Hash256::of(text.as_bytes()),
        content_len: text.len() as u64,
        source_hash: Some(Hash256::of(b"https://example.com")),
        context_hash: None,
        parents: ps,
        attribution: "explicit".into(),
        tau: Weight::from_bp(5000).unwrap(),
        fallback: Fallback::Strict,
        label: TrustLabel::DerivedTrusted,
        created_at_ms: 1_700_000_000_000,
        metadata,
    };
    SignedEntry::sign(body, &k).unwrap().to_leaf()
}

fn contents(text: &str) -> Vec<Vec<u8>> {
    let id = EntryId(Hash256::of(text.as_bytes()));
    vec![
        RegistryChange::Add {
            name: "web".into(),
            class: TrustClass::External,
            key: key().verifying_key(),
        }
        .to_content(),
        RegistryChange::Rotate {
            name: "agent".into(),
            key: key().verifying_key(),
        }
        .to_content(),
        RegistryChange::Revoke {
            name: "agent".into(),
            reason: text.into(),
        }
        .to_content(),
        Tombstone {
            target: id,
            erase: true,
            reason: text.into(),
        }
        .to_content(),
        Distrust {
            target: DistrustTarget::Entry(id),
            reason: text.into(),
        }
        .to_content(),
        Distrust {
            target: DistrustTarget::Principal("web".into()),
            reason: text.into(),
        }
        .to_content(),
    ]
}

fn verifier() -> NoteVerifier {
    NoteVerifier::from_signing_key("example.org/log", &key()).unwrap()
}

fn note(size: u64) -> String {
    let cp = Checkpoint::new("example.org/log", size, Hash256::of(&size.to_be_bytes()));
    sign_checkpoint(&cp, "example.org/log", &key()).unwrap()
}

/// Every prefix, and the input with one byte changed.
fn damaged(valid: &[u8], cut: usize, pos: usize, byte: u8) -> [Vec<u8>; 2] {
    let mut flipped = valid.to_vec();
    if !flipped.is_empty() {
        let i = pos % flipped.len();
        flipped[i] ^= byte.max(1);
    }
    [valid[..cut % (valid.len() + 1)].to_vec(), flipped]
}

#[test]
fn the_valid_records_pass_the_checks() {
    let l = leaf(3, 2, "hello");
    fuzz_checks::entry_leaf(&l);
    assert!(SignedEntry::from_leaf(&l).is_ok());
    for c in contents("why") {
        fuzz_checks::control_records(&c);
    }
    let n = note(42);
    fuzz_checks::checkpoint_note(n.as_bytes(), &verifier());
    assert_eq!(open_checkpoint(&n, &verifier()).unwrap().size, 42);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
        fuzz_checks::entry_leaf(&data);
        fuzz_checks::control_records(&data);
        fuzz_checks::checkpoint_note(&data, &verifier());
    }

    #[test]
    fn damaged_leaves_never_panic_and_truncations_are_refused(
        parents in 0u8..6, meta in 0u8..4, text in "[a-z ]{0,40}",
        cut in any::<usize>(), pos in any::<usize>(), byte in any::<u8>(),
    ) {
        let valid = leaf(parents, meta, &text);
        let [truncated, flipped] = damaged(&valid, cut, pos, byte);
        fuzz_checks::entry_leaf(&truncated);
        fuzz_checks::entry_leaf(&flipped);
        if truncated.len() < valid.len() {
            prop_assert!(SignedEntry::from_leaf(&truncated).is_err());
        }
    }

    #[test]
    fn damaged_control_records_never_panic(
        text in "[ -~]{0,40}", which in 0usize..6,
        cut in any::<usize>(), pos in any::<usize>(), byte in any::<u8>(),
    ) {
        let all = contents(&text);
        let valid = &all[which % all.len()];
        for d in damaged(valid, cut, pos, byte) {
            fuzz_checks::control_records(&d);
        }
    }

    #[test]
    fn damaged_checkpoint_notes_never_panic_nor_open(
        size in any::<u64>(), cut in any::<usize>(), pos in any::<usize>(), byte in any::<u8>(),
    ) {
        let valid = note(size);
        for d in damaged(valid.as_bytes(), cut, pos, byte) {
            fuzz_checks::checkpoint_note(&d, &verifier());
            if d != valid.as_bytes()
                && let Ok(text) = std::str::from_utf8(&d)
                && let Ok(cp) = open_checkpoint(text, &verifier())
            {
                // Only a change outside the signed text (none exists) could still open.
                prop_assert_eq!(cp.size, size);
                prop_assert_eq!(cp.body(), Checkpoint::new("example.org/log", size, Hash256::of(&size.to_be_bytes())).body());
            }
        }
    }
}

/// The leaf of `valid` with its body map changed by `edit` and re-encoded canonically, so the
/// bytes stay canonical CBOR while a field goes missing, gains a neighbour, changes type or
/// changes name (empty when the edit makes a map that has no canonical encoding).
fn edited_leaf(valid: &[u8], edit: impl FnOnce(&mut Vec<(Value, Value)>)) -> Vec<u8> {
    let mut leaf = canonical::decode(valid).unwrap();
    if let Value::Map(pairs) = &mut leaf
        && let Some((_, Value::Map(body))) =
            pairs.iter_mut().find(|(k, _)| k.as_text() == Some("body"))
    {
        edit(body);
    }
    canonical::encode(&leaf).unwrap_or_default()
}

/// Values a field can be replaced with: every type, and the edge values of each.
fn replacement(which: usize) -> Value {
    let all = [
        Value::Uint(0),
        Value::Uint(1),
        Value::Uint(2),
        Value::Uint(10_000),
        Value::Uint(10_001),
        Value::Uint(u64::MAX),
        Value::Text(String::new()),
        Value::Text("trusted".into()),
        Value::Text("derived-untrusted".into()),
        Value::Text("strict".into()),
        Value::Text("acme/bot".into()),
        Value::Text("observation".into()),
        Value::Text("é/ü".into()),
        Value::Bytes(vec![7; 31]),
        Value::Bytes(vec![7; 32]),
        Value::Bytes(vec![7; 64]),
        Value::Null,
        Value::Bool(true),
        Value::Array(vec![]),
        Value::Array(vec![Value::Array(vec![
            Value::Bytes(vec![1; 32]),
            Value::Uint(5),
        ])]),
        Value::Array(vec![Value::Array(vec![Value::Bytes(vec![1; 32])])]),
        Value::Map(vec![]),
        Value::Map(vec![(Value::Text("k".into()), Value::Uint(1))]),
        Value::Map(vec![(Value::Uint(1), Value::Text("v".into()))]),
    ];
    all[which % all.len()].clone()
}

proptest! {
    #![proptest_config(config())]

    /// The direct leaf decoder against the generic one, old against new: on valid leaves of
    /// every shape, on byte-level damage (flips, insertions, deletions, truncations, swaps,
    /// splices of two leaves) and on canonical re-encodings with a field removed, added or
    /// replaced, both accept the same entry or both refuse, and `from_leaf`'s error is the
    /// generic decoder's.
    #[test]
    fn direct_and_generic_leaf_decoders_agree(
        parents in 0u8..6, meta in 0u8..4, text in "[a-zé ]{0,40}",
        pos in any::<usize>(), other in any::<usize>(), byte in any::<u8>(),
        field in 0usize..16, which in any::<usize>(),
    ) {
        let valid = leaf(parents, meta, &text);
        let second = leaf(meta, parents, "other");
        fuzz_checks::entry_leaf_decoders_agree(&valid);
        prop_assert!(SignedEntry::from_leaf(&valid).is_ok());
        let n = valid.len();
        let (i, j) = (pos % n, other % n);
        let mut damaged = Vec::new();
        let mut flipped = valid.clone();
        flipped[i] ^= byte.max(1);
        damaged.push(flipped);
        let mut set = valid.clone();
        set[i] = byte;
        damaged.push(set);
        let mut inserted = valid.clone();
        inserted.insert(i, byte);
        damaged.push(inserted);
        let mut deleted = valid.clone();
        deleted.remove(i);
        damaged.push(deleted);
        damaged.push(valid[..i].to_vec());
        let mut swapped = valid.clone();
        swapped.swap(i, j);
        damaged.push(swapped);
        let mut spliced = valid[..i].to_vec();
        spliced.extend_from_slice(&second[j % second.len()..]);
        damaged.push(spliced);
        let mut trailing = valid.clone();
        trailing.push(byte);
        damaged.push(trailing);
        damaged.push(edited_leaf(&valid, |body| {
            body.remove(field % body.len());
        }));
        damaged.push(edited_leaf(&valid, |body| {
            body.push((Value::Text("zzz".into()), replacement(which)));
        }));
        damaged.push(edited_leaf(&valid, |body| {
            let at = field % body.len();
            body[at].1 = replacement(which);
        }));
        damaged.push(edited_leaf(&valid, |body| {
            let at = field % body.len();
            body[at].0 = Value::Text(["v", "vv", "bodx", "label"][which % 4].into());
        }));
        for d in &damaged {
            fuzz_checks::entry_leaf_decoders_agree(d);
        }
    }
}
