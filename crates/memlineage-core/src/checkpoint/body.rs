//! The checkpoint note text of C2SP tlog-checkpoint (<https://c2sp.org/tlog-checkpoint>).
//!
//! ```text
//! <origin>\n               a unique, non-empty name of the log (e.g. example.com/memlineage/tenant)
//! <tree size>\n            ASCII decimal, no leading zeros ("0" for the empty tree)
//! <base64 root hash>\n     standard base64 with padding of the 32-byte RFC 6962 root
//! [<extension line>\n]*    optional, opaque, non-empty (NOT RECOMMENDED by the spec)
//! ```

use super::error::{CheckpointError, truncate};
use super::note::check_no_control;
use crate::Hash256;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A transparency-log checkpoint: the log's identity and its Merkle tree head at one size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Checkpoint {
    /// The log's identity, first line of the body; non-empty, no newline. The spec recommends a
    /// schema-less URL without spaces or `+`, matching the signing key's name.
    pub origin: String,
    /// The number of leaves in the tree.
    pub size: u64,
    /// The RFC 6962 root of the tree of `size` leaves (`SHA-256("")` when `size` is 0).
    pub root: Hash256,
    /// Extension lines (without their newlines), each non-empty. Usually none.
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint without extension lines.
    pub fn new(origin: impl Into<String>, size: u64, root: Hash256) -> Self {
        Checkpoint {
            origin: origin.into(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// Checks that [`body`](Self::body) will be a well-formed checkpoint text: a non-empty
    /// origin and non-empty extension lines, none containing a newline or control character.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        if self.origin.is_empty() {
            return Err(CheckpointError::EmptyLine { line: 1 });
        }
        check_line("origin", &self.origin)?;
        for (i, ext) in self.extensions.iter().enumerate() {
            if ext.is_empty() {
                return Err(CheckpointError::EmptyLine { line: 4 + i });
            }
            check_line("extension", ext)?;
        }
        Ok(())
    }

    /// The note text: `origin\nsize\nbase64(root)\n`, then one line per extension.
    ///
    /// This is the exact byte string that is signed. Call [`validate`](Self::validate) first
    /// if the fields come from untrusted input ([`sign_checkpoint`](super::sign_checkpoint)
    /// does).
    pub fn body(&self) -> String {
        let mut out = String::with_capacity(self.origin.len() + 70);
        out.push_str(&self.origin);
        out.push('\n');
        out.push_str(&self.size.to_string());
        out.push('\n');
        out.push_str(&STANDARD.encode(self.root.0));
        out.push('\n');
        for ext in &self.extensions {
            out.push_str(ext);
            out.push('\n');
        }
        out
    }

    /// Parses a checkpoint note text strictly: it must be exactly what [`body`](Self::body)
    /// produces for some valid checkpoint, so a body has one parse and one encoding.
    pub fn parse_body(text: &str) -> Result<Checkpoint, CheckpointError> {
        check_no_control(text)?;
        let Some(text) = text.strip_suffix('\n') else {
            return Err(CheckpointError::MissingFinalNewline);
        };
        let lines: Vec<&str> = text.split('\n').collect();
        if lines.len() < 3 {
            // An empty text still splits into one (empty) line.
            let found = if text.is_empty() { 0 } else { lines.len() };
            return Err(CheckpointError::TooFewLines { found });
        }
        if let Some(i) = lines.iter().position(|l| l.is_empty()) {
            return Err(CheckpointError::EmptyLine { line: i + 1 });
        }
        Ok(Checkpoint {
            origin: lines[0].to_owned(),
            size: parse_size(lines[1])?,
            root: parse_root(lines[2])?,
            extensions: lines[3..].iter().map(|l| (*l).to_owned()).collect(),
        })
    }
}

fn check_line(field: &'static str, value: &str) -> Result<(), CheckpointError> {
    if value.chars().any(|c| c.is_control()) {
        return Err(CheckpointError::InvalidLine {
            field,
            value: truncate(value),
        });
    }
    Ok(())
}

fn parse_size(line: &str) -> Result<u64, CheckpointError> {
    let err = || CheckpointError::InvalidTreeSize {
        found: truncate(line),
    };
    let digits_only = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
    let leading_zero = line.len() > 1 && line.starts_with('0');
    if !digits_only || leading_zero {
        return Err(err());
    }
    line.parse::<u64>().map_err(|_| err())
}

fn parse_root(line: &str) -> Result<Hash256, CheckpointError> {
    let err = |reason: String| CheckpointError::InvalidRootHash {
        found: truncate(line),
        reason,
    };
    // The STANDARD engine requires canonical padding and zero trailing bits, so each
    // 32-byte value has exactly one accepted 44-character spelling.
    let raw = STANDARD.decode(line).map_err(|e| err(e.to_string()))?;
    Hash256::from_slice(&raw).ok_or_else(|| err(format!("it decodes to {} bytes", raw.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_body_round_trip() {
        let cp = Checkpoint::new("example.com/log", 42, Hash256([7; 32]));
        let body = cp.body();
        assert_eq!(
            body,
            "example.com/log\n42\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n"
        );
        assert_eq!(Checkpoint::parse_body(&body).unwrap(), cp);
        let mut ext = cp.clone();
        ext.extensions = vec!["ext one".into()];
        assert_eq!(Checkpoint::parse_body(&ext.body()).unwrap(), ext);
    }

    #[test]
    fn checkpoint_body_rejects_bad_sizes() {
        for bad in [
            "",
            "01",
            "-1",
            "+1",
            " 1",
            "1 ",
            "18446744073709551616",
            "1e3",
            "0x10",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn checkpoint_validate_rejects_bad_fields() {
        let mut cp = Checkpoint::new("", 0, Hash256::default());
        assert_eq!(cp.validate(), Err(CheckpointError::EmptyLine { line: 1 }));
        cp.origin = "a\nb".into();
        assert!(matches!(
            cp.validate(),
            Err(CheckpointError::InvalidLine {
                field: "origin",
                ..
            })
        ));
        cp.origin = "ok".into();
        cp.extensions = vec![String::new()];
        assert_eq!(cp.validate(), Err(CheckpointError::EmptyLine { line: 4 }));
    }
}
