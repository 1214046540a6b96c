//! Full-text search: FTS5 ranks the matches by BM25, and the scope pre-filter looks at the best
//! ones only.
//!
//! The search returns the `limit` best matches (by `bm25(search)`, then leaf index) whose
//! `scope` column is the requested scope or below it. As one statement joining every match
//! with its `entries` row, it read the row of each of the ~60–130 matches of a two-word query
//! to test its scope, though only the first `limit` that pass are returned. Here FTS5 ranks the
//! matches alone, in the same order, and the scope test — the same SQL predicate on the same
//! column — runs on them best first until `limit` pass: the same answer, with ~`limit` row
//! reads instead of one per match. When the scope passes few matches (a store shared by many
//! scopes), the first [`SCOPE_TESTS`] tests are followed by the joined statement, which
//! answers the same too.

use super::read::index_from;
use super::to_i64;
use crate::error::Error;
use crate::store::text::SearchTerms;
use rusqlite::{Connection, params};

/// How many matches are tested one by one, per result asked, before the joined statement is
/// used instead.
const SCOPE_TESTS: usize = 4;

/// The scope pre-filter of a search, as SQL on the `scope` column (`?2` is the scope).
const IN_SCOPE: &str = "(e.scope = ?2 OR substr(e.scope, 1, length(?2) + 1) = ?2 || '/')";

/// Indices of the best `limit` matches of `query` within `scope`, best first.
pub(super) fn search(
    conn: &Connection,
    terms: &SearchTerms,
    scope: &str,
    limit: usize,
) -> Result<Vec<u64>, Error> {
    let Some(fts_query) = fts_query(terms) else {
        return Ok(Vec::new());
    };
    match ranked_then_scoped(conn, &fts_query, scope, limit)? {
        Some(found) => Ok(found),
        None => joined(conn, &fts_query, scope, limit),
    }
}

/// The ranked matches, scope-tested best first; `None` when more than
/// `limit × SCOPE_TESTS` tests did not find `limit` results (and the ranking ran out of
/// matches only then counts as found).
fn ranked_then_scoped(
    conn: &Connection,
    fts_query: &str,
    scope: &str,
    limit: usize,
) -> Result<Option<Vec<u64>>, Error> {
    let mut found = Vec::with_capacity(limit.min(64));
    if limit == 0 {
        return Ok(Some(found));
    }
    let mut ranked = conn.prepare_cached(
        "SELECT rowid FROM search WHERE search MATCH ?1 ORDER BY bm25(search), rowid",
    )?;
    let mut in_scope = conn.prepare_cached(&format!(
        "SELECT 1 FROM entries e WHERE e.idx = ?1 AND {IN_SCOPE}"
    ))?;
    let mut rows = ranked.query([fts_query])?;
    let mut tests = 0usize;
    while let Some(row) = rows.next()? {
        if tests == limit.saturating_mul(SCOPE_TESTS) {
            return Ok(None);
        }
        tests += 1;
        let index: i64 = row.get(0)?;
        if in_scope.exists(params![index, scope])? {
            found.push(index_from(index)?);
            if found.len() == limit {
                break;
            }
        }
    }
    Ok(Some(found))
}

/// The search as one statement: every match joined with its row.
fn joined(
    conn: &Connection,
    fts_query: &str,
    scope: &str,
    limit: usize,
) -> Result<Vec<u64>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.idx FROM search s JOIN entries e ON e.idx = s.rowid \
         WHERE search MATCH ?1 AND {IN_SCOPE} ORDER BY bm25(search), e.idx LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![fts_query, scope, to_i64(limit as u64)?], |r| {
        r.get::<_, i64>(0)
    })?;
    rows.map(|r| index_from(r?)).collect()
}

/// The terms as a safe FTS5 query: every term quoted, joined with OR, so no user input is ever
/// parsed as FTS5 syntax (a term is alphanumeric, so it holds no quote).
fn fts_query(terms: &SearchTerms) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms.terms().iter().map(|t| format!("\"{t}\"")).collect();
    Some(quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    #[test]
    fn fts_query_quotes_every_term() {
        assert_eq!(
            fts_query(&SearchTerms::parse("pay \"bill\" NEAR(x)")).unwrap(),
            "\"pay\" OR \"bill\" OR \"near\" OR \"x\""
        );
        assert_eq!(fts_query(&SearchTerms::parse("  ,;  ")), None);
    }

    /// Rows in three scopes with texts of many lengths and overlapping words, so that BM25
    /// scores differ and tie.
    fn db() -> SqliteStore {
        let store = SqliteStore::in_memory().unwrap();
        store
            .with_writer(|c| {
                let scopes = ["a", "a/b", "ab", "c", "a/b/c"];
                let words = ["pay", "bill", "rent", "vault", "code", "the", "of"];
                for i in 0..400i64 {
                    let scope = scopes[(i as usize * 7) % scopes.len()];
                    let n = 1 + (i as usize * 13) % 9;
                    let text: Vec<&str> = (0..n)
                        .map(|k| words[(i as usize + k * k) % words.len()])
                        .collect();
                    c.execute(
                        "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) \
                         VALUES (?1, ?2, x'00', ?3, 'w', 'observation', 'TRUSTED')",
                        params![i, i.to_be_bytes().as_slice(), scope],
                    )?;
                    c.execute(
                        "INSERT INTO search (rowid, text) VALUES (?1, ?2)",
                        params![i, text.join(" ")],
                    )?;
                }
                Ok(())
            })
            .unwrap();
        store
    }

    #[test]
    fn ranked_then_scoped_answers_what_the_joined_statement_answers() {
        let store = db();
        store
            .with_writer(|c| {
                for query in ["pay", "pay bill", "vault code", "the of", "rent", "nothing"] {
                    let terms = SearchTerms::parse(query);
                    let q = fts_query(&terms).unwrap();
                    for scope in ["a", "a/b", "ab", "c", "", "a/b/c", "zzz"] {
                        for limit in [0, 1, 3, 8, 50, 1000] {
                            let want = joined(c, &q, scope, limit)?;
                            assert_eq!(
                                search(c, &terms, scope, limit)?,
                                want,
                                "{query} in {scope} limit {limit}"
                            );
                            if let Some(fast) = ranked_then_scoped(c, &q, scope, limit)? {
                                assert_eq!(fast, want, "{query} in {scope} limit {limit}");
                            }
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}
