//! IBANs (ISO 13616): two letters, two check digits, then 11 to 30 letters or digits.
//!
//! The normal form is the IBAN without separators, upper-cased. The check digits are *not*
//! verified: the gate asks where a value came from, not whether a bank would accept it, and an
//! attacker's malformed IBAN must still be traced to the entry that carries it.

use super::scan::{alnum_at, alnum_before, alnum_end, has_digit, is_alnum};
use crate::gate::canon;
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

/// The IBAN length of the country `code` (upper or lower case), if it is listed (ISO 13616; the
/// SWIFT IBAN Registry). An IBAN of a listed country has exactly this many characters, which is
/// what tells where an IBAN written with separators ends: `GB29 NWBK 6016 1331 9268 19 100` is
/// a GB IBAN (22 characters) followed by a number.
pub(crate) fn country_length(code: [u8; 2]) -> Option<usize> {
    let key = [code[0].to_ascii_uppercase(), code[1].to_ascii_uppercase()];
    Some(match &key {
        b"NO" => 15,
        b"BE" => 16,
        b"DK" | b"FI" | b"FK" | b"FO" | b"GL" | b"NL" | b"SD" => 18,
        b"MK" | b"SI" => 19,
        b"AT" | b"BA" | b"EE" | b"KZ" | b"LT" | b"LU" | b"MN" | b"XK" => 20,
        b"CH" | b"HR" | b"LI" | b"LV" => 21,
        b"BG" | b"BH" | b"CR" | b"DE" | b"GB" | b"GE" | b"IE" | b"ME" | b"RS" | b"VA" => 22,
        b"AE" | b"GI" | b"IL" | b"IQ" | b"OM" | b"SO" | b"TL" => 23,
        b"AD" | b"CZ" | b"ES" | b"MD" | b"PK" | b"RO" | b"SA" | b"SE" | b"SK" | b"TN" | b"VG" => 24,
        b"LY" | b"PT" | b"ST" => 25,
        b"IS" | b"TR" => 26,
        b"BI" | b"DJ" | b"FR" | b"GR" | b"IT" | b"MC" | b"MR" | b"SM" => 27,
        b"AL" | b"AZ" | b"BY" | b"CY" | b"DO" | b"GT" | b"HN" | b"HU" | b"LB" | b"NI" | b"PL"
        | b"SV" => 28,
        b"BR" | b"EG" | b"PS" | b"QA" | b"UA" => 29,
        b"JO" | b"KW" | b"MU" | b"YE" => 30,
        b"MT" | b"SC" => 31,
        b"LC" => 32,
        b"RU" => 33,
        _ => return None,
    })
}

/// Most separator characters between two characters of an IBAN written in a text (`" - "`).
const MAX_GAP: usize = 3;

/// Normalises a parameter value: drops white space, invisible characters and the grouping
/// punctuation `-`, `.`, `/`, `_`, reads full-width and other compatibility forms as ASCII
/// (NFKC), upper-cases, and checks the shape. A look-alike letter from another script is not
/// read as Latin: the value is what the tool receives.
pub(crate) fn normalise(s: &str) -> Option<String> {
    let s = if s.is_ascii() {
        std::borrow::Cow::Borrowed(s)
    } else {
        canon::value_reading(s)
    };
    let mut buf = [0u8; MAX_LEN];
    let mut len = 0;
    for &b in s.as_bytes() {
        if b.is_ascii_whitespace() || matches!(b, 0x0b | b'-' | b'.' | b'/' | b'_') {
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
    std::str::from_utf8(out).ok().map(str::to_string)
}

/// The end of a run of at most [`MAX_GAP`] separator bytes starting at `j` that is followed by
/// a letter or digit; `None` when there is no such run (the identifier ends at `j`).
#[inline]
fn skip_gap(b: &[u8], j: usize) -> Option<usize> {
    let mut k = j;
    while k < b.len() && k - j < MAX_GAP && canon::is_separator_byte(b[k]) {
        k += 1;
    }
    (k > j && alnum_at(b, k)).then_some(k)
}

/// Whether the normalised IBAN `iban` occurs *whole* in the reading `text`.
///
/// For an IBAN of a listed country with that country's length, the characters must occur in
/// order, letters in any case, with runs of up to three separators (white space, punctuation)
/// between any two, and the occurrence must not be glued to a letter or digit on either side:
/// the country's length says where it ends, so `GB29 NWBK 6016 1331 9268` (a truncated GB
/// IBAN) carries no 20-character value, and `… 9268 19 100` carries the 22-character one. Any
/// other value (an unlisted country, a wrong length) occurs when [`for_each`] extracts it.
pub(crate) fn occurs(iban: &str, text: &str) -> bool {
    let want = iban.as_bytes();
    if want.len() < 4 {
        return false;
    }
    if country_length([want[0], want[1]]) != Some(want.len()) {
        return for_each(text, |_, _, s| {
            if s == iban {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_break();
    }
    let b = text.as_bytes();
    // Usually the country code and check digits stand together: find them as the old printed
    // forms do (a vectorised search for the two check digits), and only then every start.
    if let Ok(check) = std::str::from_utf8(&want[2..4]) {
        for (p, _) in text.match_indices(check) {
            if p >= 2 && b[p - 2..p].eq_ignore_ascii_case(&want[..2]) && whole_at(b, p - 2, want) {
                return true;
            }
        }
    }
    let (lower, upper) = (want[0].to_ascii_lowercase(), want[0].to_ascii_uppercase());
    memchr::memchr2_iter(lower, upper, b).any(|i| whole_at(b, i, want))
}

/// Whether the IBAN `want` (upper case) occurs at `i` of the reading `b`: its characters in
/// order with separator runs between, not glued to a letter or digit on either side.
fn whole_at(b: &[u8], i: usize, want: &[u8]) -> bool {
    if alnum_before(b, i) {
        return false;
    }
    let mut j = i;
    for &w in want {
        if !alnum_at(b, j) {
            match skip_gap(b, j) {
                Some(k) if j > i => j = k,
                _ => return false,
            }
        }
        if b[j].to_ascii_uppercase() == w {
            j += 1;
        } else {
            return false;
        }
    }
    !alnum_at(b, j)
}

/// Calls `f(start, end, normalised)` for every IBAN of the reading `text`.
///
/// An IBAN starts with two letters and two digits, not glued to a letter or digit before. For a
/// listed country it is the country's number of letters and digits, read across runs of up to
/// three separators, letters all in the case of the country code, not glued to a letter or
/// digit after. Otherwise two printed forms are recognised: one unbroken run of 15 to 34 letters
/// and digits, and the grouped form of ISO 13616 (groups of four separated by single spaces,
/// hyphens or dots, the last group one to four characters long). Letters must all have the case
/// of the country code, so the word after an IBAN is not swallowed as a group.
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
            if let Some((len, end)) = listed_at(b, i, &mut buf, &case_ok) {
                buf[..len].make_ascii_uppercase();
                if let Ok(s) = std::str::from_utf8(&buf[..len]) {
                    f(i, end, s)?;
                }
                i = end;
                continue;
            }
            // A listed country's full length read in mixed case: the run here is the start of
            // that IBAN, not an IBAN of its own (its prefix is no candidate; `occurs`, which
            // ignores case, still finds the whole one).
            if listed_at(b, i, &mut buf, &|_: &u8| true).is_some() {
                i = t_end;
                continue;
            }
            let mut len = 0;
            let mut end = t_end;
            if (MIN_LEN..=MAX_LEN).contains(&tok.len()) && tok.iter().all(case_ok) {
                buf[..tok.len()].copy_from_slice(tok);
                len = tok.len();
            } else if tok.len() == 4 && case_ok(&tok[1]) {
                buf[..4].copy_from_slice(tok);
                len = 4;
                while end < n && matches!(b[end], b' ' | b'-' | b'.') && alnum_at(b, end + 1) {
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

/// The IBAN of a listed country starting at `i` (its length and end), read across separator
/// runs into `buf`; `None` when the country is not listed or the characters do not add up.
fn listed_at(
    b: &[u8],
    i: usize,
    buf: &mut [u8; MAX_LEN],
    case_ok: &impl Fn(&u8) -> bool,
) -> Option<(usize, usize)> {
    let want = country_length([b[i], b[i + 1]])?;
    let mut len = 0;
    let mut j = i;
    while len < want {
        if !alnum_at(b, j) {
            j = skip_gap(b, j)?;
        }
        let c = b[j];
        if !case_ok(&c) {
            return None;
        }
        buf[len] = c;
        len += 1;
        j += 1;
    }
    (!alnum_at(b, j)).then_some((len, j))
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
    fn a_prefix_of_a_mixed_case_listed_iban_is_no_candidate() {
        // GB is 22 long: the first 18, unbroken, are the start of the whole one.
        assert!(all("GB68O4C2154020E683- 1lQ8").is_empty());
        assert!(occurs("GB68O4C2154020E6831LQ8", "GB68O4C2154020E683- 1lQ8"));
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
    fn normalising_drops_separators_and_formatting() {
        for (s, want) in [
            (
                "GB29 NWBK 6016 1331 9268 19",
                Some("GB29NWBK60161331926819"),
            ),
            (
                "gb29-nwbk-6016-1331-9268-19",
                Some("GB29NWBK60161331926819"),
            ),
            (
                "GB29\u{b}NWBK\t60161331926819\r\n",
                Some("GB29NWBK60161331926819"),
            ),
            (
                "GB29\u{a0}NWBK.6016/1331_9268\u{200b}19",
                Some("GB29NWBK60161331926819"),
            ),
            (
                "ＧＢ２９ＮＷＢＫ６０１６１３３１９２６８１９",
                Some("GB29NWBK60161331926819"),
            ),
            ("GB29NWBK60161331926819X1234567890123", None),
            ("GB29 NWBK 6016 1331 9268 1é", None),
            // A Cyrillic В is another string: not an IBAN.
            ("G\u{412}29NWBK60161331926819", None),
            ("GB29@NWBK60161331926819", None),
            ("", None),
        ] {
            assert_eq!(normalise(s).as_deref(), want, "{s:?}");
        }
    }

    #[test]
    fn country_lengths() {
        assert_eq!(country_length(*b"gb"), Some(22));
        assert_eq!(country_length(*b"NO"), Some(15));
        assert_eq!(country_length(*b"LC"), Some(32));
        assert_eq!(country_length(*b"UK"), None);
    }

    #[test]
    fn occurs_across_separators_and_whole() {
        let v = "GB29NWBK60161331926819";
        assert!(occurs(v, "to GB29 NWBK 6016 1331 9268 19."));
        assert!(occurs(v, "to gb29-nwbk-6016-1331-9268-19"));
        assert!(occurs(v, "to GB29  NWBK 6016 1331 9268 19"));
        assert!(occurs(
            v,
            "to G B 2 9 N W B K 6 0 1 6 1 3 3 1 9 2 6 8 1 9 now"
        ));
        assert!(occurs(v, "to GB29 NWBK 6016 1331 9268 19 100 EUR"));
        assert!(!occurs(v, "to GB29 NWBK 6016 1331 9268 190"));
        assert!(!occurs(v, "xGB29NWBK60161331926819"));
        assert!(!occurs(v, "GB29NWBK6016133192681"));
        // A prefix of a longer identifier is not the value.
        let prefix = "GB29NWBK601613319268";
        assert!(!occurs(prefix, "to GB29 NWBK 6016 1331 9268 19."));
        assert!(!occurs(prefix, "to GB29NWBK60161331926819."));
        // Unlisted countries: the extracted forms.
        let uk = "UK12345678901234567890";
        assert!(occurs(uk, "pay UK12 3456 7890 1234 5678 90, amount 98.70"));
        assert!(occurs(uk, "pay UK12-3456-7890-1234-5678-90."));
        assert!(!occurs(
            "UK1234567890123456789",
            "pay UK12 3456 7890 1234 5678 90."
        ));
    }
}
