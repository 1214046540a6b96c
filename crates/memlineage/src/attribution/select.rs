//! Picking an attributor by name: what `memlineage attribute --algo` and
//! `memlineage write --attribution` use (`docs/attribution.md`, "Command line").
//!
//! ```text
//! coarse                           Coarse
//! lm-self-eval  + judge local      LmSelfEval<LocalJudge>, constrained decoding (feature `models`)
//!               + judge local-scored  LmSelfEval<LocalJudge::scored> (feature `models`)
//!               + judge openai     LmSelfEval<OpenAiJudge>, OpenAiConfig::from_env (feature `openai`)
//!               + judge replay:PATH   LmSelfEval<ReplayJudge>, replies from PATH only (no model)
//! attn-attr                        AttnAttr                        (feature `models`)
//! ```
//!
//! An algorithm or judge this build lacks is [`AttributionError::Unavailable`], naming the
//! feature to build with. The local model is found by `LocalModel::locate` (an explicit path,
//! `$MEMLINEAGE_MODEL`, `$MEMLINEAGE_MODEL_DIR`, `~/.cache/memlineage/models`); when it is
//! missing the error says to run `scripts/fetch-model.sh`.

use super::{AttributionError, Attributor, Coarse, LmSelfEval};
use std::path::PathBuf;

/// An attribution algorithm, by the name the command line uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// `coarse`.
    Coarse,
    /// `lm-self-eval`: an LLM judge (see [`JudgeChoice`]).
    LmSelfEval,
    /// `attn-attr`: attention of the local model.
    AttnAttr,
}

impl Algorithm {
    /// The command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Coarse => "coarse",
            Algorithm::LmSelfEval => "lm-self-eval",
            Algorithm::AttnAttr => "attn-attr",
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "coarse" => Ok(Algorithm::Coarse),
            "lm-self-eval" => Ok(Algorithm::LmSelfEval),
            "attn-attr" => Ok(Algorithm::AttnAttr),
            _ => Err(format!(
                "unknown attribution algorithm `{}`: expected coarse, lm-self-eval or attn-attr",
                s.chars().take(40).collect::<String>()
            )),
        }
    }
}

/// The backend of the `lm-self-eval` judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JudgeChoice {
    /// `local`: SmolLM2, decoding constrained to the reply's grammar
    /// ([`super::LocalJudge::new`]).
    Local,
    /// `local-scored`: SmolLM2, scored answers ([`super::LocalJudge::scored`]).
    LocalScored,
    /// `openai`: an OpenAI-compatible endpoint configured from the environment
    /// (`MEMLINEAGE_JUDGE_BASE_URL`, `MEMLINEAGE_JUDGE_MODEL`, `MEMLINEAGE_JUDGE_API_KEY_ENV`).
    OpenAi,
    /// `replay:PATH`: the replies recorded in a replay file, never a model (a request with no
    /// recorded reply falls back to coarse weights).
    Replay(PathBuf),
}

impl std::str::FromStr for JudgeChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(JudgeChoice::Local),
            "local-scored" => Ok(JudgeChoice::LocalScored),
            "openai" => Ok(JudgeChoice::OpenAi),
            _ => match s.strip_prefix("replay:") {
                Some(path) if !path.is_empty() => Ok(JudgeChoice::Replay(PathBuf::from(path))),
                _ => Err(format!(
                    "unknown judge `{}`: expected local, local-scored, openai or replay:PATH",
                    s.chars().take(80).collect::<String>()
                )),
            },
        }
    }
}

/// What to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The judge, for [`Algorithm::LmSelfEval`] (ignored otherwise).
    pub judge: JudgeChoice,
    /// The model file, overriding the usual search (`LocalModel::locate`).
    pub model: Option<PathBuf>,
}

impl Selection {
    /// `algorithm` with the local judge and the usual model search.
    pub fn new(algorithm: Algorithm) -> Selection {
        Selection {
            algorithm,
            judge: JudgeChoice::Local,
            model: None,
        }
    }
}

/// Builds the attributor `sel` names (loading the local model when it needs one).
pub fn attributor(sel: &Selection) -> Result<Box<dyn Attributor>, AttributionError> {
    match (sel.algorithm, &sel.judge) {
        (Algorithm::Coarse, _) => Ok(Box::new(Coarse)),
        (Algorithm::LmSelfEval, JudgeChoice::Replay(path)) => Ok(Box::new(LmSelfEval::new(
            super::judge::replay::ReplayJudge::replay_file(path)?,
        ))),
        (Algorithm::LmSelfEval, JudgeChoice::OpenAi) => openai_judge(),
        (Algorithm::LmSelfEval, JudgeChoice::Local | JudgeChoice::LocalScored)
        | (Algorithm::AttnAttr, _) => local(sel),
    }
}

#[cfg(feature = "openai")]
fn openai_judge() -> Result<Box<dyn Attributor>, AttributionError> {
    use super::judge::openai::{OpenAiConfig, OpenAiJudge};
    Ok(Box::new(LmSelfEval::new(OpenAiJudge::new(
        OpenAiConfig::from_env()?,
    )?)))
}

#[cfg(not(feature = "openai"))]
fn openai_judge() -> Result<Box<dyn Attributor>, AttributionError> {
    Err(AttributionError::Unavailable {
        what: "the OpenAI-compatible judge (lm-self-eval with judge openai)".into(),
        feature: "openai",
    })
}

#[cfg(feature = "models")]
fn local(sel: &Selection) -> Result<Box<dyn Attributor>, AttributionError> {
    use super::local::memlineage_models::LocalModel;
    use super::{AttnAttr, LocalJudge};
    let path = LocalModel::locate(sel.model.as_deref())
        .map_err(|e| AttributionError::Model(e.to_string()))?;
    let model = std::sync::Arc::new(
        LocalModel::load(&path).map_err(|e| AttributionError::Model(e.to_string()))?,
    );
    Ok(match (sel.algorithm, &sel.judge) {
        (Algorithm::LmSelfEval, JudgeChoice::LocalScored) => {
            Box::new(LmSelfEval::new(LocalJudge::scored(model)))
        }
        (Algorithm::LmSelfEval, _) => Box::new(LmSelfEval::new(LocalJudge::new(model))),
        _ => Box::new(AttnAttr::new(model)),
    })
}

#[cfg(not(feature = "models"))]
fn local(sel: &Selection) -> Result<Box<dyn Attributor>, AttributionError> {
    let what = match sel.algorithm {
        Algorithm::AttnAttr => "attn-attr (attention of the local SmolLM2 model)",
        _ => "the local SmolLM2 judge (lm-self-eval with judge local)",
    };
    Err(AttributionError::Unavailable {
        what: what.into(),
        feature: "models",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_round_trip() {
        for a in [
            Algorithm::Coarse,
            Algorithm::LmSelfEval,
            Algorithm::AttnAttr,
        ] {
            assert_eq!(a.as_str().parse::<Algorithm>(), Ok(a));
        }
        assert!("attn".parse::<Algorithm>().is_err());
        assert_eq!("local".parse::<JudgeChoice>(), Ok(JudgeChoice::Local));
        assert_eq!(
            "replay:/x/y.jsonl".parse::<JudgeChoice>(),
            Ok(JudgeChoice::Replay(PathBuf::from("/x/y.jsonl")))
        );
        assert!("replay:".parse::<JudgeChoice>().is_err());
        assert!("gpt".parse::<JudgeChoice>().is_err());
    }

    #[test]
    fn coarse_needs_nothing() {
        let a = attributor(&Selection::new(Algorithm::Coarse)).expect("coarse");
        assert_eq!(a.name(), "coarse");
    }

    #[test]
    fn a_missing_replay_file_is_an_error_naming_it() {
        let sel = Selection {
            judge: JudgeChoice::Replay(PathBuf::from("/nonexistent/replay.jsonl")),
            ..Selection::new(Algorithm::LmSelfEval)
        };
        let e = attributor(&sel).err().expect("missing file");
        assert!(e.to_string().contains("/nonexistent/replay.jsonl"), "{e}");
    }

    #[cfg(not(feature = "models"))]
    #[test]
    fn local_algorithms_name_the_feature_without_it() {
        for sel in [
            Selection::new(Algorithm::AttnAttr),
            Selection::new(Algorithm::LmSelfEval),
        ] {
            let e = attributor(&sel).err().expect("unavailable");
            assert!(
                matches!(
                    e,
                    AttributionError::Unavailable {
                        feature: "models",
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("`models`"), "{e}");
        }
    }

    #[cfg(not(feature = "openai"))]
    #[test]
    fn openai_names_the_feature_without_it() {
        let sel = Selection {
            judge: JudgeChoice::OpenAi,
            ..Selection::new(Algorithm::LmSelfEval)
        };
        let e = attributor(&sel).err().expect("unavailable");
        assert!(
            matches!(
                e,
                AttributionError::Unavailable {
                    feature: "openai",
                    ..
                }
            ),
            "{e}"
        );
    }
}
