//! A judge backend for any OpenAI-compatible Chat Completions endpoint (feature `openai`).
//!
//! `POST {base_url}/chat/completions` with
//!
//! ```json
//! {"model":"…","messages":[{"role":"system","content":"…"},{"role":"user","content":"…"}],
//!  "temperature":0,"max_tokens":512,"response_format":{…}}
//! ```
//!
//! and `Authorization: Bearer <key>` where the key is read, at each call, from the environment
//! variable *named* in the configuration (the key itself is never configured, logged or
//! stored). The reply is `choices[0].message.content`.
//!
//! # Asking for the reply's shape
//!
//! Small models follow a reply format far more reliably when the server constrains decoding
//! to it ("structured outputs"). The judge asks in the most constrained way the server takes,
//! a ladder of [`ReplyFormat`]s:
//!
//! 1. `json-schema`: `{"type": "json_schema", "json_schema": {"name": "attribution_weights",
//!    "strict": true, "schema": S}}` — OpenAI's structured outputs, also vLLM and llama.cpp's
//!    own `llama-server`; `S` is the reply schema of exactly the envelope's ids
//!    ([`super::schema`]);
//! 2. `json-object-schema`: `{"type": "json_object", "schema": S}` — the same schema in the
//!    form llama-cpp-python's server (and several hosted APIs) take;
//! 3. `json-object`: `{"type": "json_object"}` — plain JSON mode;
//! 4. `prompt`: no `response_format`; the prompt alone asks for the shape.
//!
//! A server that *refuses* a rung — HTTP 400, 422 or 501, the statuses servers give for a
//! request field they do not support, or any error status whose body names `response_format`
//! or `json_schema` (llama-cpp-python answers `"type": "json_schema"` with a 500 and its
//! validation error) — is asked again one rung lower, at most once per rung.
//! Once a lower rung answered, this judge starts there (no repeated refusals). Any other
//! failure (transport, timeout, 401, 429, 5xx, a body that is not a completion) is an error at
//! once. The rung that answered is the reply's mode: [`super::LmSelfEval`] records it in the
//! attribution name (`lm-self-eval:openai:<model>+json-schema`), so entries say how their
//! weights were asked for.
//!
//! Whatever the rung, the reply goes through the same strict parser and fails closed: a schema
//! is a decoding aid for an honest server, never a reason to trust what comes back. Errors are
//! [`AttributionError::Backend`], which [`super::LmSelfEval`] turns into the coarse fallback.

use super::schema::{ReplySchema, SCHEMA_NAME};
use super::{JudgeBackend, JudgeReply, envelope};
use crate::attribution::AttributionError;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// How the judge asks the server for the reply's shape; the rungs of the ladder in the
/// module documentation, most constrained first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyFormat {
    /// `{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`.
    #[default]
    JsonSchema,
    /// `{"type": "json_object", "schema": …}` (llama-cpp-python's server).
    JsonObjectSchema,
    /// `{"type": "json_object"}`.
    JsonObject,
    /// No `response_format`.
    Prompt,
}

impl ReplyFormat {
    /// Every rung, most constrained first.
    pub const ALL: [ReplyFormat; 4] = [
        ReplyFormat::JsonSchema,
        ReplyFormat::JsonObjectSchema,
        ReplyFormat::JsonObject,
        ReplyFormat::Prompt,
    ];

    /// The name used in configuration and in the attribution name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyFormat::JsonSchema => "json-schema",
            ReplyFormat::JsonObjectSchema => "json-object-schema",
            ReplyFormat::JsonObject => "json-object",
            ReplyFormat::Prompt => "prompt",
        }
    }

    /// The next, less constrained rung.
    pub fn next(self) -> Option<ReplyFormat> {
        Self::ALL.get(self.index() + 1).copied()
    }

    /// Whether the request carries the reply schema.
    pub fn has_schema(self) -> bool {
        matches!(
            self,
            ReplyFormat::JsonSchema | ReplyFormat::JsonObjectSchema
        )
    }

    fn index(self) -> usize {
        self as usize
    }

    fn from_index(i: u8) -> ReplyFormat {
        Self::ALL
            .get(usize::from(i))
            .copied()
            .unwrap_or(ReplyFormat::Prompt)
    }
}

impl std::str::FromStr for ReplyFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown reply format `{}`: expected json-schema, json-object-schema, \
                     json-object or prompt",
                    s.chars().take(40).collect::<String>()
                )
            })
    }
}

impl std::fmt::Display for ReplyFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where and how to reach the judge.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`;
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// The model name sent in the request.
    pub model: String,
    /// The *name* of the environment variable holding the API key (e.g. `OPENAI_API_KEY`);
    /// `None` sends no `Authorization` header (local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `max_tokens` of the request.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Whole-request timeout, in seconds.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
    /// The first rung of the reply-format ladder to try (default `json-schema`, the most
    /// constrained); a server that refuses it is asked one rung lower (module documentation).
    /// `prompt` never sends `response_format`.
    #[serde(default)]
    pub reply_format: ReplyFormat,
}

fn default_max_tokens() -> u32 {
    512
}

fn default_timeout_s() -> u64 {
    60
}

/// Environment variables read by [`OpenAiConfig::from_env`].
pub const ENV_BASE_URL: &str = "MEMLINEAGE_JUDGE_BASE_URL";
/// The model name variable.
pub const ENV_MODEL: &str = "MEMLINEAGE_JUDGE_MODEL";
/// The variable that holds the *name* of the API-key variable.
pub const ENV_API_KEY_ENV: &str = "MEMLINEAGE_JUDGE_API_KEY_ENV";
/// The optional variable with the first [`ReplyFormat`] to try (default `json-schema`).
pub const ENV_REPLY_FORMAT: &str = "MEMLINEAGE_JUDGE_REPLY_FORMAT";

/// HTTP statuses with which a server refuses a request field it does not support; the judge
/// then asks one rung lower.
pub const REFUSAL_STATUSES: [u16; 3] = [400, 422, 501];

/// Whether an error response refuses the request's `response_format`: a
/// [`REFUSAL_STATUSES`] status, or any other error whose body names the field
/// (llama-cpp-python 0.3 answers an unknown `response_format.type` with HTTP 500 and its
/// validation error) — except the statuses that say something else is wrong (authentication,
/// a wrong URL, a timeout, a rate limit), which no other rung would fix.
pub fn is_refusal(status: u16, body: &str) -> bool {
    if matches!(status, 401 | 403 | 404 | 408 | 429) {
        return false;
    }
    REFUSAL_STATUSES.contains(&status)
        || status >= 400 && (body.contains("response_format") || body.contains("json_schema"))
}

impl OpenAiConfig {
    /// A configuration with the defaults (512 tokens, 60 s, the reply format ladder from
    /// `json-schema` down).
    pub fn new(base_url: &str, model: &str, api_key_env: Option<&str>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key_env: api_key_env.map(str::to_string),
            max_tokens: default_max_tokens(),
            timeout_s: default_timeout_s(),
            reply_format: ReplyFormat::default(),
        }
    }

    /// From `MEMLINEAGE_JUDGE_BASE_URL`, `MEMLINEAGE_JUDGE_MODEL` and (optional)
    /// `MEMLINEAGE_JUDGE_API_KEY_ENV` and `MEMLINEAGE_JUDGE_REPLY_FORMAT`.
    pub fn from_env() -> Result<OpenAiConfig, AttributionError> {
        let get = |k: &str| {
            std::env::var(k).map_err(|_| {
                AttributionError::Config(format!(
                    "{k} is not set (the OpenAI-compatible judge needs {ENV_BASE_URL} and \
                     {ENV_MODEL}, and optionally {ENV_API_KEY_ENV}, the name of the variable \
                     holding the API key)"
                ))
            })
        };
        let key_env = std::env::var(ENV_API_KEY_ENV).ok();
        let mut cfg = OpenAiConfig::new(&get(ENV_BASE_URL)?, &get(ENV_MODEL)?, key_env.as_deref());
        if let Ok(f) = std::env::var(ENV_REPLY_FORMAT) {
            cfg.reply_format = f
                .parse()
                .map_err(|e| AttributionError::Config(format!("{ENV_REPLY_FORMAT}: {e}")))?;
        }
        Ok(cfg)
    }
}

/// The OpenAI-compatible judge backend.
#[derive(Debug)]
pub struct OpenAiJudge {
    config: OpenAiConfig,
    agent: ureq::Agent,
    /// The rung the next call starts at (a [`ReplyFormat`] index): the configured one, moved
    /// down once a server refused it and a lower rung answered.
    start: AtomicU8,
}

/// Why one request got no reply.
enum Failure {
    /// The server refused the request's shape (a [`REFUSAL_STATUSES`] status).
    Refused(String),
    /// Anything else.
    Error(AttributionError),
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    temperature: u8,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<NamedSchema<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<ReplySchema<'a>>,
}

#[derive(Serialize)]
struct NamedSchema<'a> {
    name: &'static str,
    strict: bool,
    schema: ReplySchema<'a>,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

impl OpenAiJudge {
    /// A backend for `config`. Checks the URL's scheme; reaches nothing yet.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiJudge, AttributionError> {
        if !(config.base_url.starts_with("https://") || config.base_url.starts_with("http://")) {
            return Err(AttributionError::Config(format!(
                "judge base URL `{}` must start with https:// or http://",
                config.base_url
            )));
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(config.timeout_s.max(1))))
            .http_status_as_error(false)
            .build()
            .new_agent();
        // At most four rungs: the index fits a u8.
        let start = AtomicU8::new(config.reply_format.index() as u8);
        Ok(OpenAiJudge {
            config,
            agent,
            start,
        })
    }

    /// The rung the next call starts at.
    pub fn reply_format(&self) -> ReplyFormat {
        ReplyFormat::from_index(self.start.load(Ordering::Relaxed))
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn err(&self, message: impl Into<String>) -> AttributionError {
        AttributionError::Backend {
            backend: format!("openai-compatible {}", self.config.base_url),
            message: message.into(),
        }
    }

    /// The request body (JSON text) for one exchange asked in `format`; `ids` are the
    /// envelope's, for the schema (a schema rung without them is asked as `json-object`).
    pub fn request_body(
        &self,
        system: &str,
        user: &str,
        format: ReplyFormat,
        ids: Option<&[String]>,
    ) -> String {
        let response_format = match (format, ids) {
            (ReplyFormat::JsonSchema, Some(ids)) => Some(ResponseFormat {
                kind: "json_schema",
                json_schema: Some(NamedSchema {
                    name: SCHEMA_NAME,
                    strict: true,
                    schema: ReplySchema::new(ids),
                }),
                schema: None,
            }),
            (ReplyFormat::JsonObjectSchema, Some(ids)) => Some(ResponseFormat {
                kind: "json_object",
                json_schema: None,
                schema: Some(ReplySchema::new(ids)),
            }),
            (ReplyFormat::Prompt, _) => None,
            _ => Some(ResponseFormat {
                kind: "json_object",
                json_schema: None,
                schema: None,
            }),
        };
        let body = Body {
            model: &self.config.model,
            messages: [
                ChatMessage {
                    role: "system",
                    content: system,
                },
                ChatMessage {
                    role: "user",
                    content: user,
                },
            ],
            temperature: 0,
            max_tokens: self.config.max_tokens,
            response_format,
        };
        // Serialising strings and numbers cannot fail.
        serde_json::to_string(&body).unwrap_or_default()
    }

    /// One request; the reply text, a refusal, or an error.
    fn send(&self, body: &str) -> Result<String, Failure> {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let mut req = self.agent.post(&url).header("Accept", "application/json");
        if let Some(var) = &self.config.api_key_env {
            let key = std::env::var(var).map_err(|_| {
                Failure::Error(AttributionError::Config(format!(
                    "the judge's API key variable {var} is not set"
                )))
            })?;
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = req
            .content_type("application/json")
            .send(body)
            .map_err(|e| Failure::Error(self.err(e.to_string())))?;
        let status = resp.status();
        let text = resp
            .body_mut()
            .with_config()
            .limit(4 << 20)
            .read_to_string()
            .map_err(|e| Failure::Error(self.err(format!("reading the response: {e}"))))?;
        if !status.is_success() {
            let snippet: String = text.chars().take(200).collect();
            let what = format!("HTTP {status}: {snippet}");
            return Err(if is_refusal(status.as_u16(), &text) {
                Failure::Refused(what)
            } else {
                Failure::Error(self.err(what))
            });
        }
        let c: Completion = serde_json::from_str(&text)
            .map_err(|e| Failure::Error(self.err(format!("not a chat completion: {e}"))))?;
        c.choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| {
                Failure::Error(self.err("the completion has no choices[0].message.content"))
            })
    }
}

impl JudgeBackend for OpenAiJudge {
    fn model_id(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
        self.complete_detailed(system, user).map(|r| r.text)
    }

    /// Walks the reply-format ladder from [`OpenAiJudge::reply_format`] down while the server
    /// refuses; the reply's mode is the rung that answered.
    fn complete_detailed(&self, system: &str, user: &str) -> Result<JudgeReply, AttributionError> {
        let ids = envelope::ids_of(user).ok();
        let mut format = self.reply_format();
        if ids.is_none() && format.has_schema() {
            // Not one of our envelopes: there is no schema to send.
            format = ReplyFormat::JsonObject;
        }
        let mut refusals = Vec::new();
        loop {
            let body = self.request_body(system, user, format, ids.as_deref());
            match self.send(&body) {
                Ok(text) => {
                    if !refusals.is_empty() {
                        // `fetch_max`: a concurrent call that went lower stays lower.
                        self.start
                            .fetch_max(format.index() as u8, Ordering::Relaxed);
                    }
                    return Ok(JudgeReply {
                        text,
                        mode: Some(format.as_str().to_string()),
                    });
                }
                Err(Failure::Refused(why)) => {
                    tracing::info!(format = format.as_str(), %why, "judge server refused the reply format; asking one rung lower");
                    refusals.push(format!("{format}: {why}"));
                    match format.next() {
                        Some(next) => format = next,
                        None => {
                            return Err(self.err(format!(
                                "the server refused every reply format ({})",
                                refusals.join("; ")
                            )));
                        }
                    }
                }
                Err(Failure::Error(e)) => return Err(e),
            }
        }
    }

    fn mode(&self) -> Option<String> {
        Some(self.reply_format().as_str().to_string())
    }
}
