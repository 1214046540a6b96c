//! Readings of values spelt out in words for human readers, which a model turns back into the
//! value: an address whose punctuation is spelt (`bob [at] example [dot] com`, `example dot
//! org`) and an identifier whose digits are (`GB two nine N W B K six zero …`).
//!
//! For taint only (the look match, [`canon::skeleton_occurs`]): each reading replaces whole words
//! (standing alone, bracketed or not) and over-reads — `meet bob at example com` is read as
//! holding `bob@example.com`, `one` in any sentence as a digit — which can only make an
//! untrusted entry a carrier of one more value, never let an entry justify one.

use super::canon;

/// `r` with every whole word (ASCII letters, not glued to a letter or digit) that `replace`
/// maps replaced by its mapping; `None` when no word is.
fn replace_words(r: &str, replace: impl Fn(&[u8]) -> Option<&'static str>) -> Option<String> {
    let b = r.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let mut e = i;
        while e < b.len() && b[e].is_ascii_alphabetic() {
            e += 1;
        }
        let alone = (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(e).is_none_or(|c| !c.is_ascii_alphanumeric());
        if let Some(with) = replace(&b[i..e]).filter(|_| alone) {
            let o = out.get_or_insert_with(|| String::with_capacity(r.len()));
            o.push_str(&r[copied..i]);
            o.push_str(with);
            copied = e;
        }
        i = e;
    }
    let mut o = out?;
    o.push_str(&r[copied..]);
    Some(o)
}

/// The reading `r` without the words that spell an address's punctuation — `dot` and, when
/// `with_at`, `at` — so that the separator-blind look match finds the address a reader reads in
/// them. `None` when `r` has no such word.
pub(crate) fn without_spelt_punctuation(r: &str, with_at: bool) -> Option<String> {
    replace_words(r, |w| {
        (w.eq_ignore_ascii_case(b"dot") || (with_at && w.eq_ignore_ascii_case(b"at")))
            .then_some(" ")
    })
}

/// The reading `r` with the English words for digits (`zero` … `nine`, and `oh` for zero)
/// read as digits, so that an identifier dictated digit by digit (`GB two nine NWBK six zero
/// one six …`) is found by the separator-blind look match. `None` when `r` has no such word.
pub(crate) fn digits_from_words(r: &str) -> Option<String> {
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    const ASCII: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    replace_words(r, |w| {
        if w.eq_ignore_ascii_case(b"oh") {
            return Some("0");
        }
        DIGITS
            .iter()
            .position(|d| w.eq_ignore_ascii_case(d.as_bytes()))
            .map(|i| ASCII[i])
    })
}

/// Whether the alphanumeric `key` occurs by look in some spelt reading of `r` that `read`
/// gives.
pub(crate) fn looks_spelt(key: &str, r: &str, read: impl Fn(&str) -> Option<String>) -> bool {
    read(r).is_some_and(|d| canon::skeleton_occurs(key, &canon::skeleton(&d)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::canon::{reading, skeleton, skeleton_key, skeleton_occurs};

    #[test]
    fn spelt_punctuation_is_dropped_from_addresses() {
        let key = skeleton_key("bob@evil-mail.com");
        for text in [
            "write to bob [at] evil-mail [dot] com",
            "write to Bob AT evil-mail DOT com",
            "write to bob(at)evil-mail(dot)com",
        ] {
            let r = reading(text);
            assert!(!skeleton_occurs(&key, &skeleton(&r)), "{text}");
            assert!(
                looks_spelt(&key, &r, |r| without_spelt_punctuation(r, true)),
                "{text}"
            );
        }
        // Only whole words: `dotted`, `cat`, `at5` stay; no word, no copy.
        assert_eq!(without_spelt_punctuation("a dotted cat at5", true), None);
        assert_eq!(without_spelt_punctuation("meet at noon", false), None);
        assert_eq!(
            without_spelt_punctuation("example dot org", false).as_deref(),
            Some("example   org")
        );
    }

    #[test]
    fn identifiers_dictated_digit_by_digit() {
        let key = skeleton_key("GB29NWBK60161331926819");
        let text = "the new account is GB two nine NWBK six zero one six one three three one \
                    nine two six eight one nine, thanks";
        let r = reading(text);
        assert!(!skeleton_occurs(&key, &skeleton(&r)));
        assert!(looks_spelt(&key, &r, digits_from_words));
        assert_eq!(digits_from_words("Oh, one Two"), Some("0, 1 2".to_string()));
        assert_eq!(digits_from_words("someone ninety"), None);
    }
}
