//! A search query as the full-text indexes receive it: the terms, parsed once by the handle.
//!
//! A term is a maximal run of alphanumeric characters, lowercased; the first
//! [`MAX_QUERY_TERMS`] are kept, in order, with repeats. No user text ever reaches a backend's
//! query language: the SQLite index quotes every term (`"t1" OR "t2"`), the PostgreSQL index
//! passes each as a lexeme, and the in-memory index looks them up.

/// The most terms of a query that are searched for.
pub const MAX_QUERY_TERMS: usize = 64;

/// The terms of a full-text query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchTerms {
    terms: Vec<String>,
}

impl SearchTerms {
    /// The terms of free text.
    pub fn parse(query: &str) -> SearchTerms {
        SearchTerms {
            terms: tokens(query).take(MAX_QUERY_TERMS).collect(),
        }
    }

    /// The terms, in query order, with repeats.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// True when the query holds no term (it matches nothing).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// A document's terms counted: its number of tokens and each distinct term with its
/// frequency, sorted by term. The handle counts them before an append's transaction for a
/// backend that indexes its terms itself ([`Backend::counts_terms`](super::Backend::counts_terms):
/// PostgreSQL), so that the log head is not held for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermCounts {
    /// Tokens in the text, repeats included.
    pub tokens: u32,
    /// Distinct terms with their frequencies, sorted by term.
    pub terms: Vec<(String, u32)>,
}

impl TermCounts {
    /// The counted terms of `text` ([`tokens`]).
    pub fn of(text: &str) -> TermCounts {
        let mut counts: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
        let mut n: u32 = 0;
        for t in tokens(text) {
            n = n.saturating_add(1);
            let c = counts.entry(t).or_insert(0);
            *c = c.saturating_add(1);
        }
        TermCounts {
            tokens: n,
            terms: counts.into_iter().collect(),
        }
    }
}

/// The terms of `text`, in order, with repeats: maximal runs of alphanumeric characters,
/// lowercased. The in-memory index splits stored text the same way.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_on_non_alphanumerics_lowercase_and_keep_repeats() {
        let t = SearchTerms::parse("Pay \"Bill\", NEAR(x) 42é pay");
        assert_eq!(t.terms(), ["pay", "bill", "near", "x", "42é", "pay"]);
        assert!(SearchTerms::parse(" ,; ").is_empty());
        let long = "w ".repeat(100);
        assert_eq!(SearchTerms::parse(&long).terms().len(), MAX_QUERY_TERMS);
    }

    #[test]
    fn counted_terms_are_sorted_distinct_with_frequencies() {
        let c = TermCounts::of("Rent is due, rent! é 42 is");
        assert_eq!(c.tokens, 7);
        assert_eq!(
            c.terms,
            [("42", 1), ("due", 1), ("is", 2), ("rent", 2), ("é", 1)]
                .map(|(t, n)| (t.to_string(), n))
        );
        assert_eq!(TermCounts::of(" ,; "), TermCounts::default());
    }
}
