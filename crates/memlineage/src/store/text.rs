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
}
