//! Phrases shared by the decision's texts: values, entries, lineage paths, lists of names.
//!
//! Only rendering uses them, never the decision itself, so they may allocate freely.

use super::ContextEntry;
use super::param_type::shown;
use crate::hash::EntryId;
use serde_json::Value;

/// A JSON value in a message: a string JSON-quoted, anything else as JSON; at most 80
/// characters.
pub(crate) fn show_json(v: &Value) -> String {
    match v {
        Value::String(s) => shown(s),
        other => {
            let s = other.to_string();
            if s.chars().count() > 80 {
                format!("{}…", s.chars().take(80).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// `entry 1a2b3c4d5e6f (EXTERNAL, tool_output by `mail`)`.
pub(crate) fn entry_desc(e: &ContextEntry) -> String {
    format!(
        "entry {} ({}, {} by `{}`)",
        e.id.short(),
        e.label,
        e.kind,
        e.writer
    )
}

/// `lineage to the untrusted root: 1a2b3c4d5e6f → 9d1c0f7a2b33`.
pub(crate) fn path_desc(path: &[EntryId]) -> String {
    if path.is_empty() {
        return "no lineage path to an untrusted root was supplied".to_string();
    }
    let hops: Vec<String> = path.iter().map(EntryId::short).collect();
    format!("lineage to the untrusted root: {}", hops.join(" → "))
}

/// Short ids joined by `, `.
pub(crate) fn id_list(ids: &[EntryId]) -> String {
    let shorts: Vec<String> = ids.iter().map(EntryId::short).collect();
    shorts.join(", ")
}

/// The plural ending for `n` things.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
pub(crate) fn name_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// `of type iban` for the type named `iban`, `matching the pattern` for `regex` (the names of
/// `ParamType::name`).
pub(crate) fn type_phrase(name: &str) -> String {
    if name == "regex" {
        "matching the pattern".to_string()
    } else {
        format!("of type {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_quoted_and_cut() {
        assert_eq!(show_json(&json!("GB29 NWBK")), "\"GB29 NWBK\"");
        assert_eq!(show_json(&json!("a\"b")), "\"a\\\"b\"");
        assert_eq!(show_json(&json!(98.7)), "98.7");
        let long = "x".repeat(90);
        assert_eq!(show_json(&json!(long)), format!("\"{}…\"", "x".repeat(80)));
    }

    #[test]
    fn names_and_ids_are_listed() {
        assert_eq!(name_list(&[]), "");
        assert_eq!(name_list(&["a"]), "`a`");
        assert_eq!(name_list(&["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(
            path_desc(&[]),
            "no lineage path to an untrusted root was supplied"
        );
        let id = EntryId(crate::hash::Hash256::of(b"x"));
        assert_eq!(
            path_desc(&[id, id]),
            format!("lineage to the untrusted root: {0} → {0}", id.short())
        );
        assert_eq!(id_list(&[id, id]), format!("{0}, {0}", id.short()));
        assert_eq!(type_phrase("iban"), "of type iban");
        assert_eq!(type_phrase("regex"), "matching the pattern");
    }
}
