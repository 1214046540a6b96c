//! Criterion benches of the raw primitives and the pure operations: sign, verify, one Merkle
//! node, encode, strict decode, batch verification, label propagation, a gate decision.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ed25519_dalek::Signer;
use memlineage_bench::fixtures::{
    gate_scenario, principal_key, signed_entries, tau, typical_body, typical_edges,
};
use memlineage_core::Hash256;
use memlineage_core::entry::SignedEntry;
use memlineage_core::gate::{GateInput, decide};
use memlineage_core::keys::{self, BatchItem, Domain};
use memlineage_core::label::{Fallback, TrustClass};
use memlineage_core::merkle;
use memlineage_core::trust::compute_label;
use std::hint::black_box;
use std::time::Duration;

fn primitives(c: &mut Criterion) {
    let key = principal_key(1, "agent");
    let pk = key.verifying_key();
    let body = typical_body(1, 0);
    let bytes = body.canonical_bytes();
    let msg = Domain::EntryV1.message(&bytes);
    let sig = key.sign(&msg);
    c.bench_function("raw_sign", |b| b.iter(|| key.sign(black_box(&msg))));
    c.bench_function("raw_verify", |b| {
        b.iter(|| pk.verify_strict(black_box(&msg), &sig).is_ok())
    });
    let (l, r) = (Hash256::of(b"l"), Hash256::of(b"r"));
    c.bench_function("raw_sha256_node", |b| {
        b.iter(|| merkle::node_hash(black_box(&l), black_box(&r)))
    });
    c.bench_function("encode_body", |b| {
        b.iter(|| black_box(&body).canonical_bytes())
    });
    let leaf = SignedEntry::sign(body.clone(), &key)
        .expect("signs")
        .to_leaf();
    c.bench_function("decode_leaf_strict", |b| {
        b.iter(|| SignedEntry::from_leaf(black_box(&leaf)).is_ok())
    });

    let (entries, epk) = signed_entries(1, 64).expect("entries");
    let items: Vec<BatchItem<'_>> = entries
        .iter()
        .map(|e| BatchItem {
            key: &epk,
            bytes: e.body_bytes(),
            signature: e.signature(),
        })
        .collect();
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(64));
    g.bench_function("batch_verify_64", |b| {
        b.iter(|| keys::verify_batch(Domain::EntryV1, black_box(&items)).is_ok())
    });
    g.finish();

    let edges = typical_edges();
    c.bench_function("label_propagation", |b| {
        b.iter(|| {
            compute_label(
                TrustClass::Trusted,
                black_box(&edges),
                tau(),
                Fallback::Strict,
            )
        })
    });
    let (policy, call, ctx) = gate_scenario().expect("gate scenario");
    let input = GateInput::new(&call, &ctx, tau());
    c.bench_function("gate_decision", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&input)).is_ok())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = primitives
}
criterion_main!(benches);
