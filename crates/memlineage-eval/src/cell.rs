//! The defence cells: what each one verifies at retrieval and whether a gate stands before the
//! sensitive tools.

use memlineage_core::gate::{Policy, Provenance};
use memlineage_core::label::Fallback;

/// A defence configuration of the attack and utility tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cell {
    /// No verification, no gate: memory is read straight from the store (raw rows, claimed
    /// labels), and every proposed call is dispatched.
    NoDefense,
    /// Signatures, registry and Merkle inclusion verified at retrieval (`Memory::search`), so
    /// raw-planted and forged rows are dropped; but no lineage: every validly signed entry is
    /// trusted and every proposed call is dispatched.
    SigOnly,
    /// The full stack with the paper's rules: verified retrieval, labels along the lineage DAG
    /// with the permissive fallback, and the gate (deny mode) before sensitive tools judging
    /// each carrier of a value by its own label (`provenance = "entry"`).
    MemLineage,
    /// As [`Cell::MemLineage`], with the strict fallback.
    MemLineageStrict,
    /// Our defaults: the strict fallback, and the gate tracing every value to the ancestor where
    /// it first appeared (`provenance = "value"`, docs/gate.md).
    MemLineageProvenance,
}

/// `policy` with `provenance = "entry"` (the paper's rule).
pub(crate) fn entry_provenance(policy: &Policy) -> Policy {
    let mut p = policy.clone();
    p.provenance = Provenance::Entry;
    p
}

impl Cell {
    /// Every cell, in table order.
    pub const ALL: [Cell; 5] = [
        Cell::NoDefense,
        Cell::SigOnly,
        Cell::MemLineage,
        Cell::MemLineageStrict,
        Cell::MemLineageProvenance,
    ];

    /// The name used in every artifact.
    pub fn name(self) -> &'static str {
        match self {
            Cell::NoDefense => "no_defense",
            Cell::SigOnly => "sig_only_baseline",
            Cell::MemLineage => "memlineage",
            Cell::MemLineageStrict => "memlineage_strict",
            Cell::MemLineageProvenance => "memlineage_provenance",
        }
    }

    /// Whether retrieval verifies (signature, registry, inclusion, label).
    pub fn verifies(self) -> bool {
        self != Cell::NoDefense
    }

    /// Whether the gate decides on sensitive calls.
    pub fn gates(self) -> bool {
        matches!(
            self,
            Cell::MemLineage | Cell::MemLineageStrict | Cell::MemLineageProvenance
        )
    }

    /// Whether the gate traces values through the lineage (`provenance = "value"`).
    pub fn value_provenance(self) -> bool {
        self == Cell::MemLineageProvenance
    }

    /// The label fallback of the store.
    pub fn fallback(self) -> Fallback {
        match self {
            Cell::MemLineageStrict | Cell::MemLineageProvenance => Fallback::Strict,
            _ => Fallback::Permissive,
        }
    }
}

/// A defence configuration of the banking table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BankCell {
    /// Every proposed call dispatched.
    NoDefense,
    /// Verified retrieval, no gate (every tool output in the banking suite is validly signed by
    /// its registered source, so this is no_defense again).
    SigOnly,
    /// The gate in deny mode.
    Deny,
    /// The gate with authority repair.
    Repair,
}

impl BankCell {
    /// Every banking cell, in table order.
    pub const ALL: [BankCell; 4] = [
        BankCell::NoDefense,
        BankCell::SigOnly,
        BankCell::Deny,
        BankCell::Repair,
    ];

    /// The name used in every artifact.
    pub fn name(self) -> &'static str {
        match self {
            BankCell::NoDefense => "no_defense",
            BankCell::SigOnly => "sig_only_baseline",
            BankCell::Deny => "memlineage_deny",
            BankCell::Repair => "memlineage_repair",
        }
    }

    /// Whether the gate decides.
    pub fn gates(self) -> bool {
        matches!(self, BankCell::Deny | BankCell::Repair)
    }
}
