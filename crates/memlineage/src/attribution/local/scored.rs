//! The scored local judge: the model's answer is *read* from its next-token probabilities,
//! not sampled (`docs/attribution.md`, "LmSelfEval: the hardened judge").
//!
//! SmolLM2-135M in free generation echoes the envelope instead of answering (its replies
//! start with `{"task":…`), so the generating judge falls back on every call. The scored judge
//! asks the same question and measures what the model would answer if it did: it keeps the
//! system prompt, re-packs the envelope with **one parent at a time** (same id, same text,
//! same child, the reply instruction naming only that id), writes the start of the reply
//! itself up to the number the model is to fill in
//!
//! ```text
//! <|im_start|>assistant\n{"weights": {"p3f0a9c1e": ▮
//! ```
//!
//! and reads, at ▮, the probabilities of the tokens `0` and `1` (SmolLM2 encodes every digit
//! as its own token), after `0` the probability of `.` against a terminator (`,` `}` `}}`),
//! and after `0.` the distribution over the ten digits. Their expected value is the weight (a
//! probability-weighted score, as in G-Eval):
//!
//! ```text
//! w = (P(1) + P(0) · P(. | 0) · Σ_d P(d | 0.) · d/10) / (P(0) + P(1))
//! ```
//!
//! with `P(. | 0)` normalised over `.` and the terminators and `P(d | 0.)` over the digits.
//! One parent at a time, because asked about all parents in one envelope the 135 M model's
//! scores follow the parents' order (the first one highest), not their content. The reply is
//! built as `{"weights": {"p…": 0.8123, …}}` and goes through the same strict parser as any
//! backend's; weights are in `[0, 1]` by construction and the ids come only from the envelope.
//!
//! Measured on the labelled set, the scores carry no signal (real and other edges both
//! average ≈ 0.74; `docs/attribution.md`): the scored judge shows that the model cannot
//! judge, not only that it cannot follow the reply format. The default local judge reads the
//! same expected values with every parent in one request ([`super::constrained`]); this one
//! is kept to compare, and for a larger local model.

use super::model_err;
use crate::attribution::AttributionError;
use crate::attribution::judge::envelope;
use memlineage_models::{LocalModel, Prefix};

/// Below this total probability on `0` and `1` the model is not answering with a number at
/// all, and the score is refused (LmSelfEval then falls back to coarse weights).
pub const MIN_NUMBER_MASS: f64 = 1e-3;

/// The envelope ids listed in the user message (`"ids"` of its first line).
pub(crate) fn envelope_ids(user: &str) -> Result<Vec<String>, AttributionError> {
    envelope::ids_of(user).map_err(|why| {
        AttributionError::Invalid(format!(
            "the local judge needs a judge envelope as the user message: {why}"
        ))
    })
}

/// The single token `text` adds after `prefix` (an error when it is not exactly one token).
fn next_token(model: &LocalModel, prefix: &str, text: &str) -> Result<u32, AttributionError> {
    let t = model.tokenizer();
    let base = t.encode(prefix);
    let full = t.encode(&format!("{prefix}{text}"));
    match full.strip_prefix(base.as_slice()) {
        Some([one]) => Ok(*one),
        _ => Err(AttributionError::Model(format!(
            "the tokenizer does not encode {text:?} as one token after {prefix:?}; the scored \
             judge needs a tokenizer that splits digits (SmolLM2's does)"
        ))),
    }
}

/// The tokens the score reads, found in the context they occur in.
pub(crate) struct Tokens {
    pub(crate) zero: u32,
    pub(crate) one: u32,
    pub(crate) dot: u32,
    pub(crate) terminators: Vec<u32>,
    pub(crate) digits: [u32; 10],
}

impl Tokens {
    pub(crate) fn find(model: &LocalModel) -> Result<Tokens, AttributionError> {
        let before = "{\"weights\": {\"p0\": ";
        let zero = next_token(model, before, "0")?;
        let one = next_token(model, before, "1")?;
        let after_zero = format!("{before}0");
        let dot = next_token(model, &after_zero, ".")?;
        let mut terminators = Vec::new();
        for t in [",", "}", "}}"] {
            // A terminator the tokenizer merges with something else is simply not read.
            if let Ok(id) = next_token(model, &after_zero, t)
                && !terminators.contains(&id)
            {
                terminators.push(id);
            }
        }
        let after_dot = format!("{after_zero}.");
        let mut digits = [0u32; 10];
        for (d, slot) in digits.iter_mut().enumerate() {
            *slot = next_token(model, &after_dot, &d.to_string())?;
        }
        Ok(Tokens {
            zero,
            one,
            dot,
            terminators,
            digits,
        })
    }
}

/// The expected value of the number in `[0, 1]` the model would write next at `at`.
fn expected_number(at: &Prefix<'_>, tok: &Tokens) -> Result<f64, AttributionError> {
    let p = at.probabilities(&[tok.zero, tok.one]).map_err(model_err)?;
    let (p0, p1) = (p[0], p[1]);
    let mass = p0 + p1;
    // `mass` is a sum of probabilities in [0, 2]; NaN (non-finite logits) is refused too.
    if mass.is_nan() || mass < MIN_NUMBER_MASS {
        return Err(AttributionError::Model(format!(
            "the judge puts probability {mass:.2e} on a number where the reply needs one"
        )));
    }
    let after_zero = at.extend(&[tok.zero]).map_err(model_err)?;
    let mut ids = vec![tok.dot];
    ids.extend(&tok.terminators);
    let q = after_zero.probabilities(&ids).map_err(model_err)?;
    let q_total: f64 = q.iter().sum();
    let p_dot = if q_total > 0.0 { q[0] / q_total } else { 0.0 };
    let after_dot = after_zero.extend(&[tok.dot]).map_err(model_err)?;
    let d = after_dot.probabilities(&tok.digits).map_err(model_err)?;
    let d_total: f64 = d.iter().sum();
    let tenth = if d_total > 0.0 {
        d.iter()
            .enumerate()
            .map(|(i, p)| p * i as f64 / 10.0)
            .sum::<f64>()
            / d_total
    } else {
        0.0
    };
    let w = (p1 + p0 * p_dot * tenth) / mass;
    Ok(w.clamp(0.0, 1.0))
}

/// One single-parent user message per parent of the envelope in `user`: the same document
/// with only that parent (same id, same text) and the reply instruction naming only its id.
pub(crate) fn single_parent_messages(
    user: &str,
) -> Result<Vec<(String, String)>, AttributionError> {
    let ids = envelope_ids(user)?;
    let bad = |why: &str| {
        AttributionError::Invalid(format!(
            "the scored local judge needs a judge envelope as the user message: {why}"
        ))
    };
    let v: serde_json::Value = serde_json::from_str(envelope::envelope_of(user))
        .map_err(|e| bad(&format!("its first line is not JSON ({e})")))?;
    let parents = v
        .get("parents")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| bad("it has no \"parents\" list"))?;
    let child = v.get("child").ok_or_else(|| bad("it has no \"child\""))?;
    if parents.len() != ids.len()
        || parents
            .iter()
            .zip(&ids)
            .any(|(p, id)| p.get("id").and_then(serde_json::Value::as_str) != Some(id))
    {
        return Err(bad("its parents do not match its ids"));
    }
    Ok(parents
        .iter()
        .zip(ids)
        .map(|(p, id)| {
            let doc = serde_json::json!({
                "task": "attribution",
                "parents": [p],
                "child": child,
                "ids": [&id],
            });
            let one = std::slice::from_ref(&id);
            (id.clone(), envelope::user_message(&doc.to_string(), one))
        })
        .collect())
}

/// The scored judge's reply to one request: `{"weights": {ID: score, …}}` with 4 decimals.
///
/// Each parent is judged alone — the envelope re-packed with that parent only (same id and
/// text) — because a 135 M model cannot look a parent up by its id in a list: asked about
/// all parents at once its scores follow the parents' order, not their content. The token
/// prefix the requests share (the system prompt) is read once.
pub(crate) fn scored_reply(
    model: &LocalModel,
    system: &str,
    user: &str,
) -> Result<String, AttributionError> {
    let messages = single_parent_messages(user)?;
    let tok = Tokens::find(model)?;
    let mut prompts = Vec::with_capacity(messages.len());
    for (id, message) in &messages {
        let mut p = model.chat_prompt(system, message).map_err(model_err)?;
        // serde_json quotes the id exactly as the reply will carry it.
        let key = serde_json::to_string(id).unwrap_or_default();
        p.extend(
            model
                .tokenizer()
                .encode(&format!("{{\"weights\": {{{key}: ")),
        );
        prompts.push((key, p));
    }
    let Some((_, first)) = prompts.first() else {
        return Ok("{\"weights\": {}}".to_string());
    };
    // The longest common token prefix, minus one token so every request has a suffix to run.
    let shared = prompts
        .iter()
        .map(|(_, p)| p.iter().zip(first).take_while(|(a, b)| a == b).count())
        .min()
        .unwrap_or(0)
        .min(first.len().saturating_sub(1));
    let base = match shared {
        0 => None,
        n => Some(model.prefix(&first[..n]).map_err(model_err)?),
    };
    let mut items = Vec::with_capacity(prompts.len());
    for (key, p) in &prompts {
        let at = match &base {
            Some(b) => b.extend(&p[shared..]),
            None => model.prefix(p),
        }
        .map_err(model_err)?;
        let w = expected_number(&at, &tok)?;
        items.push(format!("{key}: {w:.4}"));
    }
    Ok(format!("{{\"weights\": {{{}}}}}", items.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_envelope_only() {
        let env = envelope::build(
            "child",
            &["a \"ids\": [\"p00000000\"]", "b"],
            b"",
            envelope::DEFAULT_MAX_CHARS,
        );
        assert_eq!(envelope_ids(&env.user).expect("ids"), env.ids);
        assert!(envelope_ids("not json").is_err());
        assert!(envelope_ids("{\"ids\": [1]}").is_err());
        assert!(envelope_ids("{\"task\": \"x\"}").is_err());
    }
}
