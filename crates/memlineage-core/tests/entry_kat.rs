//! Known-answer tests pinning the entry format of `docs/formats.md`: the canonical body bytes,
//! the entry id, the signing message and the leaf. A change to any of these is a format change
//! and must bump the version.

use memlineage_core::canonical::{self, Value};
use memlineage_core::entry::{EntryBody, EntryError, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::keys::{self, Domain};
use memlineage_core::label::{Fallback, TrustLabel, Weight};
use memlineage_core::{EntryId, Hash256};

fn fixed_key() -> ed25519_dalek::SigningKey {
    // RFC 8032 §7.1 TEST 1 secret key: a public, fixed key for known answers.
    keys::secret_from_bytes(
        &hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").unwrap(),
    )
    .unwrap()
}

fn fixed_body() -> EntryBody {
    let key = fixed_key();
    EntryBody {
        scope: Scope::new("acme/bot").unwrap(),
        writer: "agent".into(),
        key_id: keys::key_id(&key.verifying_key()),
        kind: EntryKind::Derived,
        content_hash: Hash256::of(b"hello"),
        content_len: 5,
        source_hash: None,
        context_hash: Some(Hash256::of(b"ctx")),
        parents: vec![Parent {
            id: EntryId(Hash256([7; 32])),
            weight: Weight::from_bp(8000).unwrap(),
        }],
        attribution: "explicit".into(),
        tau: Weight::from_bp(5000).unwrap(),
        fallback: Fallback::Strict,
        label: TrustLabel::DerivedTrusted,
        created_at_ms: 1_700_000_000_000,
        metadata: [("topic".to_string(), "rent".to_string())].into(),
    }
}

#[test]
fn body_encoding_is_pinned() {
    let bytes = canonical::encode(&fixed_body().to_value()).unwrap();
    // Canonical key order: by encoded length first, then bytewise (RFC 8949 §4.2.1).
    let Value::Map(pairs) = canonical::decode(&bytes).unwrap() else {
        panic!("not a map")
    };
    let keys: Vec<String> = pairs
        .iter()
        .map(|(k, _)| k.as_text().unwrap().to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "v", "ctx", "key", "len", "src", "tau", "attr", "kind", "meta", "time", "label",
            "scope", "writer", "content", "parents", "fallback"
        ]
    );
    assert_eq!(bytes[0], 0xb0, "map of 16 pairs");
    assert_eq!(&bytes[1..4], &[0x61, b'v', 0x01], "\"v\": 1 first");
    assert_eq!(
        hex::encode(&bytes),
        include_str!("kat/entry_body.hex").trim()
    );
}

#[test]
fn id_signature_and_leaf_are_pinned() {
    let key = fixed_key();
    let e = SignedEntry::sign(fixed_body(), &key).unwrap();
    assert_eq!(e.id().0, Hash256::of(e.body_bytes()));
    assert_eq!(e.id().to_hex(), include_str!("kat/entry_id.hex").trim());
    // Ed25519 is deterministic (RFC 8032), so the signature is a known answer too.
    let mut msg = b"memlineage/entry/v1\0".to_vec();
    msg.extend_from_slice(e.body_bytes());
    assert_eq!(Domain::EntryV1.message(e.body_bytes()), msg);
    keys::verify(
        &key.verifying_key(),
        Domain::EntryV1,
        e.body_bytes(),
        e.signature(),
    )
    .unwrap();
    assert_eq!(
        hex::encode(e.signature().to_bytes()),
        include_str!("kat/entry_sig.hex").trim()
    );
    // The fast leaf builder agrees with the generic canonical encoder.
    let leaf = e.to_leaf();
    assert_eq!(
        leaf,
        canonical::encode(&e.to_leaf_value().unwrap()).unwrap()
    );
    assert_eq!(SignedEntry::from_leaf(&leaf).unwrap(), e);
}

#[test]
fn decoding_rejects_unknown_version_and_fields() {
    let body = fixed_body();
    let mut v = body.to_value();
    let Value::Map(pairs) = &mut v else { panic!() };
    for (k, val) in pairs.iter_mut() {
        if k.as_text() == Some("v") {
            *val = Value::Uint(2);
        }
    }
    assert_eq!(
        EntryBody::from_value(&v).unwrap_err(),
        EntryError::UnknownVersion(2)
    );
    let mut v = body.to_value();
    let Value::Map(pairs) = &mut v else { panic!() };
    pairs.push((Value::Text("zzz".into()), Value::Null));
    assert!(matches!(
        EntryBody::from_value(&v).unwrap_err(),
        EntryError::UnknownField { .. }
    ));
}

#[test]
fn unsorted_parents_and_bad_weights_are_rejected() {
    let mut body = fixed_body();
    body.parents = vec![
        Parent {
            id: EntryId(Hash256([9; 32])),
            weight: Weight::ONE,
        },
        Parent {
            id: EntryId(Hash256([1; 32])),
            weight: Weight::ONE,
        },
    ];
    assert!(SignedEntry::sign(body.clone(), &fixed_key()).is_err());
    EntryBody::normalise_parents(&mut body.parents);
    assert!(SignedEntry::sign(body, &fixed_key()).is_ok());
}

#[test]
fn tampered_leaves_fail_cleanly() {
    let e = SignedEntry::sign(fixed_body(), &fixed_key()).unwrap();
    let leaf = e.to_leaf();
    for i in 0..leaf.len() {
        let mut bad = leaf.clone();
        bad[i] ^= 0x01;
        match SignedEntry::from_leaf(&bad) {
            Err(_) => {}
            Ok(d) => assert!(
                d.verify_signature(&fixed_key().verifying_key()).is_err(),
                "flipping byte {i} went unnoticed"
            ),
        }
    }
    for n in 0..leaf.len() {
        assert!(SignedEntry::from_leaf(&leaf[..n]).is_err());
    }
}
