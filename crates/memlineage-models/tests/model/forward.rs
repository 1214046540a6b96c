//! The hand-written forward pass agrees with candle-transformers' `quantized_llama`.
//!
//! With [`Compute::Quantized`] our port performs the same tensor operations as the reference,
//! so the logits must agree to float rounding. The default [`Compute::F32`] differs only in the
//! matmul kernel (f32 activations instead of 8-bit-rounded ones), so it must agree on the
//! greedy choice and closely on the logits.

use std::io::Cursor;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;

use crate::common::{model, quantized_model};
use memlineage_models::LocalModel;

fn reference(m: &LocalModel) -> ModelWeights {
    let bytes = std::fs::read(m.path()).expect("read model");
    let mut r = Cursor::new(&bytes[..]);
    let ct = gguf_file::Content::read(&mut r).expect("gguf");
    ModelWeights::from_gguf(ct, &mut r, &Device::Cpu).expect("reference model")
}

fn reference_logits(rm: &mut ModelWeights, tokens: &[u32], pos: usize) -> Vec<f32> {
    let x = Tensor::new(tokens, &Device::Cpu)
        .and_then(|t| t.unsqueeze(0))
        .expect("input");
    rm.forward(&x, pos)
        .and_then(|l| l.squeeze(0))
        .and_then(|l| l.to_vec1())
        .expect("reference forward")
}

fn top_k(v: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn prompts(m: &LocalModel) -> Vec<Vec<u32>> {
    vec![
        m.chat_prompt("", "What is the capital of France?")
            .expect("prompt"),
        m.tokenizer()
            .encode("The quick brown fox jumps over the lazy dog. The quick brown"),
        m.tokenizer().encode("1, 2, 3, 4, 5,"),
    ]
}

#[test]
fn quantized_logits_equal_candle_transformers() {
    let Some(m) = quantized_model() else { return };
    let mut rm = reference(m);
    for p in &prompts(m) {
        let ours = m.next_token_logits(p).expect("our forward");
        rm.clear_kv_cache();
        let theirs = reference_logits(&mut rm, p, 0);
        let d = max_abs_diff(&ours, &theirs);
        assert!(d < 1e-3, "max |Δlogit| = {d} for {p:?}");
        assert_eq!(top_k(&ours, 5), top_k(&theirs, 5));
    }
}

#[test]
fn f32_logits_agree_with_candle_transformers() {
    let Some(m) = model() else { return };
    let mut rm = reference(m);
    for p in &prompts(m) {
        let ours = m.next_token_logits(p).expect("our forward");
        rm.clear_kv_cache();
        let theirs = reference_logits(&mut rm, p, 0);
        let d = max_abs_diff(&ours, &theirs);
        let spread = theirs.iter().copied().fold(f32::MIN, f32::max)
            - theirs.iter().copied().fold(f32::MAX, f32::min);
        eprintln!("f32 vs quantized reference: max |Δlogit| = {d} (logit range {spread})");
        assert!(d < 0.02 * spread, "max |Δlogit| = {d} for {p:?}");
        assert_eq!(top_k(&ours, 1), top_k(&theirs, 1));
    }
}

#[test]
fn greedy_decoding_matches_candle_transformers() {
    let Some(q) = quantized_model() else { return };
    let Some(f) = model() else { return };
    let mut rm = reference(q);
    let prompt = q
        .chat_prompt("", "Name three primary colours.")
        .expect("prompt");
    let n = 12;
    // The reference, step by step with its own KV cache.
    let mut theirs = Vec::new();
    let mut logits = reference_logits(&mut rm, &prompt, 0);
    for _ in 0..n {
        let next = top_k(&logits, 1)[0] as u32;
        theirs.push(next);
        logits = reference_logits(&mut rm, &[next], prompt.len() + theirs.len() - 1);
    }
    let show = |ids: &[u32]| q.tokenizer().decode(ids, false);
    let ours = q.generate(&prompt, n, &[]).expect("generate");
    assert_eq!(ours, theirs, "{:?} vs {:?}", show(&ours), show(&theirs));
    let ours = f.generate(&prompt, n, &[]).expect("generate");
    assert_eq!(ours, theirs, "{:?} vs {:?}", show(&ours), show(&theirs));
}

#[test]
fn kv_cache_steps_equal_one_full_pass() {
    let Some(m) = model() else { return };
    let t = m
        .tokenizer()
        .encode("Alice sent the invoice to Bob on Monday, and Bob paid it");
    let full = m.next_token_logits(&t).expect("full");
    // generate() runs the prompt through the cache, then feeds tokens one at a time.
    let g = m.generate(&t, 1, &[]).expect("generate");
    assert_eq!(g[0] as usize, top_k(&full, 1)[0]);
    let head = m.generate(&t[..7], t.len() - 7 + 1, &[]).expect("generate");
    // Feeding the true continuation token by token must predict like the full pass does.
    let mut rm = reference(m);
    let (a, b) = t.split_at(7);
    reference_logits(&mut rm, a, 0);
    let split = reference_logits(&mut rm, b, a.len());
    let mut rm2 = reference(m);
    let whole = reference_logits(&mut rm2, &t, 0);
    assert!(max_abs_diff(&whole, &split) < 1e-3);
    assert!(!head.is_empty());
}
