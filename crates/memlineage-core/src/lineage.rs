//! Lineage queries over the derivation DAG (paper §M4): ancestors, descendants, the taint path
//! that explains an untrusted label, and a readable explanation of any label.
//!
//! The algorithms are pure: they read the graph through a caller-supplied [`LineageSource`] (the
//! store implements it over its log; [`MemoryLineage`] is an in-memory one for tests and small
//! tools). Every walk is bounded — by the caller's `max_depth` and by [`MAX_NODES`] — and keeps a
//! visited set, so a DAG with shared ancestors is visited once and a huge or malformed graph
//! cannot make a query run forever.
//!
//! Formats for people and tools (text tree, JSON, Graphviz DOT, Mermaid) are in
//! [`crate::render::lineage`].

use crate::entry::{EntryKind, Parent};
use crate::hash::EntryId;
use crate::label::{Fallback, TrustClass, TrustLabel, Weight};
use crate::rule::{LabelRule, bounded_label};
use crate::trust::{LabelCause, LabelDecision, ParentEdge, compute_label};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::fmt::Write as _;

/// The most nodes one query collects (and the longest taint path it follows).
pub const MAX_NODES: usize = 10_000;

/// How many characters of content a node's snippet keeps (see [`snippet_of`]).
pub const SNIPPET_CHARS: usize = 60;

/// What a snippet reads when the content has been erased.
pub const ERASED_SNIPPET: &str = "(erased)";

/// One entry as a lineage graph shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageNode {
    /// The entry id.
    pub id: EntryId,
    /// The label as signed into the entry.
    pub label: TrustLabel,
    /// The effective label, after retroactive distrust.
    pub effective_label: TrustLabel,
    /// The writer principal's name.
    pub writer: String,
    /// The entry kind.
    pub kind: EntryKind,
    /// The first [`SNIPPET_CHARS`] characters of the content, or [`ERASED_SNIPPET`]
    /// (see [`snippet_of`]). Raw text: every format escapes it.
    pub snippet: String,
    /// Whether a distrust record names this entry or its writer.
    pub distrusted: bool,
}

/// One derivation edge, from a parent to the entry derived from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineageEdge {
    /// The parent (the earlier entry).
    pub parent: EntryId,
    /// The child (the entry derived from the parent).
    pub child: EntryId,
    /// The attribution weight of the edge.
    pub weight: Weight,
    /// Whether the weight is strictly above the child's τ.
    pub strong: bool,
}

/// Why an entry has its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The focus entry's effective label.
    pub label: TrustLabel,
    /// The taint path: from the focus (first) through the parent that caused each label, up to
    /// the untrusted root, distrusted entry or external-writer entry where the taint starts.
    /// Empty when the label is trusted (or the focus is unknown).
    pub path: Vec<EntryId>,
    /// One readable paragraph: the rule that gave the focus its label (root class, strong
    /// parent, strict fallback on weak untrusted parents or on their sum, distrust) and where
    /// the taint path ends.
    pub text: String,
}

/// A bounded piece of the lineage DAG around one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageGraph {
    /// The entry the query was about.
    pub focus: EntryId,
    /// The nodes, sorted by id; empty when the focus is not known to the source.
    pub nodes: Vec<LineageNode>,
    /// The edges between those nodes (the induced subgraph), sorted by parent then child.
    pub edges: Vec<LineageEdge>,
    /// Why the focus has its label; `None` when the focus is not known to the source.
    pub explanation: Option<Explanation>,
    /// Whether entries were left out because of `max_depth` or [`MAX_NODES`].
    pub truncated: bool,
}

impl LineageGraph {
    /// The node with this id, if the graph holds it.
    pub fn node(&self, id: &EntryId) -> Option<&LineageNode> {
        self.nodes
            .binary_search_by(|n| n.id.cmp(id))
            .ok()
            .map(|i| &self.nodes[i])
    }
}

/// What a [`LineageSource`] knows about one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageNodeInfo {
    /// The node as shown.
    pub node: LineageNode,
    /// The entry's parents with their weights, as signed.
    pub parents: Vec<Parent>,
    /// The entry's τ.
    pub tau: Weight,
    /// The entry's fallback.
    pub fallback: Fallback,
    /// The writer's trust class at the entry's log index (`EXTERNAL` once a distrust record
    /// names the writer).
    pub writer_class: TrustClass,
    /// The store's label rule, which bounds the entry's own rule from below
    /// ([`crate::rule::bounded_label`]); `None` when the entry's rule alone applies.
    pub store_rule: Option<LabelRule>,
}

/// Read access to the lineage DAG; the store implements it over its log.
pub trait LineageSource {
    /// The error reading the graph may fail with.
    type Error;
    /// The entry with this id, or `None` when the source does not know it.
    fn node(&self, id: &EntryId) -> Result<Option<LineageNodeInfo>, Self::Error>;
    /// The entries that name `id` as a parent, with the edge weights.
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Self::Error>;
}

/// The snippet of a content: its first [`SNIPPET_CHARS`] characters (with `…` when cut), or
/// [`ERASED_SNIPPET`] when the content has been erased.
pub fn snippet_of(content: Option<&str>) -> String {
    match content {
        None => ERASED_SNIPPET.to_string(),
        Some(c) => {
            let mut s: String = c.chars().take(SNIPPET_CHARS).collect();
            if c.chars().nth(SNIPPET_CHARS).is_some() {
                s.push('…');
            }
            s
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// The focus and its ancestors up to `max_depth` edges away (0: the focus alone), with every
/// edge among them and the explanation of the focus's label.
pub fn ancestors<S: LineageSource>(
    src: &S,
    focus: &EntryId,
    max_depth: usize,
) -> Result<LineageGraph, S::Error> {
    collect(src, focus, max_depth, Direction::Up)
}

/// The focus and its descendants up to `max_depth` edges away (0: the focus alone), with every
/// edge among them and the explanation of the focus's label.
pub fn descendants<S: LineageSource>(
    src: &S,
    focus: &EntryId,
    max_depth: usize,
) -> Result<LineageGraph, S::Error> {
    collect(src, focus, max_depth, Direction::Down)
}

fn collect<S: LineageSource>(
    src: &S,
    focus: &EntryId,
    max_depth: usize,
    dir: Direction,
) -> Result<LineageGraph, S::Error> {
    let Some(focus_info) = src.node(focus)? else {
        return Ok(LineageGraph {
            focus: *focus,
            nodes: Vec::new(),
            edges: Vec::new(),
            explanation: None,
            truncated: false,
        });
    };
    let mut infos: BTreeMap<EntryId, LineageNodeInfo> = BTreeMap::new();
    let mut parents_of: BTreeMap<EntryId, Vec<Parent>> = BTreeMap::new();
    parents_of.insert(*focus, focus_info.parents.clone());
    infos.insert(*focus, focus_info);
    let mut queue = VecDeque::from([(*focus, 0usize)]);
    let mut truncated = false;
    while let Some((id, depth)) = queue.pop_front() {
        let mut next: Vec<EntryId> = match dir {
            Direction::Up => parents_of
                .get(&id)
                .map(|ps| ps.iter().map(|p| p.id).collect())
                .unwrap_or_default(),
            Direction::Down => src.children(&id)?.into_iter().map(|(c, _)| c).collect(),
        };
        next.sort();
        next.dedup();
        if depth >= max_depth {
            truncated |= next.iter().any(|n| !infos.contains_key(n));
            continue;
        }
        for n in next {
            if infos.contains_key(&n) {
                continue;
            }
            if infos.len() >= MAX_NODES {
                truncated = true;
                break;
            }
            if let Some(info) = src.node(&n)? {
                parents_of.insert(n, info.parents.clone());
                infos.insert(n, info);
                queue.push_back((n, depth + 1));
            }
        }
    }
    let mut edges = Vec::new();
    for (child, info) in &infos {
        for p in &info.parents {
            if infos.contains_key(&p.id) {
                edges.push(LineageEdge {
                    parent: p.id,
                    child: *child,
                    weight: p.weight,
                    strong: p.weight > info.tau,
                });
            }
        }
    }
    edges.sort();
    edges.dedup_by(|a, b| a.parent == b.parent && a.child == b.child);
    let explanation = Some(explain(src, focus)?);
    Ok(LineageGraph {
        focus: *focus,
        nodes: infos
            .into_iter()
            .map(|(id, info)| LineageNode { id, ..info.node })
            .collect(),
        edges,
        explanation,
        truncated,
    })
}

/// A parent as the label rule saw it.
struct ParentView {
    id: EntryId,
    weight: Weight,
    /// The parent's effective label; `EXTERNAL` (the conservative choice) when unknown.
    label: TrustLabel,
    found: bool,
}

/// The label rule recomputed at one entry from its parents' effective labels.
struct Analysis {
    parents: Vec<ParentView>,
    decision: LabelDecision,
    /// The parent that caused an untrusted label, if one did.
    cause: Option<usize>,
}

fn analyse<S: LineageSource>(src: &S, info: &LineageNodeInfo) -> Result<Analysis, S::Error> {
    let mut parents = Vec::with_capacity(info.parents.len());
    for p in &info.parents {
        let found = src.node(&p.id)?;
        parents.push(ParentView {
            id: p.id,
            weight: p.weight,
            label: found
                .as_ref()
                .map_or(TrustLabel::External, |n| n.node.effective_label),
            found: found.is_some(),
        });
    }
    let edges: Vec<ParentEdge> = parents
        .iter()
        .map(|p| ParentEdge {
            label: p.label,
            weight: p.weight,
        })
        .collect();
    let decision = match info.store_rule {
        Some(store) => bounded_label(
            info.writer_class,
            &edges,
            LabelRule::new(info.tau, info.fallback),
            store,
        ),
        None => compute_label(info.writer_class, &edges, info.tau, info.fallback),
    };
    let cause = match decision.cause {
        LabelCause::StrongParent(i) | LabelCause::StrictWeakUntrusted(i)
            if parents.get(i).is_some_and(|p| p.label.is_untrusted()) =>
        {
            Some(i)
        }
        LabelCause::StrictUntrustedSum { .. } => {
            // The heaviest untrusted parent (the first, by id, among equals).
            let mut best: Option<usize> = None;
            for (i, p) in parents.iter().enumerate() {
                if p.label.is_untrusted() && best.is_none_or(|b| p.weight > parents[b].weight) {
                    best = Some(i);
                }
            }
            best
        }
        _ => None,
    };
    Ok(Analysis {
        parents,
        decision,
        cause,
    })
}

/// Where a taint path stops.
enum PathEnd {
    /// The focus is unknown.
    UnknownFocus,
    /// The focus's label is trusted: there is no taint to trace.
    Trusted,
    /// A root entry of an external principal.
    ExternalRoot,
    /// An entry with parents, written by an external principal.
    ExternalWriter,
    /// An entry that a distrust record names (itself or its writer).
    Distrusted,
    /// The causing parent is not known to the source.
    MissingParent(EntryId),
    /// The entry's effective label is untrusted but its parents do not explain it.
    Unexplained,
    /// The path came back to an entry already on it (a malformed source).
    Cycle,
    /// [`MAX_NODES`] steps were taken.
    TooLong,
}

struct Walk {
    path: Vec<EntryId>,
    last: Option<LineageNodeInfo>,
    end: PathEnd,
}

fn walk<S: LineageSource>(src: &S, focus: &EntryId) -> Result<Walk, S::Error> {
    let Some(mut info) = src.node(focus)? else {
        return Ok(Walk {
            path: Vec::new(),
            last: None,
            end: PathEnd::UnknownFocus,
        });
    };
    if !info.node.effective_label.is_untrusted() {
        return Ok(Walk {
            path: Vec::new(),
            last: Some(info),
            end: PathEnd::Trusted,
        });
    }
    let mut id = *focus;
    let mut path = Vec::new();
    let mut seen = BTreeSet::new();
    let end = loop {
        path.push(id);
        seen.insert(id);
        if info.node.distrusted {
            break PathEnd::Distrusted;
        }
        if info.writer_class == TrustClass::External {
            break if info.parents.is_empty() {
                PathEnd::ExternalRoot
            } else {
                PathEnd::ExternalWriter
            };
        }
        let a = analyse(src, &info)?;
        let Some(i) = a.cause else {
            break PathEnd::Unexplained;
        };
        let next = a.parents[i].id;
        if seen.contains(&next) {
            break PathEnd::Cycle;
        }
        if path.len() >= MAX_NODES {
            break PathEnd::TooLong;
        }
        match src.node(&next)? {
            Some(n) => {
                info = n;
                id = next;
            }
            None => break PathEnd::MissingParent(next),
        }
    };
    Ok(Walk {
        path,
        last: Some(info),
        end,
    })
}

/// The taint path of `focus`: the focus first, then at each step the parent that caused the
/// label (by the label rule of [`crate::trust::compute_label`] applied to the parents'
/// *effective* labels), ending at an `EXTERNAL` root, a distrusted entry or an entry written by
/// an external principal. Empty when the focus's effective label is trusted or the focus is
/// unknown. Bounded by [`MAX_NODES`] steps.
pub fn taint_path<S: LineageSource>(src: &S, focus: &EntryId) -> Result<Vec<EntryId>, S::Error> {
    Ok(walk(src, focus)?.path)
}

fn describe(n: &LineageNode) -> String {
    format!("{} ({} by `{}`)", n.id.short(), n.kind, n.writer)
}

/// Explains why `focus` has its effective label: the rule that fired at the focus and, for an
/// untrusted label, the taint path to where the taint starts. An unknown focus is explained as
/// `EXTERNAL` (the conservative label) with an empty path.
pub fn explain<S: LineageSource>(src: &S, focus: &EntryId) -> Result<Explanation, S::Error> {
    let Some(info) = src.node(focus)? else {
        return Ok(Explanation {
            label: TrustLabel::External,
            path: Vec::new(),
            text: format!(
                "Entry {} is not known to this store; an unknown entry is treated as EXTERNAL.",
                focus.short()
            ),
        });
    };
    let label = info.node.effective_label;
    let mut text = rule_text(src, &info)?;
    let w = walk(src, focus)?;
    if label.is_untrusted() {
        if w.path.len() > 1 {
            let ids: Vec<String> = w.path.iter().map(EntryId::short).collect();
            let _ = write!(text, " Taint path: {}.", ids.join(" ← "));
        }
        let origin = match &w.end {
            PathEnd::ExternalRoot => Some("a root entry of an external principal"),
            PathEnd::ExternalWriter => Some("an entry written by an external principal"),
            PathEnd::Distrusted => {
                Some("an entry that a distrust record names (the entry or its writer)")
            }
            PathEnd::Unexplained => {
                Some("an entry whose own parents do not explain its untrusted label")
            }
            _ => None,
        };
        match (&w.end, origin, &w.last) {
            (_, Some(o), Some(last)) if w.path.len() > 1 => {
                let _ = write!(text, " The taint starts at {}, {o}.", describe(&last.node));
            }
            (_, Some(_), _) => text.push_str(" The taint starts at this entry."),
            (PathEnd::MissingParent(p), _, _) => {
                let _ = write!(
                    text,
                    " The path stops because the causing parent {} is not known to this store.",
                    p.short()
                );
            }
            (PathEnd::Cycle, _, _) => {
                text.push_str(" The path loops back on itself (the source is malformed).");
            }
            (PathEnd::TooLong, _, _) => {
                let _ = write!(text, " The path was cut after {MAX_NODES} entries.");
            }
            _ => {}
        }
    }
    Ok(Explanation {
        label,
        path: w.path,
        text,
    })
}

/// The sentence that says which rule gave `info` its effective label.
fn rule_text<S: LineageSource>(src: &S, info: &LineageNodeInfo) -> Result<String, S::Error> {
    let n = &info.node;
    let label = n.effective_label;
    let who = describe(n);
    let tau = info.tau;
    let mut t = String::new();
    if n.distrusted {
        let _ = write!(
            t,
            "Entry {who} is {label} because it was retroactively distrusted: a signed distrust \
             record names the entry or its writer"
        );
        if n.label != label {
            let _ = write!(t, " (it was signed as {})", n.label);
        }
        t.push('.');
        return Ok(t);
    }
    if info.writer_class == TrustClass::External {
        if info.parents.is_empty() {
            let _ = write!(
                t,
                "Entry {who} is {label}: it is a root entry written by `{}`, an external \
                 principal, and a root entry takes its writer's class.",
                n.writer
            );
        } else {
            let _ = write!(
                t,
                "Entry {who} is {label}: its writer `{}` is an external principal, and whatever \
                 an external principal writes is EXTERNAL, whatever it derives from.",
                n.writer
            );
        }
        return Ok(t);
    }
    let a = analyse(src, info)?;
    let pd = |i: usize| {
        let p = &a.parents[i];
        let missing = if p.found { "" } else { ", not in this store" };
        format!(
            "{} ({}{missing}, weight {})",
            p.id.short(),
            p.label,
            p.weight
        )
    };
    let untrusted: Vec<usize> = (0..a.parents.len())
        .filter(|&i| a.parents[i].label.is_untrusted())
        .collect();
    let untrusted_sum: u32 = untrusted
        .iter()
        .map(|&i| u32::from(a.parents[i].weight.bp()))
        .sum();
    match a.decision.cause {
        LabelCause::Root(_) => {
            let _ = write!(
                t,
                "Entry {who} is {label}: it is a root entry (no parents) written by `{}`, a \
                 trusted principal, and a root entry takes its writer's class.",
                n.writer
            );
        }
        LabelCause::ExternalWriter => {
            let _ = write!(
                t,
                "Entry {who} is {label}: its writer `{}` is an external principal.",
                n.writer
            );
        }
        LabelCause::StrongParent(i) if a.parents[i].label.is_untrusted() => {
            let _ = write!(
                t,
                "Entry {who} is {label}: its parent {} has an edge weight above τ = {tau}, so \
                 the edge is strong, and a derived entry takes the derived form of the highest \
                 label among its strong parents (max-of-strong-edges).",
                pd(i)
            );
        }
        LabelCause::StrictWeakUntrusted(i) => {
            let _ = write!(
                t,
                "Entry {who} is {label} under the strict fallback: no parent has a weight above \
                 τ = {tau}, but the untrusted parent {} is present, and the strict fallback keeps \
                 the taint of weak untrusted parents.",
                pd(i)
            );
        }
        LabelCause::StrictUntrustedSum { sum_bp } => {
            let heaviest = a.cause.map(&pd).unwrap_or_default();
            let _ = write!(
                t,
                "Entry {who} is {label} under the strict fallback: its strong parents are \
                 trusted, but its untrusted parents' weights sum to {} > τ = {tau} (the \
                 heaviest is {heaviest}), and the strict fallback keeps the taint that many weak \
                 edges carry together.",
                sum_display(sum_bp)
            );
        }
        LabelCause::StrongParent(_) | LabelCause::TrustedStrongParents => {
            let strong: Vec<String> = (0..a.parents.len())
                .filter(|&i| a.parents[i].weight > tau)
                .map(&pd)
                .collect();
            let _ = write!(
                t,
                "Entry {who} is {}: every strong parent (weight above τ = {tau}) is trusted: {}",
                a.decision.label,
                strong.join(", ")
            );
            if !untrusted.is_empty() {
                let _ = write!(t, "; its untrusted parents are weak (weight at most τ)");
                if info.fallback == Fallback::Strict {
                    let _ = write!(
                        t,
                        " and together carry {}, not above τ",
                        sum_display(untrusted_sum)
                    );
                }
            }
            t.push('.');
        }
        LabelCause::PermissiveFallback => {
            if info.fallback == Fallback::Permissive && !untrusted.is_empty() {
                let list: Vec<String> = untrusted.iter().map(|&i| pd(i)).collect();
                let _ = write!(
                    t,
                    "Entry {who} is {}: no parent has a weight above τ = {tau}, and the \
                     permissive fallback (the paper's rule) labels an entry with no strong \
                     parent DERIVED_TRUSTED, even though it has weak untrusted parents: {}.",
                    a.decision.label,
                    list.join(", ")
                );
            } else {
                let _ = write!(
                    t,
                    "Entry {who} is {}: no parent has a weight above τ = {tau} and no untrusted \
                     parent carries any weight, so the {} fallback labels it DERIVED_TRUSTED.",
                    a.decision.label, info.fallback
                );
            }
        }
    }
    if a.decision.label != label {
        let _ = write!(
            t,
            " Its effective label is nevertheless {label}: the store's label and the \
             recomputation from its parents' effective labels ({}) disagree.",
            a.decision.label
        );
    } else if n.label != label {
        let _ = write!(
            t,
            " It was signed as {}; its label rose after it was written because an ancestor was \
             retroactively distrusted.",
            n.label
        );
    }
    Ok(t)
}

fn sum_display(bp: u32) -> String {
    let whole = bp / u32::from(Weight::SCALE);
    let frac = bp % u32::from(Weight::SCALE);
    if frac == 0 {
        whole.to_string()
    } else {
        let digits = format!("{frac:04}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// An in-memory [`LineageSource`], for tests, examples and small tools.
#[derive(Clone, Debug, Default)]
pub struct MemoryLineage {
    nodes: BTreeMap<EntryId, LineageNodeInfo>,
    children: BTreeMap<EntryId, BTreeMap<EntryId, Weight>>,
}

impl MemoryLineage {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) an entry; its parents need not have been added.
    pub fn insert(&mut self, info: LineageNodeInfo) {
        let id = info.node.id;
        if let Some(old) = self.nodes.get(&id) {
            for p in &old.parents {
                if let Some(c) = self.children.get_mut(&p.id) {
                    c.remove(&id);
                }
            }
        }
        for p in &info.parents {
            self.children.entry(p.id).or_default().insert(id, p.weight);
        }
        self.nodes.insert(id, info);
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

impl LineageSource for MemoryLineage {
    type Error = Infallible;
    fn node(&self, id: &EntryId) -> Result<Option<LineageNodeInfo>, Infallible> {
        Ok(self.nodes.get(id).cloned())
    }
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Infallible> {
        Ok(self
            .children
            .get(id)
            .map(|c| c.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Hash256;

    #[test]
    fn snippets() {
        assert_eq!(snippet_of(None), "(erased)");
        assert_eq!(snippet_of(Some("short")), "short");
        let long = "é".repeat(61);
        let s = snippet_of(Some(&long));
        assert_eq!(s.chars().count(), 61);
        assert!(s.ends_with('…'));
        assert_eq!(snippet_of(Some(&"a".repeat(60))), "a".repeat(60));
    }

    #[test]
    fn sum_display_matches_weight_display() {
        for bp in [0u32, 1, 625, 5000, 10000, 16000] {
            if let Some(w) = u16::try_from(bp).ok().and_then(Weight::from_bp) {
                assert_eq!(sum_display(bp), w.to_string());
            }
        }
        assert_eq!(sum_display(16000), "1.6");
    }

    #[test]
    fn unknown_focus() {
        let g = MemoryLineage::new();
        let id = EntryId(Hash256([7; 32]));
        let graph = ancestors(&g, &id, 5).unwrap();
        assert!(graph.nodes.is_empty() && graph.explanation.is_none());
        let e = explain(&g, &id).unwrap();
        assert_eq!(e.label, TrustLabel::External);
        assert!(e.path.is_empty());
        assert!(taint_path(&g, &id).unwrap().is_empty());
    }
}
