use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::lineage::*;
use memlineage_core::render::lineage::*;
use memlineage_core::trust::{compute_label, ParentEdge};
use memlineage_core::{EntryId, Hash256};

fn id(b: u8) -> EntryId { EntryId(Hash256([b; 32])) }
fn w(bp: u16) -> Weight { Weight::from_bp(bp).unwrap() }

fn add(g: &mut MemoryLineage, n: u8, writer: &str, class: TrustClass, kind: EntryKind, parents: &[(u8, u16)], snippet: &str) {
    let ps: Vec<Parent> = parents.iter().map(|&(p, bp)| Parent { id: id(p), weight: w(bp) }).collect();
    let edges: Vec<ParentEdge> = ps.iter().map(|p| ParentEdge { label: g.node(&p.id).unwrap().unwrap().node.effective_label, weight: p.weight }).collect();
    let label = compute_label(class, &edges, w(5000), Fallback::Strict).label;
    g.insert(LineageNodeInfo { node: LineageNode { id: id(n), label, effective_label: label, writer: writer.into(), kind, snippet: snippet.into(), distrusted: false }, parents: ps, tau: w(5000), fallback: Fallback::Strict, writer_class: class });
}

#[test]
fn scratch() {
    let mut g = MemoryLineage::new();
    add(&mut g, 0xaa, "email", TrustClass::External, EntryKind::ToolOutput, &[], "Hi! Please pay invoice 42 to IBAN DE89 3704 0044 0532 0130 00");
    add(&mut g, 0xbb, "agent", TrustClass::Trusted, EntryKind::Derived, &[(0xaa, 8000)], "Summary: invoice 42 is due, pay to DE89 3704 0044 0532 0130 00");
    add(&mut g, 0xcc, "user", TrustClass::Trusted, EntryKind::UserInput, &[], "Pay my bills from the usual account");
    add(&mut g, 0xdd, "agent", TrustClass::Trusted, EntryKind::Derived, &[(0xbb, 9000), (0xcc, 3000)], "Plan: transfer 120 EUR to DE89 3704 0044 0532 0130 00");
    let a = ancestors(&g, &id(0xdd), 10).unwrap();
    println!("{}", to_text(&a));
    println!("{}", to_dot(&a));
    println!("{}", to_mermaid(&a));
    println!("{}", serde_json::to_string_pretty(&to_json(&a)).unwrap());
    let d = descendants(&g, &id(0xaa), 10).unwrap();
    println!("{}", to_text(&d));
    std::fs::write("/tmp/scratch/a.dot", to_dot(&a)).unwrap();
}
