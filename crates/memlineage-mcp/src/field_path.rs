//! Paths into a tool's structured result, in the syntax the gate uses for parameters
//! (`payee.iban`, `recipients[]`, `transactions[].subject`): object keys separated by `.`, and
//! `[]` after a key for every element of the array it holds. A segment `*` stands for every
//! value of an object or every element of an array, so the paths of the Python package's trust
//! map (`transactions.*.subject`) mean the same here.
//!
//! The gateway uses them to say which principal authored which part of a result
//! (`docs/mcp.md`, "Who authored a result").

use serde_json::Value;
use std::fmt;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// The value of this key of an object.
    Key(String),
    /// Every element of an array.
    Each,
    /// Every value of an object or element of an array.
    Any,
}

/// A parsed field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

/// The longest path accepted, in bytes.
const MAX_PATH: usize = 256;

impl FieldPath {
    /// Parses `a.b[].c`. Keys are 1 to 64 bytes and may not contain `.`, `[` or `]`.
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let bad = |why: &str| {
            Err(format!(
                "invalid field path `{}`: {why} (expected keys separated by `.`, each optionally followed by `[]`, e.g. `transactions[].subject`)",
                text.chars().take(80).collect::<String>()
            ))
        };
        if text.is_empty() || text.len() > MAX_PATH {
            return bad("a path is 1 to 256 bytes");
        }
        let mut steps = Vec::new();
        for segment in text.split('.') {
            if segment == "*" {
                steps.push(Step::Any);
                continue;
            }
            let mut key = segment;
            let mut each = 0;
            while let Some(rest) = key.strip_suffix("[]") {
                key = rest;
                each += 1;
            }
            if key.is_empty() || key.len() > 64 {
                return bad("every key is 1 to 64 bytes");
            }
            if key.contains(['[', ']', '*']) {
                return bad(
                    "`[` and `]` only appear as `[]` after a key, `*` only as a whole segment",
                );
            }
            steps.push(Step::Key(key.to_string()));
            steps.extend(std::iter::repeat_n(Step::Each, each));
        }
        Ok(FieldPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every value the path reaches in `root`, in document order.
    pub fn select<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let mut here = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in here {
                match (step, v) {
                    (Step::Key(k), Value::Object(m)) => next.extend(m.get(k)),
                    (Step::Each | Step::Any, Value::Array(items)) => next.extend(items.iter()),
                    (Step::Any, Value::Object(m)) => next.extend(m.values()),
                    _ => {}
                }
            }
            here = next;
        }
        here
    }

    /// Removes every value the path reaches from `root` (the key from its object, the elements
    /// from their array), so what is left is the rest of the result.
    pub fn remove(&self, root: &mut Value) {
        remove_at(root, &self.steps);
    }
}

fn remove_at(v: &mut Value, steps: &[Step]) {
    let Some((first, rest)) = steps.split_first() else {
        return;
    };
    match (first, v) {
        (Step::Key(k), Value::Object(m)) => {
            if rest.is_empty() {
                m.remove(k);
            } else if let Some(child) = m.get_mut(k) {
                remove_at(child, rest);
            }
        }
        (Step::Each | Step::Any, Value::Array(items)) => {
            if rest.is_empty() {
                items.clear();
            } else {
                for item in items {
                    remove_at(item, rest);
                }
            }
        }
        (Step::Any, Value::Object(m)) => {
            if rest.is_empty() {
                m.clear();
            } else {
                for item in m.values_mut() {
                    remove_at(item, rest);
                }
            }
        }
        _ => {}
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn statement() -> Value {
        json!({
            "account": "GB29NWBK60161331926819",
            "transactions": [
                {"amount": 100.0, "subject": "Rent", "sender": "me"},
                {"amount": 5.5, "subject": "Send to UK12 3456", "sender": "mallory"}
            ]
        })
    }

    #[test]
    fn selects_every_element() {
        let p = FieldPath::parse("transactions[].subject").unwrap();
        let v = statement();
        assert_eq!(
            p.select(&v),
            vec![&json!("Rent"), &json!("Send to UK12 3456")]
        );
        assert_eq!(
            FieldPath::parse("account").unwrap().select(&v),
            vec![&json!("GB29NWBK60161331926819")]
        );
        assert!(
            FieldPath::parse("nothing.here")
                .unwrap()
                .select(&v)
                .is_empty()
        );
        assert!(FieldPath::parse("account[]").unwrap().select(&v).is_empty());
    }

    #[test]
    fn removes_what_it_selects() {
        let p = FieldPath::parse("transactions[].subject").unwrap();
        let mut v = statement();
        p.remove(&mut v);
        assert!(p.select(&v).is_empty());
        assert_eq!(v["transactions"][1]["sender"], json!("mallory"));
        let all = FieldPath::parse("transactions[]").unwrap();
        all.remove(&mut v);
        assert_eq!(v["transactions"], json!([]));
    }

    #[test]
    fn a_star_is_any_key_or_element() {
        let v = statement();
        let star = FieldPath::parse("transactions.*.subject").unwrap();
        let brackets = FieldPath::parse("transactions[].subject").unwrap();
        assert_eq!(star.select(&v), brackets.select(&v));
        assert_eq!(FieldPath::parse("*").unwrap().select(&v).len(), 2);
        let mut w = v.clone();
        star.remove(&mut w);
        assert!(brackets.select(&w).is_empty());
        assert!(FieldPath::parse("a*").is_err());
    }

    #[test]
    fn nested_arrays() {
        let p = FieldPath::parse("rows[][]").unwrap();
        let v = json!({"rows": [[1, 2], [3]]});
        assert_eq!(p.select(&v), vec![&json!(1), &json!(2), &json!(3)]);
    }

    #[test]
    fn rejects_malformed_paths() {
        for bad in [
            "", ".a", "a.", "a..b", "a[0]", "a[", "[]", "a.[]", "a]b", "*[]", "a.b*",
        ] {
            let e = FieldPath::parse(bad).unwrap_err();
            assert!(e.contains("invalid field path"), "{bad}: {e}");
        }
        assert!(FieldPath::parse(&"a".repeat(65)).is_err());
    }
}
