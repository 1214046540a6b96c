//! The τ×K ablation chain as an attribution problem: each hop, the parents in its context
//! (hop k−1 among trusted distractors) and which of them is the true edge.
//!
//! The chain's texts are the evaluation harness's (`crates/memlineage-eval/scenarios/
//! ablation.toml`); the distractors are ours (`data/attribution/ablation-chain.toml`, whose
//! header says why they are needed: against a lone parent, AttnAttr's relative-to-max weight
//! is always 1).

use crate::EvalError;
use serde::Deserialize;

/// One hop: derive `child` from `parents`, of which `parents[true_parent]` is hop k−1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// 1-based hop number (edge k joins hop k−1 to hop k).
    pub k: u32,
    /// The parents in the writer's context, in order.
    pub parents: Vec<String>,
    /// Position of hop k−1 in `parents`.
    pub true_parent: usize,
    /// The hop's text.
    pub child: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextFile {
    hop: Vec<HopContext>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HopContext {
    true_parent: usize,
    distractors: Vec<String>,
}

#[derive(Deserialize)]
struct AblationFile {
    ablation: Ablation,
}

#[derive(Deserialize)]
struct Ablation {
    max_k: u32,
    root_content: String,
    hop_content: String,
}

/// Builds the chain from the text of `ablation.toml` and of `ablation-chain.toml`.
pub fn build(ablation_toml: &str, context_toml: &str) -> Result<Vec<Hop>, EvalError> {
    let ab: AblationFile = toml::from_str(ablation_toml)
        .map_err(|e| EvalError::Data(format!("ablation.toml: {e}")))?;
    let ctx: ContextFile = toml::from_str(context_toml)
        .map_err(|e| EvalError::Data(format!("ablation-chain.toml: {e}")))?;
    let ab = ab.ablation;
    if ctx.hop.len() < ab.max_k as usize {
        return Err(EvalError::Data(format!(
            "ablation-chain.toml has {} [[hop]] tables, the chain has max_k = {} hops: add one \
             per missing hop",
            ctx.hop.len(),
            ab.max_k
        )));
    }
    let mut prev = ab.root_content;
    let mut out = Vec::with_capacity(ab.max_k as usize);
    for (k, hc) in (1..=ab.max_k).zip(ctx.hop) {
        if hc.true_parent > hc.distractors.len() || hc.distractors.len() > 15 {
            return Err(EvalError::Data(format!(
                "ablation-chain.toml, hop {k}: true_parent = {} with {} distractors (at most 15 \
                 distractors; true_parent at most their count)",
                hc.true_parent,
                hc.distractors.len()
            )));
        }
        let mut parents = hc.distractors;
        parents.insert(hc.true_parent, prev);
        let child = ab.hop_content.replace("{k}", &k.to_string());
        out.push(Hop {
            k,
            parents,
            true_parent: hc.true_parent,
            child: child.clone(),
        });
        prev = child;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AB: &str = "[ablation]\nmax_k = 2\ntau_step = \"0.05\"\nroot_content = \"R\"\n\
                      hop_content = \"H{k}\"\n";

    #[test]
    fn each_hop_derives_from_the_previous_among_distractors() {
        let ctx = "[[hop]]\ntrue_parent = 1\ndistractors = [\"a\"]\n\
                   [[hop]]\ntrue_parent = 0\ndistractors = [\"b\", \"c\"]\n";
        let hops = build(AB, ctx).unwrap();
        assert_eq!(hops.len(), 2);
        assert_eq!(hops[0].parents, ["a", "R"]);
        assert_eq!(hops[0].true_parent, 1);
        assert_eq!(hops[0].child, "H1");
        assert_eq!(hops[1].parents, ["H1", "b", "c"]);
        assert_eq!(hops[1].child, "H2");
    }

    #[test]
    fn too_few_hops_or_a_bad_position_is_an_error() {
        let one = "[[hop]]\ntrue_parent = 0\ndistractors = []\n";
        assert!(build(AB, one).unwrap_err().to_string().contains("max_k"));
        let bad = "[[hop]]\ntrue_parent = 3\ndistractors = [\"a\"]\n\
                   [[hop]]\ntrue_parent = 0\ndistractors = []\n";
        assert!(build(AB, bad).is_err());
    }

    #[test]
    fn the_committed_files_build_a_chain_with_distractors() {
        let hops = build(
            include_str!("../../memlineage-eval/scenarios/ablation.toml"),
            include_str!("../../../data/attribution/ablation-chain.toml"),
        )
        .unwrap();
        assert!(hops.len() >= 8);
        assert!(hops.iter().all(|h| h.parents.len() >= 2));
        for w in hops.windows(2) {
            assert_eq!(w[1].parents[w[1].true_parent], w[0].child);
        }
    }
}
