//! Calendar dates: ISO 8601 and the common written forms, normalised to `YYYY-MM-DD`.
//!
//! Recognised (English month names, full or abbreviated, any case):
//!
//! | form | example |
//! |---|---|
//! | year first, `-` `/` or `.` | `2024-01-05`, `2024/1/5`, `2024-01-05T10:00Z` (the date part) |
//! | day first, `.` or `-` | `05.01.2024`, `5-1-2024` |
//! | slashes, year last | `01/05/2024`: month first *and* day first — both readings, see below |
//! | day, month name, year | `5 January 2024`, `5th Jan. 2024`, `5 Jan, 2024`, `5th of January 2024` |
//! | month name, day, year | `January 5, 2024`, `Jan 5th 2024` |
//!
//! `A/B/YYYY` is month-first in the US and day-first elsewhere. When both readings are valid
//! dates and differ, both are kept: a parameter matches an entry if either reading does, and a
//! text offering such a date offers both as repair candidates (which makes a repair ambiguous,
//! the safe outcome). Years have four digits.

use super::scan::{
    alnum_at, alnum_end, blanks_end, digit_at, digits_end, has_digit, is_alnum, rfind4,
    small_number,
};
use std::fmt;
use std::ops::ControlFlow;

/// A valid proleptic-Gregorian calendar date with a four-digit year.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date {
    year: u16,
    month: u8,
    day: u8,
}

impl Date {
    /// The date, if it exists (years 1000 to 9999).
    pub fn new(year: u32, month: u32, day: u32) -> Option<Date> {
        if !(1000..=9999).contains(&year) || !(1..=12).contains(&month) || day == 0 {
            return None;
        }
        let leap =
            (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        (day <= days).then_some(Date {
            year: year as u16,
            month: month as u8,
            day: day as u8,
        })
    }

    /// The year.
    pub fn year(&self) -> u16 {
        self.year
    }

    /// The month, 1 to 12.
    pub fn month(&self) -> u8 {
        self.month
    }

    /// The day of the month, from 1.
    pub fn day(&self) -> u8 {
        self.day
    }
}

impl fmt::Display for Date {
    /// ISO 8601: `YYYY-MM-DD`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl Date {
    /// Where the last occurrence of this date's four-digit year starts in `text`, if any. Every
    /// written form holds the year, so this date does not occur in a text without it, nor
    /// starts after that position.
    pub(crate) fn last_year_at(&self, text: &str) -> Option<usize> {
        let y = self.year;
        let buf = [
            b'0' + (y / 1000 % 10) as u8,
            b'0' + (y / 100 % 10) as u8,
            b'0' + (y / 10 % 10) as u8,
            b'0' + (y % 10) as u8,
        ];
        rfind4(text.as_bytes(), buf)
    }
}

/// One date, or the two readings of an ambiguous `A/B/YYYY` (month first, then day first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Unambiguous.
    One(Date),
    /// Month-first and day-first readings.
    Two(Date, Date),
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A month name at `i`: full, three-letter, or `sept`; an optional `.` after it.
fn month_at(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let mut e = i;
    while e < b.len() && b[e].is_ascii_alphabetic() {
        e += 1;
    }
    let word = &b[i..e];
    if !(3..=9).contains(&word.len()) || alnum_at(b, e) {
        return None;
    }
    let prefix = [
        word[0].to_ascii_lowercase(),
        word[1].to_ascii_lowercase(),
        word[2].to_ascii_lowercase(),
    ];
    let m = match &prefix {
        b"jan" => 1,
        b"feb" => 2,
        b"mar" => 3,
        b"apr" => 4,
        b"may" => 5,
        b"jun" => 6,
        b"jul" => 7,
        b"aug" => 8,
        b"sep" => 9,
        b"oct" => 10,
        b"nov" => 11,
        b"dec" => 12,
        _ => return None,
    };
    let full = MONTHS[m - 1].as_bytes();
    if !(word.len() == 3
        || word.eq_ignore_ascii_case(full)
        || (m == 9 && word.eq_ignore_ascii_case(b"sept")))
    {
        return None;
    }
    let e = if b.get(e) == Some(&b'.') { e + 1 } else { e };
    Some((m as u32, e))
}

/// After a day number: skips `st`, `nd`, `rd` or `th`.
fn ordinal_end(b: &[u8], i: usize) -> usize {
    if i + 2 <= b.len()
        && [b"st", b"nd", b"rd", b"th"]
            .iter()
            .any(|s| b[i..i + 2].eq_ignore_ascii_case(*s))
        && !alnum_at(b, i + 2)
    {
        i + 2
    } else {
        i
    }
}

/// `[,] blanks YYYY` after a day or month: the year and the end.
fn year_after(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let comma = b.get(i) == Some(&b',');
    let j = if comma { i + 1 } else { i };
    let k = blanks_end(b, j);
    if k == i {
        return None;
    }
    let e = digits_end(b, k);
    (e - k == 4 && !alnum_at(b, e)).then(|| (small_number(&b[k..e]), e))
}

/// Parses a date starting at byte `i` (a letter or digit): the reading and where it ends.
pub(crate) fn parse_at(b: &[u8], i: usize) -> Option<(Reading, usize)> {
    let n = b.len();
    if digit_at(b, i) {
        let e1 = digits_end(b, i);
        let l1 = e1 - i;
        let sep = b
            .get(e1)
            .copied()
            .filter(|c| matches!(c, b'-' | b'/' | b'.'));
        if let Some(sep) = sep {
            let s2 = e1 + 1;
            let e2 = digits_end(b, s2);
            if !(1..=2).contains(&(e2 - s2)) || b.get(e2) != Some(&sep) {
                return None;
            }
            let s3 = e2 + 1;
            let e3 = digits_end(b, s3);
            let (x, y, z) = (
                small_number(&b[i..e1.min(i + 4)]),
                small_number(&b[s2..e2]),
                small_number(&b[s3..e3.min(s3 + 4)]),
            );
            if l1 == 4 && (1..=2).contains(&(e3 - s3)) {
                return Date::new(x, y, z).map(|d| (Reading::One(d), e3));
            }
            if (1..=2).contains(&l1) && e3 - s3 == 4 {
                let reading = if sep == b'/' {
                    match (Date::new(z, x, y), Date::new(z, y, x)) {
                        (Some(us), Some(eu)) if us != eu => Reading::Two(us, eu),
                        (Some(d), _) | (None, Some(d)) => Reading::One(d),
                        (None, None) => return None,
                    }
                } else {
                    Reading::One(Date::new(z, y, x)?)
                };
                return Some((reading, e3));
            }
            return None;
        }
        if !(1..=2).contains(&l1) {
            return None;
        }
        let day = small_number(&b[i..e1]);
        let j = ordinal_end(b, e1);
        let mut k = blanks_end(b, j);
        if k == j || k >= n {
            return None;
        }
        // `5th of January 2024`.
        if b.get(k..k + 2)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"of"))
        {
            let after = blanks_end(b, k + 2);
            if after > k + 2 {
                k = after;
            }
        }
        let (month, e) = month_at(b, k)?;
        let (year, end) = year_after(b, e)?;
        return Date::new(year, month, day).map(|d| (Reading::One(d), end));
    }
    // A month name must be followed by blanks and a day: test that before the name itself.
    let mut after = i;
    while after < n && b[after].is_ascii_alphabetic() {
        after += 1;
    }
    if b.get(after) == Some(&b'.') {
        after += 1;
    }
    if !digit_at(b, blanks_end(b, after)) {
        return None;
    }
    let (month, e) = month_at(b, i)?;
    let k = blanks_end(b, e);
    let e2 = digits_end(b, k);
    if k == e || !(1..=2).contains(&(e2 - k)) {
        return None;
    }
    let day = small_number(&b[k..e2]);
    let (year, end) = year_after(b, ordinal_end(b, e2))?;
    Date::new(year, month, day).map(|d| (Reading::One(d), end))
}

/// Parses a whole parameter value.
pub(crate) fn parse_param(s: &str) -> Option<Reading> {
    let b = s.trim().as_bytes();
    match parse_at(b, 0) {
        Some((r, end)) if end == b.len() => Some(r),
        _ => None,
    }
}

/// Calls `f(start, end, reading)` for every date in `text`.
pub(crate) fn for_each(
    text: &str,
    f: impl FnMut(usize, usize, Reading) -> ControlFlow<()>,
) -> ControlFlow<()> {
    for_each_up_to(text, usize::MAX, f)
}

/// As [`for_each`], for the dates that start at or before `last` only (the scan stops there;
/// the dates it reports are the same, in the same order).
pub(crate) fn for_each_up_to(
    text: &str,
    last: usize,
    mut f: impl FnMut(usize, usize, Reading) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    if !has_digit(b) {
        return ControlFlow::Continue(());
    }
    let mut i = 0;
    while i < b.len() && i <= last {
        let c = b[i];
        if !is_alnum(c) {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() {
            // A word starts a date only as a month name followed by blanks and a digit: test
            // what follows the word before reading the word.
            let end = alnum_end(b, i);
            let after = if b.get(end) == Some(&b'.') {
                end + 1
            } else {
                end
            };
            let k = blanks_end(b, after);
            if k == after || !digit_at(b, k) {
                i = end;
                continue;
            }
        }
        match parse_at(b, i) {
            Some((r, e)) => {
                f(i, e, r)?;
                i = e;
            }
            None => i = alnum_end(b, i),
        }
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: u32, m: u32, dd: u32) -> Date {
        Date::new(y, m, dd).unwrap()
    }

    #[test]
    fn forms() {
        let jan5 = Reading::One(d(2024, 1, 5));
        for s in [
            "2024-01-05",
            "2024/1/5",
            "2024.01.05",
            "05.01.2024",
            "5-1-2024",
            "5 January 2024",
            "5th Jan. 2024",
            "5th of January 2024",
            "5 OF jan 2024",
            "5 jan, 2024",
            "January 5, 2024",
            "Jan 5th 2024",
            "5/1/2024",
        ] {
            let r = parse_param(s);
            if s == "5/1/2024" {
                assert_eq!(r, Some(Reading::Two(d(2024, 5, 1), d(2024, 1, 5))), "{s}");
            } else {
                assert_eq!(r, Some(jan5), "{s}");
            }
        }
        assert_eq!(
            parse_param("13/01/2024"),
            Some(Reading::One(d(2024, 1, 13)))
        );
        assert_eq!(
            parse_param("01/13/2024"),
            Some(Reading::One(d(2024, 1, 13)))
        );
        for bad in [
            "2024-02-30",
            "2023-02-29",
            "2024-13-01",
            "Jan 2024",
            "2024-01-05T10:00",
            "05/01/24",
        ] {
            assert_eq!(parse_param(bad), None, "{bad}");
        }
        assert_eq!(
            parse_param("2024-02-29"),
            Some(Reading::One(d(2024, 2, 29)))
        );
    }
}
