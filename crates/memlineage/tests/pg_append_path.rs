//! The PostgreSQL append path (`docs/store.md`, "The PostgreSQL store"; `store/postgres/`):
//!
//! - the rows of a batch are one statement: when it fails part way (here a row that a store
//!   edited behind the program's back already holds), nothing of the batch is written — no
//!   entry, content, document, value key, node or edge, the search totals and the log head's
//!   size unchanged — and the same batch lands once the obstacle is gone;
//! - the full-text index's pending list is merged after appends, in the background, by the
//!   role that owns the index; a role that may not merge still appends (the server merges);
//! - the full-text documents are partitioned by leaf index: a log longer than a partition is
//!   searched whole, its next partition is made ahead of the appends that need it, and a
//!   writer connected as another role reaches a new partition.

mod common;

use common::{p, setup_with};
use memlineage::store::{PENDING_MERGE_EVERY, SEARCH_PARTITION};
use memlineage::{Memory, OpenMode, StoreLocation, WriteRequest};
use memlineage_core::entry::{EntryKind, Parent, Scope};
use memlineage_core::label::Weight;
use memlineage_core::{AttributionName, EntryId};
use std::time::{Duration, Instant};

/// `n` entries whose texts carry `tag`, an amount and an e-mail address (value keys), each
/// but the first derived from the one before (edges).
fn batch(tag: &str, n: usize, parent: Option<EntryId>) -> Vec<WriteRequest> {
    (0..n)
        .map(|i| {
            let text = format!(
                "{tag} note {i}: pay 12.{i:02} EUR to billing{i}@example.com about the vault"
            );
            let req = WriteRequest::new(&p("agent"), EntryKind::Observation, text);
            match parent {
                Some(id) if i == 0 => req.with_parents(
                    vec![Parent {
                        id,
                        weight: Weight::ONE,
                    }],
                    AttributionName::EXPLICIT,
                ),
                _ => req,
            }
        })
        .collect()
}

/// Row counts of every table an append writes, the search totals and the log head's size.
fn counts(db: &mut postgres::Client) -> Vec<i64> {
    let row = db
        .query_one(
            "SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM content), \
                    (SELECT count(*) FROM search), (SELECT count(*) FROM value_keys), \
                    (SELECT count(*) FROM nodes), (SELECT count(*) FROM edges), \
                    (SELECT docs FROM search_stats), (SELECT length FROM search_stats), \
                    (SELECT size FROM log_head)",
            &[],
        )
        .unwrap();
    (0..9).map(|i| row.get(i)).collect()
}

fn connect(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// A new store in a fresh database of the shared cluster, and its URL; `None` without
/// PostgreSQL (outside CI).
fn fresh_store() -> Option<(String, Memory)> {
    let url = memlineage_pgtest::shared()?.database();
    let mem = setup_with(
        StoreLocation::Postgres(url.clone())
            .open(OpenMode::Create)
            .unwrap(),
    );
    Some((url, mem))
}

#[test]
fn a_batch_whose_rows_statement_fails_leaves_nothing_half_written() {
    let Some((url, mem)) = fresh_store() else {
        return;
    };
    let first = mem.write_batch(batch("alpha", 8, None)).unwrap();
    let mut db = connect(&url);
    let before = counts(&mut db);
    let size = mem.size().unwrap();
    // A leaf-hash row for the next index, planted behind the program's back: the batch's own
    // node row for it conflicts inside the one statement, after other tables' rows went in.
    let planted = i64::try_from(size).unwrap();
    db.execute(
        "INSERT INTO nodes (level, idx, hash) VALUES (0, $1, $2)",
        &[&planted, &vec![7u8; 32]],
    )
    .unwrap();
    let err = mem
        .write_batch(batch("beta", 300, Some(first[7].id)))
        .unwrap_err();
    assert!(err.to_string().contains("nodes"), "{err}");
    db.execute(
        "DELETE FROM nodes WHERE level = 0 AND idx = $1",
        &[&planted],
    )
    .unwrap();
    assert_eq!(counts(&mut db), before, "nothing of the failed batch");
    assert!(
        mem.search("beta", &Scope::default(), 5)
            .unwrap()
            .entries
            .is_empty()
    );
    // The same batch lands, once, at the end.
    let written = mem
        .write_batch(batch("beta", 300, Some(first[7].id)))
        .unwrap();
    assert_eq!(written[0].index, size);
    let after = counts(&mut db);
    assert_eq!(after[0] - before[0], 300, "entries");
    assert_eq!(after[5] - before[5], 1, "edges");
    assert!(
        after[3] - before[3] >= 600,
        "value keys: {after:?} {before:?}"
    );
    assert_eq!(after[8], i64::try_from(size).unwrap() + 300, "log head");
    let hits = mem.search("beta", &Scope::default(), 5).unwrap();
    assert_eq!(hits.entries.len(), 5);
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Entries in the pending list of the first partition's full-text index (`pgstattuple`'s
/// `pgstatginindex`).
fn pending(db: &mut postgres::Client) -> i64 {
    db.query_one(
        "SELECT pending_tuples FROM pgstatginindex('search_p0_terms'::regclass)",
        &[],
    )
    .unwrap()
    .get(0)
}

/// A store in a fresh database whose `search` table autovacuum leaves alone (so that only the
/// store merges the pending list), with `pgstattuple` to look at the index; `None` (with a
/// message) when the server lacks that contrib module, unless `CI` is set: then it panics.
fn store_without_autovacuum(cluster: &memlineage_pgtest::Cluster) -> Option<String> {
    let url = cluster.database();
    drop(
        StoreLocation::Postgres(url.clone())
            .open(OpenMode::Create)
            .unwrap(),
    );
    let mut db = connect(&url);
    if let Err(e) = db.batch_execute("CREATE EXTENSION IF NOT EXISTS pgstattuple") {
        let why = format!("the server has no pgstattuple (PostgreSQL's contrib modules): {e}");
        assert!(!memlineage_pgtest::required(), "{why}");
        eprintln!("skipping: {why}");
        return None;
    }
    db.batch_execute("ALTER TABLE search_p0 SET (autovacuum_enabled = off)")
        .unwrap();
    Some(url)
}

/// Writes the number of documents after which a store value merges.
fn write_until_a_merge(mem: &Memory) {
    let rounds = PENDING_MERGE_EVERY.div_ceil(256);
    for round in 0..rounds {
        mem.write_batch(batch(&format!("round{round}"), 256, None))
            .unwrap();
    }
}

#[test]
fn the_pending_list_is_merged_after_appends() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let Some(url) = store_without_autovacuum(cluster) else {
        return;
    };
    let mem = setup_with(
        StoreLocation::Postgres(url.clone())
            .open(OpenMode::Existing)
            .unwrap(),
    );
    let mut db = connect(&url);
    write_until_a_merge(&mem);
    // The merge runs in the background: wait for it (the list held PENDING_MERGE_EVERY
    // documents, below the server's own 4 MB limit, so nothing else merges it).
    let deadline = Instant::now() + Duration::from_secs(60);
    while pending(&mut db) > 0 {
        assert!(
            Instant::now() < deadline,
            "the pending list still holds {} documents",
            pending(&mut db)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Merged entries are found as before.
    let hits = mem.search("round0", &Scope::default(), 300).unwrap();
    assert_eq!(hits.entries.len(), 256);
}

#[test]
fn a_role_that_may_not_merge_still_appends() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let Some(url) = store_without_autovacuum(cluster) else {
        return;
    };
    let role = format!("writer_{}", std::process::id());
    let mut db = connect(&url);
    db.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT CREATE ON SCHEMA public TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
    ))
    .unwrap();
    let as_writer = url.replacen("postgres@", &format!("{role}@"), 1);
    let mem = setup_with(
        StoreLocation::Postgres(as_writer)
            .open(OpenMode::Existing)
            .unwrap(),
    );
    write_until_a_merge(&mem);
    mem.write_batch(batch("after", 256, None)).unwrap();
    // The merge was refused (the role does not own the index): the documents wait in the list.
    std::thread::sleep(Duration::from_millis(500));
    let written = i64::try_from(PENDING_MERGE_EVERY.div_ceil(256) * 256 + 256).unwrap();
    assert!(pending(&mut db) >= written);
    let hits = mem.search("after", &Scope::default(), 300).unwrap();
    assert_eq!(hits.entries.len(), 256);
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Whether the partition `k` of the full-text documents exists.
fn partition_exists(db: &mut postgres::Client, k: u64) -> bool {
    db.query_one(
        "SELECT to_regclass('search_p' || $1::int8) IS NOT NULL",
        &[&i64::try_from(k).unwrap()],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_log_longer_than_a_partition_is_searched_whole() {
    let Some((url, mem)) = fresh_store() else {
        return;
    };
    let mut db = connect(&url);
    assert!(partition_exists(&mut db, 0) && !partition_exists(&mut db, 1));
    // Past the middle of partition 0, the writer makes partition 1 ahead (in the background,
    // after a merge).
    let mut written = mem.size().unwrap();
    let mut round = 0;
    while written < SEARCH_PARTITION / 2 + 2 * PENDING_MERGE_EVERY {
        written += mem
            .write_batch(batch(&format!("early{round}"), 256, None))
            .unwrap()
            .len() as u64;
        round += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !partition_exists(&mut db, 1) {
        assert!(Instant::now() < deadline, "partition 1 was not made ahead");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A writer connected as a role that may insert into the tables but owns none (so may not
    // attach a partition to `search`) reaches partition 2, which nobody made ahead: its
    // append makes it. (Opening a store needs CREATE on its schema: the version table.)
    let role = format!("partition_writer_{}", std::process::id());
    db.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT CREATE ON SCHEMA public TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
    ))
    .unwrap();
    let other = setup_with_existing(&url.replacen("postgres@", &format!("{role}@"), 1));
    while written < 2 * SEARCH_PARTITION + 10 {
        written += other
            .write_batch(batch(&format!("late{round}"), 256, None))
            .unwrap()
            .len() as u64;
        round += 1;
    }
    assert!(partition_exists(&mut db, 2));
    let in_p2: i64 = db
        .query_one("SELECT count(*) FROM search_p2", &[])
        .unwrap()
        .get(0);
    assert!(in_p2 > 0);
    // Documents of every partition are found, and ranked as one index.
    let first = mem.search("early0", &Scope::default(), 300).unwrap();
    assert_eq!(first.entries.len(), 256);
    let last = mem
        .search(&format!("late{}", round - 1), &Scope::default(), 300)
        .unwrap();
    assert_eq!(last.entries.len(), 256);
    let both = mem.search("note vault", &Scope::default(), 8).unwrap();
    assert_eq!(both.entries.len(), 8);
    // Forgetting entries of two partitions drops them from the index.
    let (a, b) = (first.entries[0].entry.id(), last.entries[0].entry.id());
    mem.forget(&p("user"), &a, false, "test").unwrap();
    mem.forget(&p("user"), &b, false, "test").unwrap();
    assert_eq!(
        mem.search("early0", &Scope::default(), 300)
            .unwrap()
            .entries
            .len(),
        255
    );
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// A handle on an existing PostgreSQL store at `url`, with the fixture principals' keys.
fn setup_with_existing(url: &str) -> Memory {
    let mem = Memory::open(
        StoreLocation::Postgres(url.to_string())
            .open(OpenMode::Existing)
            .unwrap(),
    )
    .unwrap();
    common::load_fixture_keys(&mem);
    mem
}
