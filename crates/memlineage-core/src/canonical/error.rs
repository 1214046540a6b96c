//! Why a byte string is not canonical CBOR, or why a value cannot be encoded.

/// A rejected encoding (from [`decode`](super::decode)) or an unencodable value (from
/// [`encode`](super::encode)).
///
/// Every variant names one fault and the byte offset where it lies, counted from the start
/// of the input (for `decode`) or of the output that `encode` would have produced. For
/// `encode`, a fault inside a map *key* is reported at the offset of that map, since a key
/// that cannot be encoded has no place in the sorted order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    /// The input ends inside an item's head (its initial byte or the 1, 2, 4 or 8 argument
    /// bytes that follow it, RFC 8949 §3), or is empty.
    #[error(
        "truncated input: the head of the item at byte {offset} runs past the end of the input"
    )]
    TruncatedHead {
        /// Offset of the item's initial byte.
        offset: usize,
    },

    /// A string's declared length, or an array's or map's declared count, needs more bytes
    /// than the input has left. Checked before anything is allocated, so a hostile length
    /// cannot make the decoder reserve memory.
    #[error(
        "truncated input: the {kind} at byte {offset} declares length {declared}, which needs at \
         least {needed} more bytes, but only {remaining} remain"
    )]
    TruncatedPayload {
        /// Offset of the item's initial byte.
        offset: usize,
        /// "byte string", "text string", "array" or "map".
        kind: &'static str,
        /// The length or count written in the head.
        declared: u64,
        /// The fewest payload bytes that length implies (one per array element, two per map
        /// entry, one per string byte).
        needed: u64,
        /// The bytes left after the head.
        remaining: usize,
    },

    /// Bytes follow the single top-level item. A canonical encoding is exactly one item.
    #[error("trailing bytes: {count} bytes follow the top-level item, starting at byte {offset}")]
    TrailingBytes {
        /// Offset of the first extra byte.
        offset: usize,
        /// How many extra bytes there are.
        count: usize,
    },

    /// An unsigned integer whose head is longer than needed (RFC 8949 §4.2.1: arguments "MUST
    /// be as short as possible"; 0–23 go in the initial byte, 24–255 in one more byte, and so
    /// on).
    #[error(
        "non-shortest integer encoding at byte {offset}: {value} is written with a \
         {head_len}-byte head, but its shortest form takes {shortest} (RFC 8949 §4.2.1)"
    )]
    NonShortestInteger {
        /// Offset of the integer's initial byte.
        offset: usize,
        /// The integer.
        value: u64,
        /// The length of the head as written.
        head_len: usize,
        /// The length of the shortest head for `value`.
        shortest: usize,
    },

    /// A string length or an array or map count whose head is longer than needed
    /// (RFC 8949 §4.2.1 applies the shortest-form rule to lengths too).
    #[error(
        "non-shortest length encoding at byte {offset}: the {kind} length {length} is written \
         with a {head_len}-byte head, but its shortest form takes {shortest} (RFC 8949 §4.2.1)"
    )]
    NonShortestLength {
        /// Offset of the item's initial byte.
        offset: usize,
        /// "byte string", "text string", "array" or "map".
        kind: &'static str,
        /// The length or count.
        length: u64,
        /// The length of the head as written.
        head_len: usize,
        /// The length of the shortest head for `length`.
        shortest: usize,
    },

    /// A map key whose encoding sorts before the previous key's (RFC 8949 §4.2.1: keys sorted
    /// by the bytewise lexicographic order of their encodings).
    #[error(
        "map keys not in canonical order at byte {offset}: this key's encoding sorts before the \
         previous key's (RFC 8949 §4.2.1 bytewise lexicographic order)"
    )]
    UnsortedMapKey {
        /// Offset of the out-of-order key.
        offset: usize,
    },

    /// A map key equal to the previous key (RFC 8949 §5.6: duplicate keys make a map invalid).
    #[error("duplicate map key at byte {offset}")]
    DuplicateMapKey {
        /// Offset of the second occurrence.
        offset: usize,
    },

    /// An indefinite-length string, array or map (additional information 31), which
    /// RFC 8949 §4.2.1 forbids in deterministic encoding; also additional information 31 on an
    /// unsigned integer, which is not well-formed at all (RFC 8949 §3.2.4).
    #[error(
        "indefinite-length {kind} at byte {offset}: only definite lengths are canonical \
         (RFC 8949 §4.2.1)"
    )]
    IndefiniteLength {
        /// Offset of the item's initial byte.
        offset: usize,
        /// "byte string", "text string", "array", "map" or "unsigned integer".
        kind: &'static str,
    },

    /// The "break" stop code 0xff, which only ends indefinite-length items (RFC 8949 §3.2.1),
    /// and those are not allowed.
    #[error("unexpected break byte 0xff at byte {offset}: indefinite-length items are not allowed")]
    UnexpectedBreak {
        /// Offset of the 0xff byte.
        offset: usize,
    },

    /// A half-, single- or double-precision float (RFC 8949 §3.3). Signed records hold
    /// fixed-point integers only.
    #[error(
        "unsupported {precision}-precision float at byte {offset}: MemLineage encodes no floats"
    )]
    Float {
        /// Offset of the float's initial byte.
        offset: usize,
        /// "half", "single" or "double".
        precision: &'static str,
    },

    /// A tag (major type 6, RFC 8949 §3.4).
    #[error("unsupported tag (major type 6) at byte {offset}: MemLineage encodes no tags")]
    Tag {
        /// Offset of the tag's initial byte.
        offset: usize,
    },

    /// A negative integer (major type 1, RFC 8949 §3.1).
    #[error(
        "unsupported negative integer (major type 1) at byte {offset}: MemLineage encodes \
         unsigned integers only"
    )]
    NegativeInteger {
        /// Offset of the integer's initial byte.
        offset: usize,
    },

    /// A simple value other than `false`, `true` and `null` (RFC 8949 §3.3), including
    /// `undefined` (23) and any two-byte form 0xf8 nn.
    #[error(
        "unsupported simple value {value} at byte {offset}: only false, true and null, in their \
         one-byte forms 0xf4, 0xf5, 0xf6, are allowed"
    )]
    UnsupportedSimple {
        /// Offset of the simple value's initial byte.
        offset: usize,
        /// The simple value's number.
        value: u8,
    },

    /// A text string whose payload is not valid UTF-8 (RFC 8949 §3.1, major type 3).
    #[error(
        "invalid UTF-8 in the text string at byte {string_offset}: the invalid sequence starts \
         at byte {offset}"
    )]
    InvalidUtf8 {
        /// Offset of the first byte that is not part of a valid UTF-8 sequence.
        offset: usize,
        /// Offset of the text string's initial byte.
        string_offset: usize,
    },

    /// An array or map nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    #[error("nesting too deep at byte {offset}: more than {limit} nested arrays and maps")]
    DepthExceeded {
        /// Offset of the first array or map beyond the limit.
        offset: usize,
        /// The limit, [`MAX_DEPTH`](super::MAX_DEPTH).
        limit: usize,
    },

    /// An initial byte with additional information 28, 29 or 30, which RFC 8949 §3 reserves
    /// (not well-formed in any major type).
    #[error(
        "reserved additional information value {info} (major type {major}) at byte {offset}: \
         RFC 8949 §3 reserves 28 to 30"
    )]
    ReservedAdditionalInfo {
        /// Offset of the initial byte.
        offset: usize,
        /// The major type, 0 to 7.
        major: u8,
        /// The additional information, 28 to 30.
        info: u8,
    },
}

impl CanonicalError {
    /// The byte offset the error points at.
    pub fn offset(&self) -> usize {
        match self {
            CanonicalError::TruncatedHead { offset }
            | CanonicalError::TruncatedPayload { offset, .. }
            | CanonicalError::TrailingBytes { offset, .. }
            | CanonicalError::NonShortestInteger { offset, .. }
            | CanonicalError::NonShortestLength { offset, .. }
            | CanonicalError::UnsortedMapKey { offset }
            | CanonicalError::DuplicateMapKey { offset }
            | CanonicalError::IndefiniteLength { offset, .. }
            | CanonicalError::UnexpectedBreak { offset }
            | CanonicalError::Float { offset, .. }
            | CanonicalError::Tag { offset }
            | CanonicalError::NegativeInteger { offset }
            | CanonicalError::UnsupportedSimple { offset, .. }
            | CanonicalError::InvalidUtf8 { offset, .. }
            | CanonicalError::DepthExceeded { offset, .. }
            | CanonicalError::ReservedAdditionalInfo { offset, .. } => *offset,
        }
    }

    /// The same error, pointing at `offset` instead. Used by `encode` to report a fault inside
    /// a map key at the offset of the map.
    pub(crate) fn with_offset(mut self, new: usize) -> Self {
        match &mut self {
            CanonicalError::TruncatedHead { offset }
            | CanonicalError::TruncatedPayload { offset, .. }
            | CanonicalError::TrailingBytes { offset, .. }
            | CanonicalError::NonShortestInteger { offset, .. }
            | CanonicalError::NonShortestLength { offset, .. }
            | CanonicalError::UnsortedMapKey { offset }
            | CanonicalError::DuplicateMapKey { offset }
            | CanonicalError::IndefiniteLength { offset, .. }
            | CanonicalError::UnexpectedBreak { offset }
            | CanonicalError::Float { offset, .. }
            | CanonicalError::Tag { offset }
            | CanonicalError::NegativeInteger { offset }
            | CanonicalError::UnsupportedSimple { offset, .. }
            | CanonicalError::InvalidUtf8 { offset, .. }
            | CanonicalError::DepthExceeded { offset, .. }
            | CanonicalError::ReservedAdditionalInfo { offset, .. } => *offset = new,
        }
        self
    }
}
