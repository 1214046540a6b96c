//! Property tests for canonical CBOR.
//!
//! - `decode(encode(v)) == normalise(v)`, maps sorted canonically;
//! - `encode` does not depend on the order of map entries;
//! - `decode` never panics, on random bytes or on mutated valid encodings;
//! - whatever `decode` accepts re-encodes to exactly the input (canonicality), and an input
//!   written with any non-canonical choice (wider head, unsorted map) is refused;
//! - every error points inside the input and names its offset.
//!
//! `PROPTEST_CASES` raises the number of cases (`scripts/fuzz-decoder.sh` does so when
//! cargo-fuzz cannot run).

use memlineage_core::canonical::{CanonicalError, MAX_DEPTH, Value, decode, encode};
use proptest::prelude::*;

/// Integers around every head-width boundary, and anything else.
fn arb_uint() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![
            0,
            1,
            23,
            24,
            255,
            256,
            65535,
            65536,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
        ]),
        0..300u64,
        any::<u64>(),
    ]
}

/// Keeps the first entry for each key, so that the map is encodable.
fn dedup(entries: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        if !out.iter().any(|(seen, _)| *seen == k) {
            out.push((k, v));
        }
    }
    out
}

/// Any value of the subset, nested up to 6 levels, maps with distinct keys (of any type).
fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        arb_uint().prop_map(Value::Uint),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
        any::<String>().prop_map(Value::Text),
        "[a-c]{0,3}".prop_map(Value::Text),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(6, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((inner.clone(), inner), 0..8)
                .prop_map(|entries| Value::Map(dedup(entries))),
        ]
    })
}

/// The canonical encoding of a generated map key (always encodable: generated maps have
/// distinct keys and shallow nesting).
fn key_bytes(k: &Value) -> Vec<u8> {
    encode(k).expect("generated keys are encodable")
}

/// `v` with every map sorted by the canonical encoding of its keys.
fn normalise(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Map(entries) => {
            let mut sorted: Vec<(Vec<u8>, Value, Value)> = entries
                .iter()
                .map(|(k, v)| (key_bytes(k), normalise(k), normalise(v)))
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Map(sorted.into_iter().map(|(_, k, v)| (k, v)).collect())
        }
        other => other.clone(),
    }
}

/// A small deterministic generator, so that one `u64` seed drives many choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*; the seed is forced odd so it is never stuck at zero.
        let mut x = self.0 | 1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `v` with the entries of every map shuffled.
fn shuffle_maps(v: &Value, rng: &mut Rng) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(|i| shuffle_maps(i, rng)).collect()),
        Value::Map(entries) => {
            let mut out: Vec<(Value, Value)> = entries
                .iter()
                .map(|(k, v)| (shuffle_maps(k, rng), shuffle_maps(v, rng)))
                .collect();
            for i in (1..out.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                out.swap(i, j);
            }
            Value::Map(out)
        }
        other => other.clone(),
    }
}

/// Writes a head for `major` and `arg`, sometimes wider than the shortest form.
fn loose_head(major: u8, arg: u64, rng: &mut Rng, out: &mut Vec<u8>) {
    let shortest: u64 = match arg {
        0..=23 => 0,
        24..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 3,
        _ => 4,
    };
    // One head in eight is widened by one or more steps.
    let width = if rng.below(8) == 0 {
        shortest + 1 + rng.below(4 - shortest.min(3))
    } else {
        shortest
    }
    .min(4);
    let m = major << 5;
    match width {
        0 => out.push(m | arg as u8),
        1 => {
            out.push(m | 24);
            out.push(arg as u8);
        }
        2 => {
            out.push(m | 25);
            out.extend_from_slice(&(arg as u16).to_be_bytes());
        }
        3 => {
            out.push(m | 26);
            out.extend_from_slice(&(arg as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&arg.to_be_bytes());
        }
    }
}

/// A well-formed CBOR encoding of `v` that makes random choices: heads sometimes wider than
/// needed, map entries sometimes left in the given order instead of sorted.
fn loose_encode(v: &Value, rng: &mut Rng, out: &mut Vec<u8>) {
    match v {
        Value::Uint(n) => loose_head(0, *n, rng, out),
        Value::Bytes(b) => {
            loose_head(2, b.len() as u64, rng, out);
            out.extend_from_slice(b);
        }
        Value::Text(s) => {
            loose_head(3, s.len() as u64, rng, out);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bool(false) => out.push(0xf4),
        Value::Bool(true) => out.push(0xf5),
        Value::Null => out.push(0xf6),
        Value::Array(items) => {
            loose_head(4, items.len() as u64, rng, out);
            for item in items {
                loose_encode(item, rng, out);
            }
        }
        Value::Map(entries) => {
            loose_head(5, entries.len() as u64, rng, out);
            let mut entries: Vec<&(Value, Value)> = entries.iter().collect();
            if rng.below(4) != 0 {
                entries.sort_by_key(|(k, _)| key_bytes(k));
            }
            for (k, v) in entries {
                loose_encode(k, rng, out);
                loose_encode(v, rng, out);
            }
        }
    }
}

/// Applies one random mutation (flip, set, truncate, insert, delete) to `bytes`.
fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    if bytes.is_empty() {
        bytes.push(rng.next() as u8);
        return;
    }
    let at = rng.below(bytes.len() as u64) as usize;
    match rng.below(5) {
        0 => bytes[at] ^= 1 << rng.below(8),
        1 => bytes[at] = rng.next() as u8,
        2 => bytes.truncate(at),
        3 => bytes.insert(at, rng.next() as u8),
        _ => {
            bytes.remove(at);
        }
    }
}

/// What `decode` must satisfy on any input: no panic (checked by getting here), a re-encoding
/// equal to the input on success, and an in-range, named offset on failure.
fn check_decode_contract(input: &[u8]) -> Result<(), TestCaseError> {
    match decode(input) {
        Ok(v) => {
            let again = encode(&v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                again,
                input.to_vec(),
                "decode accepted a non-canonical input"
            );
        }
        Err(e) => check_error(&e, input.len())?,
    }
    Ok(())
}

fn check_error(e: &CanonicalError, input_len: usize) -> Result<(), TestCaseError> {
    prop_assert!(
        e.offset() <= input_len,
        "{e} points past the input ({input_len} bytes)"
    );
    let text = e.to_string();
    let needle = format!("byte {}", e.offset());
    prop_assert!(text.contains(&needle), "{text:?} does not name its offset");
    Ok(())
}

proptest! {
    #[test]
    fn canonical_round_trip_gives_the_normalised_value(v in arb_value()) {
        let bytes = encode(&v).unwrap();
        prop_assert_eq!(decode(&bytes).unwrap(), normalise(&v));
    }

    #[test]
    fn canonical_encode_ignores_map_entry_order(v in arb_value(), seed in any::<u64>()) {
        let shuffled = shuffle_maps(&v, &mut Rng(seed));
        prop_assert_eq!(encode(&shuffled).unwrap(), encode(&v).unwrap());
    }

    #[test]
    fn canonical_decode_never_panics_on_random_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..256)
    ) {
        check_decode_contract(&bytes)?;
    }

    #[test]
    fn canonical_decode_never_panics_on_mutated_encodings(
        v in arb_value(),
        seed in any::<u64>(),
        rounds in 1..4usize,
    ) {
        let mut rng = Rng(seed);
        let mut bytes = encode(&v).unwrap();
        for _ in 0..rounds {
            mutate(&mut bytes, &mut rng);
            check_decode_contract(&bytes)?;
        }
    }

    #[test]
    fn canonical_decode_accepts_exactly_the_canonical_form(v in arb_value(), seed in any::<u64>()) {
        let mut loose = Vec::new();
        loose_encode(&v, &mut Rng(seed), &mut loose);
        let canonical = encode(&v).unwrap();
        match decode(&loose) {
            Ok(decoded) => {
                prop_assert_eq!(&loose, &canonical, "accepted a non-canonical encoding");
                prop_assert_eq!(decoded, normalise(&v));
            }
            Err(e) => {
                prop_assert_ne!(&loose, &canonical, "refused the canonical encoding: {}", e);
                check_error(&e, loose.len())?;
                prop_assert!(
                    matches!(
                        e,
                        CanonicalError::NonShortestInteger { .. }
                            | CanonicalError::NonShortestLength { .. }
                            | CanonicalError::UnsortedMapKey { .. }
                    ),
                    "unexpected error for a well-formed encoding: {e}"
                );
            }
        }
    }

    #[test]
    fn canonical_truncating_a_valid_encoding_is_always_refused(v in arb_value(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(&v).unwrap();
        let len = cut.index(bytes.len());
        let err = decode(&bytes[..len]).unwrap_err();
        prop_assert!(
            matches!(
                err,
                CanonicalError::TruncatedHead { .. } | CanonicalError::TruncatedPayload { .. }
            ),
            "a prefix of a valid encoding gave {err}"
        );
    }

    #[test]
    fn canonical_appending_to_a_valid_encoding_is_refused_as_trailing(
        v in arb_value(),
        extra in prop::collection::vec(any::<u8>(), 1..8)
    ) {
        let mut bytes = encode(&v).unwrap();
        let end = bytes.len();
        bytes.extend_from_slice(&extra);
        prop_assert_eq!(
            decode(&bytes),
            Err(CanonicalError::TrailingBytes { offset: end, count: extra.len() })
        );
    }
}

#[test]
fn canonical_depth_limit_matches_between_encode_and_decode() {
    let mut v = Value::Map(vec![]);
    for _ in 1..MAX_DEPTH {
        v = Value::Map(vec![(Value::Uint(0), v)]);
    }
    let bytes = encode(&v).unwrap();
    assert_eq!(decode(&bytes).unwrap(), v);
    let deeper = Value::Array(vec![v]);
    assert!(matches!(
        encode(&deeper),
        Err(CanonicalError::DepthExceeded { .. })
    ));
}
