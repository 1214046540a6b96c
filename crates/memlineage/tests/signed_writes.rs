//! Entries signed ahead of their commit (`signed_writes.rs`): the append re-checks what may
//! have changed since the signing — the signer's registration, the labels' distrust records —
//! and takes another handle's signed entries only with every check.

mod common;

use common::{derived, key, load_fixture_keys, p, setup_with};
use memlineage::{Error, ErrorKind, Memory, SqliteStore, WriteRequest};
use memlineage_core::entry::EntryKind;
use memlineage_core::label::TrustLabel;
use memlineage_core::records::DistrustTarget;

fn note(text: &str) -> WriteRequest {
    WriteRequest::new(&p("agent"), EntryKind::Observation, text)
}

#[test]
fn signing_then_appending_writes_what_write_batch_writes() {
    let direct = setup_with(SqliteStore::in_memory().unwrap());
    let early = setup_with(SqliteStore::in_memory().unwrap());
    let batch = |mem: &Memory| {
        let root = mem.write(note("the vendor's account is DE00")).unwrap();
        (
            root.id,
            vec![
                note("a second root"),
                derived("agent", "pay the vendor", &[(root.id, "0.9")]),
                WriteRequest::new(&p("web"), EntryKind::ToolOutput, "a web page"),
            ],
        )
    };
    let (_, reqs) = batch(&direct);
    let want = direct.write_batch(reqs).unwrap();
    let (_, reqs) = batch(&early);
    let signed = early.sign_writes(reqs).unwrap();
    assert_eq!(signed.len(), 3);
    let got = early.append_signed(&signed).unwrap();
    // The same clock readings, the same bodies: the same ids, indices and labels.
    assert_eq!(got, want);
    assert_eq!(got[2].label, TrustLabel::External);
    let report = early.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn sets_joined_and_split_append_in_order() {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    let mut all = mem.sign_writes(vec![note("one"), note("two")]).unwrap();
    all.extend(mem.sign_writes(vec![note("three")]).unwrap());
    assert_eq!(all.len(), 3);
    let last = all.split_off(2);
    assert_eq!((all.len(), last.len()), (2, 1));
    let first = mem.append_signed(&all).unwrap();
    let then = mem.append_signed(&last).unwrap();
    assert_eq!(then[0].index, first[1].index + 1);
    let texts: Vec<String> = [first[0].id, first[1].id, then[0].id]
        .iter()
        .map(|id| String::from_utf8(mem.get(id).unwrap().content.unwrap()).unwrap())
        .collect();
    assert_eq!(texts, ["one", "two", "three"]);
}

#[test]
fn a_parent_distrusted_after_the_signing_raises_the_label_at_the_append() {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    let root = mem.write(note("the vendor's account is DE00")).unwrap();
    let signed = mem
        .sign_writes(vec![derived(
            "agent",
            "pay the vendor",
            &[(root.id, "0.9")],
        )])
        .unwrap();
    mem.distrust(&p("operator"), DistrustTarget::Entry(root.id), "planted")
        .unwrap();
    let child = mem.append_signed(&signed).unwrap();
    // Signed as DERIVED_TRUSTED; the append labelled and signed it again.
    assert_eq!(child[0].label, TrustLabel::DerivedUntrusted);
    assert_eq!(
        mem.get(&child[0].id).unwrap().label,
        TrustLabel::DerivedUntrusted
    );
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn a_writer_revoked_after_the_signing_is_refused_at_the_append() {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    let signed = mem
        .sign_writes(vec![note("written before the revocation")])
        .unwrap();
    let size = mem.size().unwrap();
    mem.revoke_principal(&p("agent"), "key leaked").unwrap();
    let err = mem.append_signed(&signed).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert!(err.to_string().contains("revoked"), "{err}");
    assert_eq!(
        mem.size().unwrap(),
        size + 1,
        "only the revocation was logged"
    );
}

#[test]
fn another_handles_signed_entries_get_every_check() {
    // The parent is in the first store only: a handle that took the second store's signed
    // entries as its own would skip the parent check and log a dangling edge.
    let dir = tempfile::tempdir().unwrap();
    let first = setup_with(SqliteStore::open(&dir.path().join("a.db")).unwrap());
    let second = setup_with(SqliteStore::open(&dir.path().join("b.db")).unwrap());
    let root = first.write(note("only in the first store")).unwrap();
    let signed = first
        .sign_writes(vec![derived(
            "agent",
            "derived from it",
            &[(root.id, "0.9")],
        )])
        .unwrap();
    let size = second.size().unwrap();
    let err = second.append_signed(&signed).unwrap_err();
    assert!(
        matches!(err, Error::UnknownParent(id) if id == root.id),
        "{err}"
    );
    assert_eq!(second.size().unwrap(), size);
    // A handle's own signed entries are appended by it.
    assert_eq!(first.append_signed(&signed).unwrap().len(), 1);
}

#[test]
fn a_writer_registered_by_another_handle_is_found_at_the_signing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&path).unwrap());
    // The handle's registry is cached now.
    mem.write(note("before")).unwrap();
    let other = Memory::open(SqliteStore::open(&path).unwrap()).unwrap();
    load_fixture_keys(&other);
    let newcomer = key(40);
    other
        .add_principal(
            &p("newcomer"),
            memlineage_core::label::TrustClass::Trusted,
            &newcomer.verifying_key(),
        )
        .unwrap();
    mem.keys().insert(&p("newcomer"), newcomer);
    let signed = mem
        .sign_writes(vec![WriteRequest::new(
            &p("newcomer"),
            EntryKind::Observation,
            "my first entry",
        )])
        .unwrap();
    let w = mem.append_signed(&signed).unwrap();
    assert_eq!(w[0].label, TrustLabel::Trusted);
}

#[test]
fn a_request_the_write_path_refuses_is_refused_at_the_signing() {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    let size = mem.size().unwrap();
    let unknown = memlineage_core::EntryId(memlineage_core::Hash256::of(b"nothing"));
    let err = mem
        .sign_writes(vec![derived("agent", "from nowhere", &[(unknown, "1")])])
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownParent(id) if id == unknown),
        "{err}"
    );
    let err = mem
        .sign_writes(vec![WriteRequest::new(
            &p("nobody"),
            EntryKind::Observation,
            "x",
        )])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert_eq!(mem.size().unwrap(), size);
}
