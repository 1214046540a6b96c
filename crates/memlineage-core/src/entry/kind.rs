//! Entry kinds: content records and the control records that the log itself is made of.

use std::fmt;
use std::str::FromStr;

/// What kind of record an entry is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// The user's own words.
    UserInput,
    /// The output of a tool call (web page, e-mail, file, API response).
    ToolOutput,
    /// Something the agent observed or was told.
    Observation,
    /// Written by the agent from other entries (a summary, a plan, a remembered fact).
    Derived,
    /// A signed request to forget an entry (control record).
    Tombstone,
    /// A signed retroactive distrust of an entry or a principal (control record).
    Distrust,
    /// A gate decision on a tool call (control record).
    GateDecision,
    /// A change to the principal registry (control record).
    Registry,
}

impl EntryKind {
    /// All kinds.
    pub const ALL: [EntryKind; 8] = [
        EntryKind::UserInput,
        EntryKind::ToolOutput,
        EntryKind::Observation,
        EntryKind::Derived,
        EntryKind::Tombstone,
        EntryKind::Distrust,
        EntryKind::GateDecision,
        EntryKind::Registry,
    ];

    /// The encoded name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::UserInput => "user_input",
            EntryKind::ToolOutput => "tool_output",
            EntryKind::Observation => "observation",
            EntryKind::Derived => "derived",
            EntryKind::Tombstone => "tombstone",
            EntryKind::Distrust => "distrust",
            EntryKind::GateDecision => "gate_decision",
            EntryKind::Registry => "registry",
        }
    }

    /// Control records are about the log, not memory: never retrieved for a prompt, never erased.
    pub fn is_control(self) -> bool {
        matches!(
            self,
            EntryKind::Tombstone
                | EntryKind::Distrust
                | EntryKind::GateDecision
                | EntryKind::Registry
        )
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EntryKind {
    type Err = crate::label::ParseLabelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EntryKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| crate::label::ParseLabelError {
                what: "entry kind",
                input: s.chars().take(80).collect(),
                expected: "user_input, tool_output, observation, derived, tombstone, distrust, gate_decision or registry",
            })
    }
}
