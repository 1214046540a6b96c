//! Byte-level helpers shared by the scanners.
//!
//! Every scanner walks the UTF-8 bytes of a text and only ever slices it at ASCII bytes, so a
//! slice is always on a character boundary. Non-ASCII bytes (≥ 0x80) are never ASCII letters
//! or digits, so a non-ASCII character acts as a token boundary.

/// An ASCII letter or digit.
#[inline]
pub(crate) fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Whether the byte before `i` is an ASCII letter or digit (false at the start).
#[inline]
pub(crate) fn alnum_before(bytes: &[u8], i: usize) -> bool {
    i > 0 && is_alnum(bytes[i - 1])
}

/// Whether the byte at `i` is an ASCII letter or digit (false at the end).
#[inline]
pub(crate) fn alnum_at(bytes: &[u8], i: usize) -> bool {
    i < bytes.len() && is_alnum(bytes[i])
}

/// Whether the byte at `i` is an ASCII digit (false at the end).
#[inline]
pub(crate) fn digit_at(bytes: &[u8], i: usize) -> bool {
    i < bytes.len() && bytes[i].is_ascii_digit()
}

/// The end of the run of ASCII digits starting at `i`.
#[inline]
pub(crate) fn digits_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The end of the run of ASCII letters and digits starting at `i`.
#[inline]
pub(crate) fn alnum_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_alnum(bytes[i]) {
        i += 1;
    }
    i
}

/// The end of the run of ASCII spaces and tabs starting at `i`.
#[inline]
pub(crate) fn blanks_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    i
}

/// The decimal value of a run of at most 9 ASCII digits.
#[inline]
pub(crate) fn small_number(digits: &[u8]) -> u32 {
    digits
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'))
}

/// Whether `bytes` holds an ASCII digit (every IBAN, amount and date does: a cheap first test).
#[inline]
pub(crate) fn has_digit(bytes: &[u8]) -> bool {
    // Branch-free within a chunk, so the compiler vectorises it.
    bytes
        .chunks(32)
        .any(|c| c.iter().fold(false, |acc, &x| acc | x.is_ascii_digit()))
}

/// A half-open byte range of a text.
pub(crate) type Span = (usize, usize);
