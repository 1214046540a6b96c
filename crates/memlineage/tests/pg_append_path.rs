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
//!   writer connected as another role reaches a new partition;
//! - new documents are settled into the partitions outside the log head, and a forget that
//!   races settles never leaves a forgotten entry's document behind.

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
                    (SELECT count(*) FROM search_docs), (SELECT count(*) FROM value_keys), \
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

/// Documents not settled yet (schema version 6: in `search_recent`).
fn unsettled(db: &mut postgres::Client) -> i64 {
    db.query_one("SELECT count(*) FROM search_recent", &[])
        .unwrap()
        .get(0)
}

/// Documents settled into the GIN-indexed partitions.
fn settled(db: &mut postgres::Client) -> i64 {
    db.query_one("SELECT count(*) FROM search", &[])
        .unwrap()
        .get(0)
}

/// The live totals of the full-text statistics agree with the documents, wherever they are.
fn assert_totals_agree(db: &mut postgres::Client) {
    let row = db
        .query_one(
            "SELECT (SELECT docs FROM search_stats), (SELECT count(*) FROM search_docs), \
                    (SELECT length FROM search_stats), \
                    (SELECT COALESCE(sum(len), 0)::int8 FROM search_docs)",
            &[],
        )
        .unwrap();
    let (docs, counted, length, summed): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((docs, length), (counted, summed));
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
    // The settle and the merge run in the background: wait for both (the list held
    // PENDING_MERGE_EVERY documents, below the server's own 4 MB limit, so nothing else merges
    // it).
    let deadline = Instant::now() + Duration::from_secs(60);
    while unsettled(&mut db) > 0 || pending(&mut db) > 0 {
        assert!(
            Instant::now() < deadline,
            "{} documents are not settled, {} wait in the pending list",
            unsettled(&mut db),
            pending(&mut db)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(settled(&mut db) >= i64::try_from(PENDING_MERGE_EVERY).unwrap());
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
    // The settle ran with the owner's rights (`memlineage_search_settle`), but the merge was
    // refused (the role does not own the index): the settled documents wait in the list.
    let settle = i64::try_from(PENDING_MERGE_EVERY.div_ceil(256) * 256).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pending(&mut db) < settle {
        assert!(Instant::now() < deadline, "the documents were not settled");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(pending(&mut db) >= settle);
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
    // attach a partition to `search`) reaches partition 2: its settles make it, with the
    // owner's rights. (Opening a store needs CREATE on its schema: the version table.)
    let role = format!("partition_writer_{}", std::process::id());
    db.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT CREATE ON SCHEMA public TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
    ))
    .unwrap();
    let other = setup_with_existing(&url.replacen("postgres@", &format!("{role}@"), 1));
    while written < 2 * SEARCH_PARTITION + 2 * PENDING_MERGE_EVERY {
        written += other
            .write_batch(batch(&format!("late{round}"), 256, None))
            .unwrap()
            .len() as u64;
        round += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let in_p2: i64 = if partition_exists(&mut db, 2) {
            db.query_one("SELECT count(*) FROM search_p2", &[])
                .unwrap()
                .get(0)
        } else {
            0
        };
        if in_p2 > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing was settled in partition 2"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Searches can reach the settled documents through each partition's GIN index, also
    // through the view that adds the unsettled ones (the condition reaches the partitions).
    // Whether the planner takes an index depends on its estimates (a long pending list makes
    // an index look dearer than a scan), so scans are ruled out for this question.
    db.batch_execute("SET enable_seqscan = off").unwrap();
    let plan: Vec<String> = db
        .query(
            "EXPLAIN SELECT count(*) FROM search_docs s \
             WHERE array_to_tsvector(s.terms) @@ 'early0'::tsquery",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    for k in 0..3 {
        assert!(
            plan.contains(&format!("Bitmap Index Scan on search_p{k}_terms")),
            "{plan}"
        );
    }
    db.batch_execute("RESET enable_seqscan").unwrap();
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
    assert_totals_agree(&mut db);
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Forgets racing settles: another session settles one document at a time, as fast as it can,
/// while entries whose documents are in either table are forgotten. Afterwards no forgotten
/// entry's document is anywhere, the totals agree with the documents, and search finds the
/// rest.
#[test]
fn forgets_racing_settles_leave_no_forgotten_document() {
    let Some((url, mem)) = fresh_store() else {
        return;
    };
    // As many documents as the settler moves in about the time the forgets take.
    let written = mem.write_batch(batch("race", 600, None)).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let settler = {
        let (url, stop) = (url.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut db = connect(&url);
            let mut moved = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let row = db
                    .query_one("SELECT moved FROM memlineage_search_settle(1)", &[])
                    .unwrap();
                moved += row.get::<_, i64>(0);
            }
            moved
        })
    };
    let mut forgotten = Vec::new();
    for e in written.iter().step_by(10) {
        mem.forget(&p("user"), &e.id, false, "test").unwrap();
        forgotten.push(i64::try_from(e.index).unwrap());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let moved = settler.join().unwrap();
    assert!(moved > 0, "the settles ran beside the forgets");
    let mut db = connect(&url);
    let left: i64 = db
        .query_one(
            "SELECT count(*) FROM search_docs WHERE idx = ANY($1)",
            &[&forgotten],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "a forgotten entry's document was left behind");
    assert_totals_agree(&mut db);
    let hits = mem.search("race", &Scope::default(), 700).unwrap();
    assert_eq!(hits.entries.len(), 600 - forgotten.len());
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
