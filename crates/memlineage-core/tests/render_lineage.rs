//! Lineage graph formats (M4): golden text, DOT, Mermaid and JSON for a known graph; hostile
//! snippets stay escaped in every format; the DOT output parses with Graphviz when it is
//! installed.

use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::lineage::{
    LineageGraph, LineageNode, LineageNodeInfo, LineageSource, MemoryLineage, ancestors,
    descendants,
};
use memlineage_core::render::lineage::{to_dot, to_json, to_mermaid, to_text};
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use std::io::Write as _;
use std::process::{Command, Stdio};

fn id(b: u8) -> EntryId {
    EntryId(Hash256([b; 32]))
}

fn w(bp: u16) -> Weight {
    Weight::from_bp(bp).expect("at most 10000 bp")
}

/// Adds an entry whose label is computed from its parents' effective labels (τ = 0.5, strict).
fn add(
    g: &mut MemoryLineage,
    n: u8,
    writer: &str,
    class: TrustClass,
    kind: EntryKind,
    parents: &[(u8, u16)],
    snippet: &str,
) {
    let ps: Vec<Parent> = parents
        .iter()
        .map(|&(p, bp)| Parent {
            id: id(p),
            weight: w(bp),
        })
        .collect();
    let edges: Vec<ParentEdge> = ps
        .iter()
        .map(|p| ParentEdge {
            label: g
                .node(&p.id)
                .ok()
                .flatten()
                .expect("parents are added before their children")
                .node
                .effective_label,
            weight: p.weight,
        })
        .collect();
    let label = compute_label(class, &edges, w(5000), Fallback::Strict).label;
    g.insert(LineageNodeInfo {
        node: LineageNode {
            id: id(n),
            label,
            effective_label: label,
            writer: writer.into(),
            kind,
            snippet: snippet.into(),
            distrusted: false,
        },
        parents: ps,
        tau: w(5000),
        fallback: Fallback::Strict,
        writer_class: class,
        store_rule: None,
    });
}

/// external e-mail → summary (0.8) → plan (0.9); trusted user note → plan (0.3).
fn known() -> MemoryLineage {
    let mut g = MemoryLineage::new();
    add(
        &mut g,
        0xaa,
        "email",
        TrustClass::External,
        EntryKind::ToolOutput,
        &[],
        "Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00",
    );
    add(
        &mut g,
        0xbb,
        "agent",
        TrustClass::Trusted,
        EntryKind::Derived,
        &[(0xaa, 8000)],
        "Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00",
    );
    add(
        &mut g,
        0xcc,
        "user",
        TrustClass::Trusted,
        EntryKind::UserInput,
        &[],
        "Pay my bills from the usual account",
    );
    add(
        &mut g,
        0xdd,
        "agent",
        TrustClass::Trusted,
        EntryKind::Derived,
        &[(0xbb, 9000), (0xcc, 3000)],
        "Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00",
    );
    g
}

fn plan_ancestors() -> LineageGraph {
    ancestors(&known(), &id(0xdd), 10).unwrap()
}

const GOLDEN_TEXT: &str = "\
lineage of dddddddddddd: DERIVED_UNTRUSTED
ancestors:
dddddddddddd DERIVED_UNTRUSTED derived by agent \"Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00\" *
├── strong 0.9: bbbbbbbbbbbb DERIVED_UNTRUSTED derived by agent \"Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00\" *
│   └── strong 0.8: aaaaaaaaaaaa EXTERNAL tool_output by email \"Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00\" *
└── weak 0.3: cccccccccccc TRUSTED user_input by user \"Pay my bills from the usual account\"
* taint path
why: Entry dddddddddddd (derived by `agent`) is DERIVED_UNTRUSTED: its parent bbbbbbbbbbbb (DERIVED_UNTRUSTED, weight 0.9) has an edge weight above τ = 0.5, so the edge is strong, and a derived entry takes the derived form of the highest label among its strong parents (max-of-strong-edges). Taint path: dddddddddddd ← bbbbbbbbbbbb ← aaaaaaaaaaaa. The taint starts at aaaaaaaaaaaa (tool_output by `email`), a root entry of an external principal.
";

#[test]
fn golden_text() {
    assert_eq!(to_text(&plan_ancestors()), GOLDEN_TEXT);
}

#[test]
fn golden_text_descendants() {
    let g = descendants(&known(), &id(0xaa), 10).unwrap();
    assert_eq!(
        to_text(&g),
        "\
lineage of aaaaaaaaaaaa: EXTERNAL
descendants:
aaaaaaaaaaaa EXTERNAL tool_output by email \"Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00\" *
└── strong 0.8: bbbbbbbbbbbb DERIVED_UNTRUSTED derived by agent \"Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00\"
    └── strong 0.9: dddddddddddd DERIVED_UNTRUSTED derived by agent \"Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00\"
* taint path
why: Entry aaaaaaaaaaaa (tool_output by `email`) is EXTERNAL: it is a root entry written by `email`, an external principal, and a root entry takes its writer's class. The taint starts at this entry.
"
    );
}

#[test]
fn golden_dot() {
    let [a, b, c, d] = [0xaa, 0xbb, 0xcc, 0xdd].map(|n| id(n).to_hex());
    let expected = format!(
        r##"digraph lineage {{
  rankdir=BT;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];
  edge [fontname="Helvetica", fontsize=9];
  "{a}" [label="aaaaaaaaaaaa\nEXTERNAL\ntool_output by email\n\"Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00\"", fillcolor="#d62728", fontcolor="#ffffff", style="rounded,filled,bold", penwidth=3];
  "{b}" [label="bbbbbbbbbbbb\nDERIVED_UNTRUSTED\nderived by agent\n\"Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00\"", fillcolor="#ff8c00", fontcolor="#000000", style="rounded,filled,bold", penwidth=3];
  "{c}" [label="cccccccccccc\nTRUSTED\nuser_input by user\n\"Pay my bills from the usual account\"", fillcolor="#2ca02c", fontcolor="#ffffff"];
  "{d}" [label="dddddddddddd\nDERIVED_UNTRUSTED\nderived by agent\n\"Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00\"", fillcolor="#ff8c00", fontcolor="#000000", style="rounded,filled,bold", penwidth=3, peripheries=2];
  "{a}" -> "{b}" [label="0.8", style=solid, penwidth=3];
  "{b}" -> "{d}" [label="0.9", style=solid, penwidth=3];
  "{c}" -> "{d}" [label="0.3", style=dashed, color="grey", fontcolor="grey"];
}}
"##
    );
    assert_eq!(to_dot(&plan_ancestors()), expected);
}

#[test]
fn golden_mermaid() {
    let [a, b, c, d] = [0xaa, 0xbb, 0xcc, 0xdd].map(|n| id(n).to_hex());
    let expected = format!(
        r##"flowchart BT
  n{a}["aaaaaaaaaaaa<br/>EXTERNAL<br/>tool_output by email<br/>#quot;Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00#quot;"]
  n{b}["bbbbbbbbbbbb<br/>DERIVED_UNTRUSTED<br/>derived by agent<br/>#quot;Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00#quot;"]
  n{c}["cccccccccccc<br/>TRUSTED<br/>user_input by user<br/>#quot;Pay my bills from the usual account#quot;"]
  n{d}[["dddddddddddd<br/>DERIVED_UNTRUSTED<br/>derived by agent<br/>#quot;Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00#quot;"]]
  n{a} ==>|0.8| n{b}
  n{b} ==>|0.9| n{d}
  n{c} -.->|0.3| n{d}
  classDef trusted fill:#2ca02c,color:#ffffff
  classDef derived_trusted fill:#808000,color:#ffffff
  classDef derived_untrusted fill:#ff8c00,color:#000000
  classDef external fill:#d62728,color:#ffffff
  class n{c} trusted
  class n{b},n{d} derived_untrusted
  class n{a} external
  style n{a} stroke:#000000,stroke-width:3px
  style n{b} stroke:#000000,stroke-width:3px
  style n{d} stroke:#000000,stroke-width:3px
  linkStyle 2 stroke:grey,stroke-dasharray:4 4
"##
    );
    assert_eq!(to_mermaid(&plan_ancestors()), expected);
}

#[test]
fn golden_json() {
    let [a, b, c, d] = [0xaa, 0xbb, 0xcc, 0xdd].map(|n| id(n).to_hex());
    let j = to_json(&plan_ancestors());
    assert_eq!(j["focus"], d);
    assert_eq!(j["truncated"], false);
    assert_eq!(
        j["edges"],
        serde_json::json!([
            {"parent": a, "child": b, "weight": "0.8", "strong": true, "on_path": true},
            {"parent": b, "child": d, "weight": "0.9", "strong": true, "on_path": true},
            {"parent": c, "child": d, "weight": "0.3", "strong": false, "on_path": false},
        ])
    );
    assert_eq!(
        j["nodes"][0],
        serde_json::json!({
            "id": a, "label": "EXTERNAL", "effective_label": "EXTERNAL", "writer": "email",
            "kind": "tool_output",
            "snippet": "Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00",
            "distrusted": false, "on_path": true,
        })
    );
    assert_eq!(j["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(j["explanation"]["label"], "DERIVED_UNTRUSTED");
    assert_eq!(j["explanation"]["path"], serde_json::json!([d, b, a]));
    // Output is deterministic.
    assert_eq!(j, to_json(&plan_ancestors()));
}

const HOSTILE: &str =
    "x\" ] } { [ ( ) --> <b>b</b> #quot; %% | \\ \\n \n\r\u{202E}\u{1b}[31m ;label=\"pwn\"] end";

/// The known graph, with every snippet and one writer replaced by hostile text.
fn hostile() -> LineageGraph {
    let mut g = plan_ancestors();
    for n in &mut g.nodes {
        n.snippet = format!("{HOSTILE} {}", n.id.short());
    }
    g.nodes[1].writer = "a\"gent\n]".into();
    g
}

/// Whether the text has a control, bidi or zero-width character, or a raw line break.
fn has_raw_hazard(s: &str) -> bool {
    s.chars().any(|c| {
        c.is_control()
            || ('\u{200B}'..='\u{200F}').contains(&c)
            || ('\u{202A}'..='\u{202E}').contains(&c)
    })
}

#[test]
fn hostile_snippets_stay_escaped_in_text() {
    let g = hostile();
    let t = to_text(&g);
    let lines: Vec<&str> = t.lines().collect();
    // Same shape as the golden text: one line per node.
    assert_eq!(lines.len(), GOLDEN_TEXT.lines().count());
    for l in &lines {
        assert!(!has_raw_hazard(l), "{l:?}");
    }
    assert_eq!(
        lines[4],
        r##"│   └── strong 0.8: aaaaaaaaaaaa EXTERNAL tool_output by email "x\" ] } { [ ( ) --> <b>b</b> #quot; %% | \\ \\n \n\r\u{202E}\u{1B}[31m ;label=\"pwn\"] end aaaaaaaaaaaa" *"##
    );
}

/// Splits one DOT line into its quoted strings, checking the quoting is balanced.
fn dot_strings(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '"' {
            let mut s = String::new();
            loop {
                match chars.next() {
                    Some('\\') => {
                        s.push('\\');
                        s.push(chars.next().expect("dangling backslash"));
                    }
                    Some('"') => break,
                    Some(c) => s.push(c),
                    None => panic!("unbalanced quotes in {line:?}"),
                }
            }
            out.push(s);
        }
    }
    out
}

#[test]
fn hostile_snippets_stay_escaped_in_dot() {
    let g = hostile();
    let dot = to_dot(&g);
    assert_eq!(
        dot.lines().count(),
        to_dot(&plan_ancestors()).lines().count()
    );
    for line in dot.lines() {
        assert!(!has_raw_hazard(line), "{line:?}");
        let strings = dot_strings(line);
        // Outside the quoted strings nothing of the snippet leaks: the attribute names are ours.
        let mut outside = line.to_string();
        for s in &strings {
            outside = outside.replacen(&format!("\"{s}\""), "\"\"", 1);
        }
        assert!(
            !outside.contains("pwn") && !outside.contains("-->"),
            "{outside}"
        );
    }
    let a = "a".repeat(64);
    assert_eq!(
        dot.lines().nth(4).unwrap(),
        format!(
            r##"  "{a}" [label="aaaaaaaaaaaa\nEXTERNAL\ntool_output by email\n\"x\" ] }} {{ [ ( ) --> <b>b</b> #quot; %% | \\\\ \\\\n \\n\\r\\u{{202E}}\\u{{1B}}[31m ;label=\"pwn\"] end aaaaaaaaaaaa\"", fillcolor="#d62728", fontcolor="#ffffff", style="rounded,filled,bold", penwidth=3];"##
        )
    );
    dot_parses(&dot, g.nodes.len());
    dot_parses(&to_dot(&plan_ancestors()), 4);
}

/// Runs `dot -Tsvg` when Graphviz is installed; skips (with a message) when it is not.
fn dot_parses(dot: &str, nodes: usize) {
    let child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skipping the Graphviz check: `dot` is not available ({e})");
            return;
        }
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(dot.as_bytes())
        .expect("dot reads its input");
    let out = child.wait_with_output().expect("dot runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dot failed: {stderr}\n{dot}");
    assert!(stderr.trim().is_empty(), "dot warned: {stderr}");
    let svg = String::from_utf8(out.stdout).expect("SVG is UTF-8");
    assert_eq!(svg.matches("class=\"node\"").count(), nodes, "{svg}");
    assert_eq!(svg.matches("class=\"edge\"").count(), 3);
}

#[test]
fn hostile_snippets_stay_escaped_in_mermaid() {
    let g = hostile();
    let m = to_mermaid(&g);
    assert_eq!(
        m.lines().count(),
        to_mermaid(&plan_ancestors()).lines().count()
    );
    for line in m.lines() {
        assert!(!has_raw_hazard(line), "{line:?}");
        let Some(start) = line.find("[\"").or_else(|| line.find("[[\"")) else {
            continue;
        };
        let start = line[start..].find('"').unwrap() + start + 1;
        let end = line.rfind('"').unwrap();
        let label = &line[start..end].replace("<br/>", "");
        for bad in [
            "\"", "[", "]", "{", "}", "(", ")", "|", "-->", "<", ">", "%%", "`",
        ] {
            assert!(!label.contains(bad), "{bad} in {label}");
        }
        assert!(line.ends_with("\"]") || line.ends_with("\"]]"), "{line}");
    }
    let a = "a".repeat(64);
    assert_eq!(
        m.lines().nth(1).unwrap(),
        format!(
            r##"  n{a}["aaaaaaaaaaaa<br/>EXTERNAL<br/>tool_output by email<br/>#quot;x#quot; #93; #125; #123; #91; #40; #41; --#gt; #lt;b#gt;b#lt;/b#gt; #35;quot; #37;#37; #124; \\ \\n \n\r\u#123;202E#125;\u#123;1B#125;#91;31m ;label=#quot;pwn#quot;#93; end aaaaaaaaaaaa#quot;"]"##
        )
    );
}

#[test]
fn hostile_snippets_round_trip_in_json() {
    let g = hostile();
    let j = to_json(&g);
    let s = serde_json::to_string(&j).unwrap();
    let back: serde_json::Value = serde_json::from_str(&s).unwrap();
    for (n, v) in g.nodes.iter().zip(back["nodes"].as_array().unwrap()) {
        assert_eq!(v["snippet"].as_str().unwrap(), n.snippet);
        assert_eq!(v["writer"].as_str().unwrap(), n.writer);
    }
}

/// external root (0) → 1 → left (2), right (3) → top (4).
fn dag() -> MemoryLineage {
    let mut g = MemoryLineage::new();
    let derived = |g: &mut MemoryLineage, n: u8, ps: &[(u8, u16)], s: &str| {
        add(
            g,
            n,
            "agent",
            TrustClass::Trusted,
            EntryKind::Derived,
            ps,
            s,
        )
    };
    add(
        &mut g,
        0,
        "email",
        TrustClass::External,
        EntryKind::ToolOutput,
        &[],
        "root",
    );
    derived(&mut g, 1, &[(0, 8000)], "summary");
    derived(&mut g, 2, &[(1, 6000)], "left");
    derived(&mut g, 3, &[(1, 7000)], "right");
    derived(&mut g, 4, &[(2, 9000), (3, 9000)], "top");
    g
}

#[test]
fn repeated_dag_nodes_are_expanded_once() {
    let g = dag();
    let up = to_text(&ancestors(&g, &id(4), 10).unwrap());
    let up_tree: Vec<&str> = up.lines().skip(2).take(6).collect();
    assert_eq!(
        up_tree,
        [
            "040404040404 DERIVED_UNTRUSTED derived by agent \"top\" *",
            "├── strong 0.9: 020202020202 DERIVED_UNTRUSTED derived by agent \"left\" *",
            "│   └── strong 0.6: 010101010101 DERIVED_UNTRUSTED derived by agent \"summary\" *",
            "│       └── strong 0.8: 000000000000 EXTERNAL tool_output by email \"root\" *",
            "└── strong 0.9: 030303030303 DERIVED_UNTRUSTED derived by agent \"right\"",
            "    └── strong 0.7: 010101010101 DERIVED_UNTRUSTED derived by agent \"summary\" * (parents shown above)",
        ]
    );
    let down = to_text(&descendants(&g, &id(0), 10).unwrap());
    let down_tree: Vec<&str> = down.lines().skip(2).take(6).collect();
    assert_eq!(
        down_tree,
        [
            "000000000000 EXTERNAL tool_output by email \"root\" *",
            "└── strong 0.8: 010101010101 DERIVED_UNTRUSTED derived by agent \"summary\"",
            "    ├── strong 0.7: 030303030303 DERIVED_UNTRUSTED derived by agent \"right\"",
            "    │   └── strong 0.9: 040404040404 DERIVED_UNTRUSTED derived by agent \"top\"",
            "    └── strong 0.6: 020202020202 DERIVED_UNTRUSTED derived by agent \"left\"",
            "        └── strong 0.9: 040404040404 DERIVED_UNTRUSTED derived by agent \"top\"",
        ]
    );
    assert_eq!(down.lines().count(), 10, "{down}");
}

#[test]
fn deep_chains_render_without_recursion() {
    let mut g = MemoryLineage::new();
    add(
        &mut g,
        0,
        "email",
        TrustClass::External,
        EntryKind::ToolOutput,
        &[],
        "root",
    );
    // 255 is the most this builder's one-byte ids allow; the renderer is iterative anyway.
    for n in 1..=255u8 {
        add(
            &mut g,
            n,
            "agent",
            TrustClass::Trusted,
            EntryKind::Derived,
            &[(n - 1, 9000)],
            "x",
        );
    }
    let a = ancestors(&g, &id(255), usize::MAX).unwrap();
    let t = to_text(&a);
    assert_eq!(t.lines().filter(|l| l.contains("strong 0.9")).count(), 255);
    assert_eq!(a.explanation.unwrap().path.len(), 256);
    dot_parses_any(&to_dot(&ancestors(&g, &id(255), usize::MAX).unwrap()));
}

fn dot_parses_any(dot: &str) {
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("skipping the Graphviz check: `dot` is not available");
        return;
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(dot.as_bytes())
        .expect("dot reads its input");
    let out = child.wait_with_output().expect("dot runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unknown_focus_renders_plainly() {
    let g = ancestors(&known(), &id(0x01), 3).unwrap();
    assert_eq!(to_text(&g), "lineage of 010101010101: not found\n");
    assert!(to_json(&g)["explanation"].is_null());
    dot_parses_any(&to_dot(&g));
    assert_eq!(
        to_mermaid(&g),
        "flowchart BT\n  classDef trusted fill:#2ca02c,color:#ffffff\n  classDef derived_trusted fill:#808000,color:#ffffff\n  classDef derived_untrusted fill:#ff8c00,color:#000000\n  classDef external fill:#d62728,color:#ffffff\n"
    );
}
