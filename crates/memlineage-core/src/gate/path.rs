//! Parameter paths: which values of a call's JSON arguments a policy parameter names.
//!
//! Real tool schemas nest: a list of recipients, a payee object, a list of items each with an
//! account. A policy parameter is a *path* (`docs/gate.md`, "Parameter paths"):
//!
//! - `recipient` — the argument `recipient`;
//! - `payee.iban` — the field `iban` of the object `payee`;
//! - `recipients[]` — every element of the array `recipients`;
//! - `items[].account` — the field `account` of every element of `items`.
//!
//! Every value a path reaches is judged on its own, under a *concrete* path that names it
//! (`recipients[1]`, `items[0].account`); a value of a scalar type given as an array is judged
//! element by element (as if the path ended in `[]`). A path whose object or array is absent
//! (or `null`) names nothing; one that meets a value of the wrong shape (a string where an
//! object is expected) cannot be judged, and the call is not dispatched.

use super::param_type::json_type;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt::Write as _;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step<'p> {
    /// A field of an object.
    Key(&'p str),
    /// Every element of an array (`[]` in a pattern).
    Each,
    /// One element of an array (`[3]` in a concrete path).
    Index(usize),
}

/// A parsed parameter path of a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern<'p> {
    pub(crate) steps: Vec<Step<'p>>,
}

impl<'p> Pattern<'p> {
    /// Parses a pattern (`items[].account`); the error says what is wrong.
    pub(crate) fn parse(path: &'p str) -> Result<Pattern<'p>, String> {
        let steps = parse_steps(path, false)?;
        Ok(Pattern { steps })
    }

    /// Whether the pattern is a single field (the common case, resolved without walking).
    pub(crate) fn is_simple(path: &str) -> bool {
        !path.contains(['.', '['])
    }
}

/// Parses `a.b[].c` (pattern, `[]`) or `a.b[3].c` (concrete, `[N]`).
fn parse_steps(path: &str, concrete: bool) -> Result<Vec<Step<'_>>, String> {
    let mut steps = Vec::new();
    for seg in path.split('.') {
        let (name, mut rest) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if name.trim().is_empty() {
            return Err(format!("an empty field name in {path:?}"));
        }
        steps.push(Step::Key(name));
        while !rest.is_empty() {
            let Some(close) = rest.find(']') else {
                return Err(format!("an unclosed `[` in {path:?}"));
            };
            let inner = &rest[1..close];
            if !rest.starts_with('[') {
                return Err(format!("unexpected text after `]` in {path:?}"));
            }
            match (inner.is_empty(), concrete) {
                (true, false) => steps.push(Step::Each),
                (false, true) => steps.push(Step::Index(
                    inner
                        .parse()
                        .map_err(|_| format!("a bad index [{inner}] in {path:?}"))?,
                )),
                (false, false) => {
                    return Err(format!(
                        "`[{inner}]` in {path:?}: a policy path names every element with `[]`"
                    ));
                }
                (true, true) => return Err(format!("`[]` in the concrete path {path:?}")),
            }
            rest = &rest[close + 1..];
        }
    }
    Ok(steps)
}

/// One value a pattern reaches in a call.
#[derive(Clone, Debug)]
pub(crate) struct Reached<'a> {
    /// The concrete path (`items[0].account`), borrowed from the call for a simple pattern.
    pub(crate) path: Cow<'a, str>,
    /// The value (`None`: absent).
    pub(crate) value: Option<&'a Value>,
}

/// The values `pattern` (the policy's path text `text`) reaches in `args`, in order; an error
/// names the concrete path where the shape is wrong. A pattern that reaches nothing gives one
/// absent value under the pattern's own text.
pub(crate) fn resolve<'a>(
    text: &str,
    args: &'a Map<String, Value>,
    scalar: bool,
) -> Result<Vec<Reached<'a>>, String> {
    let mut out = Vec::new();
    if Pattern::is_simple(text) {
        match args.get_key_value(text) {
            Some((k, v)) => push_leaf(Cow::Borrowed(k.as_str()), v, scalar, &mut out),
            None => out.push(Reached {
                path: Cow::Owned(text.to_string()),
                value: None,
            }),
        }
        return Ok(out);
    }
    let pattern = Pattern::parse(text)?;
    let Some((Step::Key(first), rest)) = pattern.steps.split_first() else {
        return Err(format!("the path {text:?} does not start with a field"));
    };
    if let Some(v) = args.get(*first) {
        walk(v, (*first).to_string(), rest, scalar, &mut out)?;
    }
    if out.is_empty() {
        out.push(Reached {
            path: Cow::Owned(text.to_string()),
            value: None,
        });
    }
    Ok(out)
}

fn push_leaf<'a>(path: Cow<'a, str>, v: &'a Value, scalar: bool, out: &mut Vec<Reached<'a>>) {
    match v {
        Value::Array(items) if scalar => {
            for (i, item) in items.iter().enumerate() {
                let mut p = path.clone().into_owned();
                let _ = write!(p, "[{i}]");
                out.push(Reached {
                    path: Cow::Owned(p),
                    value: Some(item),
                });
            }
        }
        _ => out.push(Reached {
            path,
            value: Some(v),
        }),
    }
}

fn walk<'a>(
    v: &'a Value,
    at: String,
    steps: &[Step<'_>],
    scalar: bool,
    out: &mut Vec<Reached<'a>>,
) -> Result<(), String> {
    let Some((step, rest)) = steps.split_first() else {
        push_leaf(Cow::Owned(at), v, scalar, out);
        return Ok(());
    };
    if v.is_null() {
        return Ok(());
    }
    match step {
        Step::Key(k) => {
            let Value::Object(m) = v else {
                return Err(format!(
                    "expected an object at `{at}` (for its field `{k}`), found {}",
                    json_type(v)
                ));
            };
            if let Some(child) = m.get(*k) {
                walk(child, format!("{at}.{k}"), rest, scalar, out)?;
            }
        }
        Step::Each | Step::Index(_) => {
            let Value::Array(items) = v else {
                return Err(format!(
                    "expected an array at `{at}`, found {}",
                    json_type(v)
                ));
            };
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{at}[{i}]"), rest, scalar, out)?;
            }
        }
    }
    Ok(())
}

/// Sets the value at the concrete path `path` of `args` (a repaired value); `false` when the
/// path does not lead to an existing value.
pub(crate) fn set(args: &mut Map<String, Value>, path: &str, new: Value) -> bool {
    if Pattern::is_simple(path) {
        return match args.get_mut(path) {
            Some(slot) => {
                *slot = new;
                true
            }
            None => {
                args.insert(path.to_string(), new);
                true
            }
        };
    }
    let Ok(steps) = parse_steps(path, true) else {
        return false;
    };
    let Some((Step::Key(first), rest)) = steps.split_first() else {
        return false;
    };
    let Some(mut slot) = args.get_mut(*first) else {
        return false;
    };
    for step in rest {
        let next = match (step, slot) {
            (Step::Key(k), Value::Object(m)) => m.get_mut(*k),
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        let Some(n) = next else {
            return false;
        };
        slot = n;
    }
    *slot = new;
    true
}

/// The concrete paths of the values of `args` that no pattern of `patterns` covers: every
/// scalar leaf (not `null`) outside what some pattern reaches (a pattern covers everything
/// below the values it reaches). For `default = "deny"`.
pub(crate) fn uncovered<'t>(
    args: &Map<String, Value>,
    patterns: impl Iterator<Item = &'t str> + Clone,
) -> Vec<String> {
    let parsed: Vec<Vec<Step<'t>>> = patterns
        .filter_map(|p| Pattern::parse(p).ok().map(|p| p.steps))
        .collect();
    let mut out = Vec::new();
    for (k, v) in args {
        let live: Vec<&[Step<'_>]> = parsed
            .iter()
            .filter_map(|p| match p.split_first() {
                Some((Step::Key(f), rest)) if *f == k => Some(rest),
                _ => None,
            })
            .collect();
        uncovered_in(v, k.clone(), &live, &mut out);
    }
    out
}

fn uncovered_in(v: &Value, at: String, live: &[&[Step<'_>]], out: &mut Vec<String>) {
    // A pattern that ends here covers this value and everything below it (an array of
    // scalars under a scalar parameter is judged element by element).
    if live.iter().any(|p| p.is_empty()) {
        return;
    }
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, child) in m {
                let next: Vec<&[Step<'_>]> = live
                    .iter()
                    .filter_map(|p| match p.split_first() {
                        Some((Step::Key(f), rest)) if *f == k => Some(rest),
                        _ => None,
                    })
                    .collect();
                uncovered_in(child, format!("{at}.{k}"), &next, out);
            }
        }
        Value::Array(items) => {
            let next: Vec<&[Step<'_>]> = live
                .iter()
                .filter_map(|p| match p.split_first() {
                    Some((Step::Each, rest)) => Some(rest),
                    _ => None,
                })
                .collect();
            for (i, item) in items.iter().enumerate() {
                uncovered_in(item, format!("{at}[{i}]"), &next, out);
            }
        }
        _ => out.push(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn paths(r: &[Reached<'_>]) -> Vec<(String, Option<Value>)> {
        r.iter()
            .map(|x| (x.path.to_string(), x.value.cloned()))
            .collect()
    }

    #[test]
    fn patterns_parse_and_reject() {
        assert_eq!(
            Pattern::parse("items[].account").map(|p| p.steps),
            Ok(vec![Step::Key("items"), Step::Each, Step::Key("account")])
        );
        for bad in ["", "a..b", "a[", "a[0]", "a[]x", ".a"] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolving_reaches_every_element() {
        let a = args(json!({
            "recipients": ["a@x.com", "b@x.com"],
            "payee": {"iban": "GB29", "name": "Bob"},
            "items": [{"account": "1"}, {"other": 2}, {"account": "3"}],
            "none": null,
        }));
        assert_eq!(
            paths(&resolve("recipients[]", &a, true).unwrap()),
            [
                ("recipients[0]".into(), Some(json!("a@x.com"))),
                ("recipients[1]".into(), Some(json!("b@x.com")))
            ]
        );
        assert_eq!(
            paths(&resolve("recipients", &a, true).unwrap()).len(),
            2,
            "a scalar type given an array is judged element by element"
        );
        assert_eq!(
            paths(&resolve("payee.iban", &a, true).unwrap()),
            [("payee.iban".into(), Some(json!("GB29")))]
        );
        assert_eq!(
            paths(&resolve("items[].account", &a, true).unwrap()),
            [
                ("items[0].account".into(), Some(json!("1"))),
                ("items[2].account".into(), Some(json!("3")))
            ]
        );
        assert_eq!(
            paths(&resolve("none.x", &a, true).unwrap()),
            [("none.x".into(), None)]
        );
        assert!(resolve("payee.iban.x", &a, true).is_err());
        assert!(resolve("payee[]", &a, true).is_err());
    }

    #[test]
    fn setting_and_coverage() {
        let mut a = args(json!({"items": [{"account": "1"}, {"account": "2"}], "x": 1}));
        assert!(set(&mut a, "items[1].account", json!("9")));
        assert_eq!(a["items"][1]["account"], json!("9"));
        assert!(!set(&mut a, "items[5].account", json!("9")));
        let a = args(json!({
            "payee": {"iban": "GB29", "name": "Bob"},
            "items": [{"account": "1", "memo": "m"}],
            "recipients": ["a"],
            "note": null,
        }));
        let listed = ["payee.iban", "items[].account", "recipients"];
        assert_eq!(
            uncovered(&a, listed.iter().copied()),
            ["items[0].memo", "payee.name"]
        );
    }
}
