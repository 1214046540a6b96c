//! The one error type of the checkpoint and signed-note module.

/// Why a signed note, verifier key or checkpoint was rejected.
///
/// Every variant names the fault and, where it helps, the offending line or value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A key name is empty, or contains a Unicode space or `+` (C2SP signed-note §Format).
    #[error(
        "invalid key name {name:?}: {reason} (C2SP signed-note: key names are non-empty, without Unicode spaces or '+')"
    )]
    InvalidKeyName {
        /// The rejected name (truncated to 80 characters).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A verifier key string is not `name+hexid+base64(0x01 || pubkey)`.
    #[error(
        "malformed verifier key: {reason}; expected <name>+<8 lowercase hex digits>+<base64 of 0x01 || 32-byte Ed25519 key>"
    )]
    MalformedVerifierKey {
        /// What is wrong with it.
        reason: String,
    },

    /// A verifier key of another signature type than the one expected: `0x01` (Ed25519 note
    /// signatures) for a log, `0x04` (timestamped Ed25519 cosignatures) for a witness.
    #[error(
        "verifier key has signature type 0x{type_byte:02x}, expected 0x{expected:02x} (0x01: a log's Ed25519 key; 0x04: a witness's Ed25519 cosignature/v1 key, C2SP tlog-cosignature)"
    )]
    UnsupportedKeyType {
        /// The type byte found.
        type_byte: u8,
        /// The type byte expected.
        expected: u8,
    },

    /// The 32 bytes are not an acceptable Ed25519 public key.
    #[error("invalid Ed25519 public key: {reason}")]
    InvalidPublicKey {
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A verifier key states a key ID that is not `SHA-256(name || 0x0A || 0x01 || key)[:4]`.
    #[error(
        "verifier key for {name:?} states key ID {stated} but the name and key give {computed}: the key, the name or the ID was altered"
    )]
    KeyIdMismatch {
        /// The key name.
        name: String,
        /// The key ID written in the verifier key, hex.
        stated: String,
        /// The key ID computed from name and key, hex.
        computed: String,
    },

    /// A note or body contains an ASCII control character other than newline.
    #[error(
        "control character 0x{byte:02x} at byte {offset}: signed notes may contain no ASCII control characters other than newline"
    )]
    ControlCharacter {
        /// Byte offset of the character.
        offset: usize,
        /// The character.
        byte: u8,
    },

    /// A note text or checkpoint body does not end with a newline.
    #[error(
        "the note text does not end with a newline: the text, including its final newline, is what is signed"
    )]
    MissingFinalNewline,

    /// No blank line separates the text from the signatures.
    #[error(
        "no signature block: a signed note is its text, a blank line, then one or more lines \"— <name> <base64 signature>\""
    )]
    MissingSignatureBlock,

    /// A line of the signature block is malformed.
    #[error("signature line {line}: {reason}")]
    MalformedSignatureLine {
        /// 1-based number of the line within the signature block.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },

    /// More signature lines than this implementation reads.
    #[error("the note has more than {max} signature lines; refusing to process it")]
    TooManySignatures {
        /// The limit.
        max: usize,
    },

    /// A signature line from the trusted key does not verify: the note was altered or forged.
    #[error(
        "the signature by {name}+{key_id} does not verify over the note text: the text or the signature was altered"
    )]
    InvalidSignature {
        /// Key name.
        name: String,
        /// Key ID, hex.
        key_id: String,
    },

    /// No signature line is from the trusted key.
    #[error(
        "the note carries no signature from {name}+{key_id} ({found} signature line(s) from other keys were ignored)"
    )]
    NoVerifiedSignature {
        /// Name of the trusted key.
        name: String,
        /// Key ID of the trusted key, hex.
        key_id: String,
        /// Number of signature lines from other keys.
        found: usize,
    },

    /// A checkpoint body has fewer than three lines.
    #[error(
        "checkpoint body has {found} line(s); it needs at least origin, tree size and root hash (C2SP tlog-checkpoint)"
    )]
    TooFewLines {
        /// The number of lines found.
        found: usize,
    },

    /// A checkpoint line is empty (the origin, or an extension line).
    #[error(
        "checkpoint line {line} is empty; every checkpoint line must be non-empty (C2SP tlog-checkpoint)"
    )]
    EmptyLine {
        /// 1-based line number.
        line: usize,
    },

    /// The checkpoint origin or an extension line contains a newline or control character.
    #[error("checkpoint {field} {value:?} contains a newline or control character")]
    InvalidLine {
        /// Which field ("origin" or "extension").
        field: &'static str,
        /// The value (truncated to 80 characters).
        value: String,
    },

    /// The tree size line is not a decimal number without leading zeros.
    #[error("tree size {found:?} is not an ASCII decimal u64 without leading zeros")]
    InvalidTreeSize {
        /// The line found (truncated to 80 characters).
        found: String,
    },

    /// The root hash line is not the standard base64 (with padding) of 32 bytes.
    #[error(
        "root hash {found:?} is not the standard base64 encoding, with padding, of 32 bytes: {reason}"
    )]
    InvalidRootHash {
        /// The line found (truncated to 80 characters).
        found: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A cosignature timestamp beyond `2^63 - 1` (C2SP tlog-cosignature §Format).
    #[error("cosignature timestamp {timestamp} exceeds 2^63 - 1 (C2SP tlog-cosignature)")]
    TimestampTooLarge {
        /// The timestamp given.
        timestamp: u64,
    },
}

/// `s`, cut to 80 characters for error messages.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}
