//! The SQLite schema, version 5. Documented byte by byte in `docs/store.md`.

/// The schema version this library writes and reads. Version 2 added the value index's tail
/// ([`CREATE_VALUE_TAIL`]): a library that knows only version 1 would read `value_keys` alone
/// and miss the carriers still in the tail. Version 3 added `entry_ids` ([`CREATE_ENTRY_IDS`])
/// and makes new stores without the unique index on `entries.id`: a library that knows only
/// version 2 would append without checking ids and never fill `entry_ids`. Version 4 keeps the
/// Merkle nodes by their position in append order ([`CREATE_MERKLE_NODES`], `nodes.rs`)
/// instead of in `nodes` by level and index: a library that knows only version 3 would find
/// no nodes. Version 5 may leave the newest entries out of the full-text index, pending, with
/// their first index in the setting `full_text_pending_from` (`full_text.rs`): a library that
/// knows only version 4 would index its own appends and leave that mark, and the catch-up would
/// then index them twice. So each refuses a store of a later version (it accepts its own and
/// the ones it upgrades).
pub const SCHEMA_VERSION: u32 = 5;

/// The versions a store is upgraded from on a writable open, in one transaction: the tables
/// of the later versions are created, the tail merged (every value key into `value_keys`,
/// every id into `entry_ids`; versions 1 and 2), the nodes moved to their positions (versions
/// 1 to 3) and the version set (version 4 needs nothing else: it indexed every entry in its
/// append, so nothing is pending); nothing signed changes. A store of these versions opened
/// read-only is read as it is.
pub const UPGRADABLE_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// Creates the tables every version has (version 2 adds [`CREATE_VALUE_TAIL`], version 3
/// [`CREATE_ENTRY_IDS`]). Versions 1 to 3 kept the Merkle nodes in a table `nodes` (level,
/// idx, hash; primary key (level, idx), without rowid); version 4 in [`CREATE_MERKLE_NODES`].
/// Since version 3 a new store's `entries.id` has no unique index (`ids.rs`); a store created
/// before keeps the one it has.
pub const CREATE: &str = r#"
CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS entries (
    idx     INTEGER PRIMARY KEY,         -- leaf index, 0-based, dense
    id      BLOB NOT NULL,               -- SHA-256 of the canonical body (found through entry_ids)
    leaf    BLOB NOT NULL,               -- canonical CBOR leaf: {"sig", "body"}
    scope   TEXT NOT NULL,
    writer  TEXT NOT NULL,
    kind    TEXT NOT NULL,
    label   TEXT NOT NULL                -- the signed label (a copy for queries)
);
CREATE INDEX IF NOT EXISTS entries_writer ON entries(writer);
CREATE INDEX IF NOT EXISTS entries_kind ON entries(kind);

CREATE TABLE IF NOT EXISTS content (
    idx   INTEGER PRIMARY KEY,           -- = entries.idx
    bytes BLOB                           -- NULL once erased
);

CREATE TABLE IF NOT EXISTS edges (
    parent BLOB NOT NULL,
    child  BLOB NOT NULL,
    weight INTEGER NOT NULL,             -- basis points
    PRIMARY KEY (parent, child)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS forgotten (
    id        BLOB PRIMARY KEY,
    tombstone BLOB NOT NULL,
    erased    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS effective (
    id    BLOB PRIMARY KEY,
    label TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS checkpoints (
    size INTEGER PRIMARY KEY,
    note TEXT NOT NULL
);

CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(
    text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
"#;

/// The derived table of stored embeddings (issue 17), created on every open when missing, so
/// a store made before it gains it without a new schema version: it holds nothing signed and
/// everything in it is recomputable (`docs/store.md`, `docs/retrieval.md`).
pub const CREATE_EMBEDDINGS: &str = r#"
CREATE TABLE IF NOT EXISTS embeddings (
    idx     INTEGER NOT NULL,            -- = entries.idx
    model   TEXT NOT NULL,               -- the embedding model's id
    vector  BLOB NOT NULL,               -- little-endian f32 components
    binding BLOB NOT NULL,               -- SHA-256 binding to model, entry id, content hash
    PRIMARY KEY (model, idx)
);
"#;

/// The value index (issue 19), created on every open when missing like the embeddings table: a
/// store made before it gains it, and the handle fills it from the stored contents
/// (`Memory::open`) before the gate relies on it (`docs/store.md`, "Value index").
pub const CREATE_VALUE_KEYS: &str = r#"
CREATE TABLE IF NOT EXISTS value_keys (
    key BLOB NOT NULL,                   -- 16 bytes: the value's key (memlineage_core::gate::ValueKey)
    idx INTEGER NOT NULL,                -- = entries.idx of an entry whose content carries it
    PRIMARY KEY (key, idx)
) WITHOUT ROWID;
"#;

/// The Merkle nodes (schema version 4, `nodes.rs`): the hash of every complete subtree, keyed
/// by its position in append order, `2m − popcount(m) + level` for the node of `level` whose
/// last leaf is `m`, so a commit's nodes go to the end of one B-tree. Level and index are kept
/// beside it: a read checks them against the position it asked for.
pub const CREATE_MERKLE_NODES: &str = r#"
CREATE TABLE IF NOT EXISTS merkle_nodes (
    pos   INTEGER PRIMARY KEY,           -- position in append order
    level INTEGER NOT NULL,              -- 0 = leaf hash
    idx   INTEGER NOT NULL,              -- covers leaves [idx·2^level, (idx+1)·2^level)
    hash  BLOB NOT NULL
);
"#;

/// The value index's tail and merge point (schema version 2, `values.rs`): the keys of recently
/// appended entries ordered by entry index, moved into `value_keys` in bulk; `value_keys_merged`
/// holds the index below which every tail row was moved (no row: none yet).
pub const CREATE_VALUE_TAIL: &str = r#"
CREATE TABLE IF NOT EXISTS value_keys_tail (
    idx INTEGER NOT NULL,                -- = entries.idx of an entry whose content carries it
    key BLOB NOT NULL,                   -- 16 bytes, as in value_keys
    PRIMARY KEY (idx, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS value_keys_merged (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    below INTEGER NOT NULL               -- every tail row with idx < below is in value_keys
);
"#;

/// A merge of the tail in progress (`merge_slices.rs`), created on every open when missing like
/// the value index: at most one row, `id = 0`. Every tail row of an entry in
/// `[value_keys_merged.below, upto)` whose id's or value key's first byte is below `done` (of
/// 256) is also in `entry_ids` or `value_keys` already; the tail keeps it until the merge ends.
pub const CREATE_VALUE_MERGING: &str = r#"
CREATE TABLE IF NOT EXISTS value_keys_merging (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    upto  INTEGER NOT NULL,              -- the merge moves the entries below this index
    done  INTEGER NOT NULL               -- slices (first bytes) moved so far, 0 to 255
);
"#;

/// The merged id index (schema version 3, `ids.rs`): the id of every entry below the merge
/// point of `value_keys_merged`, inserted in id order when the tail is merged.
pub const CREATE_ENTRY_IDS: &str = r#"
CREATE TABLE IF NOT EXISTS entry_ids (
    id  BLOB PRIMARY KEY,                -- = entries.id
    idx INTEGER NOT NULL                 -- = entries.idx
) WITHOUT ROWID;
"#;

/// FTS5's `automerge` for the `search` table: a level's segments are merged once this many
/// of them wait (FTS5's default is 4). Every commit adds a segment, and with 4 the merges
/// rewrote the index's recent documents about twice as often as with 8: 8 cut the append's
/// share of FTS5 merging roughly in half and raised the service's durable writes by ≈ 8 % on
/// a store of 200,000 entries, while a query reads at most 7 segments per level instead of 3
/// over fewer levels (`docs/performance.md`, "Fewer full-text merges, a longer value tail, the
/// request log in batches").
pub const FTS_AUTOMERGE: i64 = 8;

/// Sets the `search` table's `automerge` to [`FTS_AUTOMERGE`] when it is not already (a
/// persistent FTS5 setting, kept in `search_config`; a store made before it gains it at its
/// first writable open). Segments already merged stay as they are: the setting only changes
/// when the next merges happen, never what a query finds.
pub(super) fn merge_full_text_less_often(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    use rusqlite::OptionalExtension;
    let current: Option<i64> = conn
        .query_row(
            "SELECT v FROM search_config WHERE k = 'automerge'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if current != Some(FTS_AUTOMERGE) {
        conn.execute(
            "INSERT INTO search (search, rank) VALUES ('automerge', ?1)",
            [FTS_AUTOMERGE],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn automerge(conn: &rusqlite::Connection) -> Option<i64> {
        use rusqlite::OptionalExtension;
        conn.query_row(
            "SELECT v FROM search_config WHERE k = 'automerge'",
            [],
            |r| r.get(0),
        )
        .optional()
        .expect("search_config")
    }

    #[test]
    fn the_full_text_index_merges_at_eight_segments_old_stores_included() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        conn.execute_batch(CREATE).expect("schema");
        // A new table has FTS5's default (no row).
        assert_eq!(automerge(&conn), None);
        merge_full_text_less_often(&conn).expect("set");
        assert_eq!(automerge(&conn), Some(FTS_AUTOMERGE));
        // A store that holds another value (FTS5's default written out) is brought to ours.
        conn.execute(
            "INSERT INTO search (search, rank) VALUES ('automerge', 4)",
            [],
        )
        .expect("set 4");
        assert_eq!(automerge(&conn), Some(4));
        merge_full_text_less_often(&conn).expect("set again");
        assert_eq!(automerge(&conn), Some(FTS_AUTOMERGE));
        // Documents are indexed and found as before.
        conn.execute(
            "INSERT INTO search (rowid, text) VALUES (7, 'pay the invoice')",
            [],
        )
        .expect("insert");
        let found: i64 = conn
            .query_row(
                "SELECT rowid FROM search WHERE search MATCH '\"invoice\"'",
                [],
                |r| r.get(0),
            )
            .expect("found");
        assert_eq!(found, 7);
    }
}
