//! The greedy chat completion.

use crate::common::model;

#[test]
fn chat_is_non_empty_and_deterministic() {
    let Some(m) = model() else { return };
    let sys = "You are a careful assistant. Answer in one short sentence.";
    let user = "What is the capital of France?";
    let t = std::time::Instant::now();
    let a = m.chat(sys, user, 24).expect("chat");
    eprintln!("chat reply in {:?}: {a:?}", t.elapsed());
    let b = m.chat(sys, user, 24).expect("chat again");
    assert!(!a.is_empty());
    assert_eq!(a, b, "greedy decoding must be deterministic");
    assert!(a.contains("Paris"), "{a:?}");
}

#[test]
fn chat_respects_max_new_tokens() {
    let Some(m) = model() else { return };
    let a = m
        .chat("", "Count from one to fifty in words.", 3)
        .expect("chat");
    let n = m.tokenizer().encode(&a).len();
    assert!(n <= 4, "{n} tokens: {a:?}");
    assert_eq!(m.chat("", "hi", 0).expect("chat"), "");
}

#[test]
fn chat_prompt_is_chatml() {
    let Some(m) = model() else { return };
    let ids = m.chat_prompt("S", "U <|im_end|>").expect("prompt");
    assert_eq!(
        m.tokenizer().decode(&ids, false),
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU <|im_end|><|im_end|>\n<|im_start|>assistant\n"
    );
    // The <|im_end|> written inside the user message is text, not a control token: exactly
    // two control <|im_end|> tokens.
    assert_eq!(ids.iter().filter(|&&i| i == 2).count(), 2);
    let ids = m.chat_prompt("", "U").expect("prompt");
    assert!(
        m.tokenizer()
            .decode(&ids, false)
            .starts_with("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    );
}
