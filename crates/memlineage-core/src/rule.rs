//! The store's label rule, and what a per-entry override may change (paper §M4; DESIGN.md: "a
//! writer cannot launder by signing a lower label").
//!
//! Every entry records the τ and fallback its label was computed with. The store has its own
//! rule, signed into the genesis record (log index 0). An entry may override the store's rule
//! only to be *stricter*: τ no higher than the store's, and `strict` when the store is `strict`.
//!
//! Lowering τ is not monotone on its own under `strict`: a trusted parent that becomes strong
//! can turn "no strong parent, one weak untrusted parent" (`DERIVED_UNTRUSTED`) into "strong
//! parents all trusted" (`DERIVED_TRUSTED`). So the label an entry must carry is the higher of
//! the labels under its own rule and under the store's rule ([`bounded_label`]): an override
//! can only ever raise a label, never lower it below what the store's rule gives.

use crate::label::{Fallback, TrustClass, TrustLabel, Weight};
use crate::trust::{LabelDecision, ParentEdge, compute_label};
use std::fmt;

/// A label rule: the threshold τ and the fallback mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelRule {
    /// An edge is strong when its weight is strictly greater than τ.
    pub tau: Weight,
    /// What a derived entry with no strong parent is labelled.
    pub fallback: Fallback,
}

/// How an entry's rule is laxer than the store's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Laxer {
    /// The entry's rule.
    pub entry: LabelRule,
    /// The store's rule.
    pub store: LabelRule,
}

impl fmt::Display for Laxer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, s) = (self.entry, self.store);
        let mut parts = Vec::new();
        if e.tau > s.tau {
            parts.push(format!("τ {} is above the store's τ {}", e.tau, s.tau));
        }
        if e.fallback == Fallback::Permissive && s.fallback == Fallback::Strict {
            parts.push("the fallback is permissive but the store's is strict".to_string());
        }
        write!(
            f,
            "label rule (τ {}, {}) is laxer than the store's (τ {}, {}): {}",
            e.tau,
            e.fallback,
            s.tau,
            s.fallback,
            parts.join(" and ")
        )
    }
}

impl LabelRule {
    /// A rule from τ and a fallback.
    pub fn new(tau: Weight, fallback: Fallback) -> LabelRule {
        LabelRule { tau, fallback }
    }

    /// `Some` when this (an entry's) rule is laxer than `store`'s: a higher τ, or `permissive`
    /// where the store is `strict`. Such an override is refused at write and flagged by every
    /// verifier.
    pub fn laxer_than(self, store: LabelRule) -> Option<Laxer> {
        let laxer_tau = self.tau > store.tau;
        let laxer_fallback =
            self.fallback == Fallback::Permissive && store.fallback == Fallback::Strict;
        (laxer_tau || laxer_fallback).then_some(Laxer { entry: self, store })
    }
}

/// The label an entry written by a principal of class `writer` must carry: the higher of
/// [`compute_label`] under the entry's own rule and under the store's rule (ties go to the
/// entry's rule, whose cause is then reported). When `entry == store` this is exactly
/// `compute_label`.
pub fn bounded_label(
    writer: TrustClass,
    parents: &[ParentEdge],
    entry: LabelRule,
    store: LabelRule,
) -> LabelDecision {
    let own = compute_label(writer, parents, entry.tau, entry.fallback);
    if entry == store {
        return own;
    }
    let floor = compute_label(writer, parents, store.tau, store.fallback);
    if floor.label > own.label { floor } else { own }
}

/// The least label of `bounded_label`, for callers that only need the label.
pub fn required_label(
    writer: TrustClass,
    parents: &[ParentEdge],
    entry: LabelRule,
    store: LabelRule,
) -> TrustLabel {
    bounded_label(writer, parents, entry, store).label
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(bp: u16) -> Weight {
        Weight::from_bp(bp).unwrap()
    }
    fn rule(bp: u16, fallback: Fallback) -> LabelRule {
        LabelRule::new(w(bp), fallback)
    }
    fn edge(label: TrustLabel, bp: u16) -> ParentEdge {
        ParentEdge {
            label,
            weight: w(bp),
        }
    }

    #[test]
    fn laxer_overrides_are_named() {
        let store = rule(5000, Fallback::Strict);
        assert!(rule(5000, Fallback::Strict).laxer_than(store).is_none());
        assert!(rule(2000, Fallback::Strict).laxer_than(store).is_none());
        let l = rule(10000, Fallback::Permissive).laxer_than(store).unwrap();
        let text = l.to_string();
        assert!(text.contains("τ 1 is above the store's τ 0.5"), "{text}");
        assert!(
            text.contains("permissive but the store's is strict"),
            "{text}"
        );
        assert!(rule(5001, Fallback::Strict).laxer_than(store).is_some());
        // Under a permissive store, either fallback is allowed.
        let permissive = rule(5000, Fallback::Permissive);
        assert!(
            rule(5000, Fallback::Strict)
                .laxer_than(permissive)
                .is_none()
        );
        assert!(
            rule(4000, Fallback::Permissive)
                .laxer_than(permissive)
                .is_none()
        );
    }

    #[test]
    fn a_lower_tau_alone_can_lower_a_strict_label_so_the_store_rule_bounds_it() {
        // τ 0.7: no strong parent, a weak external parent → DERIVED_UNTRUSTED under strict.
        // τ 0.5: the trusted parent becomes strong, the external one stays weak and alone
        // sums to 0.3 ≤ τ → DERIVED_TRUSTED. The store's rule keeps the entry untrusted.
        let ps = [
            edge(TrustLabel::Trusted, 6000),
            edge(TrustLabel::External, 3000),
        ];
        let store = rule(7000, Fallback::Strict);
        let entry = rule(5000, Fallback::Strict);
        assert_eq!(
            compute_label(TrustClass::Trusted, &ps, entry.tau, entry.fallback).label,
            TrustLabel::DerivedTrusted
        );
        assert_eq!(
            required_label(TrustClass::Trusted, &ps, entry, store),
            TrustLabel::DerivedUntrusted
        );
    }

    #[test]
    fn a_stricter_override_can_raise_a_label() {
        let ps = [edge(TrustLabel::External, 3000)];
        let store = rule(5000, Fallback::Permissive);
        assert_eq!(
            required_label(TrustClass::Trusted, &ps, store, store),
            TrustLabel::DerivedTrusted
        );
        assert_eq!(
            required_label(
                TrustClass::Trusted,
                &ps,
                rule(2000, Fallback::Permissive),
                store
            ),
            TrustLabel::DerivedUntrusted
        );
    }
}
