//! The constrained local judge: the reply is decoded under the envelope's grammar, so the
//! model chooses only the numbers (`docs/attribution.md`, "LmSelfEval: the hardened judge").
//!
//! In free generation SmolLM2-135M echoes the envelope instead of replying; an OpenAI-compatible
//! server with a JSON schema ([`crate::attribution::judge::schema`]) makes the same model reply
//! in the envelope's shape by allowing, at each step, only the tokens that keep the output a
//! prefix of a valid reply. This module does the same in-process. The reply for the envelope
//! ids `p1 … pn` is
//!
//! ```text
//! {"weights": {"p1": N, "p2": N, …, "pn": N}}
//! ```
//!
//! where everything but the numbers `N` is fixed: we write it (the ids come from our envelope,
//! never from the model or a parent's text), and the model reads it as its own reply. Each `N`
//! is a number in [0, 1] of the grammar [`NumberState`] (`0`, `1`, or `0.` and one or two
//! digits), read in one of two ways ([`NumberReading`]):
//!
//! * **greedy** — at each step the allowed token with the highest logit (a digit, the `.`, or
//!   the first token of the text that follows the number): what a grammar-constrained server
//!   does at temperature 0;
//! * **expected** — the expected value of the number, from the model's probabilities at the
//!   number's fixed position, restricted to the grammar: `P(1) + P(0) · P(. | 0) · E[d | 0.]/10`
//!   with each distribution renormalised over its allowed tokens (as in G-Eval); the value,
//!   rounded to two decimals, is then written into the reply the model continues from.
//!
//! Either way the reply is built by us, is always in the envelope's shape, and still goes
//! through the strict parser like any backend's. Unlike the scored judge ([`super::scored`],
//! one parent per request) the model sees every parent in one request, as with the schema on a
//! server, and writes the weights in the envelope's order.

use super::model_err;
use super::scored::{Tokens, envelope_ids};
use crate::attribution::AttributionError;
use memlineage_models::{LocalModel, Prefix};

/// Most digits after `0.` in a greedy number (weights are recorded in basis points; the τ grid
/// of the measurement is 0.1).
pub const FRACTION_DIGITS: u8 = 2;

/// How the constrained judge reads each number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberReading {
    /// The allowed token with the highest logit, step by step.
    Greedy,
    /// The expected value of the number over the allowed tokens.
    Expected,
}

/// The fixed text of a reply naming `ids`, around the numbers: `frame[0] N frame[1] N …
/// frame[n]`. With no ids, the whole reply `{"weights": {}}`.
pub fn reply_frame(ids: &[String]) -> Vec<String> {
    if ids.is_empty() {
        return vec!["{\"weights\": {}}".to_string()];
    }
    let mut out = Vec::with_capacity(ids.len() + 1);
    for (i, id) in ids.iter().enumerate() {
        // serde_json quotes the id exactly as the parser will read it.
        let key = serde_json::to_string(id).unwrap_or_default();
        out.push(if i == 0 {
            format!("{{\"weights\": {{{key}: ")
        } else {
            format!(", {key}: ")
        });
    }
    out.push("}}".to_string());
    out
}

/// One step of a number: a digit, the decimal point, or the end of the number (the first
/// token of the fixed text after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A digit 0–9.
    Digit(u8),
    /// `.`.
    Dot,
    /// The number is complete.
    End,
}

/// Where the decoder is inside a number in [0, 1]: `0`, `1`, or `0.` followed by one to
/// [`FRACTION_DIGITS`] digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberState {
    /// Nothing written yet: `0` or `1`.
    Start,
    /// `0`: a `.` or the end.
    Zero,
    /// `1`: the end.
    One,
    /// `0.`: a digit.
    Dot,
    /// `0.` and this many digits: another digit (up to [`FRACTION_DIGITS`]) or the end.
    Fraction(u8),
}

impl NumberState {
    /// The steps allowed here.
    pub fn allowed(self) -> Vec<Step> {
        let digits = || (0..10).map(Step::Digit);
        match self {
            NumberState::Start => vec![Step::Digit(0), Step::Digit(1)],
            NumberState::Zero => vec![Step::Dot, Step::End],
            NumberState::One => vec![Step::End],
            NumberState::Dot => digits().collect(),
            NumberState::Fraction(k) if k < FRACTION_DIGITS => {
                digits().chain([Step::End]).collect()
            }
            NumberState::Fraction(_) => vec![Step::End],
        }
    }

    /// The state after an allowed `step`; `None` when the step ends the number or is not
    /// allowed here.
    pub fn after(self, step: Step) -> Option<NumberState> {
        match (self, step) {
            (NumberState::Start, Step::Digit(0)) => Some(NumberState::Zero),
            (NumberState::Start, Step::Digit(1)) => Some(NumberState::One),
            (NumberState::Zero, Step::Dot) => Some(NumberState::Dot),
            (NumberState::Dot, Step::Digit(_)) => Some(NumberState::Fraction(1)),
            (NumberState::Fraction(k), Step::Digit(_)) if k < FRACTION_DIGITS => {
                Some(NumberState::Fraction(k + 1))
            }
            _ => None,
        }
    }
}

/// `w` in [0, 1] as the judge writes it: two decimals at most, no trailing zeros.
pub fn format_weight(w: f64) -> String {
    let c = (w.clamp(0.0, 1.0) * 100.0).round() as u32;
    match c {
        0 => "0".to_string(),
        100.. => "1".to_string(),
        c => format!("0.{c:02}").trim_end_matches('0').to_string(),
    }
}

/// The softmax of `logits` restricted to `ids` (in log space, so a number the model finds
/// unlikely everywhere still gets a well-defined distribution over what the grammar allows).
fn restricted(logits: &[f32], ids: &[u32]) -> Result<Vec<f64>, AttributionError> {
    let ls = ids
        .iter()
        .map(|&id| {
            logits
                .get(id as usize)
                .map(|&l| f64::from(l))
                .filter(|l| l.is_finite())
                .ok_or_else(|| {
                    AttributionError::Model(format!(
                        "no finite logit for token {id} (vocabulary of {})",
                        logits.len()
                    ))
                })
        })
        .collect::<Result<Vec<f64>, _>>()?;
    let max = ls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = ls.iter().map(|l| (l - max).exp()).collect();
    let z: f64 = exps.iter().sum();
    Ok(exps.into_iter().map(|e| e / z).collect())
}

/// A number read at `at` (the state just before it): its text, the state the number's
/// tokens were already run into, and the number's tokens not yet run (the caller runs them
/// with the fixed text that follows).
struct Read<'m> {
    text: String,
    at: Prefix<'m>,
    pending: Vec<u32>,
}

fn token_of(step: Step, tok: &Tokens, end: u32) -> u32 {
    match step {
        Step::Digit(d) => tok.digits[usize::from(d)],
        Step::Dot => tok.dot,
        Step::End => end,
    }
}

fn greedy_number<'m>(at: Prefix<'m>, tok: &Tokens, end: u32) -> Result<Read<'m>, AttributionError> {
    let mut state = NumberState::Start;
    let mut at = at;
    let mut text = String::new();
    loop {
        let logit = |s: Step| {
            at.logits()
                .get(token_of(s, tok, end) as usize)
                .copied()
                .unwrap_or(f32::NEG_INFINITY)
        };
        let allowed = state.allowed();
        let mut best = (allowed[0], logit(allowed[0]));
        for &s in &allowed[1..] {
            // Strictly greater: ties go to the earlier step (deterministic).
            let l = logit(s);
            if l > best.1 {
                best = (s, l);
            }
        }
        let step = best.0;
        let Some(next) = state.after(step) else {
            return Ok(Read {
                text,
                at,
                pending: Vec::new(),
            });
        };
        text.push(match step {
            Step::Digit(d) => char::from(b'0' + d),
            _ => '.',
        });
        at = at.extend(&[token_of(step, tok, end)]).map_err(model_err)?;
        state = next;
    }
}

fn expected_number<'m>(
    model: &LocalModel,
    at: Prefix<'m>,
    tok: &Tokens,
    end: u32,
) -> Result<Read<'m>, AttributionError> {
    let first = restricted(at.logits(), &[tok.zero, tok.one])?;
    let zero = at.extend(&[tok.zero]).map_err(model_err)?;
    let p_dot = restricted(zero.logits(), &[tok.dot, end])?[0];
    let dot = zero.extend(&[tok.dot]).map_err(model_err)?;
    let digits = restricted(dot.logits(), &tok.digits)?;
    let tenth: f64 = digits
        .iter()
        .enumerate()
        .map(|(d, p)| p * d as f64 / 10.0)
        .sum();
    let w = first[1] + first[0] * p_dot * tenth;
    if !w.is_finite() {
        return Err(AttributionError::Model(
            "the judge's number is not finite".into(),
        ));
    }
    let text = format_weight(w);
    let pending = model.tokenizer().encode(&text);
    Ok(Read { text, at, pending })
}

/// The constrained judge's reply to one request (see the module documentation).
pub(crate) fn constrained_reply(
    model: &LocalModel,
    system: &str,
    user: &str,
    reading: NumberReading,
) -> Result<String, AttributionError> {
    let ids = envelope_ids(user)?;
    let frame = reply_frame(&ids);
    let mut reply = frame[0].clone();
    if ids.is_empty() {
        return Ok(reply);
    }
    let tok = Tokens::find(model)?;
    let t = model.tokenizer();
    let mut prompt = model.chat_prompt(system, user).map_err(model_err)?;
    prompt.extend(t.encode(&frame[0]));
    let mut at = model.prefix(&prompt).map_err(model_err)?;
    for (i, fixed) in frame.iter().enumerate().skip(1) {
        let mut fixed_tokens = t.encode(fixed);
        let end = *fixed_tokens.first().ok_or_else(|| {
            AttributionError::Model(format!("the tokenizer encodes {fixed:?} as nothing"))
        })?;
        let read = match reading {
            NumberReading::Greedy => greedy_number(at, &tok, end)?,
            NumberReading::Expected => expected_number(model, at, &tok, end)?,
        };
        reply.push_str(&read.text);
        reply.push_str(fixed);
        if i == ids.len() {
            break;
        }
        let mut next = read.pending;
        next.append(&mut fixed_tokens);
        at = read.at.extend(&next).map_err(model_err)?;
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::judge::parse::parse_reply;

    /// Every number the grammar can produce, by walking every allowed step.
    fn all_numbers(state: NumberState, prefix: String, out: &mut Vec<String>) {
        for step in state.allowed() {
            match state.after(step) {
                None => {
                    assert_eq!(step, Step::End, "{prefix}: only End finishes a number");
                    out.push(prefix.clone());
                }
                Some(next) => {
                    let c = match step {
                        Step::Digit(d) => char::from(b'0' + d),
                        Step::Dot => '.',
                        Step::End => unreachable!("End has no next state"),
                    };
                    all_numbers(next, format!("{prefix}{c}"), out);
                }
            }
        }
    }

    #[test]
    fn the_grammar_produces_exactly_the_numbers_in_range() {
        let mut numbers = Vec::new();
        all_numbers(NumberState::Start, String::new(), &mut numbers);
        // 0, 1, 0.d (10), 0.dd (100).
        assert_eq!(numbers.len(), 2 + 10 + 100);
        for n in ["0", "1", "0.5", "0.05", "0.99", "0.0"] {
            assert!(numbers.iter().any(|x| x == n), "{n} unreachable");
        }
        for n in ["1.0", "0.", "2", "0.123", "10", "-0"] {
            assert!(!numbers.iter().any(|x| x == n), "{n} reachable");
        }
        // Every one of them, in the frame, is a reply the strict parser accepts.
        let ids = vec!["pa1b2c3d4".to_string(), "p00ff00ff".to_string()];
        let frame = reply_frame(&ids);
        for n in &numbers {
            let reply = format!("{}{n}{}{n}{}", frame[0], frame[1], frame[2]);
            let ws = parse_reply(&reply, &ids).expect(&reply);
            assert!(ws.iter().all(|w| (0.0..=1.0).contains(w)));
        }
    }

    #[test]
    fn steps_outside_the_grammar_lead_nowhere() {
        assert_eq!(NumberState::Start.after(Step::Digit(2)), None);
        assert_eq!(NumberState::Start.after(Step::Dot), None);
        assert_eq!(NumberState::One.after(Step::Dot), None);
        assert_eq!(NumberState::Zero.after(Step::Digit(5)), None);
        assert_eq!(
            NumberState::Fraction(FRACTION_DIGITS).after(Step::Digit(1)),
            None
        );
        assert_eq!(
            NumberState::Fraction(FRACTION_DIGITS).allowed(),
            vec![Step::End]
        );
    }

    #[test]
    fn the_frame_names_exactly_the_envelope_ids() {
        assert_eq!(reply_frame(&[]), vec!["{\"weights\": {}}"]);
        let ids = vec!["p1".to_string()];
        assert_eq!(reply_frame(&ids), vec!["{\"weights\": {\"p1\": ", "}}"]);
        let ids: Vec<String> = ["pa", "pb", "pc"].map(String::from).to_vec();
        let frame = reply_frame(&ids);
        assert_eq!(frame.len(), 4);
        assert_eq!(frame[2], ", \"pc\": ");
    }

    #[test]
    fn weights_are_written_with_two_decimals_at_most() {
        for (w, s) in [
            (0.0, "0"),
            (0.004, "0"),
            (0.005, "0.01"),
            (0.5, "0.5"),
            (0.25, "0.25"),
            (0.996, "1"),
            (1.0, "1"),
            (7.0, "1"),
            (-1.0, "0"),
            (f64::NAN, "0"),
        ] {
            assert_eq!(format_weight(w), s, "{w}");
        }
    }

    #[test]
    fn restricted_softmax_is_a_distribution_over_the_allowed_ids() {
        let logits = [0.0f32, 1.0, -1000.0, 3.0];
        let p = restricted(&logits, &[1, 2]).expect("finite");
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(p[0] > 0.99);
        assert!(restricted(&logits, &[9]).is_err());
        assert!(restricted(&[f32::NAN], &[0]).is_err());
    }
}
