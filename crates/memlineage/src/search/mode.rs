//! Which ranking a search uses: a plain parameter that the library, the CLI, the Python package
//! and the HTTP service pass through unchanged (`lexical`, `semantic`, `hybrid`).

use std::fmt;
use std::str::FromStr;

/// The ranking of a search.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 over the entries' words (the default; needs no model).
    #[default]
    Lexical,
    /// Cosine similarity of all-MiniLM-L6-v2 embeddings (needs the embedding model).
    Semantic,
    /// Both, fused by reciprocal rank fusion.
    Hybrid,
}

impl SearchMode {
    /// Every mode, in the order above.
    pub const ALL: [SearchMode; 3] = [
        SearchMode::Lexical,
        SearchMode::Semantic,
        SearchMode::Hybrid,
    ];

    /// The mode's name (`lexical`, `semantic`, `hybrid`).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl fmt::Display for SearchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of the three.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown search mode `{0}`: expected `lexical`, `semantic` or `hybrid`")]
pub struct UnknownMode(pub String);

impl FromStr for SearchMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SearchMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMode(s.chars().take(64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for m in SearchMode::ALL {
            assert_eq!(m.as_str().parse::<SearchMode>(), Ok(m));
        }
        let e = "fuzzy".parse::<SearchMode>().unwrap_err();
        assert!(
            e.to_string().contains("`lexical`, `semantic` or `hybrid`"),
            "{e}"
        );
        assert_eq!(SearchMode::default(), SearchMode::Lexical);
        // JSON, as the service and the Python binding pass it.
        assert_eq!(
            serde_json::to_string(&SearchMode::Hybrid).unwrap(),
            "\"hybrid\""
        );
        assert_eq!(
            serde_json::from_str::<SearchMode>("\"semantic\"").unwrap(),
            SearchMode::Semantic
        );
        assert!(serde_json::from_str::<SearchMode>("\"Semantic\"").is_err());
    }
}
