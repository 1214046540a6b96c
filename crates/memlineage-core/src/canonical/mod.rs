//! Canonical CBOR: the byte encoding that MemLineage hashes and signs.
//!
//! Every signed record (entry bodies, checkpoints' payloads, principal records) is turned into
//! bytes by [`encode`], and every record read back from a log, a store or the network goes
//! through [`decode`]. Both follow the *core deterministic encoding requirements* of
//! RFC 8949 §4.2.1:
//!
//! - every head (integer, length, count) uses the shortest form the argument fits in
//!   (§4.2.1, first bullet, and the preferred serialization of §4.1);
//! - only definite lengths are used (§4.2.1, "indefinite-length items MUST NOT appear");
//! - map keys are sorted by the bytewise lexicographic order of their own deterministic
//!   encodings (§4.2.1, "the keys in every map MUST be sorted in the bytewise lexicographic
//!   order of their deterministic encodings"), and no key appears twice (§5.6).
//!
//! MemLineage uses a *subset* of CBOR ([`Value`]): unsigned integers, byte strings, text
//! strings, `false`, `true`, `null`, arrays and maps. There are no floats in signed data
//! (DESIGN.md, "No floats in signed data"), no negative integers, no tags and no other simple
//! values.
//!
//! Decoding is strict: [`decode`] accepts a byte string only if it is *exactly* the output of
//! [`encode`] for the value it denotes, so that `encode(decode(b)?) == b` for every accepted
//! `b`. Two different byte strings can therefore never carry the same record, and an entry's
//! id (the SHA-256 of its canonical bytes) is a function of its content alone. Every rejection
//! is a distinct [`CanonicalError`] variant naming the fault and its byte offset.
//!
//! The crate `minicbor` writes the heads on encoding and reads most heads on decoding; see
//! [`decode`] for the one place where we read a head ourselves, and why. The manual
//! `docs/canonical-cbor.md` lists the accepted subset and every rejection message.

mod decode;
mod encode;
mod error;
mod head;
mod value;

pub use decode::decode;
pub use encode::encode;
pub use error::CanonicalError;
pub use value::Value;

/// The deepest nesting of arrays and maps that [`encode`] and [`decode`] accept.
///
/// A top-level array or map is at depth 1, an array or map inside it at depth 2, and so on;
/// one at depth `MAX_DEPTH + 1` is rejected with [`CanonicalError::DepthExceeded`] (scalars
/// inside the deepest container are fine). MemLineage's own records nest only a few levels
/// deep. The limit bounds the decoder's recursion, so hostile input cannot overflow the stack
/// (RFC 8949 §10 asks decoders to guard against resource exhaustion by hostile input).
pub const MAX_DEPTH: usize = 32;
