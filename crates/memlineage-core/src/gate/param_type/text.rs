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
    out.reserve(s.len());
    let mut first = true;
    for word in s.split(char::is_whitespace).filter(|w| !w.is_empty()) {
        if !first {
            out.push(' ');
        }
        first = false;
        if word.is_ascii() {
            let at = out.len();
            out.push_str(word);
            if let Some(w) = out.get_mut(at..) {
                w.make_ascii_lowercase();
            }
        } else {
            out.extend(word.chars().flat_map(char::to_lowercase));
        }
    }
}

/// The folded form of a skeleton for containment by look: every run of characters that are
/// not letters or digits made one space, trimmed (punctuation and spacing inserted into a
/// copied text do not hide it).
pub(crate) fn loose_fold(skel: &str) -> String {
    let mut out = String::with_capacity(skel.len());
    for word in skel
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The folded form of `s`.
pub(crate) fn fold(s: &str) -> String {
    let mut out = String::new();
    fold_into(s, &mut out);
    out
}

/// ASCII white space as `char::is_whitespace` sees it (which includes the vertical tab).
fn is_ascii_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Text positions the prefilter of [`contains_folded_ascii`] tests at once.
const CHUNK: usize = 32;

/// Folded containment of an ASCII folded `value` in an ASCII `text`, without folding the text:
/// letters compare case-insensitively and each space of the value matches a run of white space.
///
/// Most positions cannot start a match, so a chunk of positions is first tested for the value's
/// first bytes at once (up to three, up to its first space), without branches (the compiler
/// vectorises it); only a chunk that may hold a match, and the last few positions, are tested
/// one by one. `c | 0x20` maps an upper-case letter onto its lower case (and other bytes onto
/// some byte), so the prefilter never rejects a position the exact test accepts. A space of the
/// value matches any white space, so it and what follows are not prefiltered.
fn contains_folded_ascii(value: &[u8], text: &[u8]) -> bool {
    let mut key = [0u8; 3];
    let mut width = 0;
    for &v in value.iter().take(3) {
        if v == b' ' {
            break;
        }
        key[width] = v | 0x20;
        width += 1;
    }
    if value.is_empty() {
        return false;
    }
    let n = text.len();
    let mut start = 0;
    while start < n {
        let end = (start + CHUNK).min(n);
        let window = text
            .get(start..start + CHUNK + 2)
            .and_then(|c| <&[u8; CHUNK + 2]>::try_from(c).ok());
        let maybe = match window {
            Some(w) => may_start_in(w, key, width),
            None => true,
        };
        if maybe && (start..end).any(|i| folded_at(value, text, i)) {
            return true;
        }
        start = end;
    }
    false
}

/// Whether some position `k < CHUNK` of `w` has `w[k + j] | 0x20 == key[j]` for every
/// `j < width` (a `width` of 0 accepts every chunk).
fn may_start_in(w: &[u8; CHUNK + 2], key: [u8; 3], width: usize) -> bool {
    let mut acc = 0u8;
    for k in 0..CHUNK {
        let hit = |j: usize| u8::from(j >= width || (w[k + j] | 0x20) == key[j]);
        acc |= hit(0) & hit(1) & hit(2);
    }
    acc != 0
}

/// Whether the ASCII folded `value` matches `text` at position `i` (see
/// [`contains_folded_ascii`]).
fn folded_at(value: &[u8], text: &[u8], i: usize) -> bool {
    // A match starts on the value's first byte itself, even where that is a space.
    if text.get(i).map(u8::to_ascii_lowercase) != value.first().copied() {
        return false;
    }
    let n = text.len();
    let mut j = i;
    for &v in value {
        if v == b' ' {
            if j >= n || !is_ascii_ws(text[j]) {
                return false;
            }
            while j < n && is_ascii_ws(text[j]) {
                j += 1;
            }
        } else if j < n && text[j].to_ascii_lowercase() == v {
            j += 1;
        } else {
            return false;
        }
    }
    true
}

/// Whether the folded, non-empty `value` is contained in the folded `text`; `scratch` is reused.
pub(crate) fn contains_folded(value: &str, text: &str, scratch: &mut String) -> bool {
    if value.is_empty() {
        return false;
    }
    if text.is_ascii() {
        // An ASCII text folds to ASCII, so a folded value with other characters cannot occur.
        return value.is_ascii() && contains_folded_ascii(value.as_bytes(), text.as_bytes());
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

    /// The prefiltered search finds exactly what testing every position finds.
    #[test]
    fn prefiltered_containment_tests_every_position() {
        let every = |value: &[u8], text: &[u8]| (0..text.len()).any(|i| folded_at(value, text, i));
        let alphabet = b"aAbB \t\n@`[{0p";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as usize
        };
        for _ in 0..20_000 {
            let text: Vec<u8> = (0..next(140))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let raw: Vec<u8> = (0..1 + next(4))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let value = fold(std::str::from_utf8(&raw).unwrap_or_default());
            let value = value.as_bytes();
            if value.is_empty() {
                continue;
            }
            assert_eq!(
                contains_folded_ascii(value, &text),
                every(value, &text),
                "{value:?} in {text:?}"
            );
        }
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
