//! Notes for search tests: deterministic texts over a small vocabulary, so that terms repeat,
//! BM25 scores differ and tie, written in several scopes by a trusted and an external writer.

use super::p;
use memlineage::{Memory, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};

/// The vocabulary of [`text`].
pub const WORDS: [&str; 14] = [
    "invoice", "rent", "landlord", "vault", "code", "meeting", "paris", "flight", "the", "of",
    "iban", "refund", "pizza", "garden",
];

/// The scopes [`write_notes`] writes in, in turn.
pub const SCOPES: [&str; 5] = ["home", "home/bills", "work", "homework", "default"];

/// A deterministic text of 2–14 words from [`WORDS`] (a linear congruential sequence).
pub fn text(i: u64) -> String {
    let mut x = i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let n = 2 + (x >> 33) % 13;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            WORDS[((x >> 35) % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Notes `from..from + n`: [`text`] in [`SCOPES`] in turn, every third by `web` (external),
/// the others by `agent` (trusted).
pub fn write_notes(mem: &Memory, from: u64, n: u64) -> Vec<EntryId> {
    (from..from + n)
        .map(|i| {
            let scope = Scope::new(SCOPES[(i % SCOPES.len() as u64) as usize]).unwrap();
            let writer = if i % 3 == 0 { "web" } else { "agent" };
            mem.write(
                WriteRequest::new(&p(writer), EntryKind::Observation, text(i)).with_scope(scope),
            )
            .unwrap()
            .id
        })
        .collect()
}
