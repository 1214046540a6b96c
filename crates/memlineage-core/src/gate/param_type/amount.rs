//! Amounts as exact decimals: `1,000.00`, `1000`, `$1,000` and `1000.0 EUR` are all 1000.
//!
//! No float is involved: an amount is a sign, an integer mantissa and a decimal scale, and two
//! amounts are equal when they denote the same number (`98.70` = `98.7`).
//!
//! Separators: a lone `.` is a decimal point; a lone `,` followed by exactly three digits (and
//! at most three before it) is a thousands separator, otherwise a decimal comma (`98,70`);
//! several identical separators are thousands separators (`1.000.000`, `1,000,000`); when both
//! appear the last one is the decimal separator (`1,000.50`, `1.000,50`). Anything else (`1.2.3`,
//! `12,34,567`) is not an amount.

use super::scan::{Span, alnum_before, digit_at, digits_end};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;

/// Largest number of decimals kept.
const MAX_SCALE: u32 = 64;
/// Most digit groups in one number.
const MAX_GROUPS: usize = 16;

/// An exact decimal amount, as written (`98.70` keeps its two decimals for display), compared
/// by value.
#[derive(Clone, Copy, Debug)]
pub struct Amount {
    negative: bool,
    mantissa: u128,
    scale: u32,
}

impl Amount {
    /// `(-1)^negative × mantissa × 10^-scale`; `None` if `scale` is above 64.
    pub fn new(negative: bool, mantissa: u128, scale: u32) -> Option<Amount> {
        (scale <= MAX_SCALE).then_some(Amount {
            negative: negative && mantissa != 0,
            mantissa,
            scale,
        })
    }

    /// Whether the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The mantissa and scale with trailing fractional zeros removed: two amounts are equal
    /// exactly when these are.
    pub(crate) fn canonical(&self) -> (bool, u128, u32) {
        let (mut m, mut s) = (self.mantissa, self.scale);
        // Every amount a text or a call holds in practice fits 64 bits, where dividing by ten
        // is a multiplication; 128-bit division is a library call (it dominated comparisons).
        if let Ok(mut small) = u64::try_from(m) {
            while s > 0 && small % 10 == 0 {
                small /= 10;
                s -= 1;
            }
            m = u128::from(small);
        } else {
            while s > 0 && m % 10 == 0 {
                m /= 10;
                s -= 1;
            }
        }
        (self.negative && m != 0, m, s)
    }

    /// Parses a parameter written as a string: an optional sign, an optional currency symbol or
    /// three-letter code before or after, and a number in the forms the module documents.
    pub fn parse(s: &str) -> Option<Amount> {
        let mut t = s.trim();
        let mut negative = false;
        if let Some(r) = t.strip_prefix('-') {
            negative = true;
            t = r.trim_start();
        } else if let Some(r) = t.strip_prefix('+') {
            t = r.trim_start();
        }
        t = strip_currency_prefix(t).trim_start();
        if !negative && let Some(r) = t.strip_prefix('-') {
            negative = true;
            t = r;
        }
        t = strip_currency_suffix(t).trim_end();
        let b = t.as_bytes();
        if !digit_at(b, 0) {
            return None;
        }
        let (value, end) = scan_number(b, 0);
        if end != b.len() {
            return None;
        }
        let (mantissa, scale) = value?;
        Amount::new(negative, mantissa, scale)
    }

    /// From a JSON number, exactly as serde_json prints it (`98.7`, `1e21`, `-5`).
    pub fn from_json(n: &serde_json::Number) -> Option<Amount> {
        if let Some(u) = n.as_u64() {
            return Amount::new(false, u128::from(u), 0);
        }
        if let Some(i) = n.as_i64() {
            return Amount::new(i < 0, u128::from(i.unsigned_abs()), 0);
        }
        // A float prints in at most 24 bytes: no need to allocate its text.
        let mut text = StackText::default();
        if fmt::Write::write_fmt(&mut text, format_args!("{n}")).is_ok()
            && let Some(t) = text.as_str()
        {
            return parse_scientific(t);
        }
        parse_scientific(&n.to_string())
    }

    /// As a JSON number: an integer when the value is whole and fits in 64 bits, else a float
    /// — but only if that float denotes exactly this amount when printed back (`98.7` does;
    /// `123456789012345678901234` does not), so a repair never changes a value by rounding.
    pub fn to_json_number(&self) -> Option<serde_json::Number> {
        let (negative, m, s) = self.canonical();
        if s == 0 {
            if !negative {
                if let Ok(u) = u64::try_from(m) {
                    return Some(u.into());
                }
            } else if let Ok(i) = i128::try_from(m)
                && let Ok(i) = i64::try_from(-i)
            {
                return Some(i.into());
            }
        }
        let f: f64 = self.to_string().parse().ok()?;
        let n = serde_json::Number::from_f64(f)?;
        (Amount::from_json(&n).as_ref() == Some(self)).then_some(n)
    }
}

impl Amount {
    /// The amount times `10^pow` (`1.2` with 3 is 1200); `None` when it does not fit.
    pub(crate) fn scaled(&self, pow: u32) -> Option<Amount> {
        let m = self.mantissa.checked_mul(10u128.checked_pow(pow)?)?;
        Amount::new(self.negative, m, self.scale)
    }

    /// The last (up to three) digits of the integer part, right-aligned in the buffer, and
    /// how many there are.
    fn int_tail(&self) -> ([u8; 3], usize) {
        let (_, m, s) = self.canonical();
        let mut int = m;
        for _ in 0..s {
            int /= 10;
        }
        let mut buf = [0u8; 3];
        let mut len = 0;
        loop {
            buf[2 - len] = b'0' + (int % 10) as u8;
            len += 1;
            int /= 10;
            if int == 0 || len == 3 {
                break;
            }
        }
        (buf, len)
    }
}

impl PartialEq for Amount {
    fn eq(&self, other: &Amount) -> bool {
        self.canonical() == other.canonical()
    }
}

impl Eq for Amount {}

impl Hash for Amount {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.canonical().hash(state);
    }
}

impl fmt::Display for Amount {
    /// The plain decimal as written: `98.70`, `-5`, `1000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        let digits = self.mantissa.to_string();
        let scale = self.scale as usize;
        if scale == 0 {
            return f.write_str(&digits);
        }
        if digits.len() <= scale {
            write!(f, "0.{}{digits}", "0".repeat(scale - digits.len()))
        } else {
            let (int, frac) = digits.split_at(digits.len() - scale);
            write!(f, "{int}.{frac}")
        }
    }
}

const SYMBOLS: [char; 8] = ['$', '€', '£', '¥', '₹', '₩', '₽', '₣'];

/// Currency codes recognised when glued to the number (`EUR98.70`); any three upper-case
/// letters are accepted when separated from it (`EUR 98.70`, `98.70 EUR`).
const GLUED_CODES: [&[u8; 3]; 20] = [
    b"EUR", b"USD", b"GBP", b"CHF", b"JPY", b"CNY", b"CAD", b"AUD", b"NZD", b"SEK", b"NOK", b"DKK",
    b"PLN", b"CZK", b"HUF", b"INR", b"BRL", b"MXN", b"ZAR", b"HKD",
];

fn is_code(b: &[u8]) -> bool {
    b.len() == 3 && b.iter().all(u8::is_ascii_uppercase)
}

fn strip_currency_prefix(t: &str) -> &str {
    if let Some(r) = t.strip_prefix(SYMBOLS) {
        return r;
    }
    let b = t.as_bytes();
    if b.len() > 3 && is_code(&b[..3]) && !b[3].is_ascii_alphabetic() {
        return &t[3..];
    }
    t
}

fn strip_currency_suffix(t: &str) -> &str {
    if let Some(r) = t.strip_suffix(SYMBOLS) {
        return r;
    }
    let b = t.as_bytes();
    let n = b.len();
    if n > 3 && is_code(&b[n - 3..]) && !b[n - 4].is_ascii_alphabetic() {
        return &t[..n - 3];
    }
    t
}

/// `-?digits(.digits)?([eE][+-]?digits)?`, the way serde_json prints a float.
/// A short text on the stack; writing more than it holds fails.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            buf: [0; 40],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.buf.get(..self.len)?).ok()
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let slot = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn parse_scientific(s: &str) -> Option<Amount> {
    let (negative, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (num, exp) = match s.find(['e', 'E']) {
        Some(p) => (&s[..p], s[p + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut m: u128 = 0;
    for d in int.bytes().chain(frac.bytes()) {
        m = m.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
    }
    let mut scale = i64::try_from(frac.len()).ok()? - i64::from(exp);
    while scale < 0 {
        m = m.checked_mul(10)?;
        scale += 1;
    }
    Amount::new(negative, m, u32::try_from(scale).ok()?)
}

/// Reads the number whose first digit is at `start`: its value (mantissa, scale), if the digit
/// groups form an amount, and where it ends either way.
fn scan_number(b: &[u8], start: usize) -> (Option<(u128, u32)>, usize) {
    let n = b.len();
    let mut groups = [(0usize, 0usize); MAX_GROUPS];
    let mut seps = [0u8; MAX_GROUPS];
    let mut g = 0;
    let mut j = start;
    let mut too_many = false;
    loop {
        let s = j;
        j = digits_end(b, j);
        if g < MAX_GROUPS {
            groups[g] = (s, j);
        } else {
            too_many = true;
        }
        if j + 1 < n && is_sep(b[j]) && b[j + 1].is_ascii_digit() {
            if g < MAX_GROUPS {
                seps[g] = b[j];
            }
            g += 1;
            j += 1;
        } else {
            g += 1;
            break;
        }
    }
    if too_many {
        return (None, j);
    }
    (interpret(b, &groups[..g], &seps[..g - 1]), j)
}

fn interpret(b: &[u8], groups: &[Span], seps: &[u8]) -> Option<(u128, u32)> {
    let len = |gi: usize| groups[gi].1 - groups[gi].0;
    let k = seps.len();
    let (int_groups, frac) = if k == 0 {
        (1, None)
    } else {
        let last = seps[k - 1];
        if seps.iter().all(|&c| c == last) {
            let grouping = len(0) <= 3 && (1..=k).all(|gi| len(gi) == 3);
            if k == 1 && last != b'\'' {
                if last == b',' && grouping {
                    (2, None)
                } else {
                    (1, Some(1))
                }
            } else if grouping {
                (k + 1, None)
            } else {
                return None;
            }
        } else {
            // The last separator is the decimal one; the others group thousands, all alike.
            let other = seps[0];
            if last == b'\'' || other == last {
                return None;
            }
            if seps[..k - 1].iter().all(|&c| c == other)
                && len(0) <= 3
                && (1..k).all(|gi| len(gi) == 3)
            {
                (k, Some(k))
            } else {
                return None;
            }
        }
    };
    let mut m: u128 = 0;
    let frac_digits = frac.map_or(&[][..], |gi| &b[groups[gi].0..groups[gi].1]);
    for &(s, e) in &groups[..int_groups] {
        for &d in &b[s..e] {
            m = m.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
        }
    }
    for &d in frac_digits {
        m = m.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
    }
    let scale = u32::try_from(frac_digits.len()).ok()?;
    (scale <= MAX_SCALE).then_some((m, scale))
}

/// How far around a number [`masked`] looks for an IBAN or a date holding it.
const MASK_WINDOW: usize = 48;
/// How far around a number [`masked`] looks for the URL or e-mail address holding it.
const TOKEN_REACH: usize = 256;

fn is_ws(c: u8) -> bool {
    c.is_ascii_whitespace()
}

/// Moves `i` back to just after ASCII white space, but not below `floor`; then forward to a
/// character boundary.
fn back_to_token_start(text: &str, mut i: usize, floor: usize) -> usize {
    let b = text.as_bytes();
    while i > floor && !is_ws(b[i - 1]) {
        i -= 1;
    }
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Moves `i` forward to ASCII white space, but not above `ceil`; then back to a character
/// boundary.
fn on_to_token_end(text: &str, mut i: usize, ceil: usize) -> usize {
    let b = text.as_bytes();
    while i < ceil && !is_ws(b[i]) {
        i += 1;
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Whether the number at `s..e` lies inside an IBAN, a date, a URL or an e-mail address, as
/// found around it: IBANs and dates within [`MASK_WINDOW`] bytes (widened to white space),
/// URLs and addresses in the white-space delimited token holding the number (at most
/// [`TOKEN_REACH`] bytes each way). Looking only near the number keeps the cost per number
/// bounded, and makes the answer the same whether a text is scanned whole or around one hit.
fn masked(text: &str, s: usize, e: usize) -> bool {
    let n = text.len();
    let overlap = |base: usize| {
        move |a: usize, b: usize| {
            if base + a < e && s < base + b {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    };
    let ts = back_to_token_start(text, s, s.saturating_sub(TOKEN_REACH));
    let te = on_to_token_end(text, e, (e + TOKEN_REACH).min(n));
    let token = &text[ts..te];
    if token.contains("://") && super::url::for_each_span(token, overlap(ts)).is_break() {
        return true;
    }
    if token.contains('@') && super::email::for_each_span(token, overlap(ts)).is_break() {
        return true;
    }
    let lo = s.saturating_sub(MASK_WINDOW);
    let ws = back_to_token_start(text, lo, lo.saturating_sub(MASK_WINDOW));
    let hi = (e + MASK_WINDOW).min(n);
    let we = on_to_token_end(text, hi, (hi + MASK_WINDOW).min(n));
    let window = &text[ws..we];
    let ov = overlap(ws);
    super::iban::for_each(window, |a, b, _| ov(a, b)).is_break()
        || super::date::for_each(window, |a, b, _| ov(a, b)).is_break()
}

/// A separator inside a number: the decimal point or comma, or a thousands separator (`,`, `.`,
/// or the apostrophe of `1'000.50`, which the reading makes of `’`).
fn is_sep(c: u8) -> bool {
    c == b',' || c == b'.' || c == b'\''
}

/// The start of the numeric run (digits, single `,` or `.` between digits) holding the digit
/// at `p`.
fn run_start(b: &[u8], p: usize) -> usize {
    let mut q = p;
    while q > 0
        && (b[q - 1].is_ascii_digit() || (is_sep(b[q - 1]) && q >= 2 && b[q - 2].is_ascii_digit()))
    {
        q -= 1;
    }
    q
}

/// The amount whose numeric run starts at `q`, if the run is one (see [`for_each`]) and `keep`
/// accepts it: its span (with the sign) and value; and where the run ends either way.
fn amount_at(
    text: &str,
    q: usize,
    keep: impl Fn(&Amount) -> bool,
) -> (Option<(usize, usize, Amount)>, usize) {
    let b = text.as_bytes();
    let (value, end) = scan_number(b, q);
    let glued = alnum_before(b, q);
    if glued
        && !(q >= 3 && GLUED_CODES.iter().any(|c| b[q - 3..q] == c[..]) && !alnum_before(b, q - 3))
    {
        return (None, end);
    }
    let Some((mantissa, scale)) = value else {
        return (None, end);
    };
    let time = (b.get(end) == Some(&b':') && digit_at(b, end + 1))
        || (q >= 2 && b[q - 1] == b':' && b[q - 2].is_ascii_digit());
    if time {
        return (None, end);
    }
    let negative = !glued && q > 0 && b[q - 1] == b'-' && !alnum_before(b, q - 1);
    let s = if negative { q - 1 } else { q };
    match Amount::new(negative, mantissa, scale) {
        Some(a) if keep(&a) && !masked(text, s, end) => (Some((s, end, a)), end),
        _ => (None, end),
    }
}

/// Calls `f(start, end, amount)` for every amount in `text`.
///
/// Every maximal run of digits with single `,` or `.` between them is read as a number (see
/// the module documentation). It counts as an amount when it is not glued to a letter before it
/// (`GB29`, `x2`), except after a common three-letter currency code (`EUR98.70`); when it is
/// not part of a time (`10:30`); and when it does not lie inside an IBAN, a date, a URL or an
/// e-mail address (see [`masked`]). A `-` directly before it, itself not after a letter or
/// digit, makes it negative.
pub(crate) fn for_each(
    text: &str,
    mut f: impl FnMut(usize, usize, Amount) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    if !super::scan::has_digit(b) {
        return ControlFlow::Continue(());
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let (found, end) = amount_at(text, run_start(b, i), |_| true);
        if let Some((s, e, a)) = found {
            f(s, e, a)?;
        }
        i = end.max(i + 1);
    }
    ControlFlow::Continue(())
}

/// Calls `f` for every amount a reader may see in `text` (a [`canon::digit_reading`]): those of
/// [`for_each`], those written with a magnitude or in English words
/// ([`super::amount_words`]: `1.2k`, `twelve hundred`), and those of the same text read with a
/// single space between digit groups of three as a thousands separator (`1 100.00` is also
/// 1100). For taint only: it over-reads.
///
/// [`canon::digit_reading`]: crate::gate::canon::digit_reading
pub(crate) fn for_each_loose(
    text: &str,
    mut f: impl FnMut(usize, usize, Amount) -> ControlFlow<()>,
) -> ControlFlow<()> {
    // A reader may read past a sign (`-1000` as 1000): a negative amount is also its magnitude.
    let mut f = |s: usize, e: usize, a: Amount| {
        if a.is_negative() {
            let (_, mantissa, scale) = a.canonical();
            if let Some(magnitude) = Amount::new(false, mantissa, scale) {
                f(s, e, magnitude)?;
            }
        }
        f(s, e, a)
    };
    for_each(text, &mut f)?;
    super::amount_words::for_each_scaled(text, &mut f)?;
    super::amount_words::for_each_spelt(text, &mut f)?;
    for_each_scientific(text, &mut f)?;
    let b = text.as_bytes();
    // A space, a lone point or an underscore between a digit and exactly three digits: a
    // thousands separator to some readers (`1 100.00`, `1.000 EUR`, `1_000`).
    let grouping = |p: usize| {
        p > 0
            && matches!(b[p], b' ' | b'.' | b'_')
            && b[p - 1].is_ascii_digit()
            && b.len() >= p + 4
            && b[p + 1..p + 4].iter().all(u8::is_ascii_digit)
            && !digit_at(b, p + 4)
            && !(b[p] == b'.' && b.get(p + 4) == Some(&b','))
    };
    if !(0..b.len()).any(grouping) {
        return ControlFlow::Continue(());
    }
    let joined: String = text
        .char_indices()
        .filter(|&(p, _)| !grouping(p))
        .map(|(_, c)| c)
        .collect();
    for_each(&joined, f)
}

/// The largest exponent of an amount in scientific notation (`1e3`, `2.5E+06`): beyond it a
/// token is an identifier or a hash, not an amount anyone pays.
const MAX_EXPONENT: u32 = 15;

/// Calls `f` for every amount written in scientific notation in `text` (`1e3`, `1.5E+03`,
/// `2e-2`): a mantissa of digits with at most one point, not glued to a letter, digit or point
/// before it, then `e` or `E`, an optional sign and one or two digits, not followed by a letter,
/// a digit or a point before a digit (a full stop may follow). A model reads `1e3 EUR` as a thousand euros; for taint only.
fn for_each_scientific(
    text: &str,
    mut f: impl FnMut(usize, usize, Amount) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'.' || c == b'_';
    for (p, _) in text.match_indices(['e', 'E']) {
        if !digit_at(b, p.wrapping_sub(1)) {
            continue;
        }
        // The mantissa: digits and at most one point before the `e`.
        let mut s = p;
        let mut points = 0;
        while s > 0 && (b[s - 1].is_ascii_digit() || (b[s - 1] == b'.' && points == 0)) {
            points += usize::from(b[s - 1] == b'.');
            s -= 1;
        }
        if b[s] == b'.' || (s > 0 && word(b[s - 1])) {
            continue;
        }
        let mut e = p + 1;
        if matches!(b.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        let digits = b[e..].iter().take_while(|c| c.is_ascii_digit()).count();
        // After the exponent: no letter, digit or `_`, and a point only as a full stop.
        let after = e + digits;
        let glued_after = b.get(after).is_some_and(|c| {
            c.is_ascii_alphanumeric() || *c == b'_' || (*c == b'.' && digit_at(b, after + 1))
        });
        if !(1..=2).contains(&digits) || glued_after {
            continue;
        }
        let exponent = text[e..e + digits].parse::<u32>().unwrap_or(u32::MAX);
        if exponent > MAX_EXPONENT {
            continue;
        }
        if let Some(a) = parse_scientific(&text[s..e + digits].replace('+', "")) {
            f(s, e + digits, a)?;
        }
    }
    ControlFlow::Continue(())
}

/// Whether `want` is one of the amounts [`for_each`] finds in `text`. Only the numeric runs
/// holding the last digits of `want`'s integer part are read (every written form of an amount
/// holds them contiguously: `1,250.00` holds `250`, `98,70` holds `98`).
pub(crate) fn occurs(want: &Amount, text: &str) -> bool {
    let (buf, len) = want.int_tail();
    let Ok(needle) = std::str::from_utf8(&buf[3 - len..]) else {
        return false;
    };
    if !text.contains(needle) {
        return false;
    }
    let b = text.as_bytes();
    text.match_indices(needle)
        .any(|(p, _)| amount_at(text, run_start(b, p), |a| a == want).0.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_floats_read_as_their_text() {
        for v in [
            98.7,
            -5.25,
            1e21,
            1.5e-7,
            f64::MAX,
            f64::MIN_POSITIVE,
            0.1 + 0.2,
        ] {
            let Some(n) = serde_json::Number::from_f64(v) else {
                panic!("{v} is finite");
            };
            assert_eq!(
                Amount::from_json(&n),
                parse_scientific(&n.to_string()),
                "{v}"
            );
        }
    }

    #[test]
    fn big_mantissas_compare_by_value() {
        let big = |m: u128, s| Amount::new(false, m, s);
        assert_eq!(big(u128::MAX / 10 * 10, 1), big(u128::MAX / 10, 0));
        assert_eq!(big(9870, 2), big(987, 1));
        assert_ne!(
            big(u128::from(u64::MAX) * 10, 1),
            big(u128::from(u64::MAX), 1)
        );
    }

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        let _ = for_each(text, |_, _, a| {
            v.push(a.to_string());
            ControlFlow::Continue(())
        });
        v
    }

    #[test]
    fn forms_of_one_thousand() {
        let k = Amount::new(false, 1000, 0);
        for s in [
            "1,000.00",
            "1000",
            "$1,000",
            "1000.0 EUR",
            "EUR 1.000,00",
            "€1000",
            "1 000",
        ] {
            if s == "1 000" {
                assert_eq!(Amount::parse(s), None);
                continue;
            }
            assert_eq!(Amount::parse(s), k, "{s}");
        }
    }

    #[test]
    fn extraction_skips_ibans_dates_and_times() {
        assert_eq!(
            all("IBAN GB29 NWBK 6016 1331 9268 19, due 2024-01-05 at 10:30, amount 98.70"),
            ["98.70"]
        );
        assert_eq!(
            all("pay EUR98.70 or -5 now, not x-3 or A1"),
            ["98.70", "-5", "3"]
        );
    }

    #[test]
    fn apostrophes_group_thousands() {
        assert_eq!(Amount::parse("1'000.50"), Amount::new(false, 100_050, 2));
        assert_eq!(Amount::parse("1'000'000"), Amount::new(false, 1_000_000, 0));
        assert_eq!(Amount::parse("1'00"), None);
        assert_eq!(Amount::parse("12'5"), None);
        assert_eq!(all("total CHF 1'100.50 due"), ["1100.50"]);
        let mut loose = Vec::new();
        let _ = for_each_loose("pay 1 100.00 now", |_, _, a| {
            loose.push(a.to_string());
            ControlFlow::Continue(())
        });
        assert_eq!(loose, ["1", "100.00", "1100.00"]);
    }

    #[test]
    fn scientific_notation_is_read_loosely() {
        let loose = |text: &str| {
            let mut v = Vec::new();
            let _ = for_each_loose(text, |_, _, a| {
                v.push(a.to_string());
                ControlFlow::Continue(())
            });
            v
        };
        assert!(loose("pay 1e3 EUR").contains(&"1000".to_string()));
        assert!(loose("2.5E+06").contains(&"2500000".to_string()));
        assert!(loose("5e-2").contains(&"0.05".to_string()));
        assert!(loose("Pay EUR 101e-1.").contains(&"10.1".to_string()));
        // Glued to a word, a hash or a point, or an exponent beyond 15: not an amount.
        for text in ["id9f86d0e8", "x1e3", "1.2.3e3", "1e99", "1e3x", "1e3.5"] {
            assert!(
                !loose(text).contains(&"1000".to_string()),
                "{text}: {:?}",
                loose(text)
            );
        }
        // A sign is read past: -1000 is also 1000.
        assert!(loose("-1000").contains(&"1000".to_string()));
    }
}
