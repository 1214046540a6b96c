//! Reading a prompt once and continuing it several ways (`LocalModel::prefix`).

use crate::common::model;

#[test]
fn extending_a_prefix_equals_running_the_whole_sequence() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    let head = t.encode("The capital of France is");
    let tail_a = t.encode(" Paris, and the capital of Italy is");
    let tail_b = t.encode(" a city");
    let p = m.prefix(&head).expect("prefix");
    assert_eq!(p.len(), head.len());
    // The prefix's own logits are those of the head.
    let direct = m.next_token_logits(&head).expect("logits");
    let max_diff = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    assert!(max_diff(p.logits(), &direct) < 1e-3);
    for tail in [&tail_a, &tail_b] {
        let e = p.extend(tail).expect("extend");
        assert_eq!(e.len(), head.len() + tail.len());
        let mut whole = head.clone();
        whole.extend(tail.iter());
        let direct = m.next_token_logits(&whole).expect("logits");
        let d = max_diff(e.logits(), &direct);
        assert!(d < 1e-3, "cached continuation differs by {d}");
    }
    // Extending did not change the prefix.
    assert!(max_diff(p.logits(), &m.next_token_logits(&head).expect("logits")) < 1e-3);
    // Probabilities: the continuation the model expects is likely, and they are a distribution.
    let paris = t.encode(" Paris");
    let probs = p.probabilities(&paris[..1]).expect("probabilities");
    assert!(probs[0] > 0.1, "P(' Paris') = {}", probs[0]);
    let all: Vec<u32> = (0..t.vocab_size() as u32).collect();
    let total: f64 = p.probabilities(&all).expect("all").iter().sum();
    assert!((total - 1.0).abs() < 1e-6, "{total}");
    assert!(p.probabilities(&[u32::MAX]).is_err());
    assert!(m.prefix(&[]).is_err());
}
