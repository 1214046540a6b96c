//! The invariants of the strict decoders, checked on arbitrary input. Shared by the cargo-fuzz
//! targets (`crates/memlineage-core/fuzz/fuzz_targets/`) and the property tests that run in
//! the normal test suite (`tests/decoder_props.rs`), so both check exactly the same thing.
//!
//! Each function returns normally for any input the decoder handles correctly — refused with an
//! error, or accepted — and panics only when an invariant is broken: the decoder itself
//! panicked, or it accepted bytes that are not exactly the canonical encoding of what it
//! returned (DESIGN.md: "decoding is strict"; RFC 8949 §4.2.1).

use crate::checkpoint::{Checkpoint, NoteVerifier, open_checkpoint, parse_note};
use crate::entry::SignedEntry;
use crate::hash::{EntryId, Hash256};
use crate::records::{Distrust, RegistryChange, Tombstone};

/// A log leaf (`docs/formats.md`, "Log leaf"): accepted leaves re-encode to the input, their
/// body is valid, and their id is the SHA-256 of the body bytes; and the direct decoder agrees
/// with the generic one ([`entry_leaf_decoders_agree`]).
pub fn entry_leaf(data: &[u8]) {
    entry_leaf_decoders_agree(data);
    if let Ok(entry) = SignedEntry::from_leaf(data) {
        assert_eq!(
            entry.to_leaf(),
            data,
            "from_leaf accepted a non-canonical leaf"
        );
        assert_eq!(entry.id(), EntryId(Hash256::of(entry.body_bytes())));
        assert!(
            entry.body().validate().is_ok(),
            "from_leaf accepted an invalid body"
        );
    }
}

/// The direct leaf decoder (`entry/direct.rs`) and the generic one (the canonical CBOR tree)
/// agree on `data`: both accept it with equal entries (body, signed bytes, signature, id), or
/// both refuse it; and [`SignedEntry::from_leaf`] answers exactly what the generic decoder
/// answers, the same entry or the same error.
pub fn entry_leaf_decoders_agree(data: &[u8]) {
    let generic = SignedEntry::from_leaf_generic(data);
    match (crate::entry::decode_leaf_direct(data), &generic) {
        (Some(direct), Ok(g)) => assert_eq!(&direct, g, "the decoders read different entries"),
        (None, Err(_)) => {}
        (Some(_), Err(e)) => {
            panic!("the direct decoder accepted a leaf the generic one refuses: {e}")
        }
        (None, Ok(_)) => panic!("the direct decoder refused a valid leaf"),
    }
    assert_eq!(SignedEntry::from_leaf(data), generic);
}

/// The content of registry, tombstone and distrust records (`docs/formats.md`, "Control
/// records"): whatever a decoder accepts re-encodes to the input.
pub fn control_records(data: &[u8]) {
    if let Ok(change) = RegistryChange::from_content(data) {
        assert_eq!(
            change.to_content(),
            data,
            "registry change is not canonical"
        );
    }
    if let Ok(t) = Tombstone::from_content(data) {
        assert_eq!(t.to_content(), data, "tombstone is not canonical");
    }
    if let Ok(d) = Distrust::from_content(data) {
        assert_eq!(d.to_content(), data, "distrust record is not canonical");
    }
}

/// A signed checkpoint note (C2SP tlog-checkpoint in a C2SP signed note): parsing never panics;
/// an accepted checkpoint body is exactly the encoding of what it parses to; a note that opens
/// under `verifier` carries such a body.
pub fn checkpoint_note(data: &[u8], verifier: &NoteVerifier) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(note) = parse_note(text) {
        assert!(note.body.ends_with('\n'), "a note body ends with a newline");
    }
    if let Ok(cp) = Checkpoint::parse_body(text) {
        assert_eq!(
            cp.body(),
            text,
            "checkpoint body is not in its one encoding"
        );
    }
    if let Ok(cp) = open_checkpoint(text, verifier) {
        assert_eq!(Checkpoint::parse_body(&cp.body()).ok(), Some(cp));
    }
}
