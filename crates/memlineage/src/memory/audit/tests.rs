//! The audit on stores longer than the window of recent ids (16 entries in unit tests), so
//! that parents are found by authenticated store look-ups, and with the derived state edited
//! behind the program's back: the same problems as when every id was kept.

use crate::memory::{Memory, Settings, WriteRequest};
use crate::{SqliteStore, StepClock};
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::keys;
use memlineage_core::label::{TrustClass, Weight};
use memlineage_core::records::DistrustTarget;
use memlineage_core::{AttributionName, EntryId, PrincipalName};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn p(name: &str) -> PrincipalName {
    PrincipalName::new(name).unwrap()
}

fn key(seed: u64) -> ed25519_dalek::SigningKey {
    keys::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

/// A file store of roots and derived entries whose parents lie 40 to 120 entries back.
fn store(dir: &tempfile::TempDir) -> (Memory, Vec<EntryId>) {
    let path = dir.path().join("s.db");
    let mem = Memory::init(
        SqliteStore::open(&path).unwrap(),
        Settings::with_origin("test.local/audit"),
        &p("operator"),
        key(1),
    )
    .unwrap()
    .with_clock(StepClock::new(1_700_000_000_000, 1000));
    for (name, class, seed) in [
        ("agent", TrustClass::Trusted, 2),
        ("web", TrustClass::External, 3),
    ] {
        let k = key(seed);
        mem.add_principal(&p(name), class, &k.verifying_key())
            .unwrap();
        mem.keys().insert(&p(name), k);
    }
    let mut ids = Vec::new();
    for i in 0..160usize {
        let req = if i < 40 {
            let who = if i % 3 == 0 { "web" } else { "agent" };
            WriteRequest::new(&p(who), EntryKind::Observation, format!("root {i}"))
        } else {
            let w = |bp| Weight::from_bp(bp).unwrap();
            WriteRequest::new(&p("agent"), EntryKind::Derived, format!("derived {i}")).with_parents(
                vec![
                    Parent {
                        id: ids[i - 40],
                        weight: w(7000),
                    },
                    Parent {
                        id: ids[(i * 7) % (i - 39)],
                        weight: w(6000),
                    },
                ],
                AttributionName::EXPLICIT,
            )
        };
        ids.push(mem.write(req).unwrap().id);
    }
    (mem, ids)
}

fn sql(dir: &tempfile::TempDir) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.path().join("s.db")).unwrap()
}

fn reasons(mem: &Memory) -> Vec<String> {
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert_eq!(report.problem_count as usize, report.problems.len());
    report.problems.into_iter().map(|p| p.reason).collect()
}

#[test]
fn far_parents_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, _) = store(&dir);
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert_eq!(report.entries, 163);
}

#[test]
fn a_deleted_edge_from_a_far_parent_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, ids) = store(&dir);
    let n = sql(&dir)
        .execute(
            "DELETE FROM edges WHERE parent = ?1 AND child = ?2",
            rusqlite::params![ids[10].as_bytes().as_slice(), ids[50].as_bytes().as_slice()],
        )
        .unwrap();
    assert_eq!(n, 1);
    let r = reasons(&mem);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("missing edge to child"), "{r:?}");
}

#[test]
fn an_extra_edge_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, ids) = store(&dir);
    sql(&dir)
        .execute(
            "INSERT INTO edges (parent, child, weight) VALUES (?1, ?2, 9000)",
            rusqlite::params![ids[3].as_bytes().as_slice(), ids[150].as_bytes().as_slice()],
        )
        .unwrap();
    let r = reasons(&mem);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("extra edge"), "{r:?}");
}

#[test]
fn a_lowered_label_copy_of_a_far_parent_does_not_mislead_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, ids) = store(&dir);
    // Root 0 is by `web` (EXTERNAL); its copy says TRUSTED. Labels come from the leaves.
    sql(&dir)
        .execute(
            "UPDATE entries SET label = 'TRUSTED' WHERE id = ?1",
            [ids[0].as_bytes().as_slice()],
        )
        .unwrap();
    let r = reasons(&mem);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("lists its label as `TRUSTED`"), "{r:?}");
}

#[test]
fn a_hidden_distrust_record_is_still_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, ids) = store(&dir);
    let d = mem
        .distrust(&p("operator"), DistrustTarget::Entry(ids[1]), "bad source")
        .unwrap();
    let c = sql(&dir);
    let raised: i64 = c
        .query_row("SELECT count(*) FROM effective", [], |r| r.get(0))
        .unwrap();
    assert!(raised > 1, "the distrust raised descendants");
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
    // Hide the record from the kind index and drop the raises: the facts read ahead from the
    // index now differ from the leaves', and the second pass names every dropped raise.
    c.execute(
        "UPDATE entries SET kind = 'observation' WHERE idx = ?1",
        [d.index as i64],
    )
    .unwrap();
    c.execute("DELETE FROM effective", []).unwrap();
    let r = reasons(&mem);
    assert!(
        r.iter()
            .any(|x| x.contains("lists its kind as `observation`")),
        "{r:?}"
    );
    let dropped = r
        .iter()
        .filter(|x| x.contains("a distrust effect was removed"))
        .count();
    assert_eq!(dropped as i64, raised, "{r:?}");
}

#[test]
fn a_changed_far_parent_leaf_is_not_believed() {
    let dir = tempfile::tempdir().unwrap();
    let (mem, ids) = store(&dir);
    // Entry 50's parent ids[10]: make the store's leaf of ids[10] that of another entry.
    let c = sql(&dir);
    let other: Vec<u8> = c
        .query_row(
            "SELECT leaf FROM entries WHERE id = ?1",
            [ids[11].as_bytes().as_slice()],
            |r| r.get(0),
        )
        .unwrap();
    c.execute(
        "UPDATE entries SET leaf = ?1 WHERE id = ?2",
        rusqlite::params![other, ids[10].as_bytes().as_slice()],
    )
    .unwrap();
    let r = reasons(&mem);
    assert!(r.iter().any(|x| x.contains("indexed id differs")), "{r:?}");
    assert!(
        r.iter()
            .any(|x| x.contains(&format!("parent {} is not earlier in the log", ids[10]))),
        "{r:?}"
    );
}
