//! Free text and regex-typed values.
//!
//! **Free text** matches by normalised containment: both the value and the entry are folded
//! (letters lower-cased with Unicode case mapping, every run of white space made one space,
//! leading and trailing white space dropped), and the folded value must be a substring of the
//! folded entry. An empty (or all-blank) value matches nothing. Free text has no candidate values
//! to extract, so a free-text parameter cannot be repaired.
//!
//! **Regex** values match when the value occurs in the entry verbatim (case-sensitive), not
//! glued to a letter or digit on a side where the value itself starts or ends with one.
//! Candidates for repair are the white-space separated tokens of the text, as they are or with
//! surrounding punctuation (`.,;:!?"'()[]{}<>`) removed, that match the pattern in full.

/// Appends the folded form of `s` to `out`.
pub(crate) fn fold_into(s: &str, out: &mut String) {
    let mut pending_space = false;
    if s.is_ascii() {
        out.reserve(s.len());
        for &b in s.as_bytes() {
            if b.is_ascii_whitespace() || b == 0x0b {
                pending_space = !out.is_empty();
            } else {
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                out.push(char::from(b.to_ascii_lowercase()));
            }
        }
        return;
    }
    for c in s.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.extend(c.to_lowercase());
        }
    }
}

/// The folded form of `s`.
pub(crate) fn fold(s: &str) -> String {
    let mut out = String::new();
    fold_into(s, &mut out);
    out
}

/// Whether the folded, non-empty `value` is contained in the folded `text`; `scratch` is reused.
pub(crate) fn contains_folded(value: &str, text: &str, scratch: &mut String) -> bool {
    if value.is_empty() {
        return false;
    }
    scratch.clear();
    fold_into(text, scratch);
    scratch.contains(value)
}

/// Whether `value` occurs verbatim in `text` at token boundaries.
pub(crate) fn occurs_token(value: &str, text: &str) -> bool {
    if value.is_empty() {
        return false;
    }
    let first_alnum = value.chars().next().is_some_and(char::is_alphanumeric);
    let last_alnum = value.chars().next_back().is_some_and(char::is_alphanumeric);
    text.match_indices(value).any(|(i, _)| {
        let before_ok = !first_alnum
            || !text[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
        let after_ok = !last_alnum
            || !text[i + value.len()..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric);
        before_ok && after_ok
    })
}

const PUNCT: &[char] = &[
    '.', ',', ';', ':', '!', '?', '"', '\'', '(', ')', '[', ']', '{', '}', '<', '>',
];

/// Every token of `text` (as is, or with surrounding punctuation removed) that `re` matches in
/// full; `re` must be anchored.
pub(crate) fn extract_tokens(re: &regex::Regex, text: &str, out: &mut Vec<String>) {
    for tok in text.split_whitespace() {
        if re.is_match(tok) {
            out.push(tok.to_string());
            continue;
        }
        let trimmed = tok.trim_matches(PUNCT);
        if !trimmed.is_empty() && trimmed.len() != tok.len() && re.is_match(trimmed) {
            out.push(trimmed.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding() {
        assert_eq!(fold("  Hello,\n\tWORLD  "), "hello, world");
        assert_eq!(fold("ÉTÉ  À"), "été à");
        let mut s = String::new();
        assert!(contains_folded(
            "hello, world",
            "Say HELLO,   world!",
            &mut s
        ));
        assert!(!contains_folded("", "anything", &mut s));
    }

    #[test]
    fn tokens() {
        assert!(occurs_token("ABC", "code: ABC."));
        assert!(!occurs_token("ABC", "code: ABCD"));
        assert!(occurs_token("(12)", "x(12)y"));
        let re = regex::Regex::new("^(?:[A-Z]{3})$").unwrap();
        let mut v = Vec::new();
        extract_tokens(&re, "Currency: EUR. Not EURO, but (USD)", &mut v);
        assert_eq!(v, ["EUR", "USD"]);
    }
}
