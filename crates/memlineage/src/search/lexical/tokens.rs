//! Terms of a text: the maximal runs of alphanumeric characters, lowercased — the split the
//! SQLite store applies to queries and the in-memory store to texts (FTS5's `unicode61`
//! tokenizer splits the same way for ASCII, and also folds diacritics, which this does not).

/// The most query terms considered (as in the SQLite store).
pub const MAX_QUERY_TERMS: usize = 64;

/// Calls `f` with each term of `text`, in order, with repeats, without allocating a string per
/// term (`lower` is scratch space for the terms that need folding).
pub fn each_term(text: &str, lower: &mut String, mut f: impl FnMut(&str)) {
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.is_empty() {
            continue;
        }
        let term = if !raw.is_ascii() {
            // `str::to_lowercase` (a final capital sigma lowercases to `ς`).
            *lower = raw.to_lowercase();
            lower.as_str()
        } else if raw.bytes().any(|b| b.is_ascii_uppercase()) {
            lower.clear();
            lower.push_str(raw);
            lower.make_ascii_lowercase();
            lower.as_str()
        } else {
            raw
        };
        f(term);
    }
}

/// The distinct terms of a query, in order of first occurrence, at most [`MAX_QUERY_TERMS`].
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut lower = String::new();
    let mut seen = 0usize;
    each_term(query, &mut lower, |t| {
        seen += 1;
        if seen <= MAX_QUERY_TERMS && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        each_term(text, &mut String::new(), |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn terms_split_on_non_alphanumerics_and_lowercase() {
        assert_eq!(
            all("Pay \"Bill\", NEAR(x) 42é ÉTÉ"),
            ["pay", "bill", "near", "x", "42é", "été"]
        );
        assert_eq!(query_terms("rent RENT, due rent"), ["rent", "due"]);
        assert!(query_terms(" ,;() ").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn folding_matches_the_plain_definition(text in "(\\PC|[A-Za-z0-9 ,.])*") {
            let plain: Vec<String> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|t| !t.is_empty())
                .map(str::to_lowercase)
                .collect();
            proptest::prop_assert_eq!(all(&text), plain);
        }
    }
}
