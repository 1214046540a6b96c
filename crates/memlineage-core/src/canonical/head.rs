//! The arithmetic of CBOR heads (RFC 8949 §3): how long a head is, and how long it should be.
//!
//! A head is the initial byte (major type in the top 3 bits, "additional information" in the
//! low 5) plus 0, 1, 2, 4 or 8 big-endian argument bytes.

use super::CanonicalError;

/// The major type (0 to 7) of an initial byte.
pub(crate) fn major(initial: u8) -> u8 {
    initial >> 5
}

/// The additional information (0 to 31) of an initial byte.
pub(crate) fn info(initial: u8) -> u8 {
    initial & 0x1f
}

/// Total head length (initial byte included) for additional information 0 to 27
/// (RFC 8949 §3: 0–23 immediate, 24/25/26/27 followed by 1/2/4/8 bytes); `None` for the
/// reserved values 28–30 and for 31 (indefinite length or break).
pub(crate) fn head_len(info: u8) -> Option<usize> {
    match info {
        0..=23 => Some(1),
        24 => Some(2),
        25 => Some(3),
        26 => Some(5),
        27 => Some(9),
        _ => None,
    }
}

/// The length of the shortest head that can carry `arg` (RFC 8949 §4.2.1, first bullet).
pub(crate) fn shortest_head_len(arg: u64) -> usize {
    match arg {
        0..=23 => 1,
        24..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Reads the head of a definite-length byte or text string at `offset`, returning the
/// declared length and the head's length.
///
/// Why this is hand-written rather than left to minicbor: `minicbor::Decoder::bytes` and
/// `Decoder::str` read the head and the payload in one call and do not expose the declared
/// length, so a truncated payload could not be reported with its length; and `str` folds
/// invalid UTF-8 and a length overflowing `usize` into one opaque error kind, so we could not
/// tell which fault it was nor where the invalid UTF-8 starts. Reading the (at most 9-byte)
/// head here lets the decoder check the declared length against the input *before* touching
/// the payload, and validate UTF-8 itself with an exact offset. The caller has already checked
/// that the initial byte is major type 2 or 3 with additional information at most 27.
pub(crate) fn read_string_head(
    input: &[u8],
    offset: usize,
) -> Result<(u64, usize), CanonicalError> {
    let truncated = CanonicalError::TruncatedHead { offset };
    let initial = *input.get(offset).ok_or(truncated.clone())?;
    let ai = info(initial);
    let len = head_len(ai).ok_or(CanonicalError::IndefiniteLength {
        offset,
        kind: "string",
    })?;
    if len == 1 {
        return Ok((u64::from(ai), 1));
    }
    let end = offset.checked_add(len).ok_or(truncated.clone())?;
    let arg_bytes = input.get(offset + 1..end).ok_or(truncated)?;
    // At most 8 bytes, so the shifts never drop a set bit.
    let arg = arg_bytes
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    Ok((arg, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_head_shortest_lengths_at_boundaries() {
        for (arg, len) in [
            (0, 1),
            (23, 1),
            (24, 2),
            (255, 2),
            (256, 3),
            (65535, 3),
            (65536, 5),
            (u64::from(u32::MAX), 5),
            (u64::from(u32::MAX) + 1, 9),
            (u64::MAX, 9),
        ] {
            assert_eq!(shortest_head_len(arg), len, "argument {arg}");
        }
    }

    #[test]
    fn canonical_head_string_head_reads_every_width() {
        assert_eq!(read_string_head(&[0x43], 0), Ok((3, 1)));
        assert_eq!(read_string_head(&[0x58, 0x20], 0), Ok((32, 2)));
        assert_eq!(read_string_head(&[0x79, 0x01, 0x00], 0), Ok((256, 3)));
        assert_eq!(
            read_string_head(&[0x00, 0x5a, 0x00, 0x01, 0x00, 0x00], 1),
            Ok((65536, 5))
        );
        assert_eq!(
            read_string_head(&[0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 0),
            Ok((u64::MAX, 9))
        );
        assert_eq!(
            read_string_head(&[0x5a, 0x00, 0x01], 0),
            Err(CanonicalError::TruncatedHead { offset: 0 })
        );
        assert_eq!(
            read_string_head(&[], 0),
            Err(CanonicalError::TruncatedHead { offset: 0 })
        );
    }
}
