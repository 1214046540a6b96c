//! A judge backend for any OpenAI-compatible Chat Completions endpoint (feature `openai`).
//!
//! `POST {base_url}/chat/completions` with
//!
//! ```json
//! {"model":"…","messages":[{"role":"system","content":"…"},{"role":"user","content":"…"}],
//!  "temperature":0,"max_tokens":512}
//! ```
//!
//! and `Authorization: Bearer <key>` where the key is read, at each call, from the environment
//! variable *named* in the configuration (the key itself is never configured, logged or
//! stored). The reply is `choices[0].message.content`. Transport errors, non-2xx statuses and
//! responses without that string are [`AttributionError::Backend`] errors, which
//! [`super::LmSelfEval`] turns into the coarse fallback.

use super::JudgeBackend;
use crate::attribution::AttributionError;
use serde::Deserialize;
use std::time::Duration;

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
    /// Also send `"response_format": {"type": "json_object"}` (not every server supports it).
    #[serde(default)]
    pub json_mode: bool,
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

impl OpenAiConfig {
    /// A configuration with the defaults (512 tokens, 60 s, no JSON mode).
    pub fn new(base_url: &str, model: &str, api_key_env: Option<&str>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key_env: api_key_env.map(str::to_string),
            max_tokens: default_max_tokens(),
            timeout_s: default_timeout_s(),
            json_mode: false,
        }
    }

    /// From `MEMLINEAGE_JUDGE_BASE_URL`, `MEMLINEAGE_JUDGE_MODEL` and (optional)
    /// `MEMLINEAGE_JUDGE_API_KEY_ENV`.
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
        Ok(OpenAiConfig::new(
            &get(ENV_BASE_URL)?,
            &get(ENV_MODEL)?,
            key_env.as_deref(),
        ))
    }
}

/// The OpenAI-compatible judge backend.
#[derive(Debug)]
pub struct OpenAiJudge {
    config: OpenAiConfig,
    agent: ureq::Agent,
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
        Ok(OpenAiJudge { config, agent })
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

    /// The request body for one exchange.
    pub fn request_body(&self, system: &str, user: &str) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": self.config.max_tokens,
        });
        if self.config.json_mode {
            body["response_format"] = serde_json::json!({"type": "json_object"});
        }
        body
    }
}

impl JudgeBackend for OpenAiJudge {
    fn model_id(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let body = serde_json::to_string(&self.request_body(system, user))
            .map_err(|e| self.err(e.to_string()))?;
        let mut req = self.agent.post(&url).header("Accept", "application/json");
        if let Some(var) = &self.config.api_key_env {
            let key = std::env::var(var).map_err(|_| {
                AttributionError::Config(format!("the judge's API key variable {var} is not set"))
            })?;
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = req
            .content_type("application/json")
            .send(body.as_str())
            .map_err(|e| self.err(e.to_string()))?;
        let status = resp.status();
        let text = resp
            .body_mut()
            .with_config()
            .limit(4 << 20)
            .read_to_string()
            .map_err(|e| self.err(format!("reading the response: {e}")))?;
        if !status.is_success() {
            let snippet: String = text.chars().take(200).collect();
            return Err(self.err(format!("HTTP {status}: {snippet}")));
        }
        let c: Completion = serde_json::from_str(&text)
            .map_err(|e| self.err(format!("not a chat completion: {e}")))?;
        c.choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| self.err("the completion has no choices[0].message.content"))
    }
}
