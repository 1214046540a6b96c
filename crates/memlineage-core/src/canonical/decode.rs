//! Strict decoding: accept exactly the canonical encoding, reject everything else.

use minicbor::Decoder;
use minicbor::data::Type;

use super::{CanonicalError, MAX_DEPTH, Value, head};

/// Most elements pre-allocated for one array or map, whatever count its head declares.
///
/// Declared counts are already bounded by the input length, but nested containers could each
/// claim the whole remaining input; capping the reservation keeps memory proportional to what
/// is actually decoded.
const PREALLOC_LIMIT: usize = 256;

/// Decodes `bytes`, which must be *exactly* the canonical encoding (RFC 8949 §4.2.1) of one
/// [`Value`]: for every `Ok(v)`, `encode(&v)` returns `bytes` again.
///
/// Maps come back with their entries in canonical order.
///
/// # Errors
///
/// One [`CanonicalError`] variant per fault, each with the byte offset where it lies: a
/// truncated head or payload, trailing bytes, a non-shortest integer or length, map keys out of
/// order or duplicated, indefinite lengths or a stray break byte, floats, tags, negative
/// integers, simple values other than `false`/`true`/`null`, invalid UTF-8, nesting deeper
/// than [`MAX_DEPTH`], and the reserved additional-information values 28–30.
///
/// # Hostile input
///
/// The decoder never panics, recurses at most [`MAX_DEPTH`] levels, and checks every declared
/// length against the remaining input before allocating anything for it.
///
/// # How minicbor is used
///
/// `minicbor::Decoder` classifies each initial byte (`datatype`), reads the heads of integers,
/// arrays, maps and simple values, and keeps the position. It accepts non-canonical forms, so
/// the shortest-form check compares the head length it consumed (`position()` before and
/// after) with the shortest possible one. Byte and text string heads are read by
/// `head::read_string_head` instead; its doc comment says why.
pub fn decode(bytes: &[u8]) -> Result<Value, CanonicalError> {
    let mut reader = Reader {
        input: bytes,
        dec: Decoder::new(bytes),
    };
    let value = reader.item(0)?;
    let end = reader.dec.position();
    if end < bytes.len() {
        return Err(CanonicalError::TrailingBytes {
            offset: end,
            count: bytes.len() - end,
        });
    }
    Ok(value)
}

/// The decoding state: the input and a minicbor decoder positioned in it.
struct Reader<'b> {
    input: &'b [u8],
    dec: Decoder<'b>,
}

/// What a string payload becomes.
#[derive(Clone, Copy)]
enum StringKind {
    Bytes,
    Text,
}

impl StringKind {
    fn name(self) -> &'static str {
        match self {
            StringKind::Bytes => "byte string",
            StringKind::Text => "text string",
        }
    }
}

impl<'b> Reader<'b> {
    /// Bytes left after `pos`.
    fn remaining_after(&self, pos: usize) -> usize {
        self.input.len().saturating_sub(pos)
    }

    /// Decodes one item at the current position; `depth` arrays and maps enclose it.
    fn item(&mut self, depth: usize) -> Result<Value, CanonicalError> {
        let offset = self.dec.position();
        let initial = *self
            .input
            .get(offset)
            .ok_or(CanonicalError::TruncatedHead { offset })?;
        // Major types 1 and 6 are refused whatever follows: minicbor's `datatype()` peeks one
        // byte further for negative integers and would report a truncation instead.
        match head::major(initial) {
            1 => return Err(CanonicalError::NegativeInteger { offset }),
            6 => return Err(CanonicalError::Tag { offset }),
            _ => {}
        }
        // With the initial byte present and major types 1 and 6 gone, `datatype()` cannot
        // fail; should it ever, the only failure it has is the end of input.
        let ty = self
            .dec
            .datatype()
            .map_err(|_| CanonicalError::TruncatedHead { offset })?;
        match ty {
            Type::U8 | Type::U16 | Type::U32 | Type::U64 => self.uint(offset),
            Type::Bytes => self.string(offset, StringKind::Bytes),
            Type::String => self.string(offset, StringKind::Text),
            Type::Array => self.array(offset, depth),
            Type::Map => self.map(offset, depth),
            Type::Bool => self.simple_ok(offset, |d| d.bool().map(Value::Bool)),
            Type::Null => self.simple_ok(offset, |d| d.null().map(|()| Value::Null)),
            Type::Undefined => Err(CanonicalError::UnsupportedSimple { offset, value: 23 }),
            Type::Simple => {
                let value = self
                    .dec
                    .simple()
                    .map_err(|_| CanonicalError::TruncatedHead { offset })?;
                Err(CanonicalError::UnsupportedSimple { offset, value })
            }
            Type::F16 => Err(float(offset, "half")),
            Type::F32 => Err(float(offset, "single")),
            Type::F64 => Err(float(offset, "double")),
            Type::BytesIndef => Err(indefinite(offset, "byte string")),
            Type::StringIndef => Err(indefinite(offset, "text string")),
            Type::ArrayIndef => Err(indefinite(offset, "array")),
            Type::MapIndef => Err(indefinite(offset, "map")),
            Type::Break => Err(CanonicalError::UnexpectedBreak { offset }),
            // What is left: additional information 28–30 in major types 0, 2, 3, 4, 5, 7
            // (0x1c–0x1e, 0x5c–0x5e, …, 0xfc–0xfe) and 0x1f, an unsigned integer with the
            // indefinite-length marker, which is not well-formed (RFC 8949 §3.2.4).
            _ => match head::info(initial) {
                31 => Err(indefinite(offset, "unsigned integer")),
                info => Err(CanonicalError::ReservedAdditionalInfo {
                    offset,
                    major: head::major(initial),
                    info,
                }),
            },
        }
    }

    /// `false`, `true` or `null`: one byte, nothing to check.
    fn simple_ok(
        &mut self,
        offset: usize,
        read: impl FnOnce(&mut Decoder<'b>) -> Result<Value, minicbor::decode::Error>,
    ) -> Result<Value, CanonicalError> {
        read(&mut self.dec).map_err(|_| CanonicalError::TruncatedHead { offset })
    }

    /// An unsigned integer, which must use its shortest head (RFC 8949 §4.2.1).
    fn uint(&mut self, offset: usize) -> Result<Value, CanonicalError> {
        // The type is known to be an unsigned integer, so end of input is the only failure.
        let value = self
            .dec
            .u64()
            .map_err(|_| CanonicalError::TruncatedHead { offset })?;
        let head_len = self.dec.position() - offset;
        let shortest = head::shortest_head_len(value);
        if head_len != shortest {
            return Err(CanonicalError::NonShortestInteger {
                offset,
                value,
                head_len,
                shortest,
            });
        }
        Ok(Value::Uint(value))
    }

    /// A definite-length byte or text string.
    fn string(&mut self, offset: usize, kind: StringKind) -> Result<Value, CanonicalError> {
        let (declared, head_len) = head::read_string_head(self.input, offset)?;
        self.check_shortest_length(offset, kind.name(), declared, head_len)?;
        let start = offset + head_len;
        let remaining = self.remaining_after(start);
        let len = match usize::try_from(declared) {
            Ok(len) if len <= remaining => len,
            _ => {
                return Err(CanonicalError::TruncatedPayload {
                    offset,
                    kind: kind.name(),
                    declared,
                    needed: declared,
                    remaining,
                });
            }
        };
        let end = start + len;
        let payload = self
            .input
            .get(start..end)
            .ok_or(CanonicalError::TruncatedHead { offset })?;
        let value = match kind {
            StringKind::Bytes => Value::Bytes(payload.to_vec()),
            StringKind::Text => match std::str::from_utf8(payload) {
                Ok(s) => Value::Text(s.to_owned()),
                Err(e) => {
                    return Err(CanonicalError::InvalidUtf8 {
                        offset: start + e.valid_up_to(),
                        string_offset: offset,
                    });
                }
            },
        };
        self.dec.set_position(end);
        Ok(value)
    }

    /// A definite-length array of at most `remaining` elements.
    fn array(&mut self, offset: usize, depth: usize) -> Result<Value, CanonicalError> {
        check_depth(depth, offset)?;
        let count = self.container_head(offset, "array", |d| d.array(), 1)?;
        let mut items = Vec::with_capacity(count.min(PREALLOC_LIMIT));
        for _ in 0..count {
            items.push(self.item(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    /// A definite-length map whose keys are strictly increasing in the bytewise order of their
    /// encodings (RFC 8949 §4.2.1), which also rules out duplicates (§5.6).
    ///
    /// Each key is itself canonical (it was decoded strictly), so comparing the raw input
    /// slices compares the canonical encodings.
    fn map(&mut self, offset: usize, depth: usize) -> Result<Value, CanonicalError> {
        check_depth(depth, offset)?;
        let count = self.container_head(offset, "map", |d| d.map(), 2)?;
        let mut entries = Vec::with_capacity(count.min(PREALLOC_LIMIT));
        let mut previous_key: &[u8] = &[];
        for index in 0..count {
            let key_start = self.dec.position();
            let key = self.item(depth + 1)?;
            let key_end = self.dec.position();
            // Positions only move forward within the input, so this slice always exists.
            let key_bytes = self
                .input
                .get(key_start..key_end)
                .ok_or(CanonicalError::TruncatedHead { offset: key_start })?;
            if index > 0 {
                match previous_key.cmp(key_bytes) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => {
                        return Err(CanonicalError::DuplicateMapKey { offset: key_start });
                    }
                    std::cmp::Ordering::Greater => {
                        return Err(CanonicalError::UnsortedMapKey { offset: key_start });
                    }
                }
            }
            previous_key = key_bytes;
            let value = self.item(depth + 1)?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }

    /// Reads an array or map head with `read`, checks it is shortest, and checks that the
    /// declared count fits in the remaining input at `min_item_bytes` bytes per element (every
    /// item takes at least one byte), so that nothing is allocated for a hostile count.
    fn container_head(
        &mut self,
        offset: usize,
        kind: &'static str,
        read: impl FnOnce(&mut Decoder<'b>) -> Result<Option<u64>, minicbor::decode::Error>,
        min_item_bytes: u64,
    ) -> Result<usize, CanonicalError> {
        // The type was checked to be a definite-length array or map, so end of input is the
        // only failure and `None` (indefinite length) cannot come back.
        let declared = read(&mut self.dec)
            .map_err(|_| CanonicalError::TruncatedHead { offset })?
            .ok_or(CanonicalError::IndefiniteLength { offset, kind })?;
        let head_end = self.dec.position();
        self.check_shortest_length(offset, kind, declared, head_end - offset)?;
        let remaining = self.remaining_after(head_end);
        let needed = declared.saturating_mul(min_item_bytes);
        match usize::try_from(needed) {
            Ok(n) if n <= remaining => Ok(usize::try_from(declared).unwrap_or(n)),
            _ => Err(CanonicalError::TruncatedPayload {
                offset,
                kind,
                declared,
                needed,
                remaining,
            }),
        }
    }

    /// Refuses a length or count written with a longer head than needed (RFC 8949 §4.2.1).
    fn check_shortest_length(
        &self,
        offset: usize,
        kind: &'static str,
        length: u64,
        head_len: usize,
    ) -> Result<(), CanonicalError> {
        let shortest = head::shortest_head_len(length);
        if head_len != shortest {
            return Err(CanonicalError::NonShortestLength {
                offset,
                kind,
                length,
                head_len,
                shortest,
            });
        }
        Ok(())
    }
}

/// Refuses an array or map at `offset` enclosed by `depth` others beyond [`MAX_DEPTH`].
fn check_depth(depth: usize, offset: usize) -> Result<(), CanonicalError> {
    if depth >= MAX_DEPTH {
        return Err(CanonicalError::DepthExceeded {
            offset,
            limit: MAX_DEPTH,
        });
    }
    Ok(())
}

fn float(offset: usize, precision: &'static str) -> CanonicalError {
    CanonicalError::Float { offset, precision }
}

fn indefinite(offset: usize, kind: &'static str) -> CanonicalError {
    CanonicalError::IndefiniteLength { offset, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decode_round_trips_a_nested_record() {
        let bytes = [
            0xa2, 0x61, 0x61, 0x82, 0x01, 0xf6, 0x61, 0x62, 0x43, 0x01, 0x02, 0x03,
        ];
        let v = decode(&bytes).unwrap();
        assert_eq!(
            v,
            Value::Map(vec![
                (
                    Value::Text("a".into()),
                    Value::Array(vec![Value::Uint(1), Value::Null])
                ),
                (Value::Text("b".into()), Value::Bytes(vec![1, 2, 3])),
            ])
        );
        assert_eq!(super::super::encode(&v).unwrap(), bytes);
    }

    #[test]
    fn canonical_decode_rejects_a_huge_declared_count_before_allocating() {
        // An array claiming 2^64-1 elements, then nothing.
        let bytes = [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            decode(&bytes),
            Err(CanonicalError::TruncatedPayload {
                offset: 0,
                kind: "array",
                declared: u64::MAX,
                needed: u64::MAX,
                remaining: 0
            })
        );
    }

    #[test]
    fn canonical_decode_accepts_max_depth_and_refuses_one_more() {
        let mut ok = vec![0x81; MAX_DEPTH - 1];
        ok.push(0x80);
        assert!(decode(&ok).is_ok());
        let mut deep = vec![0x81; MAX_DEPTH];
        deep.push(0x80);
        assert_eq!(
            decode(&deep),
            Err(CanonicalError::DepthExceeded {
                offset: MAX_DEPTH,
                limit: MAX_DEPTH
            })
        );
    }
}
