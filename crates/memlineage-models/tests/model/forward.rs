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

fn log_softmax(v: &[f32]) -> Vec<f64> {
    let max = v.iter().copied().fold(f32::MIN, f32::max);
    let lse = v
        .iter()
        .map(|&x| f64::from(x - max).exp())
        .sum::<f64>()
        .ln();
    v.iter().map(|&x| f64::from(x - max) - lse).collect()
}

/// KL(p ‖ q) of the next-token distributions given by two logit vectors.
fn kl_divergence(p: &[f32], q: &[f32]) -> f64 {
    let (lp, lq) = (log_softmax(p), log_softmax(q));
    lp.iter().zip(&lq).map(|(a, b)| a.exp() * (a - b)).sum()
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
        // The reference rounds every matmul input to 8 bits; over 30 layers that shifts the
        // logits (mostly by a common offset, which softmax ignores) but must leave the
        // next-token distribution and its top ranking essentially unchanged.
        let kl = kl_divergence(&theirs, &ours);
        eprintln!(
            "f32 vs quantized reference: max |Δlogit| {:.3}, KL(ref ‖ ours) {kl:.5}",
            max_abs_diff(&ours, &theirs)
        );
        assert!(kl < 0.05, "KL = {kl} for {p:?}");
        // Near-ties at the top may flip (for the chat prompt the first reply token is a
        // 0.15 / 0.14 tie between "The" and "I"), so the check is on the top of the ranking,
        // not strict equality.
        let (a, b) = (top_k(&ours, 5), top_k(&theirs, 5));
        let (lp, lq) = (log_softmax(&theirs), log_softmax(&ours));
        eprintln!(
            "  top-5 ours {a:?} p={:.3?}, reference {b:?} p={:.3?}",
            a.iter().map(|&i| lq[i].exp()).collect::<Vec<_>>(),
            b.iter().map(|&i| lp[i].exp()).collect::<Vec<_>>()
        );
        assert!(
            a[..2].contains(&b[0]) && b[..2].contains(&a[0]),
            "{a:?} vs {b:?}"
        );
        assert!(
            a.iter().filter(|i| b.contains(i)).count() >= 4,
            "{a:?} vs {b:?}"
        );
    }
}

/// The default F32 mode is exactly candle-transformers with `CANDLE_DEQUANTIZE_ALL=1` (the
/// reference reads that variable once per thread, and setting it needs `unsafe`, so the
/// comparison runs in a child process of this test binary).
#[test]
fn f32_logits_equal_dequantized_candle_transformers() {
    let Some(_) = model() else { return };
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "forward::dequantized_reference_child",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CANDLE_DEQUANTIZE_ALL", "1")
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "child ran no test:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("dequantized reference agrees"), "{stderr}");
}

#[test]
#[ignore = "run by f32_logits_equal_dequantized_candle_transformers with CANDLE_DEQUANTIZE_ALL=1"]
fn dequantized_reference_child() {
    if std::env::var_os("CANDLE_DEQUANTIZE_ALL").is_none() {
        eprintln!("CANDLE_DEQUANTIZE_ALL is not set: nothing to compare");
        return;
    }
    let Some(m) = model() else { return };
    let mut rm = reference(m);
    for p in &prompts(m) {
        let ours = m.next_token_logits(p).expect("our forward");
        rm.clear_kv_cache();
        let theirs = reference_logits(&mut rm, p, 0);
        let d = max_abs_diff(&ours, &theirs);
        assert!(d < 1e-3, "max |Δlogit| = {d} for {p:?}");
        assert_eq!(top_k(&ours, 5), top_k(&theirs, 5));
    }
    eprintln!("dequantized reference agrees");
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
    // The default F32 model: cached generation equals recomputing the whole sequence each step.
    let cached = f.generate(&prompt, 6, &[]).expect("generate");
    let mut seq = prompt.clone();
    for _ in 0..6 {
        let logits = f.next_token_logits(&seq).expect("full pass");
        seq.push(top_k(&logits, 1)[0] as u32);
    }
    assert_eq!(cached, seq[prompt.len()..], "{:?}", show(&cached));
}

#[test]
fn reference_cache_split_is_consistent() {
    // Sanity check of the reference harness itself: a prefix through the cache, then the rest,
    // predicts like one full pass.
    let Some(m) = quantized_model() else { return };
    let t = m
        .tokenizer()
        .encode("Alice sent the invoice to Bob on Monday, and Bob paid it");
    let mut rm = reference(m);
    let (a, b) = t.split_at(7);
    reference_logits(&mut rm, a, 0);
    let split = reference_logits(&mut rm, b, a.len());
    let mut rm = reference(m);
    let whole = reference_logits(&mut rm, &t, 0);
    assert!(max_abs_diff(&whole, &split) < 1e-3);
    assert_eq!(
        m.next_token_logits(&t).map(|l| top_k(&l, 1)).expect("ours"),
        top_k(&whole, 1)
    );
}
