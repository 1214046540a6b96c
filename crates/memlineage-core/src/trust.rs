//! Label propagation along the lineage DAG (paper §M4, max-of-strong-edges with threshold τ).
//!
//! A root entry takes its writer's class. A derived entry takes the derived form of the highest
//! label among its *strong* parents, those whose weight is strictly greater than τ. When no parent
//! is strong the paper falls back to trusted ([`Fallback::Permissive`]); [`Fallback::Strict`] keeps
//! the taint of untrusted parents that are present but weak, alone or in sum, which closes the
//! paper's admitted hole of an attacker who pushes every attribution edge just under τ.
//!
//! Computing a label costs O(parents): it reads only the parents' labels, never the whole graph.

use crate::label::{Fallback, TrustClass, TrustLabel, Weight};

/// One parent edge as the label rule sees it: the parent's (effective) label and the edge weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParentEdge {
    /// The parent's label.
    pub label: TrustLabel,
    /// The attribution weight of the edge.
    pub weight: Weight,
}

/// Why an entry has its label: the rule that fired, and the parent (by position) that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelCause {
    /// A root entry: the writer's class.
    Root(TrustClass),
    /// The writer is external, so the entry is external whatever its parents.
    ExternalWriter,
    /// The highest-labelled strong parent (weight > τ), by index into the parent list.
    StrongParent(usize),
    /// No strong parent; the permissive fallback labels the entry `DERIVED_TRUSTED`.
    PermissiveFallback,
    /// Strict fallback: an untrusted parent is present but weak (by index), and no strong parent.
    StrictWeakUntrusted(usize),
    /// Strict fallback: weak untrusted parents together carry more than τ of the weight.
    StrictUntrustedSum {
        /// The summed weight of untrusted parents, in basis points (may exceed 10000).
        sum_bp: u32,
    },
    /// Strong parents exist but all are trusted.
    TrustedStrongParents,
}

/// The label of a new entry and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelDecision {
    /// The computed label.
    pub label: TrustLabel,
    /// The rule that produced it.
    pub cause: LabelCause,
}

/// The smallest weight the strict fallback gives an edge to an untrusted parent: one basis point.
///
/// A weight of 0 on an untrusted parent does not mean "no influence" that anyone verified: an
/// attribution judge answers 0 when it is persuaded by the parent's text, when the parent was
/// truncated before it was judged (the injection sat past the cut), or when its answer rounds
/// to 0 basis points. Under the strict fallback such an edge counts as the smallest non-zero
/// weight, so no weight a judge can give an untrusted parent yields a lower label than a small
/// non-zero one does (issue 11, item 4; `docs/lineage.md`).
pub const UNTRUSTED_FLOOR: Weight = match Weight::from_bp(1) {
    Some(w) => w,
    None => Weight::ZERO,
};

/// The weight the rule uses for edge `p`: its own, except that under the strict fallback an
/// untrusted parent weighs at least [`UNTRUSTED_FLOOR`].
pub fn effective_weight(p: &ParentEdge, fallback: Fallback) -> Weight {
    if fallback == Fallback::Strict && p.label.is_untrusted() {
        p.weight.max(UNTRUSTED_FLOOR)
    } else {
        p.weight
    }
}

/// Computes the label of an entry written by a principal of class `writer`, with `parents`.
///
/// The rule, in order:
/// 1. an external writer's entry is `EXTERNAL`, whatever it derives from;
/// 2. no parents: the writer's class (`TRUSTED`);
/// 3. strong parents (weight > τ) exist: the derived form of the highest strong parent's label;
///    under `strict` also `DERIVED_UNTRUSTED` when the untrusted parents' weights sum above τ;
/// 4. no strong parent: `permissive` → `DERIVED_TRUSTED`; `strict` → `DERIVED_UNTRUSTED` if any
///    untrusted parent is present, else `DERIVED_TRUSTED`.
///
/// Under `strict` every untrusted parent weighs at least [`UNTRUSTED_FLOOR`] (one basis point),
/// whatever weight it was given: a judge's 0 cannot erase taint ([`effective_weight`]).
pub fn compute_label(
    writer: TrustClass,
    parents: &[ParentEdge],
    tau: Weight,
    fallback: Fallback,
) -> LabelDecision {
    if writer == TrustClass::External {
        let cause = if parents.is_empty() {
            LabelCause::Root(writer)
        } else {
            LabelCause::ExternalWriter
        };
        return LabelDecision {
            label: TrustLabel::External,
            cause,
        };
    }
    if parents.is_empty() {
        return LabelDecision {
            label: writer.root_label(),
            cause: LabelCause::Root(writer),
        };
    }
    let mut strongest: Option<(usize, TrustLabel)> = None;
    let mut untrusted_sum: u32 = 0;
    let mut first_weak_untrusted: Option<usize> = None;
    for (i, p) in parents.iter().enumerate() {
        let weight = effective_weight(p, fallback);
        if weight > tau {
            if strongest.is_none_or(|(_, l)| p.label > l) {
                strongest = Some((i, p.label));
            }
        } else if p.label.is_untrusted() && weight > Weight::ZERO {
            first_weak_untrusted.get_or_insert(i);
        }
        if p.label.is_untrusted() {
            untrusted_sum += u32::from(weight.bp());
        }
    }
    match (strongest, fallback) {
        (Some((i, l)), _) if l.is_untrusted() => LabelDecision {
            label: TrustLabel::DerivedUntrusted,
            cause: LabelCause::StrongParent(i),
        },
        (Some(_), Fallback::Strict) if untrusted_sum > u32::from(tau.bp()) => LabelDecision {
            label: TrustLabel::DerivedUntrusted,
            cause: LabelCause::StrictUntrustedSum {
                sum_bp: untrusted_sum,
            },
        },
        (Some((i, _)), _) => LabelDecision {
            label: TrustLabel::DerivedTrusted,
            cause: if parents.len() == 1 {
                LabelCause::StrongParent(i)
            } else {
                LabelCause::TrustedStrongParents
            },
        },
        (None, Fallback::Permissive) => LabelDecision {
            label: TrustLabel::DerivedTrusted,
            cause: LabelCause::PermissiveFallback,
        },
        (None, Fallback::Strict) => match first_weak_untrusted {
            Some(i) => LabelDecision {
                label: TrustLabel::DerivedUntrusted,
                cause: LabelCause::StrictWeakUntrusted(i),
            },
            None => LabelDecision {
                label: TrustLabel::DerivedTrusted,
                cause: LabelCause::PermissiveFallback,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(bp: u16) -> Weight {
        Weight::from_bp(bp).unwrap()
    }
    fn edge(label: TrustLabel, bp: u16) -> ParentEdge {
        ParentEdge {
            label,
            weight: w(bp),
        }
    }
    use TrustLabel::*;

    #[test]
    fn roots_take_the_writer_class() {
        let d = compute_label(TrustClass::Trusted, &[], w(5000), Fallback::Strict);
        assert_eq!(d.label, Trusted);
        let d = compute_label(TrustClass::External, &[], w(5000), Fallback::Strict);
        assert_eq!(d.label, External);
    }

    #[test]
    fn strong_untrusted_parent_taints() {
        let ps = [edge(Trusted, 10000), edge(External, 6000)];
        for fb in [Fallback::Permissive, Fallback::Strict] {
            let d = compute_label(TrustClass::Trusted, &ps, w(5000), fb);
            assert_eq!(d.label, DerivedUntrusted);
            assert_eq!(d.cause, LabelCause::StrongParent(1));
        }
    }

    #[test]
    fn weight_equal_to_tau_is_weak() {
        let ps = [edge(External, 5000)];
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Permissive);
        assert_eq!(d.label, DerivedTrusted);
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Strict);
        assert_eq!(d.label, DerivedUntrusted);
        assert_eq!(d.cause, LabelCause::StrictWeakUntrusted(0));
    }

    #[test]
    fn strict_catches_many_weak_edges_summing_above_tau() {
        let ps = [
            edge(Trusted, 9000),
            edge(External, 2000),
            edge(External, 2000),
            edge(DerivedUntrusted, 2000),
        ];
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Permissive);
        assert_eq!(d.label, DerivedTrusted);
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Strict);
        assert_eq!(d.label, DerivedUntrusted);
        assert_eq!(d.cause, LabelCause::StrictUntrustedSum { sum_bp: 6000 });
    }

    /// Item 4 of issue 11: a zero weight on an untrusted parent (a judge's 0, a weight that
    /// rounded to 0, a parent truncated before it was judged) gives the label a one basis point
    /// weight gives, never a lower one; under `permissive` nothing changes.
    #[test]
    fn zero_weight_untrusted_parent_counts_as_the_smallest_weight_under_strict() {
        for others in [
            vec![],
            vec![edge(Trusted, 2000)],
            vec![edge(Trusted, 9000)],
            vec![edge(Trusted, 9000), edge(External, 4999)],
            vec![edge(Trusted, 9000), edge(External, 5000)],
        ] {
            for tau in [0u16, 1, 2500, 5000, 10000] {
                let mut zero = others.clone();
                zero.push(edge(External, 0));
                let mut small = others.clone();
                small.push(edge(External, 1));
                let z = compute_label(TrustClass::Trusted, &zero, w(tau), Fallback::Strict);
                let s = compute_label(TrustClass::Trusted, &small, w(tau), Fallback::Strict);
                assert_eq!(z.label, s.label, "{others:?} τ {tau}");
                assert!(z.label >= DerivedTrusted);
            }
        }
        let ps = [edge(External, 0)];
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Strict);
        assert_eq!(d.label, DerivedUntrusted);
        assert_eq!(d.cause, LabelCause::StrictWeakUntrusted(0));
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Permissive);
        assert_eq!(d.label, DerivedTrusted);
        // A trusted parent at 0 still records presence without influence.
        let ps = [edge(Trusted, 0)];
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Strict);
        assert_eq!(d.label, DerivedTrusted);
    }

    #[test]
    fn trusted_parents_give_derived_trusted() {
        let ps = [edge(Trusted, 10000), edge(DerivedTrusted, 8000)];
        let d = compute_label(TrustClass::Trusted, &ps, w(5000), Fallback::Strict);
        assert_eq!(d.label, DerivedTrusted);
    }

    #[test]
    fn external_writer_is_always_external() {
        let ps = [edge(Trusted, 10000)];
        let d = compute_label(TrustClass::External, &ps, w(5000), Fallback::Permissive);
        assert_eq!(d.label, External);
    }
}
