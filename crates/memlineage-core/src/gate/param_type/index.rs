//! The typed values of one text, extracted once so that many lookups cost no scanning.
//!
//! For amounts, dates, e-mail addresses and URLs a value *occurs* in a text exactly when it is
//! one of the values extraction finds there (the table in the module documentation), so the
//! extracted values answer [`ParamType::occurs_with`] by lookup. Free text is answered from the
//! folded text (folded containment is substring containment in the folded text). IBANs and
//! regex tokens are matched where they stand (their matchers are already substring searches),
//! so the index has nothing for them and the caller scans.

use super::{NormValue, ParamType, ParamValue, amount, date, email, text, url};
use std::ops::ControlFlow;

/// The extracted values of one text.
#[derive(Clone, Debug, Default)]
pub(crate) struct ValueIndex {
    amounts: Vec<amount::Amount>,
    dates: Vec<date::Date>,
    emails: Vec<String>,
    urls: Vec<String>,
    folded: String,
}

impl ValueIndex {
    /// Extracts every indexed value of `text`.
    pub(crate) fn new(text: &str) -> ValueIndex {
        let mut ix = ValueIndex::default();
        let _ = amount::for_each(text, |_, _, a| {
            if !ix.amounts.contains(&a) {
                ix.amounts.push(a);
            }
            ControlFlow::Continue(())
        });
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
        ix
    }

    /// Whether some reading of `pv` occurs in the indexed text; `None` when the type is not
    /// indexed (IBAN, regex) and the caller must scan.
    pub(crate) fn any_occurs(&self, kind: &ParamType, pv: &ParamValue) -> Option<bool> {
        if matches!(kind, ParamType::Iban | ParamType::Regex(_)) {
            return None;
        }
        Some(pv.iter().any(|v| self.occurs(kind, v)))
    }

    fn occurs(&self, kind: &ParamType, v: &NormValue) -> bool {
        match (kind, v) {
            (ParamType::Amount, NormValue::Amount(a)) => self.amounts.contains(a),
            (ParamType::Date, NormValue::Date(d)) => self.dates.contains(d),
            (ParamType::Email, NormValue::Email(s)) => self.emails.iter().any(|e| e == s),
            (ParamType::Url, NormValue::Url(s)) => self.urls.iter().any(|u| u == s),
            (ParamType::FreeText, NormValue::Text(s)) => {
                !s.is_empty() && self.folded.contains(s.as_str())
            }
            _ => false,
        }
    }
}
