//! Fuzz target: the C2SP signed-note and tlog-checkpoint parsers never panic; an accepted
//! checkpoint body is exactly the encoding of what it parses to, and a note that opens under
//! the verifier carries such a body. The checks are
//! `memlineage_core::fuzz_checks::checkpoint_note`, also run by tests/decoder_props.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlineage_core::checkpoint::NoteVerifier;
use std::sync::OnceLock;

fn verifier() -> &'static NoteVerifier {
    static V: OnceLock<NoteVerifier> = OnceLock::new();
    V.get_or_init(|| {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        NoteVerifier::from_signing_key("example.org/log", &key).expect("a valid key name")
    })
}

fuzz_target!(|data: &[u8]| {
    memlineage_core::fuzz_checks::checkpoint_note(data, verifier());
});
