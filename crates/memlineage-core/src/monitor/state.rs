//! What a monitor remembers between runs: the last checkpoint it verified, the right edge of
//! that tree, and the control records it needs to check what follows. Saved as JSON in a file
//! the monitor owns (`to_json` / `from_json`); nothing in it is secret.

use crate::Hash256;
use crate::checkpoint::NoteVerifier;
use crate::label::{Fallback, Weight};
use crate::merkle::CompactRange;
use crate::rule::LabelRule;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A registry or principal-distrust record the monitor replays when it loads its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptRecord {
    /// Its leaf index.
    pub index: u64,
    /// Its leaf bytes.
    pub leaf: Vec<u8>,
    /// Its content (the registry change or the distrust record).
    pub content: Vec<u8>,
}

/// A monitor's state: everything it verified, in a few hashes and records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorState {
    pub(crate) origin: String,
    pub(crate) pinned: Option<NoteVerifier>,
    pub(crate) range: CompactRange,
    pub(crate) note: Option<String>,
    pub(crate) rule: Option<LabelRule>,
    pub(crate) kept: Vec<KeptRecord>,
}

/// The JSON shape of the state file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Wire {
    format: String,
    origin: String,
    pinned_vkey: Option<String>,
    size: u64,
    root: Hash256,
    right_edge: Vec<Hash256>,
    checkpoint: Option<String>,
    tau: Option<Weight>,
    fallback: Option<Fallback>,
    records: Vec<WireRecord>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct WireRecord {
    index: u64,
    leaf: String,
    content: String,
}

const FORMAT: &str = "memlineage-monitor/v1";

impl MonitorState {
    /// The log's origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The number of entries verified.
    pub fn size(&self) -> u64 {
        self.range.size()
    }

    /// The root of the verified tree.
    pub fn root(&self) -> Hash256 {
        self.range.root()
    }

    /// The last checkpoint note verified (with every signature it carried), if any.
    pub fn checkpoint_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The verifier key the monitor was told to trust, if any.
    pub fn pinned(&self) -> Option<&NoteVerifier> {
        self.pinned.as_ref()
    }

    /// The state as JSON text.
    pub fn to_json(&self) -> String {
        let wire = Wire {
            format: FORMAT.to_string(),
            origin: self.origin.clone(),
            pinned_vkey: self.pinned.as_ref().map(NoteVerifier::to_vkey),
            size: self.size(),
            root: self.root(),
            right_edge: self.range.hashes(),
            checkpoint: self.note.clone(),
            tau: self.rule.map(|r| r.tau),
            fallback: self.rule.map(|r| r.fallback),
            records: self
                .kept
                .iter()
                .map(|r| WireRecord {
                    index: r.index,
                    leaf: STANDARD.encode(&r.leaf),
                    content: STANDARD.encode(&r.content),
                })
                .collect(),
        };
        // A struct of strings, numbers and lists always serialises.
        serde_json::to_string_pretty(&wire).unwrap_or_default()
    }

    /// Reads a state saved by [`to_json`](Self::to_json); the right edge must fold to the
    /// saved root.
    pub fn from_json(text: &str) -> Result<MonitorState, String> {
        let wire: Wire = serde_json::from_str(text)
            .map_err(|e| format!("the monitor state is not valid: {e}"))?;
        if wire.format != FORMAT {
            return Err(format!(
                "the monitor state has format {:?}, this build reads {FORMAT:?}",
                wire.format
            ));
        }
        let range = CompactRange::from_parts(wire.size, &wire.right_edge)
            .map_err(|e| format!("the monitor state's right edge: {e}"))?;
        if range.root() != wire.root {
            return Err("the monitor state's right edge does not fold to its root".into());
        }
        let pinned = wire
            .pinned_vkey
            .as_deref()
            .map(NoteVerifier::parse)
            .transpose()
            .map_err(|e| format!("the monitor state's pinned key: {e}"))?;
        let rule = match (wire.tau, wire.fallback) {
            (Some(t), Some(f)) => Some(LabelRule::new(t, f)),
            (None, None) => None,
            _ => return Err("the monitor state has τ without fallback or the reverse".into()),
        };
        let mut kept = Vec::with_capacity(wire.records.len());
        for r in wire.records {
            let decode = |s: &str| {
                STANDARD
                    .decode(s)
                    .map_err(|e| format!("the monitor state's record {}: {e}", r.index))
            };
            kept.push(KeptRecord {
                index: r.index,
                leaf: decode(&r.leaf)?,
                content: decode(&r.content)?,
            });
        }
        Ok(MonitorState {
            origin: wire.origin,
            pinned,
            range,
            note: wire.checkpoint,
            rule,
            kept,
        })
    }
}
