//! Fuzz target: the strict canonical CBOR decoder never panics, and whatever it accepts is
//! exactly the canonical encoding of what it returns (RFC 8949 §4.2.1).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlineage_core::canonical::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = decode(data) {
        let again = encode(&value).expect("a decoded value always re-encodes");
        assert_eq!(again, data, "decode accepted a non-canonical encoding");
    }
});
