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

/// Positions [`rfind4`] tests at once.
const RFIND_CHUNK: usize = 32;

/// Where the last occurrence of the four bytes `needle` starts in `hay`.
///
/// From the end, a chunk of positions is tested at once without branches (the compiler
/// vectorises it), and only a chunk that may hold an occurrence is searched position by position:
/// the standard library's reverse search is a general two-way search, several times slower on
/// the short needles the scanners look for.
pub(crate) fn rfind4(hay: &[u8], needle: [u8; 4]) -> Option<usize> {
    let count = (hay.len() + 1).checked_sub(4)?;
    let mut hi = count;
    while hi > 0 {
        let lo = hi.saturating_sub(RFIND_CHUNK);
        let window = hay
            .get(lo..lo + RFIND_CHUNK + 3)
            .and_then(|w| <&[u8; RFIND_CHUNK + 3]>::try_from(w).ok());
        let maybe = match window {
            Some(w) if hi - lo == RFIND_CHUNK => {
                // The first and last bytes only, as the standard library's forward search
                // does: fewer comparisons, and rarely a false hit.
                let mut acc = 0u8;
                for k in 0..RFIND_CHUNK {
                    acc |= u8::from(w[k] == needle[0]) & u8::from(w[k + 3] == needle[3]);
                }
                acc != 0
            }
            _ => true,
        };
        if maybe
            && let Some(p) = (lo..hi)
                .rev()
                .find(|&p| hay.get(p..p + 4) == Some(&needle[..]))
        {
            return Some(p);
        }
        hi = lo;
    }
    None
}

/// A half-open byte range of a text.
pub(crate) type Span = (usize, usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfind4_finds_the_last_occurrence() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as usize
        };
        for _ in 0..20_000 {
            let hay: Vec<u8> = (0..next(120)).map(|_| b"2025x"[next(5)]).collect();
            let expected = hay.windows(4).rposition(|w| w == b"2025");
            assert_eq!(rfind4(&hay, *b"2025"), expected, "{hay:?}");
        }
        assert_eq!(rfind4(b"", *b"2025"), None);
        assert_eq!(rfind4(b"2025", *b"2025"), Some(0));
    }
}
