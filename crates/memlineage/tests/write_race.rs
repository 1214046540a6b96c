//! The label of a new entry is computed before its transaction; a distrust record committed in
//! between by another handle on the same file must not leave the entry with the lower label
//! (write.rs, relabel.rs). The interleaving is made deterministic through the injected clock,
//! which the write path reads while it builds the entry, after computing its label.

mod common;

use common::p;

use common::{key, setup_with};
use memlineage::AttributionName;
use memlineage::{Clock, Error, Memory, SqliteStore, WriteRequest};
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::label::{Fallback, TrustLabel};
use memlineage_core::records::{Distrust, DistrustTarget};
use memlineage_core::{EntryId, Hash256};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// A clock that, the first time it is read, has another handle commit a distrust record.
struct InterleavingClock {
    other: Mutex<Option<(Memory, DistrustTarget)>>,
    next: AtomicU64,
}

impl Clock for InterleavingClock {
    fn now_ms(&self) -> u64 {
        let pending = self.other.lock().unwrap().take();
        if let Some((other, target)) = pending {
            other.distrust(&p("operator"), target, "race").unwrap();
        }
        self.next.fetch_add(1000, Ordering::Relaxed)
    }
}

/// A handle on `path` whose first clock reading commits `target`'s distrust through a second
/// handle on the same file.
fn racing_handle(path: &Path, target: DistrustTarget) -> Memory {
    let other = Memory::open(SqliteStore::open(path).unwrap()).unwrap();
    other.keys().insert(&p("operator"), key(1));
    let mem = Memory::open(SqliteStore::open(path).unwrap())
        .unwrap()
        .with_clock(InterleavingClock {
            other: Mutex::new(Some((other, target))),
            next: AtomicU64::new(1_800_000_000_000),
        });
    mem.keys().insert(&p("agent"), key(2));
    mem
}

fn child_of(parent: EntryId) -> WriteRequest {
    WriteRequest::new(&p("agent"), EntryKind::Derived, "pay the vendor").with_parents(
        vec![Parent {
            id: parent,
            weight: "0.9".parse().unwrap(),
        }],
        AttributionName::EXPLICIT,
    )
}

#[test]
fn a_parent_distrusted_mid_write_raises_the_new_label() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let note = setup_with(SqliteStore::open(&path).unwrap())
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "vendor account is DE00",
        ))
        .unwrap();
    let mem = racing_handle(&path, DistrustTarget::Entry(note.id));
    let child = mem.write(child_of(note.id)).unwrap();
    // Without the re-check inside the transaction the child would be DERIVED_TRUSTED for ever.
    assert_eq!(child.label, TrustLabel::DerivedUntrusted);
    assert_eq!(
        mem.get(&note.id).unwrap().effective_label,
        TrustLabel::External
    );
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn a_writer_distrusted_mid_write_gets_an_external_label() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    setup_with(SqliteStore::open(&path).unwrap());
    let mem = racing_handle(&path, DistrustTarget::Principal("agent".into()));
    let w = mem
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "a root",
        ))
        .unwrap();
    assert_eq!(w.label, TrustLabel::External);
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn a_batch_that_distrusts_its_own_writer_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mem = setup_with(SqliteStore::open(&dir.path().join("store.db")).unwrap());
    let size = mem.size().unwrap();
    let distrust = Distrust {
        target: DistrustTarget::Principal("agent".into()),
        reason: "in the same batch".into(),
    };
    let err = mem
        .write_batch(vec![
            WriteRequest::new(&p("operator"), EntryKind::Distrust, distrust.to_content()),
            WriteRequest::new(&p("agent"), EntryKind::Observation, "after the distrust"),
        ])
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::StaleLabel {
                signed: TrustLabel::Trusted,
                required: TrustLabel::External,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("write it again"), "{err}");
    assert_eq!(mem.size().unwrap(), size, "nothing was written");
}

#[test]
fn a_relabelled_batch_keeps_its_internal_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let note = setup_with(SqliteStore::open(&path).unwrap())
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "vendor account is DE00",
        ))
        .unwrap();
    let mem = racing_handle(&path, DistrustTarget::Entry(note.id));
    // The id the first entry gets in the first attempt (before the distrust): the body the
    // write path builds, created at the clock's first reading.
    let first = child_of(note.id);
    let k = key(2);
    let body = EntryBody {
        scope: Scope::default(),
        writer: "agent".into(),
        key_id: memlineage_core::keys::key_id(&k.verifying_key()),
        kind: EntryKind::Derived,
        content_hash: Hash256::of(&first.content),
        content_len: first.content.len() as u64,
        source_hash: None,
        context_hash: None,
        parents: first.parents.clone(),
        attribution: "explicit".into(),
        tau: "0.5".parse().unwrap(),
        fallback: Fallback::Strict,
        label: TrustLabel::DerivedTrusted,
        created_at_ms: 1_800_000_000_000,
        metadata: Default::default(),
    };
    let first_attempt_id = SignedEntry::sign(body, &k).unwrap().id();
    let written = mem
        .write_batch(vec![first, child_of(first_attempt_id)])
        .unwrap();
    assert_eq!(written[0].label, TrustLabel::DerivedUntrusted);
    assert_ne!(
        written[0].id, first_attempt_id,
        "re-labelled, so re-identified"
    );
    let second = mem.get(&written[1].id).unwrap();
    assert_eq!(second.entry.body().parents[0].id, written[0].id);
    assert_eq!(written[1].label, TrustLabel::DerivedUntrusted);
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}
