//! The body of a C2SP tlog-witness `add-checkpoint` request
//! (<https://c2sp.org/tlog-witness>, §add-checkpoint):
//!
//! ```text
//! old <size>\n                 the size of the checkpoint the witness last cosigned (0: none)
//! <base64 hash>\n ...          the RFC 6962 consistency proof from old to the new size, ≤ 63
//! \n                           an empty line
//! <checkpoint note>            the signed checkpoint (it may carry several signatures)
//! ```

use crate::Hash256;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The most consistency proof lines a request may carry (the spec's limit).
pub const MAX_PROOF_LINES: usize = 63;

/// The largest request body accepted: a checkpoint note with up to 100 signature lines and a
/// full proof is far smaller; anything larger is refused before it is parsed.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// A parsed `add-checkpoint` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size of the checkpoint the client believes the witness cosigned last.
    pub old_size: u64,
    /// The consistency proof from `old_size` to the checkpoint's size.
    pub proof: Vec<Hash256>,
    /// The signed checkpoint note.
    pub checkpoint: String,
}

impl AddCheckpoint {
    /// Parses a request body strictly; the error says what is malformed (answered `400`).
    pub fn parse(body: &[u8]) -> Result<AddCheckpoint, String> {
        if body.len() > MAX_REQUEST_BYTES {
            return Err(format!(
                "the request body is {} bytes; at most {MAX_REQUEST_BYTES} are accepted",
                body.len()
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|e| format!("the request body is not UTF-8 ({e})"))?;
        let (first, mut rest) = text
            .split_once('\n')
            .ok_or("the request has no old size line ending in a newline")?;
        let size = first
            .strip_prefix("old ")
            .ok_or_else(|| format!("the first line {:?} is not `old <size>`", clip(first)))?;
        let old_size = parse_decimal(size).ok_or_else(|| {
            format!(
                "old size {:?} is not a decimal without leading zeros",
                clip(size)
            )
        })?;
        let mut proof = Vec::new();
        loop {
            let (line, after) = rest
                .split_once('\n')
                .ok_or("the proof lines are not followed by an empty line and a checkpoint")?;
            rest = after;
            if line.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_LINES {
                return Err(format!(
                    "more than {MAX_PROOF_LINES} consistency proof lines"
                ));
            }
            let raw = STANDARD
                .decode(line)
                .map_err(|e| format!("proof line {:?} is not base64 ({e})", clip(line)))?;
            let hash = Hash256::from_slice(&raw).ok_or_else(|| {
                format!(
                    "proof line {} decodes to {} bytes, not 32",
                    proof.len() + 1,
                    raw.len()
                )
            })?;
            proof.push(hash);
        }
        if rest.is_empty() {
            return Err("the request carries no checkpoint after the empty line".into());
        }
        Ok(AddCheckpoint {
            old_size,
            proof,
            checkpoint: rest.to_string(),
        })
    }

    /// The request body.
    pub fn to_body(&self) -> String {
        let mut out = format!("old {}\n", self.old_size);
        for h in &self.proof {
            out.push_str(&STANDARD.encode(h.0));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint);
        out
    }
}

/// An ASCII decimal `u64` without leading zeros (`0` alone is allowed).
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_request_round_trip_and_rejections() {
        let req = AddCheckpoint {
            old_size: 5,
            proof: vec![Hash256([1; 32]), Hash256([2; 32])],
            checkpoint: "o\n7\nAQ==\n\n— o AAAA\n".into(),
        };
        let body = req.to_body();
        assert!(body.starts_with("old 5\nAQEB"));
        assert_eq!(AddCheckpoint::parse(body.as_bytes()).unwrap(), req);
        let empty = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            checkpoint: "x\n".into(),
        };
        assert_eq!(empty.to_body(), "old 0\n\nx\n");
        for bad in [
            "",
            "old 5",
            "new 5\n\nx",
            "old 05\n\nx",
            "old -1\n\nx",
            "old 5\nnot base64!\n\nx",
            "old 5\nAQ==\n\nx",
            "old 5\n\n",
            "old 5\nAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n",
        ] {
            assert!(AddCheckpoint::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let many = format!(
            "old 1\n{}\nx\n",
            "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n".repeat(64)
        );
        assert!(
            AddCheckpoint::parse(many.as_bytes())
                .unwrap_err()
                .contains("63")
        );
        assert!(AddCheckpoint::parse(&[0xff, b'\n']).is_err());
    }

    /// The example request body of C2SP tlog-witness §add-checkpoint, byte for byte (the
    /// spec's text, <https://github.com/C2SP/C2SP/blob/main/tlog-witness.md>): it parses into
    /// its parts, and writing them back gives the same bytes.
    #[test]
    fn spec_example_request_body_parses_and_round_trips() {
        let body = "old 20852014\n\
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n\
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n\
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n\
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n\
\n\
example.com/behind-the-sofa\n\
20852163\n\
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\
\n\
\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n\
\u{2014} example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n";
        let req = AddCheckpoint::parse(body.as_bytes()).unwrap();
        assert_eq!(req.old_size, 20852014);
        assert_eq!(req.proof.len(), 4);
        assert_eq!(
            hex::encode(req.proof[0].0),
            "3e544d0abc07a6a846aeea6e7b42fb8316e36cc88a03db5e9afb996430e991ac"
        );
        assert!(
            req.checkpoint
                .starts_with("example.com/behind-the-sofa\n20852163\n")
        );
        assert_eq!(req.checkpoint.matches('\u{2014}').count(), 2);
        assert_eq!(req.to_body(), body);
    }
}
