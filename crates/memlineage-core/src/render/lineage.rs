//! Lineage graphs for people and tools: an indented text tree for a terminal, JSON, Graphviz DOT
//! and Mermaid (paper §M4; `memlineage lineage ID --format text|json|dot|mermaid`).
//!
//! Conventions shared by the graphical formats: nodes are coloured by *effective* label
//! (TRUSTED green, DERIVED_TRUSTED olive, DERIVED_UNTRUSTED orange, EXTERNAL red); edges point
//! from parent to child and the graph is laid out bottom to top, so roots sit at the bottom;
//! strong edges (weight > the child's τ) are solid and labelled with their weight, weak edges
//! dashed and grey; the taint path of the explanation is bold; the focus has a double border.
//!
//! Every piece of text that comes from an entry (snippet, writer) first goes through
//! [`visible`] (controls, bidi and zero-width characters shown as `\n`, `\u{202E}` …) and then
//! through the format's own escaping, so a hostile snippet cannot break the syntax of any
//! format. Output is sorted and deterministic.

use super::escape::visible;
use crate::hash::EntryId;
use crate::label::TrustLabel;
use crate::lineage::{LineageEdge, LineageGraph, LineageNode};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The colour of a label in the graphical formats.
pub fn label_colour(label: TrustLabel) -> &'static str {
    match label {
        TrustLabel::Trusted => "#2ca02c",
        TrustLabel::DerivedTrusted => "#808000",
        TrustLabel::DerivedUntrusted => "#ff8c00",
        TrustLabel::External => "#d62728",
    }
}

/// The text colour that reads well on [`label_colour`].
fn font_colour(label: TrustLabel) -> &'static str {
    match label {
        TrustLabel::DerivedUntrusted => "#000000",
        _ => "#ffffff",
    }
}

/// The set of edges (parent, child) that lie on the explanation's taint path.
fn path_edges(g: &LineageGraph) -> BTreeSet<(EntryId, EntryId)> {
    let mut out = BTreeSet::new();
    if let Some(e) = &g.explanation {
        for w in e.path.windows(2) {
            out.insert((w[1], w[0]));
        }
    }
    out
}

fn path_nodes(g: &LineageGraph) -> BTreeSet<EntryId> {
    g.explanation
        .as_ref()
        .map(|e| e.path.iter().copied().collect())
        .unwrap_or_default()
}

fn label_text(n: &LineageNode) -> String {
    let mut s = n.effective_label.as_str().to_string();
    if n.label != n.effective_label {
        let _ = write!(s, " (signed {})", n.label);
    }
    if n.distrusted {
        s.push_str(" DISTRUSTED");
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Text tree
// ---------------------------------------------------------------------------------------------

/// Escapes text for the text tree: [`visible`], then `"` → `\"`.
fn tree_escape(s: &str) -> String {
    visible(s).replace('"', "\\\"")
}

fn node_line(n: &LineageNode, on_path: bool) -> String {
    let mut s = format!(
        "{} {} {} by {} \"{}\"",
        n.id.short(),
        label_text(n),
        n.kind,
        tree_escape(&n.writer),
        tree_escape(&n.snippet)
    );
    if on_path {
        s.push_str(" *");
    }
    s
}

/// The graph as an indented tree for a terminal.
///
/// The first line names the focus and its effective label. Then an `ancestors:` tree (each
/// entry's parents indented below it) and/or a `descendants:` tree (each entry's children
/// indented below it), whichever the graph holds. Each child line starts with
/// `strong W:` or `weak W:` (the edge weight W); entries on the taint path end with ` *`; an
/// entry met a second time in a DAG is not expanded again (`(… shown above)`). Last, a `why:`
/// paragraph with the explanation.
pub fn to_text(g: &LineageGraph) -> String {
    let mut out = String::new();
    let Some(focus) = g.node(&g.focus) else {
        let _ = writeln!(out, "lineage of {}: not found", g.focus.short());
        return out;
    };
    let _ = writeln!(out, "lineage of {}: {}", g.focus.short(), label_text(focus));
    let on_path = path_nodes(g);
    let has_parents = g.edges.iter().any(|e| e.child == g.focus);
    let has_children = g.edges.iter().any(|e| e.parent == g.focus);
    if has_parents || !has_children {
        out.push_str("ancestors:\n");
        tree(&mut out, g, &on_path, true);
    }
    if has_children {
        out.push_str("descendants:\n");
        tree(&mut out, g, &on_path, false);
    }
    if g.truncated {
        out.push_str("(truncated: more entries lie beyond the depth or size limit)\n");
    }
    if !on_path.is_empty() {
        out.push_str("* taint path\n");
    }
    if let Some(e) = &g.explanation {
        let _ = writeln!(out, "why: {}", visible(&e.text));
    }
    out
}

fn tree(out: &mut String, g: &LineageGraph, on_path: &BTreeSet<EntryId>, up: bool) {
    // For each node, the edges to show below it: its parents (up) or its children (down),
    // strongest first, then by id.
    let mut below: BTreeMap<EntryId, Vec<&LineageEdge>> = BTreeMap::new();
    for e in &g.edges {
        let key = if up { e.child } else { e.parent };
        below.entry(key).or_default().push(e);
    }
    let other = |e: &LineageEdge| if up { e.parent } else { e.child };
    for v in below.values_mut() {
        v.sort_by(|a, b| b.weight.cmp(&a.weight).then(other(a).cmp(&other(b))));
    }
    let Some(focus) = g.node(&g.focus) else {
        return;
    };
    let _ = writeln!(out, "{}", node_line(focus, on_path.contains(&g.focus)));
    let mut expanded = BTreeSet::from([g.focus]);
    // Explicit stack (a deep graph must not overflow the call stack): (edge, prefix, last).
    let mut stack: Vec<(&LineageEdge, String, bool)> = Vec::new();
    push_children(&mut stack, &below, g.focus, "");
    while let Some((e, prefix, last)) = stack.pop() {
        let id = other(e);
        let Some(n) = g.node(&id) else { continue };
        let strength = if e.strong { "strong" } else { "weak" };
        let connector = if last { "└── " } else { "├── " };
        let _ = write!(
            out,
            "{prefix}{connector}{strength} {}: {}",
            e.weight,
            node_line(n, on_path.contains(&id))
        );
        if !expanded.insert(id) {
            if below.contains_key(&id) {
                out.push_str(if up {
                    " (parents shown above)"
                } else {
                    " (children shown above)"
                });
            }
            out.push('\n');
            continue;
        }
        out.push('\n');
        let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
        push_children(&mut stack, &below, id, &child_prefix);
    }
}

/// Pushes the edges below `id` onto the stack, last first, so they pop in order.
fn push_children<'g>(
    stack: &mut Vec<(&'g LineageEdge, String, bool)>,
    below: &BTreeMap<EntryId, Vec<&'g LineageEdge>>,
    id: EntryId,
    prefix: &str,
) {
    if let Some(es) = below.get(&id) {
        for (i, e) in es.iter().enumerate().rev() {
            stack.push((e, prefix.to_string(), i + 1 == es.len()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// The graph as JSON:
/// `{"focus", "truncated", "nodes": [{"id", "label", "effective_label", "writer", "kind",
/// "snippet", "distrusted", "on_path"}], "edges": [{"parent", "child", "weight", "strong",
/// "on_path"}], "explanation": {"label", "path", "text"} | null}`. Ids are full hex, labels
/// exactly `TRUSTED` … `EXTERNAL`, weights exact decimals as strings (`"0.8"`), text raw
/// (JSON string escaping keeps it in its field).
pub fn to_json(g: &LineageGraph) -> Value {
    let on_path = path_nodes(g);
    let pe = path_edges(g);
    json!({
        "focus": g.focus.to_hex(),
        "truncated": g.truncated,
        "nodes": g.nodes.iter().map(|n| json!({
            "id": n.id.to_hex(),
            "label": n.label.as_str(),
            "effective_label": n.effective_label.as_str(),
            "writer": n.writer,
            "kind": n.kind.as_str(),
            "snippet": n.snippet,
            "distrusted": n.distrusted,
            "on_path": on_path.contains(&n.id),
        })).collect::<Vec<_>>(),
        "edges": g.edges.iter().map(|e| json!({
            "parent": e.parent.to_hex(),
            "child": e.child.to_hex(),
            "weight": e.weight.to_string(),
            "strong": e.strong,
            "on_path": pe.contains(&(e.parent, e.child)),
        })).collect::<Vec<_>>(),
        "explanation": g.explanation.as_ref().map(|x| json!({
            "label": x.label.as_str(),
            "path": x.path.iter().map(EntryId::to_hex).collect::<Vec<_>>(),
            "text": x.text,
        })),
    })
}

// ---------------------------------------------------------------------------------------------
// Graphviz DOT
// ---------------------------------------------------------------------------------------------

/// Escapes text for a double-quoted DOT string used as a label: [`visible`] first (so no raw
/// line break or control reaches the file), then `\` → `\\` and `"` → `\"`. Graphviz then shows
/// the text literally (a `\n` in a snippet is shown as the two characters `\n`).
pub fn dot_escape(s: &str) -> String {
    let v = visible(s);
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// The graph in Graphviz DOT (`dot -Tsvg`), laid out bottom to top.
pub fn to_dot(g: &LineageGraph) -> String {
    let on_path = path_nodes(g);
    let pe = path_edges(g);
    let mut out = String::new();
    out.push_str("digraph lineage {\n");
    out.push_str("  rankdir=BT;\n");
    out.push_str(
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n",
    );
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for n in &g.nodes {
        let label = [
            dot_escape(&n.id.short()),
            dot_escape(&label_text(n)),
            dot_escape(&format!("{} by {}", n.kind, n.writer)),
            format!("\\\"{}\\\"", dot_escape(&n.snippet)),
        ]
        .join("\\n");
        let _ = write!(
            out,
            "  \"{}\" [label=\"{label}\", fillcolor=\"{}\", fontcolor=\"{}\"",
            n.id.to_hex(),
            label_colour(n.effective_label),
            font_colour(n.effective_label)
        );
        if on_path.contains(&n.id) {
            out.push_str(", style=\"rounded,filled,bold\", penwidth=3");
        }
        if n.id == g.focus {
            out.push_str(", peripheries=2");
        }
        out.push_str("];\n");
    }
    for e in &g.edges {
        let _ = write!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{}\"",
            e.parent.to_hex(),
            e.child.to_hex(),
            e.weight
        );
        if e.strong {
            out.push_str(", style=solid");
        } else {
            out.push_str(", style=dashed, color=\"grey\", fontcolor=\"grey\"");
        }
        if pe.contains(&(e.parent, e.child)) {
            out.push_str(", penwidth=3");
        }
        out.push_str("];\n");
    }
    out.push_str("}\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Mermaid
// ---------------------------------------------------------------------------------------------

/// Escapes text for a double-quoted Mermaid label: [`visible`] first, then every character that
/// Mermaid or the HTML it renders to could read as syntax is written as a Mermaid entity code
/// (`#quot;`, `#lt;`, `#gt;`, `#amp;`, `#35;` for `#`, and `#NN;` for `` ` `` `|` `[` `]` `{`
/// `}` `(` `)` `%`), so that `"`, `]`, `-->` or `%%` in a snippet stay text.
pub fn mermaid_escape(s: &str) -> String {
    let v = visible(s);
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '#' | '`' | '|' | '[' | ']' | '{' | '}' | '(' | ')' | '%' => {
                let _ = write!(out, "#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

fn mermaid_id(id: &EntryId) -> String {
    format!("n{}", id.to_hex())
}

/// The graph as a Mermaid flowchart (`flowchart BT`): node boxes with short id, label, kind and
/// writer, snippet; the focus drawn as a subroutine box (double border); strong edges `-->`
/// labelled with the weight, weak edges dotted `-.->` and grey, taint-path edges thick `==>`;
/// nodes coloured by effective label through `classDef`, taint-path nodes with a thick border.
pub fn to_mermaid(g: &LineageGraph) -> String {
    let on_path = path_nodes(g);
    let pe = path_edges(g);
    let mut out = String::from("flowchart BT\n");
    for n in &g.nodes {
        let text = [
            mermaid_escape(&n.id.short()),
            mermaid_escape(&label_text(n)),
            mermaid_escape(&format!("{} by {}", n.kind, n.writer)),
            format!("#quot;{}#quot;", mermaid_escape(&n.snippet)),
        ]
        .join("<br/>");
        let (open, close) = if n.id == g.focus {
            ("[[", "]]")
        } else {
            ("[", "]")
        };
        let _ = writeln!(out, "  {}{open}\"{text}\"{close}", mermaid_id(&n.id));
    }
    let mut weak = Vec::new();
    for (i, e) in g.edges.iter().enumerate() {
        let arrow = if pe.contains(&(e.parent, e.child)) {
            "==>"
        } else if e.strong {
            "-->"
        } else {
            weak.push(i.to_string());
            "-.->"
        };
        let _ = writeln!(
            out,
            "  {} {arrow}|{}| {}",
            mermaid_id(&e.parent),
            e.weight,
            mermaid_id(&e.child)
        );
    }
    for l in TrustLabel::ALL {
        let _ = writeln!(
            out,
            "  classDef {} fill:{},color:{}",
            l.as_str().to_ascii_lowercase(),
            label_colour(l),
            font_colour(l)
        );
    }
    for l in TrustLabel::ALL {
        let ids: Vec<String> = g
            .nodes
            .iter()
            .filter(|n| n.effective_label == l)
            .map(|n| mermaid_id(&n.id))
            .collect();
        if !ids.is_empty() {
            let _ = writeln!(
                out,
                "  class {} {}",
                ids.join(","),
                l.as_str().to_ascii_lowercase()
            );
        }
    }
    for n in &g.nodes {
        if on_path.contains(&n.id) {
            let _ = writeln!(
                out,
                "  style {} stroke:#000000,stroke-width:3px",
                mermaid_id(&n.id)
            );
        }
    }
    if !weak.is_empty() {
        let _ = writeln!(
            out,
            "  linkStyle {} stroke:grey,stroke-dasharray:4 4",
            weak.join(",")
        );
    }
    out
}
