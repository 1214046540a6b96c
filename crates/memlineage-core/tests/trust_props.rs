//! Property tests of the label rule (paper §M4), including Theorem 1 (untrusted-path
//! persistence): if a path from an EXTERNAL root to entry v has every edge weight > τ, then
//! label(v) ≥ DERIVED_UNTRUSTED.

use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::trust::{ParentEdge, compute_label};
use proptest::prelude::*;

/// A random DAG in topological order: node i's parents are earlier nodes.
#[derive(Debug, Clone)]
struct Dag {
    /// Writer class of each node.
    writers: Vec<TrustClass>,
    /// (parent index, weight in bp) per node.
    parents: Vec<Vec<(usize, u16)>>,
    tau: u16,
    fallback: Fallback,
}

fn dag() -> impl Strategy<Value = Dag> {
    (2usize..40, 0u16..=10000, any::<bool>()).prop_flat_map(|(n, tau, strict)| {
        let writers = proptest::collection::vec(
            prop_oneof![3 => Just(TrustClass::Trusted), 1 => Just(TrustClass::External)],
            n,
        );
        let parents = (0..n)
            .map(|i| {
                if i == 0 {
                    Just(Vec::new()).boxed()
                } else {
                    proptest::collection::vec((0..i, 0u16..=10000), 0..4).boxed()
                }
            })
            .collect::<Vec<_>>();
        (writers, parents).prop_map(move |(writers, parents)| Dag {
            writers,
            parents,
            tau,
            fallback: if strict {
                Fallback::Strict
            } else {
                Fallback::Permissive
            },
        })
    })
}

fn labels(d: &Dag, fallback: Fallback) -> Vec<TrustLabel> {
    let tau = Weight::from_bp(d.tau).unwrap();
    let mut out: Vec<TrustLabel> = Vec::with_capacity(d.writers.len());
    for (i, ps) in d.parents.iter().enumerate() {
        let edges: Vec<ParentEdge> = ps
            .iter()
            .map(|(p, w)| ParentEdge {
                label: out[*p],
                weight: Weight::from_bp(*w).unwrap(),
            })
            .collect();
        out.push(compute_label(d.writers[i], &edges, tau, fallback).label);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Theorem 1: every entry reachable from an EXTERNAL root through edges all above τ is
    /// labelled at least DERIVED_UNTRUSTED, under both fallbacks.
    #[test]
    fn theorem_1_untrusted_path_persistence(d in dag()) {
        let ls = labels(&d, d.fallback);
        // reach[i]: there is a path from an EXTERNAL root to i with every edge > τ.
        let mut reach = vec![false; ls.len()];
        for i in 0..ls.len() {
            if d.parents[i].is_empty() && ls[i] == TrustLabel::External {
                reach[i] = true;
            }
            for (p, w) in &d.parents[i] {
                if reach[*p] && *w > d.tau {
                    reach[i] = true;
                }
            }
            if reach[i] {
                prop_assert!(ls[i] >= TrustLabel::DerivedUntrusted, "node {} has {:?}", i, ls[i]);
            }
        }
    }

    /// Strict never labels lower than permissive.
    #[test]
    fn strict_is_at_least_permissive(d in dag()) {
        let p = labels(&d, Fallback::Permissive);
        let s = labels(&d, Fallback::Strict);
        for (a, b) in p.iter().zip(&s) {
            prop_assert!(b >= a);
        }
    }

    /// Monotonicity: raising any parent's label never lowers the child's. Retroactive distrust
    /// relies on it (raised labels only ever propagate upwards).
    #[test]
    fn label_rule_is_monotone(
        parents in proptest::collection::vec((0usize..4, 0u16..=10000), 0..6),
        bump in 0usize..6,
        tau in 0u16..=10000,
        strict in any::<bool>(),
    ) {
        let fb = if strict { Fallback::Strict } else { Fallback::Permissive };
        let tau = Weight::from_bp(tau).unwrap();
        let edges: Vec<ParentEdge> = parents
            .iter()
            .map(|(l, w)| ParentEdge { label: TrustLabel::ALL[*l], weight: Weight::from_bp(*w).unwrap() })
            .collect();
        let before = compute_label(TrustClass::Trusted, &edges, tau, fb).label;
        let mut raised = edges.clone();
        if let Some(e) = raised.get_mut(bump) {
            e.label = TrustLabel::External;
        }
        let after = compute_label(TrustClass::Trusted, &raised, tau, fb).label;
        prop_assert!(after >= before, "{:?} -> {:?}", before, after);
    }

    /// Judged weights cannot erase taint (issue 11, item 4): under the strict fallback, a
    /// weight of 0 on an untrusted parent (a judge's 0, a weight that rounded to 0, a parent
    /// truncated before it was judged) gives exactly the label that one basis point gives.
    #[test]
    fn a_zero_weight_never_erases_an_untrusted_parent(
        parents in proptest::collection::vec((0usize..4, 0u16..=10000), 1..6),
        zeroed in 0usize..6,
        tau in 0u16..=10000,
    ) {
        let tau = Weight::from_bp(tau).unwrap();
        let edges: Vec<ParentEdge> = parents
            .iter()
            .map(|(l, w)| ParentEdge { label: TrustLabel::ALL[*l], weight: Weight::from_bp(*w).unwrap() })
            .collect();
        let i = zeroed % edges.len();
        let mut zero = edges.clone();
        zero[i].weight = Weight::ZERO;
        let mut one = edges.clone();
        one[i].weight = Weight::from_bp(1).unwrap();
        let z = compute_label(TrustClass::Trusted, &zero, tau, Fallback::Strict).label;
        let o = compute_label(TrustClass::Trusted, &one, tau, Fallback::Strict).label;
        if edges[i].label.is_untrusted() {
            prop_assert_eq!(z, o);
        }
    }

    /// Labels of roots are exactly the writer's class.
    #[test]
    fn roots_take_writer_class(tau in 0u16..=10000, ext in any::<bool>()) {
        let class = if ext { TrustClass::External } else { TrustClass::Trusted };
        let l = compute_label(class, &[], Weight::from_bp(tau).unwrap(), Fallback::Strict).label;
        prop_assert_eq!(l, class.root_label());
    }
}
