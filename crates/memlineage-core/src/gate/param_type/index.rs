//! The typed values of one text, extracted once so that many lookups cost no scanning.
//!
//! Everything is computed on the text's reading ([`canon::reading`]); what is needed only to
//! find values carried *by look* (the skeleton, the amounts and dates with digits spelt as
//! letters) is computed the first time a decision asks for it, and kept.
//!
//! For amounts, dates, e-mail addresses and URLs a value *occurs* in a text exactly when it is
//! one of the values extraction finds there (the table in the module documentation), so the
//! extracted values answer [`ParamType::occurs_with`] by lookup (amounts in canonical form, so a
//! lookup compares integers). Free text is answered from the folded text (folded containment is
//! substring containment in the folded text). IBANs and regex tokens are matched where they
//! stand (their matchers are already substring searches), but an IBAN occurs only where its two
//! check digits do, so the index keeps which pairs of adjacent digits the text has and answers
//! "no" for an IBAN whose pair it lacks; otherwise the caller scans.

use super::scan::has_digit;
use super::{NormValue, ParamType, ParamValue, amount, date, email, text, url};
use crate::gate::canon;
use std::ops::ControlFlow;
use std::sync::OnceLock;

/// The extracted values of one text.
#[derive(Clone, Debug, Default)]
pub(crate) struct ValueIndex {
    /// The reading, when it differs from the text (a non-ASCII text).
    reading: Option<String>,
    /// The skeleton of the reading, once asked for.
    skeleton: OnceLock<String>,
    /// The texts hidden in the text (`gate/hidden.rs`), once asked for.
    hidden: OnceLock<Vec<String>>,
    /// Canonical forms (`Amount::canonical`), without duplicates.
    amounts: Vec<(bool, u128, u32)>,
    dates: Vec<date::Date>,
    emails: Vec<String>,
    urls: Vec<String>,
    folded: String,
    /// The byte pairs of `folded`, hashed into 512 bits: a folded value with a pair the text
    /// lacks is not in it, and most are rejected so without searching the text.
    pairs: [u64; 8],
    /// Bit `10 a + b` is set when the digits `a` and `b` stand next to each other.
    digit_pairs: u128,
}

/// Where the byte pair `a b` goes in [`ValueIndex::pairs`] (0..512).
#[inline]
fn pair_hash(a: u8, b: u8) -> usize {
    (usize::from(a) * 37 + usize::from(b)) & 511
}

/// The bit of the digit pair `a b`, `None` unless both are ASCII digits.
fn pair_bit(a: u8, b: u8) -> Option<u128> {
    (a.is_ascii_digit() && b.is_ascii_digit())
        .then(|| 1u128 << (u32::from(a - b'0') * 10 + u32::from(b - b'0')))
}

/// The pairs of digits of `b` with only separators between them (an IBAN's check digits may be
/// written `2 9`), as bits (see [`pair_bit`]). Most of a text has no digits: chunks without one
/// are skipped by a vectorised test.
fn digit_pairs(b: &[u8]) -> u128 {
    let mut bits = 0;
    for (c, chunk) in b.chunks(32).enumerate() {
        if !has_digit(chunk) {
            continue;
        }
        let start = c * 32;
        for i in start..start + chunk.len() {
            if !b[i].is_ascii_digit() {
                continue;
            }
            let mut j = i + 1;
            while j < b.len() && canon::is_separator_byte(b[j]) {
                j += 1;
            }
            if let Some(&y) = b.get(j)
                && let Some(bit) = pair_bit(b[i], y)
            {
                bits |= bit;
            }
        }
    }
    bits
}

impl ValueIndex {
    /// Extracts every indexed value of `text`'s reading.
    pub(crate) fn new(text: &str) -> ValueIndex {
        let mut ix = ValueIndex::default();
        let read = canon::reading(text);
        let text: &str = &read;
        let _ = amount::for_each(text, |_, _, a| {
            let key = a.canonical();
            if !ix.amounts.contains(&key) {
                ix.amounts.push(key);
            }
            ControlFlow::Continue(())
        });
        ix.digit_pairs = digit_pairs(text.as_bytes());
        let _ = date::for_each(text, |_, _, r| {
            let (a, b) = match r {
                date::Reading::One(d) => (d, None),
                date::Reading::Two(a, b) => (a, Some(b)),
            };
            for d in std::iter::once(a).chain(b) {
                if !ix.dates.contains(&d) {
                    ix.dates.push(d);
                }
            }
            ControlFlow::Continue(())
        });
        email::extract(text, &mut ix.emails);
        url::extract(text, &mut ix.urls);
        text::fold_into(text, &mut ix.folded);
        for w in ix.folded.as_bytes().windows(2) {
            let h = pair_hash(w[0], w[1]);
            ix.pairs[h >> 6] |= 1 << (h & 63);
        }
        if let std::borrow::Cow::Owned(r) = read {
            ix.reading = Some(r);
        }
        ix
    }

    /// The reading of the indexed text, whose content is `content`.
    pub(crate) fn reading<'t>(&'t self, content: &'t str) -> &'t str {
        self.reading.as_deref().unwrap_or(content)
    }

    /// Whether some reading of `pv` occurs by look in the indexed text (`content`).
    pub(crate) fn any_looks(&self, kind: &ParamType, pv: &ParamValue, content: &str) -> bool {
        let r = self.reading(content);
        pv.iter().any(|v| {
            kind.looks_in_reading(v, r, || {
                self.skeleton.get_or_init(|| canon::skeleton(r)).as_str()
            })
        }) || kind.hidden_in(
            pv,
            self.hidden
                .get_or_init(|| crate::gate::hidden::hidden_texts(content)),
        )
    }

    /// Whether some reading of `pv` occurs in the indexed text; `None` when the index cannot
    /// tell (a regex token, or an IBAN whose check digits the text has) and the caller must scan.
    /// `amounts` are the canonical forms of `pv`'s amounts, computed once for every entry.
    pub(crate) fn any_occurs(
        &self,
        kind: &ParamType,
        pv: &ParamValue,
        amounts: &[(bool, u128, u32)],
    ) -> Option<bool> {
        if let ParamType::Amount = kind {
            return Some(amounts.iter().any(|a| self.amounts.contains(a)));
        }
        match kind {
            ParamType::Regex(_) => None,
            ParamType::Iban => {
                for v in pv.iter() {
                    if self.may_hold_iban(v)? {
                        return None;
                    }
                }
                Some(false)
            }
            _ => Some(pv.iter().any(|v| self.occurs(kind, v))),
        }
    }

    /// Whether the IBAN `v` may occur: its check digits (`iban::occurs` looks for them first)
    /// stand next to each other in the text. `None` for a value the index cannot judge.
    fn may_hold_iban(&self, v: &NormValue) -> Option<bool> {
        let NormValue::Iban(s) = v else {
            return Some(false);
        };
        match s.as_bytes() {
            [_, _, a, b, ..] => Some(self.digit_pairs & pair_bit(*a, *b)? != 0),
            // `iban::occurs` finds no IBAN shorter than four characters.
            _ => Some(false),
        }
    }

    fn occurs(&self, kind: &ParamType, v: &NormValue) -> bool {
        match (kind, v) {
            (ParamType::Amount, NormValue::Amount(a)) => self.amounts.contains(&a.canonical()),
            (ParamType::Date, NormValue::Date(d)) => self.dates.contains(d),
            (ParamType::Email, NormValue::Email(s)) => self.emails.iter().any(|e| e == s),
            (ParamType::Url, NormValue::Url(s)) => self.urls.iter().any(|u| u == s),
            (ParamType::FreeText, NormValue::Text(s)) => {
                !s.is_empty()
                    && s.as_bytes().windows(2).all(|w| {
                        let h = pair_hash(w[0], w[1]);
                        self.pairs[h >> 6] & (1 << (h & 63)) != 0
                    })
                    && self.folded.contains(s.as_str())
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_pairs_span_chunks() {
        let mut text = "x".repeat(31);
        text.push_str("12 ab 3");
        text.push_str(&"y".repeat(40));
        text.push('9');
        let bits = digit_pairs(text.as_bytes());
        assert_eq!(bits, pair_bit(b'1', b'2').unwrap_or(0));
        assert_eq!(digit_pairs(b"2025-03-14"), {
            let p = |a, b| pair_bit(a, b).unwrap_or(0);
            p(b'2', b'0')
                | p(b'0', b'2')
                | p(b'2', b'5')
                | p(b'5', b'0')
                | p(b'0', b'3')
                | p(b'3', b'1')
                | p(b'1', b'4')
        });
        assert_eq!(digit_pairs(b""), 0);
    }
}
