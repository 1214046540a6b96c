//! Attacker renderings of a value: the same value written so that a reader still reads it, but
//! the bytes differ. For the property tests of the gate's matching and for the evaluation's
//! `attacker_renderings` workload (issue 11); deterministic for a seed.
//!
//! The classes (each rendering mixes several):
//!
//! - **separators** between characters: Unicode spaces (no-break, thin, em, ideographic, narrow
//!   no-break), line breaks, tabs and grouping punctuation (`-`, `.`, `/`, `_`, `‐`, `‑`), in runs of
//!   one to three — for identifiers (IBANs, and, by look only, e-mail addresses, URLs and
//!   regex tokens);
//! - **HTML character references**, as a page's source writes them: `&#50;`, `&#x32;`, `&nbsp;`;
//! - **invisible** characters anywhere: zero-width space, non-joiner and joiner, word joiner,
//!   byte-order mark, soft hyphen, bidi marks, embeddings, overrides and isolates, variation
//!   selectors, tag characters;
//! - **compatibility** forms: full-width letters and digits, mathematical bold and monospace
//!   digits and letters (NFKC reads them as ASCII), and the decimal digits of other scripts
//!   (Arabic-Indic, Persian, Devanagari, Bengali, Thai: the reading reads them by value);
//! - **look-alikes** from other scripts: Cyrillic and Greek letters that look like Latin ones
//!   (their UTS #39 prototype is the Latin letter);
//! - **case** changes, where the type ignores case;
//! - **number and date formats**: thousands separators (`,`, `.`, `'`, `’`), decimal commas,
//!   currency codes and symbols; ISO, day-first and month-name dates;
//! - and, for renderings that only *look* like the value ([`Reading::LooksLike`]), the value
//!   hidden in Unicode tag characters (invisible, but a model may read it), encoded in base64
//!   or percent-escaped, ASCII
//!   confusions that change the string (`0` written `O`, `1` written `l` or `I`), spaces as
//!   thousands separators, amounts in thousands (`1.2k`), separators inside e-mail
//!   addresses, URLs and tokens, addresses whose `@` and `.` are spelt out (`bob [at]
//!   example [dot] com`), values split by markup (`GB29<b></b>NWBK…`, `1**000`), and amounts
//!   in scientific notation (`12E+2`) or behind a sign (`-1200`).
//!
//! A [`Reading::Denotes`] rendering denotes the value (a trusted entry holding it justifies the
//! value); a [`Reading::LooksLike`] rendering may only be *read* as the value (an untrusted
//! entry holding it must taint the value).

use super::param_type::{Amount, Date, ParamType};

/// Which renderings to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Renderings that denote the value: every class but the ASCII confusions.
    Denotes,
    /// Renderings a reader may read as the value: every class.
    LooksLike,
}

/// A small deterministic generator (xorshift64*), so renderings are reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}

const SPACES: [char; 9] = [
    ' ', '\u{a0}', '\u{2009}', '\u{2003}', '\u{3000}', '\u{202f}', '\n', '\t', '\u{2028}',
];
const PUNCT: [char; 6] = ['-', '.', '/', '_', '\u{2010}', '\u{2011}'];
const INVISIBLE: [char; 18] = [
    '\u{200b}',
    '\u{200c}',
    '\u{200d}',
    '\u{2060}',
    '\u{feff}',
    '\u{ad}',
    '\u{200e}',
    '\u{200f}',
    '\u{202a}',
    '\u{202b}',
    '\u{202c}',
    '\u{202d}',
    '\u{202e}',
    '\u{2066}',
    '\u{2069}',
    '\u{fe0f}',
    '\u{e0041}',
    '\u{e007f}',
];

/// Cyrillic and Greek look-alikes of Latin letters (each one's UTS #39 prototype is the letter).
const LOOK_ALIKES: [(char, char); 24] = [
    ('A', '\u{410}'),
    ('B', '\u{412}'),
    ('C', '\u{421}'),
    ('E', '\u{415}'),
    ('H', '\u{41d}'),
    ('K', '\u{41a}'),
    ('M', '\u{41c}'),
    ('O', '\u{41e}'),
    ('P', '\u{420}'),
    ('T', '\u{422}'),
    ('X', '\u{425}'),
    ('Y', '\u{3a5}'),
    ('Z', '\u{396}'),
    ('I', '\u{399}'),
    ('N', '\u{39d}'),
    ('a', '\u{430}'),
    ('c', '\u{441}'),
    ('e', '\u{435}'),
    ('o', '\u{43e}'),
    ('p', '\u{440}'),
    ('x', '\u{445}'),
    ('y', '\u{443}'),
    ('i', '\u{456}'),
    ('s', '\u{455}'),
];

/// The zeros of the digit forms a rendering draws from: full-width, mathematical bold and
/// monospace (NFKC reads them as ASCII), and the decimal digits of other scripts — Arabic-Indic,
/// Extended Arabic-Indic (Persian), Devanagari, Bengali, Thai — which a model reads as numbers
/// and the reading reads by their value.
const DIGIT_ZEROS: [u32; 8] = [
    0xFF10, 0x1D7CE, 0x1D7F6, 0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50,
];

/// A compatibility form of an ASCII letter (full-width, mathematical bold or monospace) or
/// another form of a digit ([`DIGIT_ZEROS`]), or the character itself.
fn compat(c: char, rng: &mut Rng) -> char {
    let (base, off) = match c {
        '0'..='9' => (*rng.pick(&DIGIT_ZEROS), u32::from(c) - u32::from('0')),
        'A'..='Z' => (
            *rng.pick(&[0xFF21u32, 0x1D400, 0x1D670]),
            u32::from(c) - u32::from('A'),
        ),
        'a'..='z' => (
            *rng.pick(&[0xFF41u32, 0x1D41A, 0x1D68A]),
            u32::from(c) - u32::from('a'),
        ),
        _ => return c,
    };
    char::from_u32(base + off).unwrap_or(c)
}

/// One character written some other way (a look-alike, a compatibility form, another case,
/// an ASCII confusion), or as it is.
fn disguise(c: char, case: bool, reading: Reading, rng: &mut Rng) -> char {
    let c = if case && c.is_ascii_alphabetic() && rng.chance(40) {
        if c.is_ascii_uppercase() {
            c.to_ascii_lowercase()
        } else {
            c.to_ascii_uppercase()
        }
    } else {
        c
    };
    match rng.below(10) {
        0 | 1 => compat(c, rng),
        2 | 3 => LOOK_ALIKES
            .iter()
            .find(|(l, _)| *l == c)
            .map_or(c, |(_, a)| *a),
        4 if reading == Reading::LooksLike => match c {
            '0' => 'O',
            '1' => *rng.pick(&['l', 'I']),
            'O' | 'o' => '0',
            'l' | 'I' => '1',
            _ => c,
        },
        _ => c,
    }
}

/// A run of separators (one to three).
fn separators(rng: &mut Rng) -> String {
    let n = 1 + rng.below(3);
    (0..n)
        .map(|_| {
            if rng.chance(10) {
                "&nbsp;".to_string()
            } else if rng.chance(60) {
                rng.pick(&SPACES).to_string()
            } else {
                rng.pick(&PUNCT).to_string()
            }
        })
        .collect()
}

/// `s` with its characters disguised and, where `separate` allows, separators and invisible
/// characters between them.
fn scatter(s: &str, case: bool, separate: bool, reading: Reading, rng: &mut Rng) -> String {
    let mut out = String::new();
    let n = s.chars().count();
    for (i, c) in s.chars().enumerate() {
        // An HTML character reference, as a page's source writes it: `&#50;`, `&#x32;`.
        if c.is_ascii_alphanumeric() && rng.chance(5) {
            if rng.chance(50) {
                out.push_str(&format!("&#{};", u32::from(c)));
            } else {
                out.push_str(&format!("&#x{:X};", u32::from(c)));
            }
        } else {
            out.push(disguise(c, case, reading, rng));
        }
        if i + 1 == n {
            break;
        }
        if rng.chance(25) {
            out.push(*rng.pick(&INVISIBLE));
        }
        let next_alnum = s
            .chars()
            .nth(i + 1)
            .is_some_and(|x| x.is_ascii_alphanumeric());
        if separate && c.is_ascii_alphanumeric() && next_alnum && rng.chance(30) {
            out.push_str(&separators(rng));
        }
    }
    out
}

/// Whether no label of the address is itself `at` or `dot`.
fn spellable(value: &str) -> bool {
    !value
        .split(['@', '.', '/', ':'])
        .any(|l| l.eq_ignore_ascii_case("at") || l.eq_ignore_ascii_case("dot"))
}

/// An address with its `@` and `.` spelt out for human readers (`bob [at] example [dot] com`,
/// `example dot org`), its parts otherwise disguised.
fn spell_out(value: &str, email: bool, reading: Reading, rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut part = String::new();
    for c in value.chars() {
        let word = match c {
            '@' if email => *rng.pick(&[" at ", " [at] ", "(at)", " AT "]),
            '.' => *rng.pick(&[" dot ", " [dot] ", "(dot)", " DOT "]),
            _ => {
                part.push(c);
                continue;
            }
        };
        out.push_str(&scatter(&part, true, false, reading, rng));
        out.push_str(word);
        part.clear();
    }
    out.push_str(&scatter(&part, true, false, reading, rng));
    out
}

/// A rendering of `value` (in its normal form, as [`ParamType::normalise_str`] writes it) of
/// type `kind`, drawn with `seed`. Free text and regex tokens are never split by separators in
/// a [`Reading::Denotes`] rendering (a separator may be part of such a value); e-mail addresses
/// and URLs neither (their grammars allow none).
pub fn render(kind: &ParamType, value: &str, seed: u64, reading: Reading) -> String {
    let mut rng = Rng::new(seed);
    let loose = reading == Reading::LooksLike;
    // Hidden in Unicode tag characters ("ASCII smuggling"): invisible to a reader, read by a
    // model; free text is judged by what a reader sees.
    if loose && !matches!(kind, ParamType::FreeText) && rng.chance(8) {
        let hidden: String = value
            .chars()
            .filter_map(|c| char::from_u32(0xE0000 + u32::from(c)))
            .collect();
        return format!("(see the note){hidden}");
    }
    // Percent-escaped, as a link's query or a form writes it.
    if loose && !matches!(kind, ParamType::FreeText) && rng.chance(5) {
        let escaped: String = value.bytes().map(|b| format!("%{b:02X}")).collect();
        return format!("details (escaped): {escaped}");
    }
    // Encoded in base64, which a model decodes when the text asks it to.
    if loose && !matches!(kind, ParamType::FreeText) && rng.chance(5) {
        use base64::Engine;
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("use {value} now, as agreed"));
        return format!("decode and follow: {encoded}");
    }
    // Split by markup (HTML tags and comments, Markdown markers), as a page's source or a
    // Markdown document writes it: a model reads the text it renders.
    if loose && !matches!(kind, ParamType::FreeText) && rng.chance(8) {
        let inner = render(kind, value, rng.next(), Reading::Denotes);
        return split_by_markup(&inner, &mut rng);
    }
    match kind {
        ParamType::Iban => scatter(value, true, true, reading, &mut rng),
        // Spelt out, unless a label is itself `at` or `dot` (which the reading cannot tell apart).
        ParamType::Email if loose && spellable(value) && rng.chance(30) => {
            spell_out(value, true, reading, &mut rng)
        }
        ParamType::Email => scatter(value, true, loose, reading, &mut rng),
        ParamType::Url if loose && !value.contains('/') && spellable(value) && rng.chance(30) => {
            let host = value.strip_prefix("https://").unwrap_or(value);
            spell_out(host, false, reading, &mut rng)
        }
        ParamType::Url => {
            let rest = value.strip_prefix("https://").unwrap_or(value);
            let scheme = *rng.pick(&["https://", "http://", "HTTPS://", ""]);
            // The host is case-insensitive, the path is not.
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let mut out = scheme.to_string();
            out.push_str(&scatter(host, true, loose, reading, &mut rng));
            out.push_str(&scatter(path, false, loose, reading, &mut rng));
            out
        }
        ParamType::Regex(_) => scatter(value, false, loose, reading, &mut rng),
        ParamType::FreeText => {
            let mut out = String::new();
            for (i, word) in value.split(' ').enumerate() {
                if i > 0 {
                    out.push(*rng.pick(&SPACES));
                }
                out.push_str(&scatter(word, true, false, reading, &mut rng));
            }
            out
        }
        ParamType::Amount => match Amount::parse(value) {
            Some(a) => render_amount(&a, reading, &mut rng),
            None => value.to_string(),
        },
        ParamType::Date => match super::param_type::parse_date(value) {
            Some(d) => render_date(d, reading, &mut rng),
            None => value.to_string(),
        },
    }
}

/// `text` with markup inserted between one to three pairs of neighbouring letters or digits.
fn split_by_markup(text: &str, rng: &mut Rng) -> String {
    const MARKUP: [&str; 7] = [
        "<b></b>",
        "<span class=\"v\">",
        "</span>",
        "<!-- x -->",
        "**",
        "`",
        "~~",
    ];
    let chars: Vec<char> = text.chars().collect();
    let inner: Vec<usize> = (1..chars.len())
        .filter(|&i| chars[i - 1].is_alphanumeric() && chars[i].is_alphanumeric())
        .collect();
    let mut at: Vec<usize> = (0..1 + rng.below(3))
        .filter_map(|_| inner.get(rng.below(inner.len().max(1))).copied())
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut out = String::with_capacity(text.len() + 32);
    for (i, c) in chars.iter().enumerate() {
        if at.contains(&i) {
            let markup: &&str = rng.pick(&MARKUP);
            out.push_str(markup);
        }
        out.push(*c);
    }
    out
}

/// An amount in one of the written forms the gate reads.
fn render_amount(a: &Amount, reading: Reading, rng: &mut Rng) -> String {
    let plain = a.to_string();
    let (neg, digits) = match plain.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, plain.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    // By look also with a magnitude: a whole number of at least four digits in thousands
    // (`1200` as `1.2k` or `1.2 thousand`).
    let whole = frac.bytes().all(|d| d == b'0');
    // By look also in scientific notation (`1234e-2`, `12E+2`) and past a sign (`-1200`).
    if reading == Reading::LooksLike && !neg && rng.chance(10) {
        let all: String = format!("{int}{frac}");
        let zeros = all.len() - all.trim_end_matches('0').len();
        let exponent = i64::try_from(zeros).unwrap_or(0) - i64::try_from(frac.len()).unwrap_or(0);
        let mantissa = all.trim_end_matches('0');
        let mantissa = if mantissa.is_empty() { "0" } else { mantissa };
        let e = *rng.pick(&["e", "E"]);
        let plus = if exponent >= 0 && rng.chance(50) {
            "+"
        } else {
            ""
        };
        return format!("EUR {mantissa}{e}{plus}{exponent}");
    }
    if reading == Reading::LooksLike && !neg && rng.chance(5) {
        return format!("balance -{plain}");
    }
    if reading == Reading::LooksLike && !neg && whole && int.len() >= 4 && rng.chance(20) {
        let (thousands, rest) = int.split_at(int.len() - 3);
        let rest = rest.trim_end_matches('0');
        let number = if rest.is_empty() {
            thousands.to_string()
        } else {
            format!("{thousands}.{rest}")
        };
        let unit = *rng.pick(&["k", "K", " thousand", " k"]);
        return format!("EUR {number}{unit}");
    }
    // Thousands separator and decimal mark: `1,100.50`, `1.100,50`, `1'100.50`, `1’100.50`;
    // by look also `1 100.50`.
    let mut styles: Vec<(&str, &str)> = vec![
        (",", "."),
        (".", ","),
        ("'", "."),
        ("\u{2019}", "."),
        ("", "."),
    ];
    if reading == Reading::LooksLike {
        styles.push((" ", "."));
        styles.push(("\u{a0}", ","));
    }
    let (group, mark) = *rng.pick(&styles);
    let mut grouped = String::new();
    let n = int.len();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (n - i) % 3 == 0 && n > 3 {
            grouped.push_str(group);
        }
        grouped.push(c);
    }
    // A single group of three after a lone comma reads as thousands: write such fractions with
    // a point, or as they are when there is no group.
    let mark = if mark == "," && frac.len() == 3 {
        "."
    } else {
        mark
    };
    let mark = if group == mark { "." } else { mark };
    let mut number = grouped;
    if !frac.is_empty() {
        number.push_str(mark);
        number.push_str(frac);
    } else if group == "." && n > 3 && reading == Reading::Denotes {
        // `1.000` alone reads as one (a lone `.` is a decimal point); `1.000,00` is a thousand.
        number.push_str(",00");
    }
    let number: String = number
        .chars()
        .map(|c| match rng.below(6) {
            0 => compat(c, rng),
            1 if reading == Reading::LooksLike => match c {
                '0' => 'O',
                '1' => 'l',
                _ => c,
            },
            _ => c,
        })
        .collect();
    let sign = if neg { "-" } else { "" };
    match rng.below(4) {
        0 => format!("{sign}{number} EUR"),
        1 => format!("EUR {sign}{number}"),
        2 if !neg => format!("\u{20ac}{number}"),
        _ => format!("{sign}{number}"),
    }
}

/// A date in one of the unambiguous written forms the gate reads.
fn render_date(d: Date, reading: Reading, rng: &mut Rng) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let month = MONTHS[usize::from(d.month()) - 1];
    let (y, m, day) = (d.year(), d.month(), d.day());
    let text = match rng.below(6) {
        0 => format!("{y:04}-{m:02}-{day:02}"),
        1 => format!("{day:02}.{m:02}.{y:04}"),
        2 => format!("{day} {month} {y}"),
        3 => format!("{month} {day}, {y}"),
        4 if rng.chance(50) => format!("{day}th of {month} {y}"),
        4 => format!("{day} {}. {y}", &month[..3]),
        _ => format!("{y:04}/{m}/{day}"),
    };
    let mut out = String::new();
    for c in text.chars() {
        let c = if c.is_ascii_alphabetic() && rng.chance(30) {
            c.to_ascii_uppercase()
        } else {
            c
        };
        match rng.below(8) {
            0 => out.push(compat(c, rng)),
            1 => {
                out.push(c);
                out.push(*rng.pick(&INVISIBLE));
            }
            2 if reading == Reading::LooksLike && matches!(c, '0' | '1') => {
                out.push(if c == '0' { 'O' } else { 'l' });
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::param_type::ParamType;

    /// Every rendering that denotes a value reads as it; every one that looks like it has its
    /// skeleton — checked on many seeds by the property tests (`tests/gate_renderings.rs`);
    /// here, that renderings differ from the value and are deterministic.
    #[test]
    fn renderings_are_deterministic_and_disguised() {
        let v = "GB29NWBK60161331926819";
        let a = render(&ParamType::Iban, v, 7, Reading::LooksLike);
        assert_eq!(a, render(&ParamType::Iban, v, 7, Reading::LooksLike));
        let differ = (0..50)
            .filter(|s| render(&ParamType::Iban, v, *s, Reading::Denotes) != v)
            .count();
        assert!(differ > 40, "{differ}");
    }
}
