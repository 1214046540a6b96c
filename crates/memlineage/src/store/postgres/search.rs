//! Full-text search on PostgreSQL: the handle's terms, matched with PostgreSQL's full-text
//! machinery (a GIN index over `array_to_tsvector(terms)`, queried with a `tsquery` of the
//! terms joined by `|`), and ranked by Okapi BM25 with SQLite FTS5's parameters — `k1 = 1.2`,
//! `b = 0.75`, `idf = ln((N − n + 0.5) / (n + 0.5))` floored at `1e-6`, OR semantics over the
//! distinct query terms, scores added in query order, ties to the lower leaf index — so the
//! ranking is the in-memory store's, bit for bit (the same float operations in the same order;
//! `tests/memory_store.rs` compares them).
//!
//! The documents are read through the view `search_docs` (schema version 6): the settled ones,
//! in the GIN-indexed partitions of `search`, and the newest ones, not yet settled, in
//! `search_recent` (a few thousand at most, scanned).
//!
//! Documents are tokenized by the handle (`store::text::tokens`: maximal alphanumeric runs,
//! lowercased), not by a PostgreSQL text search configuration, so every backend splits text the
//! same way, and a query's terms reach the server as `tsquery` lexemes, each quoted: no user
//! text is ever parsed as query syntax. A term longer than [`MAX_LEXEME`] bytes cannot be a
//! PostgreSQL lexeme; it counts in the document's length but is not indexed (nor searched).

use super::conn::Conn;
use super::read::{index_from, to_i64};
use crate::error::Error;
use crate::store::text::{SearchTerms, TermCounts};

/// The longest lexeme PostgreSQL accepts, in bytes (`MAXSTRLEN` − 1 in `ts_type.h`).
pub(super) const MAX_LEXEME: usize = 2046;

/// The `search` columns of a counted document as the append sends them: its length in tokens
/// (every token, indexed or not), its indexable terms joined by a space, and their frequencies
/// likewise, for the server to split with `string_to_array` (a term holds no space:
/// `store::text::tokens`).
pub(super) fn columns(c: &TermCounts) -> (i32, String, String) {
    let mut terms = String::new();
    let mut tfs = String::new();
    for (t, n) in c.terms.iter().filter(|(t, _)| t.len() <= MAX_LEXEME) {
        if !terms.is_empty() {
            terms.push(' ');
            tfs.push(' ');
        }
        terms.push_str(t);
        tfs.push_str(&n.to_string());
    }
    (i32::try_from(c.tokens).unwrap_or(i32::MAX), terms, tfs)
}

/// A lexeme quoted for `tsquery` input: no operator, space or quote inside it is parsed.
fn quoted(term: &str) -> String {
    format!("'{}'", term.replace('\\', "\\\\").replace('\'', "''"))
}

/// The distinct searchable terms of a query, in query order.
fn distinct_terms(terms: &SearchTerms) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in terms.terms() {
        if t.len() <= MAX_LEXEME && !out.contains(&t.as_str()) {
            out.push(t);
        }
    }
    out
}

/// BM25 in one statement. `$1`: the distinct terms (text), `$2`: each as a quoted `tsquery`,
/// `$3`: the terms joined by `|` as one `tsquery` (each sent as text and cast on the server), `$4`: the scope, `$5`: the limit. The
/// document frequency of each term is counted through the GIN index; the matches in scope are
/// scored term by term in query order (`sum(… ORDER BY ord)`). The weights `q` and `w` are
/// `MATERIALIZED`: inlined, they sat on the inner side of the nested loop over the matches
/// (`w.term = ANY(hit.terms)` cannot be hashed), and each term's document count was computed
/// again for every match — a retrieval from 4096 entries took 0.9 s instead of milliseconds.
const BM25: &str = "
WITH st AS (
    SELECT docs::float8 AS docs,
           greatest(length::float8 / docs::float8, 2.2250738585072014e-308::float8) AS avgdl
    FROM search_stats WHERE docs > 0
), q AS MATERIALIZED (
    SELECT u.term, u.ord,
           (SELECT count(*) FROM search_docs s
            WHERE array_to_tsvector(s.terms) @@ u.query::tsquery)::float8 AS n
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(term, query, ord)
), w AS MATERIALIZED (
    SELECT q.term, q.ord,
           CASE WHEN l.x > 0::float8 THEN l.x ELSE 1e-6::float8 END AS idf
    FROM q CROSS JOIN st
    CROSS JOIN LATERAL (SELECT ln((st.docs - q.n + 0.5::float8) / (q.n + 0.5::float8)) AS x) l
), hit AS (
    SELECT s.idx, s.len, s.terms, s.tfs FROM search_docs s
    WHERE array_to_tsvector(s.terms) @@ ($3::text)::tsquery
      AND (s.scope = $4 OR starts_with(s.scope, $4 || '/'))
)
SELECT hit.idx
FROM hit CROSS JOIN st
JOIN w ON w.term = ANY(hit.terms)
CROSS JOIN LATERAL (SELECT hit.tfs[array_position(hit.terms, w.term)]::float8 AS tf) f
GROUP BY hit.idx
ORDER BY sum(w.idf * f.tf * (1.2::float8 + 1.0::float8)
             / (f.tf + 1.2::float8 * (1.0::float8 - 0.75::float8
                                       + 0.75::float8 * hit.len::float8 / st.avgdl))
             ORDER BY w.ord) DESC,
         hit.idx
LIMIT $5";

/// Indices of the best `limit` live matches of `terms` within `scope`, best first.
pub(super) fn search(
    conn: &mut Conn,
    terms: &SearchTerms,
    scope: &str,
    limit: usize,
) -> Result<Vec<u64>, Error> {
    let distinct = distinct_terms(terms);
    if distinct.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let queries: Vec<String> = distinct.iter().map(|t| quoted(t)).collect();
    let any = queries.join(" | ");
    let limit = to_i64(limit as u64)?;
    conn.query(BM25, &[&distinct, &queries, &any, &scope, &limit])?
        .iter()
        .map(|r| index_from(r.try_get(0)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_count_every_token_and_index_the_short_ones() {
        let long = "x".repeat(MAX_LEXEME + 1);
        let c = TermCounts::of(&format!("Rent is due, rent! {long} é"));
        assert_eq!(
            columns(&c),
            (6, "due is rent é".to_string(), "1 1 2 1".to_string())
        );
        assert_eq!(
            columns(&TermCounts::of("")),
            (0, String::new(), String::new())
        );
    }

    #[test]
    fn query_terms_are_distinct_quoted_lexemes() {
        let t = SearchTerms::parse("pay BILL pay it's");
        assert_eq!(distinct_terms(&t), ["pay", "bill", "it", "s"]);
        assert_eq!(quoted("a'b\\c"), "'a''b\\\\c'");
    }
}
