//! IBANs (ISO 13616): two letters, two check digits, then 11 to 30 letters or digits.
//!
//! The normal form is the IBAN without separators, upper-cased. The check digits are *not*
//! verified: the gate asks where a value came from, not whether a bank would accept it, and an
//! attacker's malformed IBAN must still be traced to the entry that carries it.

use super::scan::{alnum_at, alnum_before, alnum_end, has_digit, is_alnum};
use std::ops::ControlFlow;

/// Shortest IBAN (Norway).
pub(crate) const MIN_LEN: usize = 15;
/// Longest IBAN allowed by ISO 13616.
pub(crate) const MAX_LEN: usize = 34;

/// Whether `b` is an upper-case IBAN shape: `[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}`.
pub(crate) fn is_shape(b: &[u8]) -> bool {
    (MIN_LEN..=MAX_LEN).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b[1].is_ascii_uppercase()
        && b[2].is_ascii_digit()
        && b[3].is_ascii_digit()
        && b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Normalises a parameter value: drops whitespace and hyphens, upper-cases, checks the shape.
pub(crate) fn normalise(s: &str) -> Option<String> {
    if s.is_ascii() {
        // The usual case, byte by byte (the same rules: ASCII white space as
        // `char::is_whitespace` sees it, vertical tab included).
        let mut buf = [0u8; MAX_LEN];
        let mut len = 0;
        for &b in s.as_bytes() {
            if matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b'-') {
                continue;
            }
            if !b.is_ascii_alphanumeric() || len == MAX_LEN {
                return None;
            }
            buf[len] = b.to_ascii_uppercase();
            len += 1;
        }
        let out = buf.get(..len)?;
        if !is_shape(out) {
            return None;
        }
        return std::str::from_utf8(out).ok().map(str::to_string);
    }
    let mut out = String::with_capacity(s.len().min(MAX_LEN));
    for c in s.chars() {
        if c.is_whitespace() || c == '-' {
            continue;
        }
        if !c.is_ascii_alphanumeric() || out.len() == MAX_LEN {
            return None;
        }
        out.push(c.to_ascii_uppercase());
    }
    is_shape(out.as_bytes()).then_some(out)
}

/// Whether the normalised IBAN `iban` occurs in `text`.
///
/// Letters compare case-insensitively; after the first four characters (country code and
/// check digits, always written together) a single space or hyphen may stand between any two
/// characters (`GB29 NWBK 6016 …`, `GB29-NWBK-…`); the occurrence must not be part of a longer
/// run of letters and digits.
pub(crate) fn occurs(iban: &str, text: &str) -> bool {
    let want = iban.as_bytes();
    let b = text.as_bytes();
    if want.len() < 4 {
        return false;
    }
    let n = b.len();
    // The check digits are two ASCII digits, so a plain (vectorised) substring search finds
    // every place the IBAN could start.
    let Ok(check) = std::str::from_utf8(&want[2..4]) else {
        return false;
    };
    if !text.contains(check) {
        return false;
    }
    'candidates: for (p, _) in text.match_indices(check) {
        if p < 2 {
            continue;
        }
        let i = p - 2;
        if alnum_before(b, i) || !b[i..p].eq_ignore_ascii_case(&want[..2]) {
            continue;
        }
        let (mut j, mut k) = (p + 2, 4);
        loop {
            if k == want.len() {
                if !alnum_at(b, j) {
                    return true;
                }
                continue 'candidates;
            }
            if j < n && b[j].to_ascii_uppercase() == want[k] {
                j += 1;
                k += 1;
            } else if j < n && (b[j] == b' ' || b[j] == b'-') && alnum_at(b, j + 1) {
                j += 1;
            } else {
                continue 'candidates;
            }
        }
    }
    false
}

/// Calls `f(start, end, normalised)` for every IBAN-shaped run of `text`.
///
/// Two printed forms are recognised: one unbroken run of 15 to 34 letters and digits, and the
/// grouped form of ISO 13616 (groups of four separated by single spaces, the last group one to
/// four characters long). Letters must all have the case of the country code, so the word after
/// an IBAN is not swallowed as a group.
pub(crate) fn for_each(
    text: &str,
    mut f: impl FnMut(usize, usize, &str) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    if !has_digit(b) {
        return ControlFlow::Continue(());
    }
    let n = b.len();
    let mut buf = [0u8; MAX_LEN];
    let mut i = 0;
    while i < n {
        if !is_alnum(b[i]) {
            i += 1;
            continue;
        }
        let t_end = alnum_end(b, i);
        let tok = &b[i..t_end];
        let mut next = t_end;
        if tok.len() >= 4
            && tok[0].is_ascii_alphabetic()
            && tok[1].is_ascii_alphabetic()
            && tok[2].is_ascii_digit()
            && tok[3].is_ascii_digit()
        {
            let upper = tok[0].is_ascii_uppercase();
            let case_ok = |c: &u8| !c.is_ascii_alphabetic() || c.is_ascii_uppercase() == upper;
            let mut len = 0;
            let mut end = t_end;
            if (MIN_LEN..=MAX_LEN).contains(&tok.len()) && tok.iter().all(case_ok) {
                buf[..tok.len()].copy_from_slice(tok);
                len = tok.len();
            } else if tok.len() == 4 && case_ok(&tok[1]) {
                buf[..4].copy_from_slice(tok);
                len = 4;
                while end < n && b[end] == b' ' && alnum_at(b, end + 1) {
                    let g_end = alnum_end(b, end + 1);
                    let g = &b[end + 1..g_end];
                    if g.len() > 4 || len + g.len() > MAX_LEN || !g.iter().all(case_ok) {
                        break;
                    }
                    buf[len..len + g.len()].copy_from_slice(g);
                    len += g.len();
                    end = g_end;
                    if g.len() < 4 {
                        break;
                    }
                }
            }
            if len >= MIN_LEN {
                buf[..len].make_ascii_uppercase();
                if let Ok(s) = std::str::from_utf8(&buf[..len]) {
                    f(i, end, s)?;
                }
                next = end;
            }
        }
        i = next;
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        let _ = for_each(text, |_, _, s| {
            v.push(s.to_string());
            ControlFlow::Continue(())
        });
        v
    }

    #[test]
    fn grouped_and_unbroken_forms() {
        assert_eq!(
            all("Please pay to IBAN UK12 3456 7890 1234 5678 90, amount 98.70"),
            ["UK12345678901234567890"]
        );
        assert_eq!(
            all("iban:GB29NWBK60161331926819."),
            ["GB29NWBK60161331926819"]
        );
        assert_eq!(
            all("gb29 nwbk 6016 1331 9268 19 from"),
            ["GB29NWBK60161331926819"]
        );
        // The next word has another case, so it is not a group.
        assert_eq!(
            all("DE89 3704 0044 0532 0130 00 Bank"),
            ["DE89370400440532013000"]
        );
        assert!(all("AB12 short").is_empty());
        assert!(all("XGB29NWBK60161331926819").is_empty());
    }

    #[test]
    fn normalising_ascii_and_unicode_agree() {
        for s in [
            "GB29 NWBK 6016 1331 9268 19",
            "gb29-nwbk-6016-1331-9268-19",
            "GB29\u{b}NWBK\t60161331926819\r\n",
            "GB29NWBK60161331926819X1234567890123",
            "GB29 NWBK 6016 1331 9268 1é",
            "GB29\u{a0}NWBK60161331926819",
            "GB29_NWBK60161331926819",
            "",
        ] {
            // The general path, as it was before the ASCII one.
            let mut slow = String::new();
            let mut ok = true;
            for c in s.chars() {
                if c.is_whitespace() || c == '-' {
                    continue;
                }
                if !c.is_ascii_alphanumeric() || slow.len() == MAX_LEN {
                    ok = false;
                    break;
                }
                slow.push(c.to_ascii_uppercase());
            }
            let slow = (ok && is_shape(slow.as_bytes())).then_some(slow);
            assert_eq!(normalise(s), slow, "{s:?}");
        }
        assert_eq!(
            normalise("gb29 nwbk 6016 1331 9268 19").as_deref(),
            Some("GB29NWBK60161331926819")
        );
    }

    #[test]
    fn occurs_skips_single_separators() {
        let v = "GB29NWBK60161331926819";
        assert!(occurs(v, "to GB29 NWBK 6016 1331 9268 19."));
        assert!(occurs(v, "to gb29-nwbk-6016-1331-9268-19"));
        assert!(!occurs(v, "to GB29 NWBK 6016 1331 9268 190"));
        assert!(!occurs(v, "to GB29  NWBK 6016 1331 9268 19"));
        assert!(!occurs(v, "xGB29NWBK60161331926819"));
        assert!(!occurs(v, "GB29NWBK6016133192681"));
    }
}
