//! Printing results: a text rendering for people, or exactly one JSON object on stdout with
//! `--json`. Errors go to stderr as `error: …`; the exit code says what kind of failure it was.

use serde_json::{Value, json};
use std::io::Write;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: the command was understood but failed or was refused (a verification that found
/// problems, a refused write, an unknown entry or principal, a store error).
pub const EXIT_FAILED: u8 = 1;
/// Exit code: the command line could not be used (unknown flag, malformed id, weight, scope,
/// name or metadata, ambiguous id prefix).
pub const EXIT_USAGE: u8 = 2;

/// A failure, with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// [`EXIT_FAILED`] or [`EXIT_USAGE`].
    pub code: u8,
    /// A message a user can act on (no `error:` prefix).
    pub message: String,
}

impl CliError {
    /// A refused or failed operation (exit 1).
    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }

    /// Bad usage or input (exit 2).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }
}

/// A library error as the command line reports it: the exit code from its kind (a malformed
/// or ambiguous id is bad usage, exit 2; everything else that reaches here failed or was
/// refused, exit 1), the message from its variant (docs/cli.md, "Exit codes").
impl From<memlineage::Error> for CliError {
    fn from(e: memlineage::Error) -> CliError {
        use memlineage::error::{IdPrefixError, Refusal};
        match &e {
            memlineage::Error::IdPrefix(
                IdPrefixError::Ambiguous { .. } | IdPrefixError::Malformed(_),
            ) => CliError::usage(e.to_string()),
            memlineage::Error::Refused(Refusal::NotRegistered { name }) => {
                CliError::failed(format!(
                    "principal `{name}` is not registered: add it with `memlineage principal add {name} --class trusted|external` (see `memlineage principal list`)"
                ))
            }
            _ => CliError::failed(e.to_string()),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        CliError::failed(e.to_string())
    }
}

/// The result of a command: its JSON object, its text rendering, and its exit code.
#[derive(Debug)]
pub struct Outcome {
    /// The JSON object printed with `--json`.
    pub json: Value,
    /// The text printed without `--json` (a final newline is added when missing).
    pub text: String,
    /// [`EXIT_OK`], or [`EXIT_FAILED`] for a completed command that found a problem (`verify`).
    pub code: u8,
    /// Printed to stderr as `error: …` when `code` is not 0.
    pub failure: Option<String>,
}

impl Outcome {
    /// A successful outcome.
    pub fn ok(json: Value, text: impl Into<String>) -> Outcome {
        Outcome {
            json,
            text: text.into(),
            code: EXIT_OK,
            failure: None,
        }
    }

    /// A completed command whose result is a failure (exit 1), e.g. `verify` with problems.
    pub fn failed(json: Value, text: impl Into<String>, failure: impl Into<String>) -> Outcome {
        Outcome {
            json,
            text: text.into(),
            code: EXIT_FAILED,
            failure: Some(failure.into()),
        }
    }
}

/// Prints an outcome and returns its exit code.
pub fn emit(outcome: &Outcome, json_mode: bool) -> u8 {
    let mut out = std::io::stdout().lock();
    let written = if json_mode {
        serde_json::to_string_pretty(&outcome.json)
            .map_err(std::io::Error::other)
            .and_then(|s| writeln!(out, "{s}"))
    } else if outcome.text.is_empty() || outcome.text.ends_with('\n') {
        write!(out, "{}", outcome.text)
    } else {
        writeln!(out, "{}", outcome.text)
    };
    let _ = written.and_then(|()| out.flush());
    if let Some(f) = &outcome.failure {
        eprintln!("error: {f}");
    }
    outcome.code
}

/// Prints an error (stderr; with `--json` also a JSON object on stdout) and returns its code.
pub fn emit_error(err: &CliError, json_mode: bool) -> u8 {
    if json_mode {
        let obj = json!({ "ok": false, "error": err.message, "exit_code": err.code });
        println!("{obj}");
    }
    eprintln!("error: {}", err.message);
    err.code
}

/// Pads cells into aligned columns (the last column is not padded).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            width[i] = width[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 < cols {
                s.push_str(cell);
                let pad = width[i] - cell.chars().count() + 2;
                s.extend(std::iter::repeat_n(' ', pad));
            } else {
                s.push_str(cell);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// The first `n` characters of `s` on one line (control characters shown as spaces), with `…`
/// when cut.
pub fn preview(s: &str, n: usize) -> String {
    let mut out: String = s
        .chars()
        .take(n)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC time, `2026-05-14T09:30:00.123Z`.
pub fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_values() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["A", "BB", "C"],
            &[vec!["xyz".into(), "1".into(), "last".into()]],
        );
        assert_eq!(t, "A    BB  C\nxyz  1   last\n");
    }

    #[test]
    fn preview_cuts_and_flattens() {
        assert_eq!(preview("a\nb", 10), "a b");
        assert_eq!(preview("abcdef", 3), "abc…");
    }
}
