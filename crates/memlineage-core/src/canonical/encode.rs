//! Encoding a [`Value`] into its canonical bytes (RFC 8949 §4.2.1).

use std::convert::Infallible;

use minicbor::Encoder;

use super::{CanonicalError, MAX_DEPTH, Value};

/// The error type of minicbor's encoder writing into a `Vec<u8>`.
type EncodeError = minicbor::encode::Error<Infallible>;

/// Encodes `v` in the core deterministic encoding of RFC 8949 §4.2.1.
///
/// - Heads take the shortest form (minicbor's `Encoder` always writes it; §4.2.1 first bullet).
/// - Lengths are definite (§4.2.1 second bullet).
/// - Map entries are written sorted by the bytewise lexicographic order of their keys'
///   canonical encodings (§4.2.1 third bullet), whatever order [`Value::Map`] holds them in.
///   Note this is *not* the "shorter key first" order of RFC 7049 §3.9: `false` (0xf4) sorts
///   after `"aa"` (0x62 61 61).
///
/// # Errors
///
/// - [`CanonicalError::DuplicateMapKey`] when a map holds two equal keys (§5.6), with the
///   offset where the second would have been written;
/// - [`CanonicalError::DepthExceeded`] when arrays and maps nest deeper than [`MAX_DEPTH`],
///   since [`decode`](super::decode) would refuse the result.
///
/// A fault inside a map key is reported at the offset of that map.
pub fn encode(v: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::new();
    encode_into(v, &mut out, 0, 0)?;
    Ok(out)
}

/// Appends the canonical encoding of `v` to `out`.
///
/// `origin` is the offset in the final output of `out[0]` (for error offsets); `depth` is the
/// number of arrays and maps that enclose `v`.
fn encode_into(
    v: &Value,
    out: &mut Vec<u8>,
    origin: usize,
    depth: usize,
) -> Result<(), CanonicalError> {
    let offset = origin + out.len();
    match v {
        Value::Uint(n) => emit(out, |e| e.u64(*n).map(drop)),
        Value::Bytes(b) => emit(out, |e| e.bytes(b).map(drop)),
        Value::Text(s) => emit(out, |e| e.str(s).map(drop)),
        Value::Bool(b) => emit(out, |e| e.bool(*b).map(drop)),
        Value::Null => emit(out, |e| e.null().map(drop)),
        Value::Array(items) => {
            check_depth(depth, offset)?;
            emit(out, |e| e.array(len_u64(items.len())).map(drop));
            for item in items {
                encode_into(item, out, origin, depth + 1)?;
            }
        }
        Value::Map(entries) => {
            check_depth(depth, offset)?;
            encode_map(entries, out, origin, depth)?;
        }
    }
    Ok(())
}

/// Appends a map with its entries in canonical order (RFC 8949 §4.2.1).
///
/// Each key is encoded on its own, the keys are sorted by those bytes, duplicates (now
/// adjacent) are refused, and then each value is encoded right after its key, so that a fault
/// inside a value is reported at its true offset.
fn encode_map(
    entries: &[(Value, Value)],
    out: &mut Vec<u8>,
    origin: usize,
    depth: usize,
) -> Result<(), CanonicalError> {
    let map_offset = origin + out.len();
    let mut keyed: Vec<(Vec<u8>, &Value)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let mut key_bytes = Vec::new();
        encode_into(key, &mut key_bytes, 0, depth + 1).map_err(|e| e.with_offset(map_offset))?;
        keyed.push((key_bytes, value));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));

    emit(out, |e| e.map(len_u64(keyed.len())).map(drop));
    let mut previous: Option<&[u8]> = None;
    for (key_bytes, value) in &keyed {
        if previous == Some(key_bytes.as_slice()) {
            return Err(CanonicalError::DuplicateMapKey {
                offset: origin + out.len(),
            });
        }
        previous = Some(key_bytes);
        out.extend_from_slice(key_bytes);
        encode_into(value, out, origin, depth + 1)?;
    }
    Ok(())
}

/// Refuses an array or map at `offset` enclosed by `depth` others when that exceeds
/// [`MAX_DEPTH`].
fn check_depth(depth: usize, offset: usize) -> Result<(), CanonicalError> {
    if depth >= MAX_DEPTH {
        return Err(CanonicalError::DepthExceeded {
            offset,
            limit: MAX_DEPTH,
        });
    }
    Ok(())
}

/// A collection length as the u64 a CBOR head carries (lossless: `usize` is at most 64 bits).
fn len_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// Runs one minicbor encoder call that appends to `out`.
///
/// minicbor's `Write` impl for `Vec<u8>` has the error type `Infallible`, and the encoder
/// methods used here (`u64`, `bytes`, `str`, `bool`, `null`, `array`, `map`) fail only when
/// the writer does, so the `Result` carries no information and is dropped here, in one place.
fn emit(out: &mut Vec<u8>, f: impl FnOnce(&mut Encoder<&mut Vec<u8>>) -> Result<(), EncodeError>) {
    let result = f(&mut Encoder::new(out));
    debug_assert!(result.is_ok(), "minicbor failed to write into a Vec");
}

#[cfg(test)]
mod tests {
    use super::super::head;
    use super::*;

    #[test]
    fn canonical_encode_writes_shortest_heads() {
        let cases: [(u64, &[u8]); 6] = [
            (23, &[0x17]),
            (24, &[0x18, 0x18]),
            (255, &[0x18, 0xff]),
            (256, &[0x19, 0x01, 0x00]),
            (65536, &[0x1a, 0x00, 0x01, 0x00, 0x00]),
            (1 << 32, &[0x1b, 0, 0, 0, 1, 0, 0, 0, 0]),
        ];
        for (n, bytes) in cases {
            assert_eq!(encode(&Value::Uint(n)).unwrap(), bytes, "{n}");
            assert_eq!(bytes.len(), head::shortest_head_len(n));
        }
    }

    #[test]
    fn canonical_encode_sorts_map_keys_whatever_the_input_order() {
        let m = Value::Map(vec![
            (Value::Text("b".into()), Value::Uint(2)),
            (Value::Text("a".into()), Value::Uint(1)),
        ]);
        assert_eq!(
            encode(&m).unwrap(),
            [0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x02]
        );
    }

    #[test]
    fn canonical_encode_reports_duplicate_key_at_its_output_offset() {
        let m = Value::Array(vec![Value::Map(vec![
            (Value::Uint(1), Value::Null),
            (Value::Uint(1), Value::Bool(true)),
        ])]);
        // 0x81 (array), 0xa2 (map), 0x01 0xf6 (first entry), then the duplicate at byte 4.
        assert_eq!(
            encode(&m),
            Err(CanonicalError::DuplicateMapKey { offset: 4 })
        );
    }

    #[test]
    fn canonical_encode_reports_a_fault_inside_a_key_at_the_map() {
        let bad_key = Value::Map(vec![(Value::Null, Value::Null), (Value::Null, Value::Null)]);
        let m = Value::Array(vec![Value::Null, Value::Map(vec![(bad_key, Value::Null)])]);
        assert_eq!(
            encode(&m),
            Err(CanonicalError::DuplicateMapKey { offset: 2 })
        );
    }

    #[test]
    fn canonical_encode_refuses_nesting_beyond_max_depth() {
        let mut v = Value::Null;
        for _ in 0..MAX_DEPTH {
            v = Value::Array(vec![v]);
        }
        assert!(encode(&v).is_ok());
        let too_deep = Value::Array(vec![v]);
        assert_eq!(
            encode(&too_deep),
            Err(CanonicalError::DepthExceeded {
                offset: MAX_DEPTH,
                limit: MAX_DEPTH
            })
        );
    }
}
