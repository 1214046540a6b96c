//! The PostgreSQL schema and its migrations (`docs/store.md`, "The PostgreSQL store").
//!
//! The schema is versioned by the table `memlineage_schema`, one row per migration applied.
//! Opening a store applies the migrations it lacks, each in one transaction with the row that
//! records it, so a migration is applied entirely or not at all; processes that open a store
//! at the same moment race harmlessly (the loser's transaction fails on the winner's tables or
//! version row, is rolled back, and it reads the version again). A store whose version is newer
//! than this build's is refused, never written to.

use super::conn::{Conn, sqlstate};
use crate::error::{Error, StoreState};

/// One step of the schema.
pub(super) struct Migration {
    /// The version the schema has after it.
    pub(super) version: u32,
    /// What it does, recorded beside the version.
    pub(super) description: &'static str,
    /// The statements.
    pub(super) sql: &'static str,
}

/// Every migration, in order; the last one's version is [`SCHEMA_VERSION`].
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "the log: settings, log head, entries, content, edges, nodes, forgotten, effective labels, checkpoints",
        sql: V1,
    },
    Migration {
        version: 2,
        description: "full-text search: documents with their terms (GIN over array_to_tsvector) and BM25 statistics",
        sql: V2,
    },
    Migration {
        version: 3,
        description: "the value index: keys of the typed values each content entry carries (issue 19)",
        sql: V3,
    },
    Migration {
        version: 4,
        description: "full-text documents partitioned by leaf index, one GIN index per 32,768 entries",
        sql: V4,
    },
    Migration {
        version: 5,
        description: "stored embeddings: vectors of entry contents by model (issue 17)",
        sql: V5,
    },
    Migration {
        version: 6,
        description: "new full-text documents land in an unindexed table and are settled into the GIN-indexed partitions outside the log head",
        sql: V6,
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 6;

/// The leaf indices of one partition of the full-text documents (version 4): partition `k`
/// holds the documents of entries `k × SEARCH_PARTITION ..< (k + 1) × SEARCH_PARTITION`. The
/// value is part of the schema (the SQL of [`V4`] holds it too; a test checks they agree).
pub const SEARCH_PARTITION: u64 = 32_768;

/// The table of applied migrations.
const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS memlineage_schema (
    version     integer PRIMARY KEY,
    description text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)";

/// Version 1: the log and its derived tables, as in the SQLite store (`docs/store.md`).
const V1: &str = "
CREATE TABLE settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
-- One row: the lock every append takes first (SELECT ... FOR UPDATE), so appends from any
-- number of processes and hosts are serialised, and the log's size after the last append.
CREATE TABLE log_head (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    size bigint NOT NULL
);
INSERT INTO log_head (one, size) VALUES (true, 0);
CREATE TABLE entries (
    idx    bigint PRIMARY KEY,           -- leaf index, 0-based, dense
    id     bytea NOT NULL UNIQUE,        -- SHA-256 of the canonical body
    leaf   bytea NOT NULL,               -- canonical CBOR leaf
    scope  text NOT NULL,
    writer text NOT NULL,
    kind   text NOT NULL,
    label  text NOT NULL                 -- the signed label (a copy for queries)
);
CREATE INDEX entries_writer ON entries (writer, idx);
CREATE INDEX entries_kind ON entries (kind, idx);
CREATE TABLE content (
    idx   bigint PRIMARY KEY,            -- = entries.idx
    bytes bytea                          -- NULL once erased
);
CREATE TABLE edges (
    parent bytea NOT NULL,
    child  bytea NOT NULL,
    weight integer NOT NULL,             -- basis points
    PRIMARY KEY (parent, child)
);
CREATE TABLE nodes (
    level smallint NOT NULL,             -- 0 = leaf hash
    idx   bigint NOT NULL,
    hash  bytea NOT NULL,
    PRIMARY KEY (level, idx)
);
CREATE TABLE forgotten (
    id        bytea PRIMARY KEY,
    tombstone bytea NOT NULL,
    erased    boolean NOT NULL
);
CREATE TABLE effective (
    id    bytea PRIMARY KEY,
    label text NOT NULL
);
CREATE TABLE checkpoints (
    size bigint PRIMARY KEY,
    note text NOT NULL
);
";

/// Version 2: the full-text index. A document's distinct terms (the handle's tokens) and
/// their frequencies, matched through a GIN index over `array_to_tsvector(terms)` and ranked
/// by BM25 from the frequencies, the document's length and the live totals in `search_stats`.
const V2: &str = "
CREATE TABLE search (
    idx   bigint PRIMARY KEY,            -- = entries.idx of a live, indexed entry
    scope text NOT NULL,                 -- copy of the signed scope (pre-filter)
    len   integer NOT NULL,              -- tokens in the text
    terms text[] NOT NULL,               -- distinct terms
    tfs   integer[] NOT NULL             -- their frequencies, in the order of terms
);
CREATE INDEX search_terms ON search USING gin (array_to_tsvector(terms));
CREATE TABLE search_stats (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    docs   bigint NOT NULL,              -- live documents
    length bigint NOT NULL               -- their tokens, in total
);
INSERT INTO search_stats (one, docs, length) VALUES (true, 0, 0);
";

/// Version 3: the value index (issue 19, `docs/store.md`, "Value index"): one row per typed
/// value key an entry's content carried when it was logged, never deleted (erasure keeps the
/// keys). The handle fills it for the entries logged before it existed (`Memory::open`).
const V3: &str = "
CREATE TABLE value_keys (
    key bytea NOT NULL,                  -- 16 bytes: memlineage_core::gate::ValueKey
    idx bigint NOT NULL,                 -- = entries.idx
    PRIMARY KEY (key, idx)
);
";

/// Version 4: the full-text documents partitioned by leaf index, each partition with a GIN
/// index of its own (`search_p<k>_terms`).
///
/// Why: appends take new documents into the GIN index's pending list, and merging that list
/// into the index costs more the larger the index is — over one unpartitioned index of 131,000
/// entries a merge of 768 documents grew from 22.6 to 42.9 ms and the log's server CPU per
/// entry from 52 to 71 µs (`docs/performance.md`, "Open loop"), so appends slowed as the store
/// grew. Appends only ever reach the newest partition, so its index stays below
/// [`SEARCH_PARTITION`] entries whatever the size of the log and the cost of a merge stays
/// bounded; a search reads every partition's index (the query is the same: the parent table).
///
/// `memlineage_search_partition(k)` makes partition `k` when it does not exist: an empty table
/// with its primary key and GIN index, then attached (`ATTACH PARTITION` takes `SHARE UPDATE
/// EXCLUSIVE` on the parent: appends and searches go on meanwhile, where `CREATE TABLE …
/// PARTITION OF` would block them). Callers are serialised by a transaction-scoped advisory
/// lock, so an append (which calls it holding the log head, for the partitions its batch
/// reaches) and a writer making the next partition ahead in the background (holding nothing
/// else) never race. It runs with its owner's rights (`SECURITY DEFINER`, the role that
/// migrated the store and owns `search`; its `search_path` fixed to the store's schema), so a
/// writer connected as another role, which may insert into `search` but not alter it, still
/// reaches a new partition. The existing documents move into the partitioned table here, and
/// partition 0 is made even for an empty store.
const V4: &str = "
ALTER TABLE search RENAME TO search_v3;
ALTER INDEX search_terms RENAME TO search_v3_terms;
ALTER INDEX search_pkey RENAME TO search_v3_pkey;
CREATE TABLE search (
    idx   bigint NOT NULL,               -- = entries.idx of a live, indexed entry
    scope text NOT NULL,                 -- copy of the signed scope (pre-filter)
    len   integer NOT NULL,              -- tokens in the text
    terms text[] NOT NULL,               -- distinct terms
    tfs   integer[] NOT NULL,            -- their frequencies, in the order of terms
    PRIMARY KEY (idx)
) PARTITION BY RANGE (idx);
CREATE INDEX search_terms ON search USING gin (array_to_tsvector(terms));
CREATE FUNCTION memlineage_search_partition(k bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
DECLARE
    size constant bigint := 32768;
    t text := 'search_p' || k;
BEGIN
    IF k < 0 OR k > 9223372036854775807 / size - 1 THEN
        RAISE EXCEPTION 'no full-text partition %', k;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('memlineage_search_partition'));
    IF to_regclass(quote_ident(t)) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE search INCLUDING DEFAULTS)', t);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (idx)', t);
    EXECUTE format('CREATE INDEX %I ON %I USING gin (array_to_tsvector(terms))', t || '_terms', t);
    EXECUTE format('ALTER TABLE search ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   t, k * size, (k + 1) * size);
    RETURN true;
END
$fn$;
SELECT memlineage_search_partition(k)
FROM generate_series(0, COALESCE((SELECT max(idx) FROM search_v3) / 32768, 0)) AS k;
INSERT INTO search (idx, scope, len, terms, tfs) SELECT idx, scope, len, terms, tfs FROM search_v3;
DROP TABLE search_v3;
";

/// Version 5: the stored embeddings (issue 17), the SQLite store's derived table
/// (`docs/retrieval.md`, "Stored embeddings"): one row per entry and model, never signed, each
/// bound to its entry by a SHA-256 the handle checks; rows of forgotten entries are deleted by
/// the tombstone's append.
const V5: &str = "
CREATE TABLE embeddings (
    idx     bigint NOT NULL,             -- = entries.idx
    model   text NOT NULL,               -- the embedding model's id
    vector  bytea NOT NULL,              -- little-endian f32 components
    binding bytea NOT NULL,              -- SHA-256 binding to model, entry id, content hash
    PRIMARY KEY (model, idx)
);
";

/// Version 6: new full-text documents land in `search_recent`, a plain table with no GIN index,
/// and are *settled* into the partitioned, GIN-indexed `search` later, outside the log head
/// (`memlineage_search_settle`, called in the background by `pending.rs`); searches read both
/// through the view `search_docs`.
///
/// Why: an append holds the log head until it commits, and every other writer waits for it.
/// Inserting 256 documents into a GIN index's pending list took ~2 ms of that hold, and up to
/// ~10 ms when a pending-list merge ran beside it (the merge locks the list); with four writers
/// at 15,000 entries/s the log head was held ~80 % of the time and the p99 commit was 56–60 ms
/// (`docs/performance.md`, "Open loop"). A heap insert with a B-tree on a rising key costs a
/// fraction of that and never waits for a merge; the documents' terms stay as the append sends
/// them (joined by a space: a term holds no space), split into arrays by the settle, not while
/// the log head is held (splitting took ~1.2 ms of a batch's hold). The settled documents reach
/// the GIN index in bulk, by one writer at a time, while appends go on.
///
/// `memlineage_search_settle(most)` moves up to `most` of the oldest documents of
/// `search_recent` into their partitions (making the partitions they need), in the caller's
/// transaction, under the transaction-scoped advisory lock `memlineage_search_settle`; it
/// returns the lowest and highest leaf index it moved and how many (NULLs and 0 when none). A
/// forgetting append takes the same advisory lock before it deletes documents, so a document
/// is never moved by a settle that the forget's statement cannot see (it would survive in the
/// index): the two are serialised, and whichever runs second sees the first's commit. It runs
/// with its owner's rights, as `memlineage_search_partition` does, so a writer role that owns
/// no table may call it. A search sees a document exactly once: the move is one transaction.
const V6: &str = "
CREATE TABLE search_recent (
    idx   bigint PRIMARY KEY,            -- = entries.idx of a live, indexed entry
    scope text NOT NULL,                 -- copy of the signed scope (pre-filter)
    len   integer NOT NULL,              -- tokens in the text
    terms text NOT NULL,                 -- distinct terms, joined by a space
    tfs   text NOT NULL                  -- their frequencies, likewise
);
CREATE VIEW search_docs AS
    SELECT idx, scope, len, terms, tfs FROM search
    UNION ALL
    SELECT idx, scope, len, string_to_array(terms, ' '), string_to_array(tfs, ' ')::int4[]
    FROM search_recent;
CREATE FUNCTION memlineage_search_settle(most integer)
RETURNS TABLE (lowest bigint, highest bigint, moved bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
DECLARE
    size constant bigint := 32768;
    lo bigint;
    hi bigint;
    n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('memlineage_search_settle'));
    SELECT min(r.idx), max(r.idx) INTO lo, hi
    FROM (SELECT s.idx FROM search_recent s ORDER BY s.idx LIMIT greatest(most, 0)) r;
    IF lo IS NULL THEN
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 0::bigint;
        RETURN;
    END IF;
    PERFORM memlineage_search_partition(k) FROM generate_series(lo / size, hi / size) AS k;
    WITH gone AS (
        DELETE FROM search_recent s WHERE s.idx BETWEEN lo AND hi
        RETURNING s.idx, s.scope, s.len, s.terms, s.tfs
    )
    INSERT INTO search (idx, scope, len, terms, tfs)
    SELECT g.idx, g.scope, g.len, string_to_array(g.terms, ' '), string_to_array(g.tfs, ' ')::int4[]
    FROM gone g;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN QUERY SELECT lo, hi, n;
END
$fn$;
";

/// SQLSTATEs of a lost race between two processes migrating at once: a unique violation (the
/// version row, or a catalog row of a table made by both), a table that already exists, a
/// serialization failure, a deadlock.
const RACE: [&str; 4] = ["23505", "42P07", "40001", "40P01"];

/// How often a migration that lost a race is tried again.
const RACE_RETRIES: usize = 16;

/// The schema version of the database, `None` when it holds no MemLineage schema.
pub(super) fn version(conn: &mut Conn) -> Result<Option<u32>, Error> {
    let exists = conn
        .query_opt(
            "SELECT 1 FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = 'memlineage_schema'",
            &[],
        )?
        .is_some();
    if !exists {
        return Ok(None);
    }
    let row = conn.query_opt("SELECT max(version) FROM memlineage_schema", &[])?;
    let v: Option<i32> = match row {
        Some(r) => r.try_get(0)?,
        None => None,
    };
    Ok(Some(v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0)))
}

/// Refuses a schema newer than this build's.
pub(super) fn check_supported(found: u32) -> Result<(), Error> {
    if found > SCHEMA_VERSION {
        return Err(StoreState::UnsupportedSchema {
            found,
            supported: SCHEMA_VERSION,
        }
        .into());
    }
    Ok(())
}

/// Applies the migrations the database lacks; returns the version it then has.
pub(super) fn migrate(conn: &mut Conn) -> Result<u32, Error> {
    let mut races = 0;
    loop {
        match step(conn) {
            Ok(Some(_)) => races = 0,
            Ok(None) => return Ok(SCHEMA_VERSION),
            Err(e) if lost_race(&e) && races < RACE_RETRIES => {
                races += 1;
                let _ = conn.batch("ROLLBACK");
            }
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
        }
    }
}

/// Applies the next migration in one transaction; `None` when the schema is current.
fn step(conn: &mut Conn) -> Result<Option<u32>, Error> {
    conn.batch(VERSION_TABLE)?;
    conn.batch("BEGIN")?;
    let found = version(conn)?.unwrap_or(0);
    check_supported(found)?;
    let Some(next) = MIGRATIONS.iter().find(|m| m.version == found + 1) else {
        conn.batch("COMMIT")?;
        return Ok(None);
    };
    conn.batch(next.sql)?;
    let v = i32::try_from(next.version).unwrap_or(i32::MAX);
    conn.execute(
        "INSERT INTO memlineage_schema (version, description) VALUES ($1, $2)",
        &[&v, &next.description],
    )?;
    conn.batch("COMMIT")?;
    Ok(Some(next.version))
}

fn lost_race(e: &Error) -> bool {
    sqlstate(e).is_some_and(|c| RACE.contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_up_to_the_version() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1);
            assert!(!m.description.is_empty() && !m.sql.trim().is_empty());
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(SCHEMA_VERSION));
        assert!(check_supported(SCHEMA_VERSION).is_ok());
        assert!(check_supported(SCHEMA_VERSION + 1).is_err());
    }

    /// A store of version 3 with documents below and above the first partition's end moves
    /// them into their partitions, where the parent table still finds them by their terms.
    #[test]
    fn version_4_moves_the_documents_into_partitions() {
        let Some(cluster) = memlineage_pgtest::shared() else {
            return;
        };
        let config: postgres::Config = cluster.database().parse().unwrap();
        let mut conn = Conn::connect(&config).unwrap();
        conn.batch(VERSION_TABLE).unwrap();
        for m in &MIGRATIONS[..3] {
            conn.batch(m.sql).unwrap();
            let v = i32::try_from(m.version).unwrap();
            conn.execute(
                "INSERT INTO memlineage_schema (version, description) VALUES ($1, 'test')",
                &[&v],
            )
            .unwrap();
        }
        let beyond = i64::try_from(SEARCH_PARTITION).unwrap() + 5;
        conn.execute(
            "INSERT INTO search (idx, scope, len, terms, tfs) VALUES \
             (0, 'a', 2, '{rent,due}', '{1,1}'), (7, 'a', 1, '{rent}', '{1}'), \
             ($1, 'a/b', 3, '{rent,vault}', '{2,1}')",
            &[&beyond],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), SCHEMA_VERSION);
        assert_eq!(version(&mut conn).unwrap(), Some(SCHEMA_VERSION));
        let count = |conn: &mut Conn, sql: &str| -> i64 { conn.query(sql, &[]).unwrap()[0].get(0) };
        assert_eq!(count(&mut conn, "SELECT count(*) FROM search_p0"), 2);
        assert_eq!(count(&mut conn, "SELECT count(*) FROM search_p1"), 1);
        assert_eq!(
            count(
                &mut conn,
                "SELECT count(*) FROM search WHERE array_to_tsvector(terms) @@ 'rent'::tsquery"
            ),
            3
        );
        let rows = conn
            .query(
                "SELECT idx FROM search WHERE array_to_tsvector(terms) @@ 'vault'::tsquery",
                &[],
            )
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i64>(0), beyond);
        // Making a partition again changes nothing; a negative one is refused.
        let made: bool = conn
            .query("SELECT memlineage_search_partition(1)", &[])
            .unwrap()[0]
            .get(0);
        assert!(!made);
        assert!(
            conn.query("SELECT memlineage_search_partition(-1)", &[])
                .is_err()
        );
        let _ = conn.batch("ROLLBACK");
        // A document whose partition does not exist is refused, not lost elsewhere.
        let far = i64::try_from(SEARCH_PARTITION * 9).unwrap();
        assert!(
            conn.execute(
                "INSERT INTO search (idx, scope, len, terms, tfs) VALUES ($1, 'a', 0, '{}', '{}')",
                &[&far],
            )
            .is_err()
        );
    }

    #[test]
    fn the_partition_size_is_the_one_the_sql_uses() {
        let size = SEARCH_PARTITION.to_string();
        assert!(V4.contains(&format!("size constant bigint := {size};")));
        assert!(V4.contains(&format!("search_v3) / {size}, 0)")));
        assert!(V6.contains(&format!("size constant bigint := {size};")));
    }
}
