//! Known-answer tests for canonical CBOR, and one rejection test per error variant.
//!
//! The encodings in `APPENDIX_A` are copied from RFC 8949 Appendix A ("Examples of Encoded
//! CBOR Data Items"), keeping the items that fall in MemLineage's subset. Appendix A's examples
//! outside the subset (negative integers, floats, tags, other simple values, indefinite
//! lengths) are in `appendix_a_items_outside_the_subset_are_rejected`.

use memlineage_core::canonical::{CanonicalError, MAX_DEPTH, Value, decode, encode};

fn h(hex_str: &str) -> Vec<u8> {
    hex::decode(hex_str).expect("test vectors are valid hex")
}

fn t(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn u(n: u64) -> Value {
    Value::Uint(n)
}

/// RFC 8949 Appendix A, the items of our subset: (diagnostic notation, value, encoding).
fn appendix_a() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("0", u(0), "00"),
        ("1", u(1), "01"),
        ("10", u(10), "0a"),
        ("23", u(23), "17"),
        ("24", u(24), "1818"),
        ("25", u(25), "1819"),
        ("100", u(100), "1864"),
        ("1000", u(1000), "1903e8"),
        ("1000000", u(1_000_000), "1a000f4240"),
        ("1000000000000", u(1_000_000_000_000), "1b000000e8d4a51000"),
        ("18446744073709551615", u(u64::MAX), "1bffffffffffffffff"),
        ("false", Value::Bool(false), "f4"),
        ("true", Value::Bool(true), "f5"),
        ("null", Value::Null, "f6"),
        ("h''", Value::Bytes(vec![]), "40"),
        ("h'01020304'", Value::Bytes(vec![1, 2, 3, 4]), "4401020304"),
        ("\"\"", t(""), "60"),
        ("\"a\"", t("a"), "6161"),
        ("\"IETF\"", t("IETF"), "6449455446"),
        ("\"\\\"\\\\\"", t("\"\\"), "62225c"),
        ("\"\\u00fc\"", t("\u{00fc}"), "62c3bc"),
        ("\"\\u6c34\"", t("\u{6c34}"), "63e6b0b4"),
        ("\"\\ud800\\udd51\"", t("\u{10151}"), "64f0908591"),
        ("[]", Value::Array(vec![]), "80"),
        (
            "[1, 2, 3]",
            Value::Array(vec![u(1), u(2), u(3)]),
            "83010203",
        ),
        (
            "[1, [2, 3], [4, 5]]",
            Value::Array(vec![
                u(1),
                Value::Array(vec![u(2), u(3)]),
                Value::Array(vec![u(4), u(5)]),
            ]),
            "8301820203820405",
        ),
        (
            "[1, 2, ..., 25]",
            Value::Array((1..=25).map(u).collect()),
            "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
        ),
        ("{}", Value::Map(vec![]), "a0"),
        (
            "{1: 2, 3: 4}",
            Value::Map(vec![(u(1), u(2)), (u(3), u(4))]),
            "a201020304",
        ),
        (
            "{\"a\": 1, \"b\": [2, 3]}",
            Value::Map(vec![
                (t("a"), u(1)),
                (t("b"), Value::Array(vec![u(2), u(3)])),
            ]),
            "a26161016162820203",
        ),
        (
            "[\"a\", {\"b\": \"c\"}]",
            Value::Array(vec![t("a"), Value::Map(vec![(t("b"), t("c"))])]),
            "826161a161626163",
        ),
        (
            "{\"a\": \"A\", \"b\": \"B\", \"c\": \"C\", \"d\": \"D\", \"e\": \"E\"}",
            Value::Map(
                ["a", "b", "c", "d", "e"]
                    .iter()
                    .map(|k| (t(k), t(&k.to_uppercase())))
                    .collect(),
            ),
            "a56161614161626142616361436164614461656145",
        ),
    ]
}

#[test]
fn canonical_appendix_a_encode_gives_the_rfc_bytes() {
    for (diag, value, hex_str) in appendix_a() {
        assert_eq!(encode(&value).unwrap(), h(hex_str), "encoding {diag}");
    }
}

#[test]
fn canonical_appendix_a_decode_gives_the_value_back() {
    for (diag, value, hex_str) in appendix_a() {
        assert_eq!(decode(&h(hex_str)).unwrap(), value, "decoding {diag}");
    }
}

#[test]
fn canonical_appendix_a_map_in_reverse_order_still_encodes_to_the_rfc_bytes() {
    let reversed = Value::Map(
        ["e", "d", "c", "b", "a"]
            .iter()
            .map(|k| (t(k), t(&k.to_uppercase())))
            .collect(),
    );
    assert_eq!(
        encode(&reversed).unwrap(),
        h("a56161614161626142616361436164614461656145")
    );
}

/// RFC 8949 Appendix A examples outside MemLineage's subset or not in deterministic encoding,
/// each with the error it must produce.
#[test]
fn canonical_appendix_a_items_outside_the_subset_are_rejected() {
    let neg = |offset| CanonicalError::NegativeInteger { offset };
    let float = |precision| CanonicalError::Float {
        offset: 0,
        precision,
    };
    let simple = |value| CanonicalError::UnsupportedSimple { offset: 0, value };
    let indef = |offset, kind| CanonicalError::IndefiniteLength { offset, kind };
    let cases: Vec<(&str, CanonicalError)> = vec![
        ("20", neg(0)),                                                // -1
        ("29", neg(0)),                                                // -10
        ("3863", neg(0)),                                              // -100
        ("3903e7", neg(0)),                                            // -1000
        ("3bffffffffffffffff", neg(0)),                                // -18446744073709551616
        ("c249010000000000000000", CanonicalError::Tag { offset: 0 }), // bignum
        (
            "c074323031332d30332d32315432303a30343a30305a",
            CanonicalError::Tag { offset: 0 },
        ),
        ("d74401020304", CanonicalError::Tag { offset: 0 }),
        ("d818456449455446", CanonicalError::Tag { offset: 0 }),
        ("f90000", float("half")),               // 0.0
        ("f93c00", float("half")),               // 1.0
        ("fa47c35000", float("single")),         // 100000.0
        ("fb3ff199999999999a", float("double")), // 1.1
        ("f97c00", float("half")),               // Infinity
        ("f7", simple(23)),                      // undefined
        ("f0", simple(16)),                      // simple(16)
        ("f8ff", simple(255)),                   // simple(255)
        ("5f42010243030405ff", indef(0, "byte string")),
        ("7f657374726561646d696e67ff", indef(0, "text string")),
        ("9fff", indef(0, "array")),
        ("9f018202039f0405ffff", indef(0, "array")),
        ("83018202039f0405ff", indef(5, "array")),
        ("83019f0203ff820405", indef(2, "array")),
        ("bf61610161629f0203ffff", indef(0, "map")),
        ("826161bf61626163ff", indef(3, "map")),
    ];
    for (hex_str, expected) in cases {
        assert_eq!(decode(&h(hex_str)), Err(expected), "decoding {hex_str}");
    }
}

/// RFC 8949 §4.2.1's ordering example: keys 10, 100, -1, "z", "aa", [100], [-1], false sort
/// in that order, by the bytewise lexicographic order of their encodings. MemLineage has no
/// negative integers, so -1 and [-1] are left out. Note `false` (one byte, 0xf4) sorts *last*:
/// the order is bytewise, not the "shorter first" order of RFC 7049 §3.9.
#[test]
fn canonical_rfc8949_section_4_2_1_key_order_example() {
    let sorted_keys = [
        u(10),
        u(100),
        t("z"),
        t("aa"),
        Value::Array(vec![u(100)]),
        Value::Bool(false),
    ];
    let expected = h("a6 0af6 1864f6 617af6 626161f6 811864f6 f4f6"
        .replace(' ', "")
        .as_str());

    let in_order = Value::Map(
        sorted_keys
            .iter()
            .map(|k| (k.clone(), Value::Null))
            .collect(),
    );
    let reversed = Value::Map(
        sorted_keys
            .iter()
            .rev()
            .map(|k| (k.clone(), Value::Null))
            .collect(),
    );
    assert_eq!(encode(&in_order).unwrap(), expected);
    assert_eq!(encode(&reversed).unwrap(), expected);
    assert_eq!(decode(&expected).unwrap(), in_order);

    // The same map in RFC 7049's length-first order (10, false, 100, "z", "aa", [100]) is
    // refused at the key 100, which follows false (0xf4) although 0x18 < 0xf4.
    let length_first = h("a6 0af6 f4f6 1864f6 617af6 626161f6 811864f6"
        .replace(' ', "")
        .as_str());
    assert_eq!(
        decode(&length_first),
        Err(CanonicalError::UnsortedMapKey { offset: 5 })
    );
}

// ---------------------------------------------------------------------------------------------
// One rejection test per error variant: a hand-made byte string, the variant and its offset.
// ---------------------------------------------------------------------------------------------

#[test]
fn canonical_rejects_truncated_head() {
    assert_eq!(
        decode(&[]),
        Err(CanonicalError::TruncatedHead { offset: 0 })
    );
    // 0x19 announces a two-byte argument; one is present.
    assert_eq!(
        decode(&[0x19, 0x01]),
        Err(CanonicalError::TruncatedHead { offset: 0 })
    );
    // [1, <uint16 head cut short>]
    assert_eq!(
        decode(&[0x82, 0x01, 0x19]),
        Err(CanonicalError::TruncatedHead { offset: 2 })
    );
    // A text string whose four-byte length is cut short.
    assert_eq!(
        decode(&[0x7a, 0x00, 0x00]),
        Err(CanonicalError::TruncatedHead { offset: 0 })
    );
    // The two-byte simple value form with no second byte.
    assert_eq!(
        decode(&[0xf8]),
        Err(CanonicalError::TruncatedHead { offset: 0 })
    );
}

#[test]
fn canonical_rejects_truncated_payload() {
    // h'010203' with only one payload byte present.
    assert_eq!(
        decode(&[0x43, 0x01]),
        Err(CanonicalError::TruncatedPayload {
            offset: 0,
            kind: "byte string",
            declared: 3,
            needed: 3,
            remaining: 1
        })
    );
    // A text string declaring 2^64 - 1 bytes: refused before any allocation.
    let mut huge = vec![0x7b];
    huge.extend_from_slice(&[0xff; 8]);
    huge.extend_from_slice(b"abc");
    assert_eq!(
        decode(&huge),
        Err(CanonicalError::TruncatedPayload {
            offset: 0,
            kind: "text string",
            declared: u64::MAX,
            needed: u64::MAX,
            remaining: 3
        })
    );
    // An array declaring 3 elements with 1 byte left.
    assert_eq!(
        decode(&[0x83, 0x01]),
        Err(CanonicalError::TruncatedPayload {
            offset: 0,
            kind: "array",
            declared: 3,
            needed: 3,
            remaining: 1
        })
    );
    // A map declaring 2 entries (at least 4 bytes) with 3 left, inside an array.
    assert_eq!(
        decode(&[0x81, 0xa2, 0x01, 0x02, 0x03]),
        Err(CanonicalError::TruncatedPayload {
            offset: 1,
            kind: "map",
            declared: 2,
            needed: 4,
            remaining: 3
        })
    );
    // A map declaring 2^32 - 1 entries.
    assert_eq!(
        decode(&[0xba, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00]),
        Err(CanonicalError::TruncatedPayload {
            offset: 0,
            kind: "map",
            declared: 0xffff_ffff,
            needed: 0x1_ffff_fffe,
            remaining: 2
        })
    );
}

#[test]
fn canonical_rejects_trailing_bytes() {
    assert_eq!(
        decode(&[0x01, 0x02, 0x03]),
        Err(CanonicalError::TrailingBytes {
            offset: 1,
            count: 2
        })
    );
    assert_eq!(
        decode(&[0x80, 0x80]),
        Err(CanonicalError::TrailingBytes {
            offset: 1,
            count: 1
        })
    );
}

#[test]
fn canonical_rejects_non_shortest_integer() {
    // [1, 2, 3] with the 3 written as 0x19 0x00 0x03.
    let err = decode(&[0x83, 0x01, 0x02, 0x19, 0x00, 0x03]).unwrap_err();
    assert_eq!(
        err,
        CanonicalError::NonShortestInteger {
            offset: 3,
            value: 3,
            head_len: 3,
            shortest: 1
        }
    );
    assert!(
        err.to_string()
            .starts_with("non-shortest integer encoding at byte 3"),
        "{err}"
    );
    // Every wider-than-needed width at every boundary.
    let cases: [(&[u8], u64, usize, usize); 5] = [
        (&[0x18, 0x17], 23, 2, 1),
        (&[0x19, 0x00, 0xff], 255, 3, 2),
        (&[0x1a, 0x00, 0x00, 0xff, 0xff], 65535, 5, 3),
        (
            &[0x1b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
            0xffff_ffff,
            9,
            5,
        ),
        (&[0x1b, 0, 0, 0, 0, 0, 0, 0, 0], 0, 9, 1),
    ];
    for (bytes, value, head_len, shortest) in cases {
        assert_eq!(
            decode(bytes),
            Err(CanonicalError::NonShortestInteger {
                offset: 0,
                value,
                head_len,
                shortest
            }),
            "{bytes:02x?}"
        );
    }
}

#[test]
fn canonical_rejects_non_shortest_length() {
    let nsl = |offset, kind, length, head_len, shortest| CanonicalError::NonShortestLength {
        offset,
        kind,
        length,
        head_len,
        shortest,
    };
    assert_eq!(
        decode(&[0x58, 0x01, 0xaa]),
        Err(nsl(0, "byte string", 1, 2, 1))
    );
    assert_eq!(
        decode(&[0x79, 0x00, 0x00]),
        Err(nsl(0, "text string", 0, 3, 1))
    );
    assert_eq!(
        decode(&[0x81, 0x98, 0x01, 0x00]),
        Err(nsl(1, "array", 1, 2, 1))
    );
    assert_eq!(
        decode(&[0xba, 0x00, 0x00, 0x00, 0x00]),
        Err(nsl(0, "map", 0, 5, 1))
    );
}

#[test]
fn canonical_rejects_unsorted_map_keys() {
    // {2: 0, 1: 0}
    assert_eq!(
        decode(&[0xa2, 0x02, 0x00, 0x01, 0x00]),
        Err(CanonicalError::UnsortedMapKey { offset: 3 })
    );
    // {"b": 0, "a": 0}
    assert_eq!(
        decode(&[0xa2, 0x61, 0x62, 0x00, 0x61, 0x61, 0x00]),
        Err(CanonicalError::UnsortedMapKey { offset: 4 })
    );
}

#[test]
fn canonical_rejects_duplicate_map_keys() {
    // {1: 0, 1: 0}
    assert_eq!(
        decode(&[0xa2, 0x01, 0x00, 0x01, 0x01]),
        Err(CanonicalError::DuplicateMapKey { offset: 3 })
    );
    // {"a": 0, "b": 1, "b": 2}
    assert_eq!(
        decode(&[0xa3, 0x61, 0x61, 0x00, 0x61, 0x62, 0x01, 0x61, 0x62, 0x02]),
        Err(CanonicalError::DuplicateMapKey { offset: 7 })
    );
    // encode refuses a map holding two equal keys.
    let dup = Value::Map(vec![(u(1), u(0)), (u(1), u(1))]);
    assert_eq!(
        encode(&dup),
        Err(CanonicalError::DuplicateMapKey { offset: 3 })
    );
}

#[test]
fn canonical_rejects_indefinite_lengths() {
    let indef = |offset, kind| CanonicalError::IndefiniteLength { offset, kind };
    assert_eq!(decode(&[0x5f, 0xff]), Err(indef(0, "byte string")));
    assert_eq!(decode(&[0x7f, 0xff]), Err(indef(0, "text string")));
    assert_eq!(decode(&[0x81, 0x9f, 0xff]), Err(indef(1, "array")));
    assert_eq!(decode(&[0xbf, 0xff]), Err(indef(0, "map")));
    // Additional information 31 on an unsigned integer is not well-formed at all.
    assert_eq!(decode(&[0x1f]), Err(indef(0, "unsigned integer")));
}

#[test]
fn canonical_rejects_break_byte() {
    assert_eq!(
        decode(&[0xff]),
        Err(CanonicalError::UnexpectedBreak { offset: 0 })
    );
    assert_eq!(
        decode(&[0x82, 0x01, 0xff]),
        Err(CanonicalError::UnexpectedBreak { offset: 2 })
    );
}

#[test]
fn canonical_rejects_floats() {
    let float = |offset, precision| CanonicalError::Float { offset, precision };
    assert_eq!(decode(&[0xf9, 0x3c, 0x00]), Err(float(0, "half")));
    assert_eq!(
        decode(&[0x81, 0xfa, 0x3f, 0x80, 0x00, 0x00]),
        Err(float(1, "single"))
    );
    assert_eq!(
        decode(&[0xfb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]),
        Err(float(0, "double"))
    );
    // Refused as a float even when truncated: the initial byte says enough.
    assert_eq!(decode(&[0xfb]), Err(float(0, "double")));
}

#[test]
fn canonical_rejects_tags() {
    // 1(0): epoch time 0.
    assert_eq!(
        decode(&[0xc1, 0x00]),
        Err(CanonicalError::Tag { offset: 0 })
    );
    // {"a": 32(h'')} with a one-byte tag number.
    assert_eq!(
        decode(&[0xa1, 0x61, 0x61, 0xd8, 0x20, 0x40]),
        Err(CanonicalError::Tag { offset: 3 })
    );
    // Major type 6 with reserved additional information is still a tag.
    assert_eq!(decode(&[0xdc]), Err(CanonicalError::Tag { offset: 0 }));
}

#[test]
fn canonical_rejects_negative_integers_as_unsupported() {
    let err = decode(&[0x82, 0x00, 0x20]).unwrap_err();
    assert_eq!(err, CanonicalError::NegativeInteger { offset: 2 });
    assert!(
        err.to_string().starts_with("unsupported negative integer"),
        "{err}"
    );
    // Even with its argument missing.
    assert_eq!(
        decode(&[0x38]),
        Err(CanonicalError::NegativeInteger { offset: 0 })
    );
}

#[test]
fn canonical_rejects_simple_values_other_than_false_true_null() {
    let simple = |offset, value| CanonicalError::UnsupportedSimple { offset, value };
    assert_eq!(decode(&[0xf7]), Err(simple(0, 23))); // undefined
    assert_eq!(decode(&[0xe0]), Err(simple(0, 0)));
    assert_eq!(decode(&[0x81, 0xf3]), Err(simple(1, 19)));
    assert_eq!(decode(&[0xf8, 0x20]), Err(simple(0, 32)));
    // false in the two-byte form (not well-formed, RFC 8949 §3.3) is not false.
    assert_eq!(decode(&[0xf8, 0x14]), Err(simple(0, 20)));
}

#[test]
fn canonical_rejects_invalid_utf8() {
    // "\xc3(" : a two-byte sequence cut by an ASCII byte.
    assert_eq!(
        decode(&[0x62, 0xc3, 0x28]),
        Err(CanonicalError::InvalidUtf8 {
            offset: 1,
            string_offset: 0
        })
    );
    // [0, "a\xffb"]: the bad byte is at offset 4.
    assert_eq!(
        decode(&[0x82, 0x00, 0x63, 0x61, 0xff, 0x62]),
        Err(CanonicalError::InvalidUtf8 {
            offset: 4,
            string_offset: 2
        })
    );
    // A UTF-16 surrogate encoded as UTF-8 (CESU-8) is not UTF-8.
    assert_eq!(
        decode(&[0x63, 0xed, 0xa0, 0x80]),
        Err(CanonicalError::InvalidUtf8 {
            offset: 1,
            string_offset: 0
        })
    );
    // The same bytes are a fine byte string.
    assert_eq!(
        decode(&[0x43, 0xed, 0xa0, 0x80]),
        Ok(Value::Bytes(vec![0xed, 0xa0, 0x80]))
    );
}

#[test]
fn canonical_rejects_nesting_deeper_than_the_limit() {
    assert_eq!(MAX_DEPTH, 32);
    // 32 nested arrays: accepted.
    let mut ok = vec![0x81; MAX_DEPTH - 1];
    ok.push(0x80);
    assert!(decode(&ok).is_ok());
    // 33 nested arrays: the 33rd (at byte 32) is refused.
    let mut deep = vec![0x81; MAX_DEPTH];
    deep.push(0x80);
    assert_eq!(
        decode(&deep),
        Err(CanonicalError::DepthExceeded {
            offset: 32,
            limit: 32
        })
    );
    // Maps count too: {0: {0: ... {} ...}} with 33 maps.
    let mut maps = [0xa1, 0x00].repeat(MAX_DEPTH);
    maps.push(0xa0);
    assert_eq!(
        decode(&maps),
        Err(CanonicalError::DepthExceeded {
            offset: 64,
            limit: 32
        })
    );
    // A deep input far beyond the limit fails fast instead of overflowing the stack.
    let mut very_deep = vec![0x81; 1_000_000];
    very_deep.push(0x80);
    assert_eq!(
        decode(&very_deep),
        Err(CanonicalError::DepthExceeded {
            offset: 32,
            limit: 32
        })
    );
}

#[test]
fn canonical_rejects_reserved_additional_information() {
    for (major, base) in [
        (0u8, 0x00u8),
        (2, 0x40),
        (3, 0x60),
        (4, 0x80),
        (5, 0xa0),
        (7, 0xe0),
    ] {
        for info in 28..=30u8 {
            let byte = base | info;
            assert_eq!(
                decode(&[byte]),
                Err(CanonicalError::ReservedAdditionalInfo {
                    offset: 0,
                    major,
                    info
                }),
                "initial byte {byte:#04x}"
            );
        }
    }
    assert_eq!(
        decode(&[0x82, 0x00, 0x5c]),
        Err(CanonicalError::ReservedAdditionalInfo {
            offset: 2,
            major: 2,
            info: 28
        })
    );
}

#[test]
fn canonical_every_error_message_names_its_offset() {
    let inputs: [&[u8]; 16] = [
        &[0x82, 0x01, 0x19],
        &[0x82, 0x43, 0x01],
        &[0x00, 0x00],
        &[0x82, 0x00, 0x18, 0x01],
        &[0x82, 0x00, 0x58, 0x01, 0x00],
        &[0xa2, 0x02, 0x00, 0x01, 0x00],
        &[0xa2, 0x01, 0x00, 0x01, 0x00],
        &[0x82, 0x00, 0x9f, 0xff],
        &[0x82, 0x00, 0xff],
        &[0x82, 0x00, 0xf9, 0x00, 0x00],
        &[0x82, 0x00, 0xc0, 0x00],
        &[0x82, 0x00, 0x20],
        &[0x82, 0x00, 0xf7],
        &[0x82, 0x00, 0x61, 0xff],
        &[0x81; 40],
        &[0x82, 0x00, 0x1c],
    ];
    let mut seen = std::collections::HashSet::new();
    for input in inputs {
        let err = decode(input).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("byte {}", err.offset())),
            "{text:?} does not name byte {}",
            err.offset()
        );
        assert_ne!(err.offset(), 0, "{text}: the fault is not at the start");
        seen.insert(std::mem::discriminant(&err));
    }
    // Each input above hits a different variant.
    assert_eq!(seen.len(), inputs.len());
}

/// The example messages of docs/canonical-cbor.md §3, verbatim, so the manual stays true.
#[test]
fn canonical_error_messages_match_the_manual() {
    let cases: [(&[u8], &str); 16] = [
        (
            &[0x82, 0x01, 0x19],
            "truncated input: the head of the item at byte 2 runs past the end of the input",
        ),
        (
            &[0x43, 0x01],
            "truncated input: the byte string at byte 0 declares length 3, which needs at least \
             3 more bytes, but only 1 remain",
        ),
        (
            &[0x01, 0x02, 0x03],
            "trailing bytes: 2 bytes follow the top-level item, starting at byte 1",
        ),
        (
            &[0x83, 0x01, 0x02, 0x19, 0x00, 0x03],
            "non-shortest integer encoding at byte 3: 3 is written with a 3-byte head, but its \
             shortest form takes 1 (RFC 8949 §4.2.1)",
        ),
        (
            &[0x58, 0x01, 0xaa],
            "non-shortest length encoding at byte 0: the byte string length 1 is written with a \
             2-byte head, but its shortest form takes 1 (RFC 8949 §4.2.1)",
        ),
        (
            &[0xa2, 0x02, 0x00, 0x01, 0x00],
            "map keys not in canonical order at byte 3: this key's encoding sorts before the \
             previous key's (RFC 8949 §4.2.1 bytewise lexicographic order)",
        ),
        (
            &[0xa2, 0x01, 0x00, 0x01, 0x00],
            "duplicate map key at byte 3",
        ),
        (
            &[0x9f, 0xff],
            "indefinite-length array at byte 0: only definite lengths are canonical \
             (RFC 8949 §4.2.1)",
        ),
        (
            &[0x82, 0x01, 0xff],
            "unexpected break byte 0xff at byte 2: indefinite-length items are not allowed",
        ),
        (
            &[0xf9, 0x3c, 0x00],
            "unsupported half-precision float at byte 0: MemLineage encodes no floats",
        ),
        (
            &[0xa1, 0x61, 0x61, 0xd8, 0x20, 0x40],
            "unsupported tag (major type 6) at byte 3: MemLineage encodes no tags",
        ),
        (
            &[0x82, 0x00, 0x20],
            "unsupported negative integer (major type 1) at byte 2: MemLineage encodes unsigned \
             integers only",
        ),
        (
            &[0xf7],
            "unsupported simple value 23 at byte 0: only false, true and null, in their one-byte \
             forms 0xf4, 0xf5, 0xf6, are allowed",
        ),
        (
            &[0x82, 0x00, 0x63, 0x61, 0xff, 0x62],
            "invalid UTF-8 in the text string at byte 2: the invalid sequence starts at byte 4",
        ),
        (
            &[0x81; 40],
            "nesting too deep at byte 32: more than 32 nested arrays and maps",
        ),
        (
            &[0x82, 0x00, 0x5c],
            "reserved additional information value 28 (major type 2) at byte 2: RFC 8949 §3 \
             reserves 28 to 30",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(decode(input).unwrap_err().to_string(), message);
    }
}
