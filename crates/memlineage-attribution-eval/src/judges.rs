//! The LmSelfEval judges the measurement runs: one row of the table each, each with its
//! committed replay file (`data/attribution/`), so every judge's row regenerates without a
//! model or a server.

/// Where a judge's replies come from when they are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JudgeKind {
    /// The local judge, constrained decoding, greedy numbers (`LocalJudge`,
    /// `JudgeDecoding::Constrained`).
    Constrained,
    /// The local judge, constrained decoding, expected-value numbers
    /// (`JudgeDecoding::ConstrainedExpected`).
    ConstrainedExpected,
    /// The local judge, one parent per request, expected values (`JudgeDecoding::Scored`).
    Scored,
    /// The local judge, free greedy generation (`JudgeDecoding::Generate`).
    Free,
    /// The OpenAI-compatible judge (`OpenAiJudge`) at `MEMLINEAGE_JUDGE_BASE_URL` — recorded
    /// against llama.cpp's server on the same GGUF file (`docs/attribution.md`).
    Http,
}

/// One judge of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JudgeSpec {
    /// Its row name.
    pub short: &'static str,
    /// Its replay file, in `data/attribution/`.
    pub file: &'static str,
    /// How its replies are recorded.
    pub kind: JudgeKind,
}

/// Every judge, in table order.
pub const JUDGES: [JudgeSpec; 5] = [
    JudgeSpec {
        short: "lm-self-eval-constrained",
        file: "judge-replay-constrained.jsonl",
        kind: JudgeKind::Constrained,
    },
    JudgeSpec {
        short: "lm-self-eval-expected",
        file: "judge-replay-constrained-expected.jsonl",
        kind: JudgeKind::ConstrainedExpected,
    },
    JudgeSpec {
        short: "lm-self-eval-http",
        file: "judge-replay-llama-cpp.jsonl",
        kind: JudgeKind::Http,
    },
    JudgeSpec {
        short: "lm-self-eval-scored",
        file: "judge-replay-scored.jsonl",
        kind: JudgeKind::Scored,
    },
    JudgeSpec {
        short: "lm-self-eval-free",
        file: "judge-replay.jsonl",
        kind: JudgeKind::Free,
    },
];

/// The judge with row name `short`.
pub fn judge(short: &str) -> Option<&'static JudgeSpec> {
    JUDGES.iter().find(|j| j.short == short)
}

/// Every algorithm of the table, in order: Coarse, the judges, AttnAttr.
pub fn all_algorithms() -> Vec<&'static str> {
    let mut out = vec!["coarse"];
    out.extend(JUDGES.iter().map(|j| j.short));
    out.push("attn-attr");
    out
}
