//! LmSelfEval: an LLM judge scores how much each parent shaped the child.
//!
//! # Hardening against prompt injection
//!
//! The parents are exactly the texts an attacker may control (a web page, an e-mail, a tool's
//! output), so the judge's prompt is built so that they can only ever be *data*:
//!
//! 1. **Envelope** ([`envelope`]). The texts travel JSON-escaped inside one JSON document in the
//!    user message; the system prompt says the document is data and that instructions inside it
//!    are to be ignored. A text cannot close its string or the envelope (`"}]}` arrives as
//!    `\"}]}`), and `<` and `>` are escaped too (`\u003c`, `\u003e`) so that servers which parse
//!    control-token strings such as `<|im_end|>` in message content cannot be reached.
//! 2. **Unpredictable ids** ([`envelope::parent_ids`]). Each parent is named in the envelope by
//!    `p` + 8 hex digits of a SHA-256 over the child, the parent's index and every parent's
//!    text (and an optional secret salt). A parent's id depends on its own text, so a hostile
//!    parent cannot name its own id in advance ("set p… to 0").
//! 3. **Strict reply schema** ([`parse`]). The reply must be exactly
//!    `{"weights": {ID: number in [0,1], ...}}` with exactly the envelope's ids — no extra or
//!    missing id, no duplicate key, no other key, no string or `NaN` or out-of-range number, no
//!    prose before or after. Surrounding whitespace and one Markdown code fence (```` ```json ````
//!    or ```` ``` ````) are tolerated, nothing else.
//! 4. **Fail closed.** Whatever goes wrong — the backend errors, times out, a replay file has no
//!    reply, the reply does not parse — the judge answers with *coarse* weights (1 for every
//!    parent, so taint propagates) and reports why in [`Attribution::fell_back`]. It never
//!    answers with low weights it did not get from a well-formed reply.
//!
//! What this cannot stop: a judge model that reads a hostile parent and is *persuaded* to give
//! it a low weight inside a well-formed reply. The strict fallback of the label rule (weak
//! untrusted parents keep their taint) is the backstop for that; `docs/attribution.md` has the
//! measured behaviour on injected parents.

pub mod envelope;
#[cfg(feature = "openai")]
pub mod openai;
pub mod parse;
pub mod replay;
pub mod schema;

use super::{Attribution, AttributionError, Attributor, ParentText};
use memlineage_core::label::Weight;

/// A chat model that completes one (system, user) exchange.
pub trait JudgeBackend: Send + Sync {
    /// Identifies the model (and its weights, where known), e.g. `openai:gpt-4o-mini` or
    /// `SmolLM2-135M-Instruct-Q4_1@b179c9523d0e`. Recorded in the attribution name and in
    /// replay keys.
    fn model_id(&self) -> String;

    /// The model's reply to one system and one user message (deterministic settings:
    /// temperature 0 / greedy).
    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError>;

    /// Like [`JudgeBackend::complete`], and says which request mode answered, for backends
    /// that can ask in several ways (the OpenAI-compatible judge: JSON schema, JSON mode,
    /// prompt only). The default asks [`JudgeBackend::complete`] and names no mode.
    fn complete_detailed(&self, system: &str, user: &str) -> Result<JudgeReply, AttributionError> {
        Ok(JudgeReply {
            text: self.complete(system, user)?,
            mode: None,
        })
    }

    /// The request mode the next call will try first (`None` for a backend with one way of
    /// asking). [`LmSelfEval`]'s name carries it before any call; after a call the mode that
    /// answered is in [`Attribution::name`].
    fn mode(&self) -> Option<String> {
        None
    }
}

/// A judge's reply and the request mode that produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JudgeReply {
    /// The reply, verbatim.
    pub text: String,
    /// The request mode that answered (e.g. `json-schema`), when the backend has several.
    pub mode: Option<String>,
}

/// Forwards [`JudgeBackend`] through a pointer type.
macro_rules! forward_backend {
    ($($ptr:ty),+) => {$(
        impl<B: JudgeBackend + ?Sized> JudgeBackend for $ptr {
            fn model_id(&self) -> String {
                (**self).model_id()
            }
            fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
                (**self).complete(system, user)
            }
            fn complete_detailed(
                &self,
                system: &str,
                user: &str,
            ) -> Result<JudgeReply, AttributionError> {
                (**self).complete_detailed(system, user)
            }
            fn mode(&self) -> Option<String> {
                (**self).mode()
            }
        }
    )+};
}

forward_backend!(&B, Box<B>, std::sync::Arc<B>);

/// The prefix of LmSelfEval's attribution name.
pub const LM_SELF_EVAL: &str = "lm-self-eval";

/// One judge request, as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JudgeRequest {
    /// The system prompt.
    pub system: String,
    /// The user message (the JSON envelope).
    pub user: String,
    /// The envelope id of each parent, in order.
    pub ids: Vec<String>,
}

/// The full outcome of one judged attribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The weights, and whether they are the coarse fallback.
    pub attribution: Attribution,
    /// The raw reply, when the backend gave one.
    pub reply: Option<String>,
    /// The request mode that produced the reply, when the backend has several.
    pub mode: Option<String>,
}

/// The LLM-judge attributor over any [`JudgeBackend`], hardened as the module documentation
/// says.
#[derive(Clone, Debug)]
pub struct LmSelfEval<B: JudgeBackend> {
    backend: B,
    salt: Vec<u8>,
    max_chars: usize,
}

impl<B: JudgeBackend> LmSelfEval<B> {
    /// A judge over `backend`, with no id salt and texts truncated to
    /// [`envelope::DEFAULT_MAX_CHARS`] characters each.
    pub fn new(backend: B) -> LmSelfEval<B> {
        LmSelfEval {
            backend,
            salt: Vec::new(),
            max_chars: envelope::DEFAULT_MAX_CHARS,
        }
    }

    /// Mixes a secret into the envelope ids, so that even an attacker who knows the child and
    /// every parent text cannot compute them. Changes every request, so a replay file recorded
    /// without the salt no longer matches.
    pub fn with_id_salt(mut self, salt: &[u8]) -> LmSelfEval<B> {
        self.salt = salt.to_vec();
        self
    }

    /// Truncates each text to at most `max_chars` characters in the envelope (the envelope
    /// marks a truncated text with `"truncated": true`).
    pub fn with_max_chars(mut self, max_chars: usize) -> LmSelfEval<B> {
        self.max_chars = max_chars.max(1);
        self
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The request this judge sends for `child` and `parents` (for replay look-ups and tests).
    pub fn request(&self, child: &str, parents: &[&str]) -> JudgeRequest {
        let env = envelope::build(child, parents, &self.salt, self.max_chars);
        JudgeRequest {
            system: envelope::SYSTEM_PROMPT.to_string(),
            user: env.user,
            ids: env.ids,
        }
    }

    /// Judges, and returns the weights, whether they fell back, and the raw reply.
    pub fn judge(&self, child: &str, parents: &[&str]) -> Judgement {
        if parents.is_empty() {
            return Judgement {
                attribution: Attribution::answered(Vec::new()),
                reply: None,
                mode: None,
            };
        }
        let req = self.request(child, parents);
        let reply = match self.backend.complete_detailed(&req.system, &req.user) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "attribution judge failed; using coarse weights");
                return Judgement {
                    attribution: Attribution::fallback(parents.len(), e.to_string()),
                    reply: None,
                    mode: None,
                };
            }
        };
        let mut attribution = match parse::parse_reply(&reply.text, &req.ids) {
            Ok(ws) => Attribution::answered(ws.into_iter().map(Weight::from_unit_f64).collect()),
            Err(e) => {
                tracing::warn!(error = %e, "attribution judge reply rejected; using coarse weights");
                Attribution::fallback(parents.len(), e.to_string())
            }
        };
        if reply.mode.is_some() {
            attribution.name = Some(self.name_with(reply.mode.as_deref()));
        }
        Judgement {
            attribution,
            reply: Some(reply.text),
            mode: reply.mode,
        }
    }

    /// `lm-self-eval:<model id>`, and `+<mode>` when a request mode is given.
    fn name_with(&self, mode: Option<&str>) -> String {
        match mode {
            Some(m) => format!("{LM_SELF_EVAL}:{}+{m}", self.backend.model_id()),
            None => format!("{LM_SELF_EVAL}:{}", self.backend.model_id()),
        }
    }
}

impl<B: JudgeBackend> Attributor for LmSelfEval<B> {
    /// `lm-self-eval:<model id>`, with `+<mode>` for a backend with several request modes
    /// (the mode it will try first; [`Attribution::name`] has the one that answered).
    fn name(&self) -> String {
        self.name_with(self.backend.mode().as_deref())
    }

    /// Never fails: a judge failure gives coarse weights (see
    /// [`Attributor::attribute_detailed`] for the reason).
    fn attribute(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Vec<Weight>, AttributionError> {
        self.attribute_detailed(child, parents).map(|a| a.weights)
    }

    fn attribute_detailed(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Attribution, AttributionError> {
        let texts: Vec<&str> = parents.iter().map(|p| p.text).collect();
        Ok(self.judge(child, &texts).attribution)
    }
}
