//! Fuzz target: the decoders of registry, tombstone and distrust record contents
//! (docs/formats.md "Control records") never panic, and accept only the canonical encoding of
//! what they return. The checks are `memlineage_core::fuzz_checks::control_records`, also run
//! by tests/decoder_props.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    memlineage_core::fuzz_checks::control_records(data);
});
