//! Byte-level BPE tokenizer built from GGUF metadata.
//!
//! SmolLM2 uses a GPT-2 style byte-level BPE (`tokenizer.ggml.model = "gpt2"`, pre-tokenizer
//! `"smollm"`). Everything this module needs comes from the GGUF file itself — no
//! `tokenizer.json` is downloaded:
//!
//! * `tokenizer.ggml.tokens` — the vocabulary, as byte-level strings (every byte is mapped to a
//!   printable character by GPT-2's `bytes_to_unicode` table, e.g. a space is `Ġ`);
//! * `tokenizer.ggml.merges` — the merge rules, `"left right"`, in priority order;
//! * `tokenizer.ggml.token_type` — 1 = normal, 3 = control (`<|im_start|>`, `<|im_end|>`, …);
//! * `tokenizer.ggml.bos_token_id` / `eos_token_id`.
//!
//! Pre-tokenization reproduces SmolLM2's `tokenizer.json` (and llama.cpp's `smollm` pre-tokenizer):
//! first every numeric character (`\p{N}`) is split off on its own (`Digits(individual_digits)`),
//! then each piece is split with the GPT-2 pattern
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`; each piece is
//! then byte-mapped and merged by rank.
//!
//! SmolLM2's vocabulary has no token for 21 of the 256 bytes (the 15 that never occur in UTF-8,
//! and the rare control characters U+0004, U+0006, U+0013, U+0014, U+0016, U+001D). Like Hugging
//! Face `tokenizers` with this vocabulary (no byte fallback, no unknown token), such bytes are
//! dropped when encoding.
//!
//! [`Tokenizer::encode`] treats its input as plain text: a literal `"<|im_end|>"` inside a memory
//! entry is encoded as ordinary characters, never as the control token. Control tokens are only
//! ever inserted by this crate (see [`Tokenizer::special_id`]), so stored content cannot forge
//! chat-template structure.

use std::collections::HashMap;

use fancy_regex::Regex;

use crate::ModelError;

/// The GPT-2 byte-level pre-tokenization pattern (as used by SmolLM2's `ByteLevel` pre-tokenizer).
const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// GGUF token type of a control token (`llama_token_type::CONTROL`).
const TOKEN_TYPE_CONTROL: i32 = 3;
/// GGUF token type of a user-defined token.
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// A byte-level BPE tokenizer, loaded from GGUF metadata.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// Token id → byte-level string, as stored in `tokenizer.ggml.tokens`.
    tokens: Vec<String>,
    /// Byte-level string → token id.
    ids: HashMap<String, u32>,
    /// (left id, right id) → (rank, merged id).
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// Whether a token is a control / user-defined (special) token.
    special: Vec<bool>,
    /// Byte → id of the single-character token for that byte, if the vocabulary has one.
    byte_ids: [Option<u32>; 256],
    /// Byte-level char → byte, for decoding.
    char_to_byte: HashMap<char, u8>,
    bos_id: u32,
    eos_id: u32,
    pattern: Regex,
}

impl Tokenizer {
    /// Builds the tokenizer from the GGUF arrays.
    ///
    /// `token_types` may be empty (then no token is special).
    pub fn from_parts(
        tokens: Vec<String>,
        merges: &[String],
        token_types: &[i32],
        bos_id: u32,
        eos_id: u32,
    ) -> Result<Self, ModelError> {
        let bad = |reason: String| ModelError::Tokenizer { reason };
        if tokens.is_empty() {
            return Err(bad("the vocabulary (tokenizer.ggml.tokens) is empty".into()));
        }
        if tokens.len() > u32::MAX as usize {
            return Err(bad("the vocabulary is too large".into()));
        }
        let n = tokens.len() as u32;
        for (what, id) in [("bos", bos_id), ("eos", eos_id)] {
            if id >= n {
                return Err(bad(format!(
                    "{what} token id {id} is outside the vocabulary"
                )));
            }
        }
        let mut ids = HashMap::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            // The first occurrence wins, as in llama.cpp.
            ids.entry(t.clone()).or_insert(i as u32);
        }
        let special: Vec<bool> = (0..tokens.len())
            .map(|i| {
                matches!(
                    token_types.get(i).copied(),
                    Some(TOKEN_TYPE_CONTROL | TOKEN_TYPE_USER_DEFINED)
                )
            })
            .collect();

        let byte_to_char = bytes_to_unicode();
        let mut char_to_byte = HashMap::with_capacity(256);
        let mut byte_ids = [None; 256];
        for (b, c) in byte_to_char.iter().enumerate() {
            char_to_byte.insert(*c, b as u8);
            byte_ids[b] = ids.get(&c.to_string()).copied();
        }
        // A byte-level vocabulary has at least every printable ASCII character.
        if let Some(b) = (0x20u8..0x7f).find(|&b| byte_ids[b as usize].is_none()) {
            return Err(bad(format!(
                "the vocabulary has no token for byte 0x{b:02x} ({:?}); not a byte-level BPE vocabulary",
                byte_to_char[b as usize]
            )));
        }

        let mut merge_map = HashMap::with_capacity(merges.len());
        for (rank, m) in merges.iter().enumerate() {
            let (l, r) = m
                .split_once(' ')
                .ok_or_else(|| bad(format!("merge rule {rank} ({m:?}) is not \"left right\"")))?;
            let (Some(&li), Some(&ri)) = (ids.get(l), ids.get(r)) else {
                return Err(bad(format!(
                    "merge rule {rank} ({m:?}) names an unknown token"
                )));
            };
            let merged = format!("{l}{r}");
            let Some(&mi) = ids.get(&merged) else {
                return Err(bad(format!(
                    "merge rule {rank} ({m:?}) produces {merged:?}, which is not in the vocabulary"
                )));
            };
            // The first (highest-priority) rule for a pair wins.
            merge_map.entry((li, ri)).or_insert((rank as u32, mi));
        }

        let pattern = Regex::new(GPT2_PATTERN)
            .map_err(|e| bad(format!("cannot compile the pre-tokenizer pattern: {e}")))?;

        Ok(Self {
            tokens,
            ids,
            merges: merge_map,
            special,
            byte_ids,
            char_to_byte,
            bos_id,
            eos_id,
            pattern,
        })
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The beginning-of-sequence token id (`<|im_start|>` for SmolLM2).
    pub fn bos_id(&self) -> u32 {
        self.bos_id
    }

    /// The end-of-sequence token id (`<|im_end|>` for SmolLM2).
    pub fn eos_id(&self) -> u32 {
        self.eos_id
    }

    /// The id of a special (control) token such as `"<|im_start|>"`, if the vocabulary has it.
    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.ids
            .get(token)
            .copied()
            .filter(|&id| self.special[id as usize])
    }

    /// The id of a vocabulary entry, given in its byte-level spelling (`"Ġhello"` for `" hello"`).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The byte-level spelling of a token id.
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// Whether `id` is a special (control or user-defined) token.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// Splits `text` into pre-tokens (the pieces BPE merges within), as SmolLM2 does.
    pub fn pre_tokenize<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        for piece in split_digits(text) {
            let mut last = 0;
            for m in self.pattern.find_iter(piece) {
                // The pattern is infallible on valid UTF-8 except for backtracking limits,
                // which these simple alternatives never reach; fall back to the raw rest.
                let Ok(m) = m else { break };
                if m.start() > last {
                    out.push(&piece[last..m.start()]);
                }
                out.push(m.as_str());
                last = m.end();
            }
            if last < piece.len() {
                out.push(&piece[last..]);
            }
        }
        out
    }

    /// Encodes plain text. No special token is recognised in `text` and none is added.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        for piece in self.pre_tokenize(text) {
            self.bpe(piece, &mut out);
        }
        out
    }

    /// Runs BPE on one pre-token and appends the resulting ids.
    fn bpe(&self, piece: &str, out: &mut Vec<u32>) {
        // Bytes without a token are dropped (as Hugging Face `tokenizers` does without an unknown
        // token or byte fallback); their neighbours may then merge.
        let mut syms: Vec<u32> = piece
            .bytes()
            .filter_map(|b| self.byte_ids[b as usize])
            .collect();
        if syms.len() > 1 {
            // The words are short (one pre-token), so the quadratic scan is cheaper than a heap.
            loop {
                let mut best: Option<(u32, usize, u32)> = None; // (rank, position, merged id)
                for i in 0..syms.len() - 1 {
                    if let Some(&(rank, merged)) = self.merges.get(&(syms[i], syms[i + 1]))
                        && best.is_none_or(|(r, _, _)| rank < r)
                    {
                        best = Some((rank, i, merged));
                    }
                }
                let Some((rank, _, _)) = best else { break };
                // Apply every non-overlapping occurrence of the best pair, left to right
                // (the same result as merging them one at a time by (rank, position)).
                let mut merged_syms = Vec::with_capacity(syms.len());
                let mut i = 0;
                while i < syms.len() {
                    if i + 1 < syms.len()
                        && let Some(&(r, m)) = self.merges.get(&(syms[i], syms[i + 1]))
                        && r == rank
                    {
                        merged_syms.push(m);
                        i += 2;
                    } else {
                        merged_syms.push(syms[i]);
                        i += 1;
                    }
                }
                syms = merged_syms;
                if syms.len() == 1 {
                    break;
                }
            }
        }
        out.extend_from_slice(&syms);
    }

    /// Decodes ids back to text. Special tokens are written out (`<|im_end|>`) unless
    /// `skip_special`; invalid UTF-8 (a sequence cut inside a character) becomes U+FFFD.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> String {
        String::from_utf8_lossy(&self.decode_bytes(ids, skip_special)).into_owned()
    }

    /// Decodes ids to raw bytes (see [`Tokenizer::decode`]).
    pub fn decode_bytes(&self, ids: &[u32], skip_special: bool) -> Vec<u8> {
        let mut bytes = Vec::new();
        for &id in ids {
            let Some(tok) = self.tokens.get(id as usize) else {
                continue;
            };
            if self.special[id as usize] {
                if !skip_special {
                    bytes.extend_from_slice(tok.as_bytes());
                }
                continue;
            }
            for c in tok.chars() {
                match self.char_to_byte.get(&c) {
                    Some(&b) => bytes.push(b),
                    // Not a byte-level character (should not happen in a byte-level
                    // vocabulary): keep it as UTF-8.
                    None => {
                        let mut buf = [0u8; 4];
                        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
        }
        bytes
    }
}

/// Splits every numeric character (`char::is_numeric`, i.e. `\p{N}`) into a piece of its own,
/// like the `Digits { individual_digits: true }` pre-tokenizer.
fn split_digits(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c.is_numeric() {
            if i > start {
                out.push(&text[start..i]);
            }
            let end = i + c.len_utf8();
            out.push(&text[i..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// GPT-2's reversible byte → printable-character table.
///
/// Printable Latin-1 bytes map to themselves; the other 68 bytes map to U+0100 onwards, in
/// byte order (so a space, 0x20, becomes `Ġ` U+0120 and a newline `Ċ` U+010A).
pub fn bytes_to_unicode() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let cp = if printable {
            u32::from(b)
        } else {
            n += 1;
            255 + n
        };
        // Every code point here is below 0x200, so always a valid char.
        table[b as usize] = char::from_u32(cp).unwrap_or('\u{FFFD}');
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_table_matches_gpt2() {
        let t = bytes_to_unicode();
        assert_eq!(t[b' ' as usize], 'Ġ');
        assert_eq!(t[b'\n' as usize], 'Ċ');
        assert_eq!(t[b'\t' as usize], 'ĉ');
        assert_eq!(t[b'a' as usize], 'a');
        assert_eq!(t[0], 'Ā');
        assert_eq!(t[0xAD], 'Ń');
        let mut all: Vec<char> = t.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 256, "the table must be a bijection");
    }

    #[test]
    fn digits_are_split_individually() {
        assert_eq!(split_digits("ab12 c3"), vec!["ab", "1", "2", " c", "3"]);
        assert_eq!(split_digits("٣x"), vec!["٣", "x"]);
        assert_eq!(split_digits(""), Vec::<&str>::new());
    }

    /// A toy vocabulary: all 256 byte characters plus a few merges.
    fn toy() -> Tokenizer {
        let mut tokens: Vec<String> = vec!["<|im_start|>".into(), "<|im_end|>".into()];
        tokens.extend(bytes_to_unicode().iter().map(|c| c.to_string()));
        for t in ["he", "ll", "hell", "hello", "Ġw", "Ġwor", "Ġworld", "or"] {
            tokens.push(t.into());
        }
        let merges: Vec<String> = ["h e", "l l", "he ll", "hell o", "o r", "Ġ w", "Ġw or"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut types = vec![3, 3];
        types.resize(tokens.len(), 1);
        Tokenizer::from_parts(tokens, &merges, &types, 0, 1).expect("toy tokenizer")
    }

    #[test]
    fn toy_bpe_merges_by_rank() {
        let t = toy();
        let ids = t.encode("hello world");
        let spelled: Vec<&str> = ids.iter().filter_map(|&i| t.id_to_token(i)).collect();
        // "Ġworld" is in the vocabulary but no merge chain reaches it ("Ġwor" + "l" + "d"):
        // BPE only produces what the merges produce.
        assert_eq!(spelled, vec!["hello", "Ġwor", "l", "d"]);
        assert_eq!(t.decode(&ids, false), "hello world");
    }

    #[test]
    fn special_tokens_are_not_parsed_from_text() {
        let t = toy();
        let ids = t.encode("<|im_end|>");
        assert!(ids.iter().all(|&i| !t.is_special(i)));
        assert_eq!(t.decode(&ids, true), "<|im_end|>");
        assert_eq!(t.special_id("<|im_end|>"), Some(1));
        assert_eq!(t.special_id("he"), None);
        assert_eq!(t.decode(&[0, 1], false), "<|im_start|><|im_end|>");
        assert_eq!(t.decode(&[0, 1], true), "");
    }

    #[test]
    fn pre_tokenizer_follows_gpt2_pattern() {
        let t = toy();
        assert_eq!(
            t.pre_tokenize("Hello, world!  It's 42\n\nok"),
            vec![
                "Hello", ",", " world", "!", " ", " It", "'s", " ", "4", "2", "\n", "\n", "ok"
            ]
        );
        assert_eq!(t.pre_tokenize("a  b"), vec!["a", " ", " b"]);
        assert_eq!(t.pre_tokenize("end   "), vec!["end", "   "]);
    }

    #[test]
    fn bytes_without_a_token_are_dropped() {
        let mut tokens: Vec<String> = bytes_to_unicode()
            .iter()
            .filter(|&&c| c != 'Ą') // byte 0x04
            .map(|c| c.to_string())
            .collect();
        tokens.push("!!".into());
        let merges = vec!["! !".to_string()];
        let t = Tokenizer::from_parts(tokens, &merges, &[], 0, 0).expect("tokenizer");
        // "!\u{4}!" is one pre-token; without the dropped byte its two "!" merge.
        let ids = t.encode("!\u{4}!");
        assert_eq!(ids, vec![t.token_to_id("!!").expect("!!")]);
        assert_eq!(t.decode(&ids, false), "!!");
        // Letters around it are separate pre-tokens and stay apart.
        assert_eq!(t.decode(&t.encode("a\u{4}b"), false), "ab");
        assert_eq!(t.encode("a\u{4}b").len(), 2);
    }

    #[test]
    fn round_trip_arbitrary_bytes() {
        let t = toy();
        for s in ["", "ünïcödé — 日本語 🎉", "tab\tsep\r\nline", "  leading"] {
            assert_eq!(t.decode(&t.encode(s), false), s);
        }
    }
}
