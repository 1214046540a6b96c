//! Amounts a reader reads in words: a number with a magnitude (`1.2k`, `3 million`, `2bn`,
//! `5 lakh`) and a number spelt in English words (`twelve hundred`, `one thousand two
//! hundred and fifty`). A model asked to pay "the 1.2k EUR the bill asks for" sends 1200, so an
//! untrusted entry that writes an amount this way must taint it like one that writes `1200`.
//!
//! These readings are for taint only (the gate's look check, [`super::amount::for_each_loose`]):
//! they over-read — `5 m` may be five metres — which can only make an untrusted entry a carrier
//! of one more value, never let an entry justify one. Only English words are read; the digits
//! of every script are read by the text's reading ([`crate::gate::canon::reading`]).

use super::amount::{Amount, for_each};
use super::scan::{alnum_at, alnum_before};
use std::ops::ControlFlow;

/// Magnitude words and abbreviations after a number, lower case, with their power of ten.
/// Indian `lakh` (10^5) and `crore` (10^7) are common in invoices.
const MAGNITUDES: [(&str, u32); 14] = [
    ("k", 3),
    ("thousand", 3),
    ("thousands", 3),
    ("m", 6),
    ("mn", 6),
    ("mio", 6),
    ("million", 6),
    ("millions", 6),
    ("bn", 9),
    ("billion", 9),
    ("billions", 9),
    ("lakh", 5),
    ("lakhs", 5),
    ("crore", 7),
];

/// The power of ten of the magnitude word that starts at `i` (after at most one space), and
/// where it ends; the word must end at a non-alphanumeric character.
fn magnitude_at(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let start = if b.get(i) == Some(&b' ') { i + 1 } else { i };
    let mut end = start;
    while end < b.len() && b[end].is_ascii_alphabetic() {
        end += 1;
    }
    if end == start || alnum_at(b, end) {
        return None;
    }
    let word = b.get(start..end)?;
    MAGNITUDES
        .iter()
        .find(|(name, _)| word.eq_ignore_ascii_case(name.as_bytes()))
        .map(|&(_, pow)| (pow, end))
}

/// Calls `f(start, end, amount)` for every amount written with a magnitude (`1.2k` is 1200).
pub(crate) fn for_each_scaled(
    text: &str,
    mut f: impl FnMut(usize, usize, Amount) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    if !b.iter().any(u8::is_ascii_alphabetic) {
        return ControlFlow::Continue(());
    }
    for_each(text, |s, e, a| {
        match magnitude_at(b, e).and_then(|(pow, end)| a.scaled(pow).map(|a| (a, end))) {
            Some((scaled, end)) => f(s, end, scaled),
            None => ControlFlow::Continue(()),
        }
    })
}

/// What one English number word does to the number being read.
#[derive(Clone, Copy)]
enum Word {
    /// `zero` … `nineteen`, `twenty` … `ninety`: added.
    Add(u64),
    /// `hundred`: multiplies the part since the last scale.
    Hundred,
    /// `thousand`, `million`, `billion`: closes a group of that scale.
    Scale(u64),
    /// `and`, `a` (in `a hundred`): read only inside a number.
    Filler,
}

fn word(w: &str) -> Option<Word> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    const OTHERS: [(&str, Word); 6] = [
        ("hundred", Word::Hundred),
        ("thousand", Word::Scale(1_000)),
        ("million", Word::Scale(1_000_000)),
        ("billion", Word::Scale(1_000_000_000)),
        ("and", Word::Filler),
        ("a", Word::Filler),
    ];
    // Every number word is one to nine letters: most words of a text are rejected here, and
    // none is lower-cased into a new string.
    if w.len() > 9 {
        return None;
    }
    let is = |name: &str| w.eq_ignore_ascii_case(name);
    if let Some(v) = UNITS.iter().position(|u| is(u)) {
        return Some(Word::Add(v as u64));
    }
    if let Some(v) = TENS.iter().position(|t| is(t)) {
        return Some(Word::Add(20 + 10 * v as u64));
    }
    OTHERS.iter().find(|(name, _)| is(name)).map(|&(_, w)| w)
}

/// A number being read from words: the closed groups and the open one.
struct Spelt {
    total: u64,
    group: u64,
    /// Whether a number word (not a filler) was read.
    any: bool,
    /// Where its first word starts and its last number word ends.
    start: usize,
    end: usize,
    /// Where its last word, fillers included, ends (the next word must follow it closely).
    last: usize,
}

impl Spelt {
    fn new(start: usize) -> Spelt {
        Spelt {
            total: 0,
            group: 0,
            any: false,
            start,
            end: start,
            last: start,
        }
    }

    fn value(&self) -> Option<Amount> {
        let v = self.total.checked_add(self.group)?;
        if self.any {
            Amount::new(false, u128::from(v), 0)
        } else {
            None
        }
    }

    /// Takes one word; `false` when it cannot continue the number (`five five` is two numbers,
    /// `twenty five` one).
    fn take(&mut self, w: Word) -> bool {
        let next = match w {
            Word::Add(v) => {
                let tail = self.group % 100;
                if tail != 0 && (v >= 10 || !tail.is_multiple_of(10)) {
                    return false;
                }
                self.group.checked_add(v)
            }
            Word::Hundred => self.group.max(1).checked_mul(100),
            Word::Scale(s) => {
                match self
                    .group
                    .max(1)
                    .checked_mul(s)
                    .and_then(|c| self.total.checked_add(c))
                {
                    Some(t) => self.total = t,
                    None => return false,
                }
                Some(0)
            }
            Word::Filler => return true,
        };
        match next {
            Some(g) => {
                self.group = g;
                self.any = true;
                true
            }
            None => false,
        }
    }
}

/// Calls `f(start, end, amount)` for every number spelt in English words (`twelve hundred` is
/// 1200, `two thousand and fifty` 2050, `twenty-five` 25). The words are separated by spaces or
/// hyphens; a number does not start with `and`, and a lone `a` is no number.
pub(crate) fn for_each_spelt(
    text: &str,
    mut f: impl FnMut(usize, usize, Amount) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    let mut emit = |done: Option<Spelt>| match done.as_ref().and_then(Spelt::value) {
        Some(a) => done.map_or(ControlFlow::Continue(()), |d| f(d.start, d.end, a)),
        None => ControlFlow::Continue(()),
    };
    let mut cur: Option<Spelt> = None;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() || alnum_before(b, i) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < b.len() && b[end].is_ascii_alphabetic() {
            end += 1;
        }
        let joined = cur
            .as_ref()
            .is_some_and(|c| b[c.last..i].iter().all(|&x| x == b' ' || x == b'-'));
        if !joined {
            emit(cur.take())?;
        }
        let Some(w) = word(&text[i..end]).filter(|_| !alnum_at(b, end)) else {
            emit(cur.take())?;
            i = end;
            continue;
        };
        let starts_with_and = |c: &Spelt| !c.any && text[i..end].eq_ignore_ascii_case("and");
        let mut c = cur.take().unwrap_or_else(|| Spelt::new(i));
        if matches!(w, Word::Filler) && starts_with_and(&c) {
            i = end;
            continue;
        }
        if !c.take(w) {
            emit(Some(c))?;
            c = Spelt::new(i);
            c.take(w);
        }
        if !matches!(w, Word::Filler) {
            c.end = end;
        }
        c.last = end;
        cur = Some(c);
        i = end;
    }
    emit(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The amounts `each` reads in `text`, compared by value with the amounts written plainly.
    fn read(text: &str, each: fn(&str, &mut dyn FnMut(Amount))) -> Vec<Amount> {
        let mut v = Vec::new();
        each(text, &mut |a| v.push(a));
        v
    }

    fn plain<const N: usize>(values: [&str; N]) -> Vec<Amount> {
        values.iter().filter_map(|v| Amount::parse(v)).collect()
    }

    fn scaled(text: &str, out: &mut dyn FnMut(Amount)) {
        let _ = for_each_scaled(text, |_, _, a| {
            out(a);
            ControlFlow::Continue(())
        });
    }

    fn spelt(text: &str, out: &mut dyn FnMut(Amount)) {
        let _ = for_each_spelt(text, |_, _, a| {
            out(a);
            ControlFlow::Continue(())
        });
    }

    #[test]
    fn magnitudes_scale_the_number_before_them() {
        assert_eq!(read("pay 1.2k EUR now", scaled), plain(["1200"]));
        assert_eq!(read("pay EUR 1.5 Million", scaled), plain(["1500000"]));
        assert_eq!(
            read("$2bn, 3 mn or 4 lakh", scaled),
            plain(["2000000000", "3000000", "400000"])
        );
        assert_eq!(read("1,250.50 thousand", scaled), plain(["1250500"]));
        // Not a magnitude: a longer word, a unit glued to more letters, none at all.
        assert!(read("5 kilos, 3 months, 12 apples, 1000", scaled).is_empty());
    }

    #[test]
    fn english_number_words() {
        assert_eq!(
            read("please pay twelve hundred euros", spelt),
            plain(["1200"])
        );
        assert_eq!(
            read("One Thousand Two Hundred and Fifty EUR", spelt),
            plain(["1250"])
        );
        assert_eq!(
            read("twenty-five or a hundred", spelt),
            plain(["25", "100"])
        );
        assert_eq!(read("a hundred and fifty", spelt), plain(["150"]));
        assert_eq!(read("five five", spelt), plain(["5", "5"]));
        assert_eq!(
            read("two million three hundred thousand", spelt),
            plain(["2300000"])
        );
        // Words that only look like fillers or numbers are not numbers alone.
        assert!(read("a cat and a dog", spelt).is_empty());
        assert!(read("someone, oneself, tens", spelt).is_empty());
    }
}
