//! Parameter types: how a value is normalised, how it is found in an entry's text, and how
//! candidate values of the type are extracted from text for repair.
//!
//! Each type has three operations, which must agree: every value that [`ParamType::extract`]
//! finds in a text is found there again by [`ParamType::occurs_in`] (a property test checks it).
//! Texts are matched in their *reading* and their *skeleton* ([`canon`](super::canon)): an
//! entry carries a value **exactly** when the value occurs in its reading (this can justify the
//! value), and **by look** when only the skeletons match (this can taint it, never justify it).
//!
//! | type | normal form | found in the reading by |
//! |---|---|---|
//! | `iban` | upper case, no separators | its characters in order with separator runs between, whole (a listed country's length) |
//! | `amount` | exact decimal | extracting every amount and comparing values |
//! | `date` | `YYYY-MM-DD` | extracting every date and comparing |
//! | `email` | lower case | extracting every address and comparing |
//! | `url` | `https` for web URLs (also without a scheme), host lower case, default port and trailing `/` dropped | extracting every URL and comparing normal forms |
//! | `free_text` | case- and white-space-folded | folded substring containment |
//! | `regex` | the value as given | verbatim occurrence at token boundaries |

mod amount;
mod amount_words;
mod date;
mod email;
mod iban;
mod index;
pub(crate) mod scan;
mod text;
mod url;

pub use amount::Amount;
pub use date::Date;
pub(crate) use index::ValueIndex;

use super::{canon, hidden, spelt};
use serde_json::Value;
use std::fmt;
use std::ops::ControlFlow;

/// The type of a policy parameter, used to normalise, trace and repair its value.
#[derive(Clone, Debug)]
pub enum ParamType {
    /// An IBAN (ISO 13616); separators and case are ignored, check digits are not verified.
    Iban,
    /// A decimal amount, optionally with a currency symbol or code.
    Amount,
    /// A calendar date.
    Date,
    /// An e-mail address, compared case-insensitively.
    Email,
    /// A URL, compared in normal form.
    Url,
    /// Free text, matched by folded containment; never repaired.
    FreeText,
    /// A value that must match this regular expression in full. The expression is compiled
    /// anchored, as `^(?:pattern)$`; build it with [`ParamType::regex`].
    Regex(regex::Regex),
}

/// A normalised value of some [`ParamType`]; two values are equal when the gate treats them as
/// the same value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NormValue {
    /// Upper case, no separators.
    Iban(String),
    /// Exact decimal (equality by value).
    Amount(Amount),
    /// A date.
    Date(Date),
    /// Lower case.
    Email(String),
    /// Normal form of a URL.
    Url(String),
    /// Folded free text.
    Text(String),
    /// A regex-typed value, verbatim.
    Token(String),
}

impl fmt::Display for NormValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NormValue::Iban(s)
            | NormValue::Email(s)
            | NormValue::Url(s)
            | NormValue::Text(s)
            | NormValue::Token(s) => f.write_str(s),
            NormValue::Amount(a) => a.fmt(f),
            NormValue::Date(d) => d.fmt(f),
        }
    }
}

impl NormValue {
    /// The JSON value to put in a repaired call, keeping the JSON type of `original` where the
    /// type allows: an amount replacing a number is a number (a plain decimal string if no JSON
    /// number denotes it exactly), one replacing a string a plain decimal string (`98.70`); a
    /// regex token replacing a number is a number if it is one; dates are `YYYY-MM-DD`;
    /// everything else is its normal form.
    pub fn to_json(&self, original: &Value) -> Value {
        match self {
            NormValue::Amount(a) if original.is_number() => a
                .to_json_number()
                .map_or_else(|| Value::String(a.to_string()), Value::Number),
            NormValue::Token(s) if original.is_number() => match s.parse::<serde_json::Number>() {
                Ok(n) if n.to_string() == *s => Value::Number(n),
                _ => Value::String(s.clone()),
            },
            other => Value::String(other.to_string()),
        }
    }
}

/// A normalised parameter value: usually one reading; an ambiguous date (`01/05/2024`) has two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamValue {
    /// The (first) reading.
    pub primary: NormValue,
    /// The second reading of an ambiguous date, month first being the primary one.
    pub alternative: Option<NormValue>,
}

impl ParamValue {
    pub(crate) fn one(v: NormValue) -> ParamValue {
        ParamValue {
            primary: v,
            alternative: None,
        }
    }

    /// Every reading.
    pub fn iter(&self) -> impl Iterator<Item = &NormValue> {
        std::iter::once(&self.primary).chain(self.alternative.as_ref())
    }
}

/// Why a JSON value is not a value of a parameter's type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct ValueError {
    /// A sentence naming the value and what was expected.
    pub problem: String,
}

/// How an entry's text carries a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Carry {
    /// Not at all.
    No,
    /// Only by look: the skeletons match (look-alike characters, separators inserted between
    /// the characters of an identifier, digits spelt with letters), the readings do not. A
    /// reader may have read the value there, so an untrusted entry that carries it by look
    /// taints it; such an entry never justifies it.
    Look,
    /// The value occurs in the entry's reading: the entry can justify it.
    Exact,
}

/// The date a string denotes (the month-first reading of an ambiguous `A/B/YYYY`).
pub(crate) fn parse_date(s: &str) -> Option<Date> {
    match date::parse_param(s)? {
        date::Reading::One(d) | date::Reading::Two(d, _) => Some(d),
    }
}

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value shown in a message: JSON-quoted, at most 80 characters.
pub(crate) fn shown(s: &str) -> String {
    // Common case first: short printable ASCII needs no escaping (the same output as `{:?}`).
    if s.len() <= 80
        && s.bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    {
        let mut t = String::with_capacity(s.len() + 2);
        t.push('"');
        t.push_str(s);
        t.push('"');
        return t;
    }
    let mut t: String = s.chars().take(80).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    format!("{t:?}")
}

impl ParamType {
    /// The type names a policy file accepts, in order.
    pub const NAMES: [&'static str; 7] = [
        "iban",
        "amount",
        "date",
        "email",
        "url",
        "free_text",
        "regex",
    ];

    /// The type named `name`, for every type but `regex` (which needs a pattern).
    pub fn from_name(name: &str) -> Option<ParamType> {
        Some(match name {
            "iban" => ParamType::Iban,
            "amount" => ParamType::Amount,
            "date" => ParamType::Date,
            "email" => ParamType::Email,
            "url" => ParamType::Url,
            "free_text" => ParamType::FreeText,
            _ => return None,
        })
    }

    /// A regex type: compiles `pattern` anchored, as `^(?:pattern)$`.
    pub fn regex(pattern: &str) -> Result<ParamType, regex::Error> {
        regex::Regex::new(&format!("^(?:{pattern})$")).map(ParamType::Regex)
    }

    /// The name used in policy files.
    pub fn name(&self) -> &'static str {
        match self {
            ParamType::Iban => "iban",
            ParamType::Amount => "amount",
            ParamType::Date => "date",
            ParamType::Email => "email",
            ParamType::Url => "url",
            ParamType::FreeText => "free_text",
            ParamType::Regex(_) => "regex",
        }
    }

    /// Whether candidate values of this type can be extracted from text (all but free text).
    pub fn can_repair(&self) -> bool {
        !matches!(self, ParamType::FreeText)
    }

    fn what(&self) -> &'static str {
        match self {
            ParamType::Iban => {
                "an IBAN (two letters, two check digits, 11 to 30 letters or digits)"
            }
            ParamType::Amount => "an amount (a decimal number, optionally with a currency)",
            ParamType::Date => "a date (such as 2024-01-05, 05.01.2024 or 5 January 2024)",
            ParamType::Email => "an e-mail address",
            ParamType::Url => "a URL (scheme://host…)",
            ParamType::FreeText => "text",
            ParamType::Regex(_) => "a value matching the pattern",
        }
    }

    /// Normalises a JSON parameter value. Amounts accept a number or a string; free text and
    /// regex values a string or a number (its JSON text); every other type a string.
    pub fn normalise(&self, v: &Value) -> Result<ParamValue, ValueError> {
        match (self, v) {
            (_, Value::String(s)) => self.normalise_str(s),
            (ParamType::Amount, Value::Number(n)) => Amount::from_json(n)
                .map(|a| ParamValue::one(NormValue::Amount(a)))
                .ok_or_else(|| ValueError {
                    problem: format!("the number {n} is out of the range of exact amounts"),
                }),
            (ParamType::FreeText | ParamType::Regex(_), Value::Number(n)) => {
                self.normalise_str(&n.to_string())
            }
            _ => Err(ValueError {
                problem: format!(
                    "expected {} as a {}, found {}",
                    self.what(),
                    if matches!(self, ParamType::Amount) {
                        "number or string"
                    } else {
                        "string"
                    },
                    json_type(v)
                ),
            }),
        }
    }

    /// Normalises a parameter value given as a string.
    pub fn normalise_str(&self, s: &str) -> Result<ParamValue, ValueError> {
        let bad = || ValueError {
            problem: format!("{} is not {}", shown(s), self.what()),
        };
        let v = match self {
            ParamType::Iban => NormValue::Iban(iban::normalise(s).ok_or_else(bad)?),
            ParamType::Amount => {
                NormValue::Amount(Amount::parse(&canon::value_reading(s)).ok_or_else(bad)?)
            }
            ParamType::Date => {
                return match date::parse_param(&canon::value_reading(s)).ok_or_else(bad)? {
                    date::Reading::One(d) => Ok(ParamValue::one(NormValue::Date(d))),
                    date::Reading::Two(a, b) => Ok(ParamValue {
                        primary: NormValue::Date(a),
                        alternative: Some(NormValue::Date(b)),
                    }),
                };
            }
            ParamType::Email => {
                NormValue::Email(email::normalise(&canon::value_reading(s)).ok_or_else(bad)?)
            }
            ParamType::Url => {
                NormValue::Url(url::normalise_param(&canon::value_reading(s)).ok_or_else(bad)?)
            }
            ParamType::FreeText => NormValue::Text(text::fold(&canon::value_reading(s))),
            ParamType::Regex(re) => {
                if !re.is_match(s) {
                    return Err(ValueError {
                        problem: format!(
                            "{} does not match the pattern {}",
                            shown(s),
                            shown(re.as_str())
                        ),
                    });
                }
                NormValue::Token(s.to_string())
            }
        };
        Ok(ParamValue::one(v))
    }

    /// Whether the normalised value `v` occurs in `text`'s reading (see the table in the module
    /// docs): whether the text carries it [`Carry::Exact`]ly.
    pub fn occurs_in(&self, v: &NormValue, text: &str) -> bool {
        self.occurs_with(v, text, &mut String::new())
    }

    /// How `text` carries some reading of `pv`: exactly, by look only, or not at all. This is
    /// the gate's matcher; an index of values extracted at write time can narrow down the
    /// entries to ask ([`value_key`](Self::value_key)), but this decides.
    pub fn carry(&self, pv: &ParamValue, text: &str) -> Carry {
        if self.any_occurs(pv, text, &mut String::new()) {
            Carry::Exact
        } else if self.any_looks(pv, text) {
            Carry::Look
        } else {
            Carry::No
        }
    }

    /// The key of a value for separator- and look-alike-blind lookups (the letters and digits
    /// of its skeleton, [`canon::skeleton_key`]; a URL without its scheme; an amount or a date
    /// in its plain form; a URL without its scheme and a leading `www.`): two values a reader may
    /// confuse have the same key. An index of the
    /// values of [`extract`](Self::extract) under these keys finds every entry that carries a
    /// value *exactly*; entries that carry it only by look are found by [`carry`](Self::carry).
    pub fn value_key(&self, v: &NormValue) -> String {
        match v {
            NormValue::Amount(a) => {
                let (neg, m, s) = a.canonical();
                format!("{}{m}e-{s}", if neg { "-" } else { "" })
            }
            NormValue::Date(d) => d.to_string(),
            // `www.` is dropped too: a model that writes `https://www.evil.com` may have read
            // `evil.com` (the key only widens what is looked at; carrying is decided apart).
            NormValue::Url(u) => {
                let rest = url::without_scheme(u);
                canon::skeleton_key(rest.strip_prefix("www.").unwrap_or(rest))
            }
            NormValue::Iban(s) | NormValue::Email(s) | NormValue::Token(s) => {
                canon::skeleton_key(s)
            }
            NormValue::Text(t) => text::loose_fold(&canon::skeleton(t)),
        }
    }

    /// Whether some reading of `pv` occurs in `text` by look (see [`Carry::Look`]).
    pub(crate) fn any_looks(&self, pv: &ParamValue, text: &str) -> bool {
        self.looks_visible(pv, text) || self.hidden(pv, text)
    }

    /// Whether a text hidden in `text` ([`hidden::hidden_texts`]: a message in tag characters, a
    /// base64 text, the percent-decoded text) carries some reading of `pv`, exactly or by look:
    /// a look, since a reader cannot see it.
    pub(crate) fn hidden(&self, pv: &ParamValue, text: &str) -> bool {
        self.hidden_in(pv, &hidden::hidden_texts(text))
    }

    /// Whether one of the hidden texts `hidden` carries some reading of `pv`, exactly or by look.
    pub(crate) fn hidden_in(&self, pv: &ParamValue, hidden: &[String]) -> bool {
        hidden
            .iter()
            .any(|h| self.any_occurs(pv, h, &mut String::new()) || self.looks_visible(pv, h))
    }

    /// As [`any_looks`](Self::any_looks), without looking for hidden texts again.
    fn looks_visible(&self, pv: &ParamValue, text: &str) -> bool {
        let r = canon::reading(text);
        let skel = std::cell::OnceCell::new();
        pv.iter()
            .any(|v| self.looks_in_reading(v, &r, || skel.get_or_init(|| canon::skeleton(&r))))
    }

    /// Whether `v` occurs by look in the reading `r` (whose skeleton `skel` gives).
    pub(crate) fn looks_in_reading<'s>(
        &self,
        v: &NormValue,
        r: &str,
        skel: impl FnOnce() -> &'s str,
    ) -> bool {
        match (self, v) {
            (ParamType::Amount, NormValue::Amount(want)) => {
                let d = canon::digit_reading(r);
                amount::for_each_loose(&d, |_, _, a| {
                    if a == *want {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .is_break()
            }
            (ParamType::Date, NormValue::Date(want)) => {
                let d = canon::digit_reading(r);
                date::for_each(&d, |_, _, reading| {
                    let hit = match reading {
                        date::Reading::One(x) => x == *want,
                        date::Reading::Two(a, b) => a == *want || b == *want,
                    };
                    if hit {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .is_break()
            }
            (ParamType::FreeText, NormValue::Text(_)) => {
                let key = self.value_key(v);
                !key.is_empty() && text::loose_fold(skel()).contains(&key)
            }
            (
                ParamType::Iban | ParamType::Email | ParamType::Url | ParamType::Regex(_),
                NormValue::Iban(_) | NormValue::Email(_) | NormValue::Url(_) | NormValue::Token(_),
            ) => {
                let key = self.value_key(v);
                canon::skeleton_occurs(&key, skel()) || self.spelt_looks(v, r, &key)
            }
            _ => false,
        }
    }

    /// Whether the identifier `v` (whose key is `key`) occurs by look in the reading `r` once
    /// it is read as spelt out for human readers ([`spelt`]): an e-mail address or URL with the
    /// words that spell its punctuation dropped (`bob [at] example [dot] com`), an IBAN or a
    /// token with its digits dictated as words (`GB two nine NWBK six zero …`).
    fn spelt_looks(&self, v: &NormValue, r: &str, key: &str) -> bool {
        let with_at = match (self, v) {
            (ParamType::Email, NormValue::Email(_)) => true,
            (ParamType::Url, NormValue::Url(_)) => false,
            (ParamType::Iban | ParamType::Regex(_), NormValue::Iban(_) | NormValue::Token(_)) => {
                return spelt::looks_spelt(key, r, spelt::digits_from_words);
            }
            _ => return false,
        };
        spelt::looks_spelt(key, r, |r| spelt::without_spelt_punctuation(r, with_at))
    }

    /// As [`occurs_in`](Self::occurs_in), reusing `scratch` for folding free text.
    pub(crate) fn occurs_with(&self, v: &NormValue, text: &str, scratch: &mut String) -> bool {
        let r = canon::reading(text);
        self.occurs_in_reading(v, &r, scratch)
    }

    /// Whether `v` occurs in the reading `text` (already [`canon::reading`]).
    pub(crate) fn occurs_in_reading(
        &self,
        v: &NormValue,
        text: &str,
        scratch: &mut String,
    ) -> bool {
        match (self, v) {
            (ParamType::Iban, NormValue::Iban(s)) => iban::occurs(s, text),
            (ParamType::Amount, NormValue::Amount(want)) => amount::occurs(want, text),
            (ParamType::Date, NormValue::Date(want)) => {
                // A date that holds the year starts at or before the year's last occurrence.
                let Some(last) = want.last_year_at(text) else {
                    return false;
                };
                date::for_each_up_to(text, last, |_, _, r| {
                    let hit = match r {
                        date::Reading::One(d) => d == *want,
                        date::Reading::Two(a, b) => a == *want || b == *want,
                    };
                    if hit {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .is_break()
            }
            (ParamType::Email, NormValue::Email(s)) => email::occurs(s, text),
            (ParamType::Url, NormValue::Url(s)) => url::occurs(s, text),
            (ParamType::FreeText, NormValue::Text(s)) => text::contains_folded(s, text, scratch),
            (ParamType::Regex(_), NormValue::Token(s)) => {
                text::occurs_token(&canon::value_reading(s), text)
            }
            _ => false,
        }
    }

    /// Whether any reading of `pv` occurs in `text`.
    pub(crate) fn any_occurs(&self, pv: &ParamValue, text: &str, scratch: &mut String) -> bool {
        let r = canon::reading(text);
        pv.iter().any(|v| self.occurs_in_reading(v, &r, scratch))
    }

    /// Every candidate value of this type in `text`'s reading, in order of appearance
    /// (duplicates kept). Free text has no candidates.
    pub fn extract(&self, text: &str) -> Vec<NormValue> {
        let text = &*canon::reading(text);
        let mut out = Vec::new();
        match self {
            ParamType::Iban => {
                let _ = iban::for_each(text, |_, _, s| {
                    out.push(NormValue::Iban(s.to_string()));
                    ControlFlow::Continue(())
                });
            }
            ParamType::Amount => {
                let _ = amount::for_each(text, |_, _, a| {
                    out.push(NormValue::Amount(a));
                    ControlFlow::Continue(())
                });
            }
            ParamType::Date => {
                let _ = date::for_each(text, |_, _, r| {
                    match r {
                        date::Reading::One(d) => out.push(NormValue::Date(d)),
                        date::Reading::Two(a, b) => {
                            out.push(NormValue::Date(a));
                            out.push(NormValue::Date(b));
                        }
                    }
                    ControlFlow::Continue(())
                });
            }
            ParamType::Email => {
                let mut v = Vec::new();
                email::extract(text, &mut v);
                out.extend(v.into_iter().map(NormValue::Email));
            }
            ParamType::Url => {
                let mut v = Vec::new();
                url::extract(text, &mut v);
                out.extend(v.into_iter().map(NormValue::Url));
            }
            ParamType::FreeText => {}
            ParamType::Regex(re) => {
                let mut v = Vec::new();
                text::extract_tokens(re, text, &mut v);
                out.extend(v.into_iter().map(NormValue::Token));
            }
        }
        out
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamType::Regex(re) => write!(f, "regex {}", shown(re.as_str())),
            other => f.write_str(other.name()),
        }
    }
}
