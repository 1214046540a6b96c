//! The earliest carrier of a value in the log (issue 19, `docs/gate.md`, "Earliest carrier").
//!
//! Lineage is declared by the writer, and a writer can omit it: an agent steered by an
//! injection writes "rent now goes to <the attacker's IBAN>" naming no parent, and that note is
//! `TRUSTED`. The log is totally ordered and append-only, so it knows more than the writer
//! declares: where the value *first* appeared. Under `provenance = "value"` a carrier's value
//! label is therefore also raised by the earliest entry of the log that carries the value (as
//! the caller may see it) when that entry is untrusted and earlier than the carrier:
//!
//! ```text
//! vl'(c) = max(vl(c), derived(label(first)))   if first is untrusted and logged before c
//! vl'(c) = vl(c)                                otherwise
//! ```
//!
//! A value first seen in an untrusted entry stays untrusted in every later entry that repeats
//! it, whatever that entry's label or declared parents; a value that first appeared in a trusted
//! entry is not raised when an attacker echoes it later (the echo itself is as untrusted as its
//! writer, and under `carriers = "any"` the trusted carrier still decides).
//!
//! This module is pure data: the handle looks the keys up in the store *before* the decision
//! ([`value_keys_of_arguments`](super::value_keys_of_arguments), and the keys of the repair
//! candidates) and hands the answers in; a key it did not look up counts as carried first by an
//! entry that could not be examined (`EXTERNAL`, fail closed).

use super::ContextEntry;
use super::value_key::ValueKey;
use crate::hash::EntryId;
use std::collections::BTreeMap;

/// The earliest entry of the log that carries a value, as the caller may see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstCarrier {
    /// Its leaf index in the log.
    pub index: u64,
    /// The entry, with its effective label, writer and taint path (content not needed).
    pub entry: ContextEntry,
}

/// What the store said about one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Earliest<'a> {
    /// No entry the caller may see carries the value.
    Nowhere,
    /// The earliest carrier.
    At(&'a FirstCarrier),
    /// The key was not looked up (or the lookup gave up): counts as an unexamined `EXTERNAL`
    /// carrier.
    NotLookedUp,
}

/// The answers of the store's value index for one decision, and the log positions of the
/// context (and repair pool) entries they are compared with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirstCarriers {
    firsts: BTreeMap<ValueKey, Option<FirstCarrier>>,
    positions: BTreeMap<EntryId, u64>,
}

impl FirstCarriers {
    /// No answers yet.
    pub fn new() -> FirstCarriers {
        FirstCarriers::default()
    }

    /// Records the answer for `key`: its earliest visible carrier, or `None` when no entry
    /// the caller may see carries it.
    pub fn insert(&mut self, key: ValueKey, first: Option<FirstCarrier>) {
        self.firsts.insert(key, first);
    }

    /// Records the log index of a context or pool entry.
    pub fn insert_position(&mut self, id: EntryId, index: u64) {
        self.positions.insert(id, index);
    }

    /// The answer for `key`.
    pub fn earliest(&self, key: &ValueKey) -> Earliest<'_> {
        match self.firsts.get(key) {
            None => Earliest::NotLookedUp,
            Some(None) => Earliest::Nowhere,
            Some(Some(f)) => Earliest::At(f),
        }
    }

    /// The log index of a context or pool entry, when known.
    pub fn position(&self, id: &EntryId) -> Option<u64> {
        self.positions.get(id).copied()
    }

    /// How many keys were looked up.
    pub fn len(&self) -> usize {
        self.firsts.len()
    }

    /// Whether no key was looked up.
    pub fn is_empty(&self) -> bool {
        self.firsts.is_empty()
    }
}

/// How the earliest carrier raised a carrier's value label.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Earlier<'a> {
    /// This untrusted entry carried the value first, earlier than the carrier.
    Entry(&'a ContextEntry),
    /// The value's key was not looked up: an unexamined carrier, counted `EXTERNAL`.
    NotLookedUp,
}

impl<'a> Earlier<'a> {
    /// The label it raises a carrier's value label to (at least).
    pub(crate) fn label(&self) -> crate::label::TrustLabel {
        match self {
            Earlier::Entry(e) => e.label.derived(),
            Earlier::NotLookedUp => crate::label::TrustLabel::External,
        }
    }
}

/// The earliest carrier that raises the value label of `carrier` (logged at the position
/// `firsts` knows, or not in the log) for a value whose readings have the keys `keys`: an
/// untrusted first carrier logged before it (the least trusted over the readings), or a key that
/// was not looked up. `None` when nothing raises it — no key (an unindexed type), the carrier is
/// itself the earliest, or the earliest is trusted.
pub(crate) fn raising<'a>(
    firsts: &'a FirstCarriers,
    keys: &[ValueKey],
    carrier: Option<&EntryId>,
) -> Option<Earlier<'a>> {
    let at = carrier.and_then(|id| firsts.position(id));
    let mut worst: Option<Earlier<'a>> = None;
    for key in keys {
        let e = match firsts.earliest(key) {
            Earliest::Nowhere => continue,
            Earliest::NotLookedUp => Earlier::NotLookedUp,
            Earliest::At(f) => {
                let earlier = match at {
                    Some(p) => f.index < p,
                    None => carrier != Some(&f.entry.id),
                };
                if !earlier || !f.entry.label.is_untrusted() {
                    continue;
                }
                Earlier::Entry(&f.entry)
            }
        };
        if worst.is_none_or(|w| e.label() > w.label()) {
            worst = Some(e);
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryKind;
    use crate::hash::Hash256;
    use crate::label::TrustLabel;

    fn entry(n: u8, label: TrustLabel) -> ContextEntry {
        let id = EntryId(Hash256([n; 32]));
        ContextEntry {
            id,
            label,
            writer: format!("w{n}"),
            kind: EntryKind::Observation,
            content: None,
            taint_path: if label.is_untrusted() {
                vec![id]
            } else {
                Vec::new()
            },
        }
    }

    fn key(n: u8) -> ValueKey {
        ValueKey([n; 16])
    }

    fn firsts(first: Option<(u64, ContextEntry)>, carrier: (u8, u64)) -> FirstCarriers {
        let mut f = FirstCarriers::new();
        f.insert(
            key(1),
            first.map(|(index, entry)| FirstCarrier { index, entry }),
        );
        f.insert_position(EntryId(Hash256([carrier.0; 32])), carrier.1);
        f
    }

    #[test]
    fn an_earlier_untrusted_first_carrier_raises() {
        let f = firsts(Some((3, entry(9, TrustLabel::External))), (2, 7));
        let c = EntryId(Hash256([2; 32]));
        let e = raising(&f, &[key(1)], Some(&c)).expect("raised");
        assert_eq!(e.label(), TrustLabel::DerivedUntrusted);
        // No context carrier: the earliest carrier fails the value on its own.
        assert!(raising(&f, &[key(1)], None).is_some());
    }

    #[test]
    fn a_trusted_or_later_or_same_first_carrier_does_not_raise() {
        let c = EntryId(Hash256([2; 32]));
        let trusted = firsts(Some((3, entry(9, TrustLabel::Trusted))), (2, 7));
        assert!(raising(&trusted, &[key(1)], Some(&c)).is_none());
        // The carrier is logged before the index's first carrier: it is the earliest itself.
        let later = firsts(Some((9, entry(9, TrustLabel::External))), (2, 7));
        assert!(raising(&later, &[key(1)], Some(&c)).is_none());
        let itself = firsts(Some((7, entry(2, TrustLabel::External))), (2, 7));
        assert!(raising(&itself, &[key(1)], Some(&c)).is_none());
        let nowhere = firsts(None, (2, 7));
        assert!(raising(&nowhere, &[key(1)], Some(&c)).is_none());
    }

    #[test]
    fn a_key_not_looked_up_fails_closed() {
        let f = firsts(None, (2, 7));
        let c = EntryId(Hash256([2; 32]));
        let e = raising(&f, &[key(5)], Some(&c)).expect("fail closed");
        assert_eq!(e.label(), TrustLabel::External);
        assert!(matches!(e, Earlier::NotLookedUp));
    }

    #[test]
    fn the_least_trusted_reading_decides() {
        let mut f = firsts(Some((3, entry(9, TrustLabel::Trusted))), (2, 7));
        f.insert(
            key(2),
            Some(FirstCarrier {
                index: 1,
                entry: entry(8, TrustLabel::External),
            }),
        );
        let c = EntryId(Hash256([2; 32]));
        let Some(Earlier::Entry(e)) = raising(&f, &[key(1), key(2)], Some(&c)) else {
            panic!("the untrusted reading raises");
        };
        assert_eq!(e.writer, "w8");
    }
}
