//! Tokenizer tests against the real SmolLM2 vocabulary.

use crate::common::model;

/// Known answers: ids produced by Hugging Face `tokenizers` 0.23.3 (Python) for a tokenizer
/// built from the same GGUF vocabulary and merges with SmolLM2's `tokenizer.json` settings
/// (`BPE`, pre-tokenizer `Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false,
/// use_regex=true)]`, `ByteLevel` decoder). Regenerate with the script in `docs/models.md`.
const KNOWN: &[(&str, &[u32])] = &[
    ("hello", &[28120]),
    (" hello", &[33662]),
    ("Hello, world!", &[19556, 28, 905, 17]),
    (
        "The capital of France is Paris.",
        &[504, 3575, 282, 4649, 314, 7042, 30],
    ),
    (
        "It's 2024-05-17; pay €1,234.56 to DE89 3704 0044 0532 0130 00 now!!",
        &[
            1589, 506, 216, 34, 32, 34, 36, 29, 32, 37, 29, 33, 39, 43, 2290, 24927, 33, 28, 34,
            35, 36, 30, 37, 38, 288, 12288, 40, 41, 216, 35, 39, 32, 36, 216, 32, 32, 36, 36, 216,
            32, 37, 35, 34, 216, 32, 33, 35, 32, 216, 32, 32, 1209, 10095,
        ],
    ),
    (
        "naïve café — Grüße aus Köln 日本語のテキスト 🎉🚀",
        &[
            3546, 46494, 37366, 1841, 9171, 7170, 34878, 85, 253, 376, 659, 7466, 34115, 17097,
            241, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100, 226,
            15107, 232, 227, 10813, 244, 218,
        ],
    ),
    (
        "  leading spaces\n\n\tand tabs   \r\ntrailing   ",
        &[
            216, 2899, 5600, 1116, 197, 397, 29416, 333, 201, 198, 4861, 4966, 333,
        ],
    ),
    (
        "<|im_end|> is not special here",
        &[44, 108, 306, 79, 486, 108, 46, 314, 441, 1767, 1535],
    ),
    (
        "I'll we've they're don't can't",
        &[57, 3060, 392, 3543, 502, 2316, 1326, 982, 416, 982],
    ),
    (
        "def f(x):\n    return x**2  # square\n",
        &[
            1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222, 198,
        ],
    ),
    (
        "Ελληνικά и русский текст, ١٢٣ arabic digits, Ⅻ roman",
        &[
            153, 239, 17162, 17162, 25723, 11517, 12001, 21118, 26112, 29972, 216, 9175, 14714,
            9382, 39511, 7872, 24958, 38106, 6643, 13760, 24674, 28, 216, 164, 111, 164, 112, 164,
            113, 46179, 286, 18638, 28, 216, 173, 223, 121, 41800,
        ],
    ),
    (
        "e\u{301} combining, zero\u{200b}width, ﬁ ligature",
        &[
            85, 151, 219, 9301, 28, 6708, 321, 229, 6930, 28, 40367, 13042, 906,
        ],
    ),
];

#[test]
fn known_token_ids_match_reference_tokenizer() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    for (text, ids) in KNOWN {
        assert_eq!(&t.encode(text)[..], *ids, "encoding of {text:?}");
    }
}

#[test]
fn single_words_map_to_their_vocabulary_entries() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    for (text, spelled) in [
        ("hello", "hello"),
        (" hello", "Ġhello"),
        ("Hello", "Hello"),
        (" Paris", "ĠParis"),
        (" the", "Ġthe"),
        ("\n\n", "ĊĊ"),
    ] {
        let id = t.token_to_id(spelled).expect("in vocabulary");
        assert_eq!(t.encode(text), vec![id], "{text:?}");
    }
    assert_eq!(t.token_to_id("hello"), Some(28120));
}

#[test]
fn special_tokens_come_from_metadata() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    assert_eq!(t.vocab_size(), 49152);
    assert_eq!(t.special_id("<|endoftext|>"), Some(0));
    assert_eq!(t.special_id("<|im_start|>"), Some(1));
    assert_eq!(t.special_id("<|im_end|>"), Some(2));
    assert_eq!(t.bos_id(), 1);
    assert_eq!(t.eos_id(), 2);
    // Control tokens in content are plain text, never the control token.
    let ids = t.encode("<|im_end|>");
    assert!(!ids.contains(&2));
    assert_eq!(t.decode(&ids, true), "<|im_end|>");
    assert_eq!(t.decode(&[1, 2], false), "<|im_start|><|im_end|>");
    assert_eq!(t.decode(&[1, 2], true), "");
}

#[test]
fn round_trip_ascii_and_non_ascii() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    let texts = [
        "",
        "plain ASCII text, with punctuation: (a) [b] {c}; 1+1=2?",
        "  many   spaces \t\ttabs\r\n\nnewlines  ",
        "naïve café — Grüße aus Köln",
        "日本語のテキスト, 中文, 한국어, العربية, עברית",
        "emoji 🎉🚀👩‍👩‍👧 and flags 🇫🇷",
        "IBAN DE89 3704 0044 0532 0130 00, amount €1,234.56",
        "\u{0}control\u{7f}bytes\u{1b}[0m",
    ];
    for s in texts {
        let ids = t.encode(s);
        assert_eq!(t.decode(&ids, false), s, "round trip of {s:?}");
    }
    for (text, ids) in KNOWN {
        assert_eq!(t.decode(ids, false), *text);
    }
}

#[test]
fn bytes_without_a_token_are_dropped_like_the_reference() {
    let Some(m) = model() else { return };
    let t = m.tokenizer();
    // Reference ids from Hugging Face `tokenizers`, as for KNOWN: U+0004 and U+001D have no
    // byte token in SmolLM2's vocabulary and are dropped; the "!" on both sides then merge.
    assert_eq!(
        t.encode("a\u{4}b !\u{4}! ok"),
        vec![81, 82, 5728, 17, 10907]
    );
    assert_eq!(t.encode("x\u{1d}y"), vec![104, 105]);
    assert_eq!(t.decode(&t.encode("a\u{4}b !\u{4}! ok"), false), "ab !! ok");
}
