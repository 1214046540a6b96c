//! The labelled set, generated deterministically from [`crate::templates`]: every template
//! filled in once per person (slot values drawn by a seeded ChaCha20 generator, so the same
//! seed gives the same set on every machine), each fact with its lexical, paraphrased and value
//! question. `data/retrieval/memory_queries.json` is this set, committed; a test checks that
//! it is exactly what the generator makes.

use crate::templates::{PEOPLE, SLOTS, TEMPLATES};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// The seed of the committed set.
pub const SEED: u64 = 17;

/// A stored fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    /// Its number (its position in [`Dataset::facts`]).
    pub id: usize,
    /// The text stored as an entry's content.
    pub text: String,
}

/// How a question relates to its fact's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// It shares the fact's key words.
    Lexical,
    /// It asks the same in other words.
    Paraphrase,
    /// It gives a value the fact holds and asks whose it is.
    Value,
}

impl Kind {
    /// `lexical` or `paraphrase`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lexical => "lexical",
            Kind::Paraphrase => "paraphrase",
            Kind::Value => "value",
        }
    }
}

/// A labelled query: its text and the facts that answer it (one, except for a value question
/// whose value several facts of its template hold: each of them answers it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// Its number.
    pub id: usize,
    /// The question.
    pub text: String,
    /// The fact it was written for.
    pub fact: usize,
    /// Every fact that answers it (the same question text from another fact of the template).
    pub answers: Vec<usize>,
    /// Lexical or paraphrased.
    pub kind: Kind,
}

/// The labelled set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// The generator's seed.
    pub seed: u64,
    /// The facts, stored in this order.
    pub facts: Vec<Fact>,
    /// The queries.
    pub queries: Vec<Query>,
}

impl Dataset {
    /// The set of `seed`.
    pub fn generate(seed: u64) -> Dataset {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut facts = Vec::new();
        let mut queries = Vec::new();
        for person in PEOPLE {
            for t in TEMPLATES {
                // One value per slot for this fact (a slot used twice in a template, such as
                // {date}, takes the same value both times).
                let values: Vec<(&str, &str)> = SLOTS
                    .iter()
                    .map(|(name, vals)| (*name, vals[(rng.next_u32() as usize) % vals.len()]))
                    .collect();
                let fill = |s: &str| {
                    let mut out = s.replace("{p}", person);
                    for (name, v) in &values {
                        out = out.replace(&format!("{{{name}}}"), v);
                    }
                    out
                };
                let fact = facts.len();
                facts.push(Fact {
                    id: fact,
                    text: fill(t.fact),
                });
                for (kind, q) in [
                    (Kind::Lexical, t.lexical),
                    (Kind::Paraphrase, t.paraphrase),
                    (Kind::Value, t.value),
                ] {
                    queries.push(Query {
                        id: queries.len(),
                        text: fill(q),
                        fact,
                        answers: vec![fact],
                        kind,
                    });
                }
            }
        }
        // A question asked, word for word, of several facts is answered by each of them.
        let mut by_text: std::collections::HashMap<(String, Kind), Vec<usize>> =
            std::collections::HashMap::new();
        for q in &queries {
            by_text
                .entry((q.text.clone(), q.kind))
                .or_default()
                .push(q.fact);
        }
        for q in &mut queries {
            if let Some(all) = by_text.get(&(q.text.clone(), q.kind)) {
                q.answers = all.clone();
            }
        }
        Dataset {
            seed,
            facts,
            queries,
        }
    }

    /// The committed form (pretty JSON with a final newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Reads the committed form.
    pub fn parse(json: &str) -> Result<Dataset, crate::EvalError> {
        serde_json::from_str(json).map_err(|e| crate::EvalError::Data(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled_and_every_query_names_its_person() {
        let ds = Dataset::generate(SEED);
        assert_eq!(ds.facts.len(), PEOPLE.len() * TEMPLATES.len());
        assert_eq!(ds.queries.len(), 3 * ds.facts.len());
        for f in &ds.facts {
            assert!(!f.text.contains('{'), "{}", f.text);
        }
        for q in &ds.queries {
            assert!(!q.text.contains('{'), "{}", q.text);
            // Lexical and paraphrased questions name their person; value questions ask for it.
            let person = PEOPLE[q.fact / TEMPLATES.len()];
            assert_eq!(q.text.contains(person), q.kind != Kind::Value, "{}", q.text);
        }
        assert_eq!(Dataset::generate(SEED), ds, "deterministic");
    }
}
