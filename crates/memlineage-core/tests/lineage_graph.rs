//! Lineage queries (M4): ancestors, descendants, the taint path and the explanation of a label,
//! over an in-memory source; bounds on huge and malformed graphs.

use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::lineage::{
    LineageEdge, LineageNode, LineageNodeInfo, LineageSource, MAX_NODES, MemoryLineage, ancestors,
    descendants, explain, taint_path,
};
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use proptest::prelude::*;
use std::cell::Cell;
use std::collections::BTreeSet;
use std::convert::Infallible;

fn id(n: u32) -> EntryId {
    EntryId(Hash256::of(&n.to_be_bytes()))
}

fn w(bp: u16) -> Weight {
    Weight::from_bp(bp).expect("at most 10000 bp")
}

/// A graph builder that computes every label the way a verifier does, from the parents'
/// effective labels.
struct Builder {
    g: MemoryLineage,
    tau: Weight,
    fallback: Fallback,
}

impl Builder {
    fn new() -> Self {
        Builder {
            g: MemoryLineage::new(),
            tau: w(5000),
            fallback: Fallback::Strict,
        }
    }

    fn effective(&self, e: &EntryId) -> TrustLabel {
        self.g
            .node(e)
            .ok()
            .flatten()
            .expect("parents are added before their children")
            .node
            .effective_label
    }

    /// Adds entry `n`; `distrust` marks it distrusted (effective label EXTERNAL).
    fn add_with(
        &mut self,
        n: u32,
        class: TrustClass,
        parents: &[(u32, u16)],
        distrust: bool,
    ) -> TrustLabel {
        let mut ps: Vec<Parent> = parents
            .iter()
            .map(|&(p, bp)| Parent {
                id: id(p),
                weight: w(bp),
            })
            .collect();
        ps.sort();
        let edges: Vec<ParentEdge> = ps
            .iter()
            .map(|p| ParentEdge {
                label: self.effective(&p.id),
                weight: p.weight,
            })
            .collect();
        let label = compute_label(class, &edges, self.tau, self.fallback).label;
        let effective = if distrust {
            TrustLabel::External
        } else {
            label
        };
        let kind = if parents.is_empty() {
            if class == TrustClass::External {
                EntryKind::ToolOutput
            } else {
                EntryKind::UserInput
            }
        } else {
            EntryKind::Derived
        };
        self.g.insert(LineageNodeInfo {
            node: LineageNode {
                id: id(n),
                label,
                effective_label: effective,
                writer: if class == TrustClass::External {
                    "email".into()
                } else {
                    "agent".into()
                },
                kind,
                snippet: format!("entry {n}"),
                distrusted: distrust,
            },
            parents: ps,
            tau: self.tau,
            fallback: self.fallback,
            writer_class: class,
            store_rule: None,
        });
        effective
    }

    fn add(&mut self, n: u32, class: TrustClass, parents: &[(u32, u16)]) -> TrustLabel {
        self.add_with(n, class, parents, false)
    }
}

use TrustClass::{External as Ext, Trusted as Tr};

/// external e-mail (1) → summary (2, 0.8) → plan (4, 0.9); trusted user note (3) → plan (0.3).
fn known() -> Builder {
    let mut b = Builder::new();
    b.add(1, Ext, &[]);
    b.add(2, Tr, &[(1, 8000)]);
    b.add(3, Tr, &[]);
    b.add(4, Tr, &[(2, 9000), (3, 3000)]);
    b
}

fn ids(v: &[u32]) -> Vec<EntryId> {
    v.iter().map(|&n| id(n)).collect()
}

fn sorted(v: &[u32]) -> Vec<EntryId> {
    let mut v = ids(v);
    v.sort();
    v
}

#[test]
fn known_graph_ancestors() {
    let b = known();
    let g = ancestors(&b.g, &id(4), 10).unwrap();
    assert_eq!(g.focus, id(4));
    assert!(!g.truncated);
    let got: Vec<EntryId> = g.nodes.iter().map(|n| n.id).collect();
    assert_eq!(got, sorted(&[1, 2, 3, 4]));
    let mut expected = vec![
        LineageEdge {
            parent: id(1),
            child: id(2),
            weight: w(8000),
            strong: true,
        },
        LineageEdge {
            parent: id(2),
            child: id(4),
            weight: w(9000),
            strong: true,
        },
        LineageEdge {
            parent: id(3),
            child: id(4),
            weight: w(3000),
            strong: false,
        },
    ];
    expected.sort();
    assert_eq!(g.edges, expected);
    assert_eq!(
        g.node(&id(4)).unwrap().effective_label,
        TrustLabel::DerivedUntrusted
    );
    let e = g.explanation.unwrap();
    assert_eq!(e.label, TrustLabel::DerivedUntrusted);
    assert_eq!(e.path, ids(&[4, 2, 1]));
    assert!(e.text.contains("max-of-strong-edges"), "{}", e.text);
    assert!(e.text.contains(&id(1).short()));
}

#[test]
fn known_graph_descendants() {
    let b = known();
    let g = descendants(&b.g, &id(1), 10).unwrap();
    let got: Vec<EntryId> = g.nodes.iter().map(|n| n.id).collect();
    assert_eq!(got, sorted(&[1, 2, 4]));
    assert_eq!(g.edges.len(), 2);
    assert!(!g.truncated);
    let e = g.explanation.unwrap();
    assert_eq!(e.label, TrustLabel::External);
    assert_eq!(e.path, ids(&[1]));
    assert!(e.text.contains("root entry"), "{}", e.text);
    // The user's note reaches the plan only.
    let g = descendants(&b.g, &id(3), 10).unwrap();
    assert_eq!(
        g.nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        sorted(&[3, 4])
    );
    assert!(g.explanation.unwrap().path.is_empty());
}

#[test]
fn depth_limits_and_truncation() {
    let b = known();
    let g = ancestors(&b.g, &id(4), 0).unwrap();
    assert_eq!(g.nodes.len(), 1);
    assert!(g.edges.is_empty());
    assert!(g.truncated);
    let g = ancestors(&b.g, &id(4), 1).unwrap();
    assert_eq!(
        g.nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        sorted(&[2, 3, 4])
    );
    assert!(g.truncated);
    let g = ancestors(&b.g, &id(4), 2).unwrap();
    assert!(!g.truncated);
    let g = descendants(&b.g, &id(1), 1).unwrap();
    assert_eq!(g.nodes.len(), 2);
    assert!(g.truncated);
    // A root has no ancestors to leave out.
    assert!(!ancestors(&b.g, &id(1), 0).unwrap().truncated);
}

#[test]
fn taint_path_follows_the_causing_parent_in_a_multi_parent_dag() {
    let mut b = Builder::new();
    b.add(1, Ext, &[]); // e-mail
    b.add(2, Ext, &[]); // web page
    b.add(3, Tr, &[]); // user note
    assert_eq!(b.add(10, Tr, &[(1, 6000)]), TrustLabel::DerivedUntrusted);
    assert_eq!(b.add(11, Tr, &[(3, 9000)]), TrustLabel::DerivedTrusted);
    // Strong trusted parent, strong untrusted parent, weak external parent: the strong
    // untrusted one caused the label.
    assert_eq!(
        b.add(20, Tr, &[(11, 9500), (10, 7000), (2, 2000)]),
        TrustLabel::DerivedUntrusted
    );
    assert_eq!(taint_path(&b.g, &id(20)).unwrap(), ids(&[20, 10, 1]));
    // Two strong untrusted parents: the highest label (EXTERNAL) wins over DERIVED_UNTRUSTED.
    b.add(21, Tr, &[(10, 9000), (2, 6000)]);
    assert_eq!(taint_path(&b.g, &id(21)).unwrap(), ids(&[21, 2]));
    // Strict fallback, weak untrusted parents summing above τ: the heaviest one.
    assert_eq!(
        b.add(22, Tr, &[(11, 9000), (1, 2000), (10, 3500)]),
        TrustLabel::DerivedUntrusted
    );
    assert_eq!(taint_path(&b.g, &id(22)).unwrap(), ids(&[22, 10, 1]));
    let e = explain(&b.g, &id(22)).unwrap();
    assert!(e.text.contains("sum to 0.55"), "{}", e.text);
    // Strict fallback, a lone weak untrusted parent.
    assert_eq!(b.add(23, Tr, &[(2, 4000)]), TrustLabel::DerivedUntrusted);
    assert_eq!(taint_path(&b.g, &id(23)).unwrap(), ids(&[23, 2]));
    let e = explain(&b.g, &id(23)).unwrap();
    assert!(e.text.contains("strict fallback"), "{}", e.text);
    // A trusted focus has no taint path.
    assert!(taint_path(&b.g, &id(11)).unwrap().is_empty());
    // An external writer deriving from trusted entries: the path stops at it.
    b.add(24, Ext, &[(3, 9000)]);
    b.add(25, Tr, &[(24, 9000)]);
    assert_eq!(taint_path(&b.g, &id(25)).unwrap(), ids(&[25, 24]));
    let e = explain(&b.g, &id(24)).unwrap();
    assert!(e.text.contains("whatever it derives from"), "{}", e.text);
}

#[test]
fn distrust_ends_the_path_and_is_explained() {
    let mut b = Builder::new();
    b.add_with(1, Tr, &[], true); // a trusted principal's note, later distrusted
    assert_eq!(b.add(2, Tr, &[(1, 9000)]), TrustLabel::DerivedUntrusted);
    // Entry 3 was signed before the distrust: signed DERIVED_TRUSTED, effective higher.
    b.g.insert(LineageNodeInfo {
        node: LineageNode {
            id: id(3),
            label: TrustLabel::DerivedTrusted,
            effective_label: TrustLabel::DerivedUntrusted,
            writer: "agent".into(),
            kind: EntryKind::Derived,
            snippet: "plan".into(),
            distrusted: false,
        },
        parents: vec![Parent {
            id: id(2),
            weight: w(8000),
        }],
        tau: w(5000),
        fallback: Fallback::Strict,
        writer_class: Tr,
        store_rule: None,
    });
    assert_eq!(taint_path(&b.g, &id(3)).unwrap(), ids(&[3, 2, 1]));
    let e = explain(&b.g, &id(3)).unwrap();
    assert!(e.text.contains("signed as DERIVED_TRUSTED"), "{}", e.text);
    assert!(e.text.contains("distrust record"), "{}", e.text);
    let e = explain(&b.g, &id(1)).unwrap();
    assert_eq!(e.label, TrustLabel::External);
    assert_eq!(e.path, ids(&[1]));
    assert!(e.text.contains("retroactively distrusted"), "{}", e.text);
}

#[test]
fn trusted_labels_are_explained() {
    let mut b = Builder::new();
    b.add(1, Tr, &[]);
    b.add(2, Ext, &[]);
    b.add(3, Tr, &[(1, 9000), (2, 2000)]);
    let e = explain(&b.g, &id(3)).unwrap();
    assert_eq!(e.label, TrustLabel::DerivedTrusted);
    assert!(e.path.is_empty());
    assert!(e.text.contains("every strong parent"), "{}", e.text);
    assert!(e.text.contains("not above τ"), "{}", e.text);
    let e = explain(&b.g, &id(1)).unwrap();
    assert!(e.text.contains("trusted principal"), "{}", e.text);
    // The permissive fallback, with a weak untrusted parent only.
    b.fallback = Fallback::Permissive;
    assert_eq!(b.add(4, Tr, &[(2, 3000)]), TrustLabel::DerivedTrusted);
    let e = explain(&b.g, &id(4)).unwrap();
    assert!(e.text.contains("permissive fallback"), "{}", e.text);
    assert!(e.path.is_empty());
}

/// Counts the reads a query makes.
struct Counting<'a> {
    inner: &'a MemoryLineage,
    nodes: Cell<usize>,
    children: Cell<usize>,
}

impl LineageSource for Counting<'_> {
    type Error = Infallible;
    fn node(&self, id: &EntryId) -> Result<Option<LineageNodeInfo>, Infallible> {
        self.nodes.set(self.nodes.get() + 1);
        self.inner.node(id)
    }
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Infallible> {
        self.children.set(self.children.get() + 1);
        self.inner.children(id)
    }
}

#[test]
fn shared_ancestors_are_visited_once() {
    // 40 layers of 2 entries, each entry derived from both entries of the layer below: 2^40
    // paths from the top to the roots, 80 entries.
    let mut b = Builder::new();
    b.add(0, Ext, &[]);
    b.add(1, Tr, &[]);
    for layer in 1..40u32 {
        for j in 0..2 {
            let below = 2 * (layer - 1);
            b.add(2 * layer + j, Tr, &[(below, 6000), (below + 1, 6000)]);
        }
    }
    let top = 2 * 39;
    let src = Counting {
        inner: &b.g,
        nodes: Cell::new(0),
        children: Cell::new(0),
    };
    let g = ancestors(&src, &id(top), usize::MAX).unwrap();
    // Every entry below the top but its sibling at the top layer.
    assert_eq!(g.nodes.len(), 79);
    assert_eq!(g.edges.len(), 38 * 4 + 2);
    // One read per entry for the graph; the explanation's walk reads each parent of each path
    // entry a bounded number of times.
    assert!(src.nodes.get() < 80 + 10 * 40, "{} reads", src.nodes.get());
    let path = g.explanation.unwrap().path;
    assert_eq!(path.len(), 40);
    assert_eq!(path.last(), Some(&id(0)));
    let g = descendants(&src, &id(0), usize::MAX).unwrap();
    assert_eq!(g.nodes.len(), 79);
}

#[test]
fn node_cap_bounds_huge_graphs() {
    // A star: one entry derived from 12 000 roots.
    let mut g = MemoryLineage::new();
    let roots = 12_000u32;
    let mut parents = Vec::new();
    for n in 0..roots {
        g.insert(info(n, TrustLabel::Trusted, Tr, vec![]));
        parents.push(Parent {
            id: id(n),
            weight: w(100),
        });
    }
    parents.sort();
    g.insert(info(roots, TrustLabel::DerivedTrusted, Tr, parents));
    let a = ancestors(&g, &id(roots), usize::MAX).unwrap();
    assert_eq!(a.nodes.len(), MAX_NODES);
    assert!(a.truncated);
    assert_eq!(a.edges.len(), MAX_NODES - 1);
    let d = descendants(&g, &id(0), usize::MAX).unwrap();
    assert_eq!(d.nodes.len(), 2);
}

#[test]
fn long_chains_are_bounded() {
    // A chain of 12 000 derived entries over an external root.
    let mut g = MemoryLineage::new();
    let n = 12_000u32;
    g.insert(info(0, TrustLabel::External, Ext, vec![]));
    for i in 1..=n {
        g.insert(info(
            i,
            TrustLabel::DerivedUntrusted,
            Tr,
            vec![Parent {
                id: id(i - 1),
                weight: w(9000),
            }],
        ));
    }
    let path = taint_path(&g, &id(n)).unwrap();
    assert_eq!(path.len(), MAX_NODES);
    let e = explain(&g, &id(n)).unwrap();
    assert!(e.text.contains("cut after"), "{}", e.text);
    let a = ancestors(&g, &id(n), usize::MAX).unwrap();
    assert_eq!(a.nodes.len(), MAX_NODES);
    assert!(a.truncated);
}

fn info(n: u32, label: TrustLabel, class: TrustClass, parents: Vec<Parent>) -> LineageNodeInfo {
    LineageNodeInfo {
        node: LineageNode {
            id: id(n),
            label,
            effective_label: label,
            writer: "w".into(),
            kind: EntryKind::Derived,
            snippet: String::new(),
            distrusted: false,
        },
        parents,
        tau: w(5000),
        fallback: Fallback::Strict,
        writer_class: class,
        store_rule: None,
    }
}

#[test]
fn malformed_sources_terminate() {
    // A cycle (impossible in a real log, where parents precede children) and a missing parent.
    let mut g = MemoryLineage::new();
    let p = |n: u32| {
        vec![Parent {
            id: id(n),
            weight: w(9000),
        }]
    };
    g.insert(info(1, TrustLabel::DerivedUntrusted, Tr, p(2)));
    g.insert(info(2, TrustLabel::DerivedUntrusted, Tr, p(1)));
    assert_eq!(taint_path(&g, &id(1)).unwrap(), ids(&[1, 2]));
    let a = ancestors(&g, &id(1), usize::MAX).unwrap();
    assert_eq!(a.nodes.len(), 2);
    assert_eq!(a.edges.len(), 2);
    let d = descendants(&g, &id(1), usize::MAX).unwrap();
    assert_eq!(d.nodes.len(), 2);
    assert!(explain(&g, &id(1)).unwrap().text.contains("loops back"));

    g.insert(info(3, TrustLabel::DerivedUntrusted, Tr, p(99)));
    assert_eq!(taint_path(&g, &id(3)).unwrap(), ids(&[3]));
    let e = explain(&g, &id(3)).unwrap();
    assert!(e.text.contains("not known to this store"), "{}", e.text);
    let a = ancestors(&g, &id(3), 5).unwrap();
    assert_eq!(a.nodes.len(), 1);
    assert!(a.edges.is_empty());
}

/// A random DAG: entry i may derive from any earlier entries.
/// Entries (external writer?, parents as (earlier index, weight in bp)), τ in bp, strict?
type Dag = (Vec<(bool, Vec<(usize, u16)>)>, u16, bool);

fn random_dag() -> impl Strategy<Value = Dag> {
    (
        prop::collection::vec(
            (
                prop::bool::weighted(0.3),
                prop::collection::vec((any::<prop::sample::Index>(), 0u16..=10_000), 0..4),
            ),
            1..30,
        ),
        0u16..=10_000,
        any::<bool>(),
    )
        .prop_map(|(entries, tau, strict)| {
            let entries = entries
                .into_iter()
                .enumerate()
                .map(|(i, (external, ps))| {
                    let ps = if i == 0 {
                        Vec::new()
                    } else {
                        let mut seen = BTreeSet::new();
                        ps.into_iter()
                            .map(|(ix, bp)| (ix.index(i), bp))
                            .filter(|(p, _)| seen.insert(*p))
                            .collect()
                    };
                    (external, ps)
                })
                .collect();
            (entries, tau, strict)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// On any DAG: the taint path is empty exactly for trusted labels; otherwise it is a chain of
    /// real edges through untrusted entries, each step the parent the label rule blames, ending
    /// at an external writer; and every edge on it is strong unless the strict fallback fired.
    #[test]
    fn taint_paths_are_chains_of_causing_edges((entries, tau, strict) in random_dag()) {
        let mut b = Builder::new();
        b.tau = w(tau);
        b.fallback = if strict { Fallback::Strict } else { Fallback::Permissive };
        for (i, (external, ps)) in entries.iter().enumerate() {
            let ps: Vec<(u32, u16)> = ps.iter().map(|&(p, bp)| (p as u32, bp)).collect();
            b.add(i as u32, if *external { Ext } else { Tr }, &ps);
        }
        for i in 0..entries.len() as u32 {
            let label = b.effective(&id(i));
            let path = taint_path(&b.g, &id(i)).unwrap();
            prop_assert_eq!(path.is_empty(), !label.is_untrusted());
            if path.is_empty() { continue; }
            prop_assert_eq!(path[0], id(i));
            for pair in path.windows(2) {
                let child = b.g.node(&pair[0]).unwrap().unwrap();
                let edge = child.parents.iter().find(|p| p.id == pair[1]);
                prop_assert!(edge.is_some());
                if !strict {
                    prop_assert!(edge.is_some_and(|p| p.weight > b.tau));
                }
                prop_assert!(b.effective(&pair[1]).is_untrusted());
                prop_assert_eq!(child.writer_class, Tr);
            }
            let last = b.g.node(path.last().unwrap()).unwrap().unwrap();
            prop_assert_eq!(last.writer_class, Ext);
            let e = explain(&b.g, &id(i)).unwrap();
            prop_assert_eq!(e.path, path);
            prop_assert_eq!(e.label, label);
            let a = ancestors(&b.g, &id(i), usize::MAX).unwrap();
            prop_assert!(!a.truncated);
            for e in &a.edges {
                prop_assert!(a.node(&e.parent).is_some() && a.node(&e.child).is_some());
            }
        }
    }
}
