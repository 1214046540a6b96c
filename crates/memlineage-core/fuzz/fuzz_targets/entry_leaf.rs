//! Fuzz target: the strict log-leaf decoder (`SignedEntry::from_leaf`, docs/formats.md "Log
//! leaf") never panics, and whatever it accepts re-encodes to exactly the input, with a valid
//! body whose id is the SHA-256 of the body bytes. The checks are
//! `memlineage_core::fuzz_checks::entry_leaf`, also run by tests/decoder_props.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    memlineage_core::fuzz_checks::entry_leaf(data);
});
