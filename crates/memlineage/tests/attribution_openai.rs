//! Protocol test of the OpenAI-compatible judge client against a tiny HTTP server on
//! 127.0.0.1 (std only). The server answers a bounded number of requests, gives up after a
//! few seconds, and stops by itself.
#![cfg(feature = "openai")]

use memlineage::attribution::judge::envelope::{SYSTEM_PROMPT, envelope_of};
use memlineage::attribution::judge::openai::{OpenAiConfig, OpenAiJudge, ReplyFormat, is_refusal};
use memlineage::attribution::{Attributor, JudgeBackend, LmSelfEval, ParentText};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, Hash256};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// One request as the server saw it.
#[derive(Debug)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Serves at most `max` requests within 10 s; `respond` maps a request to (status, body).
fn serve(
    max: usize,
    respond: impl Fn(&Seen) -> (u16, String) + Send + 'static,
) -> (String, mpsc::Receiver<Seen>, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let (tx, rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut served = 0;
        while served < max && Instant::now() < deadline {
            let (stream, _) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Err(_) => break,
            };
            served += 1;
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    headers.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
            let len: usize = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; len.min(1 << 20)];
            let _ = reader.read_exact(&mut body);
            let seen = Seen {
                request_line: request_line.trim_end().to_string(),
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            let (status, text) = respond(&seen);
            let mut out = stream;
            let _ = write!(
                out,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = out.flush();
            let _ = tx.send(seen);
        }
    });
    (format!("http://{addr}/v1"), rx, handle)
}

fn completion(content: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    })
    .to_string()
}

/// Reads the envelope ids out of a request body and answers 0.75 for the first, 0 for the rest.
fn judge_reply(seen: &Seen) -> (u16, String) {
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    let user = body["messages"][1]["content"].as_str().unwrap();
    let env: serde_json::Value = serde_json::from_str(envelope_of(user)).unwrap();
    let ids: Vec<&str> = env["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let weights: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                id.to_string(),
                serde_json::json!(if i == 0 { 0.75 } else { 0.0 }),
            )
        })
        .collect();
    (
        200,
        completion(&serde_json::json!({ "weights": weights }).to_string()),
    )
}

fn parents<'a>(texts: &[&'a str]) -> Vec<ParentText<'a>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| ParentText {
            id: EntryId(Hash256::of(&[i as u8])),
            text: t,
        })
        .collect()
}

/// A variable that cargo sets for every test process.
const KEY_VAR: &str = "CARGO_PKG_NAME";

#[test]
fn request_shape_and_reply() {
    let (base, rx, handle) = serve(1, judge_reply);
    let mut cfg = OpenAiConfig::new(&base, "judge-model-1", Some(KEY_VAR));
    cfg.max_tokens = 77;
    let backend = OpenAiJudge::new(cfg).unwrap();
    assert_eq!(backend.model_id(), "openai:judge-model-1");
    let lm = LmSelfEval::new(backend);
    // The name carries the reply format: by default the JSON schema is tried first.
    assert_eq!(lm.name(), "lm-self-eval:openai:judge-model-1+json-schema");
    let a = lm
        .attribute_detailed("child text", &parents(&["source", "distractor"]))
        .unwrap();
    let key = std::env::var(KEY_VAR);
    let seen = rx.recv_timeout(Duration::from_secs(10));
    handle.join().unwrap();
    let Ok(key) = key else {
        // Run outside cargo: the key variable is missing, which must fail closed.
        assert!(a.fell_back());
        return;
    };
    let seen = seen.unwrap();
    assert!(!a.fell_back(), "{:?}", a.fell_back);
    assert_eq!(
        a.weights,
        vec![Weight::from_bp(7500).unwrap(), Weight::ZERO]
    );
    assert_eq!(
        a.name.as_deref(),
        Some("lm-self-eval:openai:judge-model-1+json-schema")
    );

    assert_eq!(seen.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(
        seen.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(body["model"], "judge-model-1");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["max_tokens"], 77);
    // Structured outputs: the reply schema of exactly the envelope's ids, strict.
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["name"], "attribution_weights");
    assert_eq!(rf["json_schema"]["strict"], true);
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[0]["content"], SYSTEM_PROMPT);
    assert_eq!(msgs[1]["role"], "user");
    let env: serde_json::Value =
        serde_json::from_str(envelope_of(msgs[1]["content"].as_str().unwrap())).unwrap();
    assert_eq!(env["child"]["text"], "child text");
    assert_eq!(env["parents"][1]["text"], "distractor");
    let schema = &rf["json_schema"]["schema"];
    assert_eq!(schema["required"], serde_json::json!(["weights"]));
    assert_eq!(schema["additionalProperties"], false);
    let inner = &schema["properties"]["weights"];
    assert_eq!(inner["required"], env["ids"]);
    assert_eq!(inner["additionalProperties"], false);
    assert_eq!(
        inner["properties"][env["ids"][0].as_str().unwrap()]["type"],
        "number"
    );
    // The ids are in envelope order in the body's bytes (grammar-based servers follow it).
    let (a, b) = (
        env["ids"][0].as_str().unwrap(),
        env["ids"][1].as_str().unwrap(),
    );
    let props = seen.body.find("\"properties\":{\"p").unwrap();
    assert!(seen.body[props..].find(a).unwrap() < seen.body[props..].find(b).unwrap());
}

#[test]
fn json_mode_and_no_key() {
    let (base, rx, handle) = serve(1, |_| (200, completion("{\"weights\": {}}")));
    let mut cfg = OpenAiConfig::new(&format!("{base}/"), "m", None);
    cfg.reply_format = ReplyFormat::JsonObject;
    let backend = OpenAiJudge::new(cfg).unwrap();
    let reply = backend.complete("s", "u").unwrap();
    assert_eq!(reply, "{\"weights\": {}}");
    let seen = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    handle.join().unwrap();
    assert_eq!(seen.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(seen.header("authorization"), None);
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(
        body["response_format"],
        serde_json::json!({"type": "json_object"})
    );
}

/// The `response_format` of a request, as a rung name.
fn rung(seen: &Seen) -> &'static str {
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    let rf = &body["response_format"];
    match (rf["type"].as_str(), rf.get("schema").is_some()) {
        (None, _) => "prompt",
        (Some("json_schema"), _) => "json-schema",
        (Some("json_object"), true) => "json-object-schema",
        (Some("json_object"), false) => "json-object",
        (Some(other), _) => panic!("unexpected response_format type {other}"),
    }
}

#[test]
fn a_server_that_refuses_a_reply_format_is_asked_one_rung_lower() {
    // Refuses json_schema (422, as pydantic-validated servers do) and the llama-cpp-python
    // form (400), answers plain JSON mode.
    let (base, rx, handle) = serve(4, |seen| match rung(seen) {
        "json-schema" => (422, "{\"detail\": \"response_format.type\"}".into()),
        "json-object-schema" => (400, "{\"error\": \"schema not supported\"}".into()),
        _ => judge_reply(seen),
    });
    let lm = LmSelfEval::new(OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap());
    let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
    assert!(!a.fell_back(), "{:?}", a.fell_back);
    assert_eq!(
        a.weights,
        vec![Weight::from_bp(7500).unwrap(), Weight::ZERO]
    );
    assert_eq!(a.name.as_deref(), Some("lm-self-eval:openai:m+json-object"));
    let rungs: Vec<&str> = (0..3)
        .map(|_| rung(&rx.recv_timeout(Duration::from_secs(10)).unwrap()))
        .collect();
    assert_eq!(rungs, ["json-schema", "json-object-schema", "json-object"]);
    // The next call starts where the server answered: one request, no refusal.
    assert_eq!(lm.backend().reply_format(), ReplyFormat::JsonObject);
    assert_eq!(lm.name(), "lm-self-eval:openai:m+json-object");
    let b = lm.attribute_detailed("c2", &parents(&["a"])).unwrap();
    assert!(!b.fell_back());
    assert_eq!(
        rung(&rx.recv_timeout(Duration::from_secs(10)).unwrap()),
        "json-object"
    );
    handle.join().unwrap();
    assert!(rx.try_recv().is_err(), "no further request");
}

#[test]
fn llama_cpp_python_takes_the_schema_as_json_object() {
    // What llama-cpp-python 0.3.36 answers to `"type": "json_schema"` (HTTP 500).
    let (base, rx, handle) = serve(2, |seen| {
        match rung(seen) {
        "json-schema" => (
            500,
            r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}","type":"internal_server_error"}}"#.into(),
        ),
        _ => judge_reply(seen),
    }
    });
    let lm = LmSelfEval::new(OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap());
    let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
    handle.join().unwrap();
    assert!(!a.fell_back());
    assert_eq!(
        a.name.as_deref(),
        Some("lm-self-eval:openai:m+json-object-schema")
    );
    let _refused = rx.recv().unwrap();
    let seen = rx.recv().unwrap();
    let body: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    let schema = &body["response_format"]["schema"];
    let env: serde_json::Value = serde_json::from_str(envelope_of(
        body["messages"][1]["content"].as_str().unwrap(),
    ))
    .unwrap();
    assert_eq!(schema["properties"]["weights"]["required"], env["ids"]);
}

#[test]
fn every_rung_refused_fails_closed() {
    let (base, rx, handle) = serve(4, |_| (400, "{\"error\": \"bad request\"}".into()));
    let lm = LmSelfEval::new(OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap());
    let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
    handle.join().unwrap();
    assert_eq!(a.weights, vec![Weight::ONE; 2]);
    let reason = a.fell_back.expect("fell back").reason;
    assert!(reason.contains("refused every reply format"), "{reason}");
    let rungs: Vec<&str> = rx.try_iter().map(|s| rung(&s)).collect();
    assert_eq!(
        rungs,
        ["json-schema", "json-object-schema", "json-object", "prompt"]
    );
    // Nothing answered, so the judge still starts at the top.
    assert_eq!(lm.backend().reply_format(), ReplyFormat::JsonSchema);
}

#[test]
fn other_failures_and_rejected_replies_are_not_retried() {
    for (status, body) in [
        (500u16, "{\"error\": \"overloaded\"}".to_string()),
        (429, "{\"error\": \"rate limited\"}".to_string()),
        (401, "{\"error\": \"bad key\"}".to_string()),
        // Answered under the schema, but not a valid reply: fail closed, no second request.
        (200, completion("{\"weights\": {\"p00000000\": 0}}")),
    ] {
        let (base, rx, handle) = serve(2, move |_| (status, body.clone()));
        let lm = LmSelfEval::new(OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap());
        let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
        // A probe takes the server's second slot, so it stops now; had the judge retried,
        // the retry would have taken it.
        let mut probe = OpenAiConfig::new(&base, "probe", None);
        probe.reply_format = ReplyFormat::Prompt;
        let _ = OpenAiJudge::new(probe).unwrap().complete("s", "u");
        handle.join().unwrap();
        assert_eq!(a.weights, vec![Weight::ONE; 2], "HTTP {status}");
        assert!(a.fell_back(), "HTTP {status}");
        let judged = rx
            .try_iter()
            .filter(|s| !s.body.contains("\"model\":\"probe\""))
            .count();
        assert_eq!(judged, 1, "HTTP {status}: exactly one request");
        assert_eq!(lm.backend().reply_format(), ReplyFormat::JsonSchema);
    }
}

#[test]
fn prompt_mode_sends_no_response_format_and_non_envelopes_get_no_schema() {
    let (base, rx, handle) = serve(2, |_| (200, completion("{}")));
    let mut cfg = OpenAiConfig::new(&base, "m", None);
    cfg.reply_format = ReplyFormat::Prompt;
    let backend = OpenAiJudge::new(cfg).unwrap();
    assert_eq!(backend.mode().as_deref(), Some("prompt"));
    let r = backend.complete_detailed("s", "u").unwrap();
    assert_eq!(r.mode.as_deref(), Some("prompt"));
    assert_eq!(
        rung(&rx.recv_timeout(Duration::from_secs(10)).unwrap()),
        "prompt"
    );
    // A user message that is not one of our envelopes has no ids, so no schema to send.
    let backend = OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap();
    let r = backend.complete_detailed("s", "not an envelope").unwrap();
    assert_eq!(r.mode.as_deref(), Some("json-object"));
    assert_eq!(
        rung(&rx.recv_timeout(Duration::from_secs(10)).unwrap()),
        "json-object"
    );
    handle.join().unwrap();
}

#[test]
fn server_errors_fail_closed() {
    let cases: Vec<(u16, String, &str)> = vec![
        (500, "{\"error\": \"overloaded\"}".into(), "HTTP 500"),
        (401, "{\"error\": \"bad key\"}".into(), "HTTP 401"),
        (200, "{\"choices\": []}".into(), "choices[0]"),
        (200, "<html>proxy</html>".into(), "not a chat completion"),
        (200, completion("Sure! Parent one matters."), "rejected"),
    ];
    for (status, body, why) in cases {
        let (base, _rx, handle) = serve(1, move |_| (status, body.clone()));
        let lm = LmSelfEval::new(OpenAiJudge::new(OpenAiConfig::new(&base, "m", None)).unwrap());
        let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
        handle.join().unwrap();
        assert_eq!(a.weights, vec![Weight::ONE; 2]);
        let reason = a.fell_back.expect("fell back").reason;
        assert!(reason.contains(why), "{reason:?} lacks {why:?}");
    }
}

#[test]
fn missing_key_and_unreachable_server_fail_closed() {
    let cfg = OpenAiConfig::new(
        "http://127.0.0.1:9/v1",
        "m",
        Some("MEMLINEAGE_TEST_SURELY_UNSET_KEY_VARIABLE"),
    );
    let lm = LmSelfEval::new(OpenAiJudge::new(cfg).unwrap());
    let a = lm.attribute_detailed("c", &parents(&["a"])).unwrap();
    assert_eq!(a.weights, vec![Weight::ONE]);
    assert!(
        a.fell_back
            .unwrap()
            .reason
            .contains("MEMLINEAGE_TEST_SURELY_UNSET_KEY_VARIABLE")
    );

    // A port nothing listens on (bound, then closed).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = OpenAiConfig::new(&format!("http://127.0.0.1:{port}/v1"), "m", None);
    cfg.timeout_s = 2;
    let lm = LmSelfEval::new(OpenAiJudge::new(cfg).unwrap());
    let a = lm.attribute_detailed("c", &parents(&["a", "b"])).unwrap();
    assert_eq!(a.weights, vec![Weight::ONE; 2]);
    assert!(a.fell_back.is_some());
}

#[test]
fn config_is_checked_and_deserialises() {
    assert!(OpenAiJudge::new(OpenAiConfig::new("ftp://x", "m", None)).is_err());
    let cfg: OpenAiConfig = serde_json::from_str(
        r#"{"base_url": "https://judge.invalid/v1", "model": "m", "api_key_env": "MY_KEY"}"#,
    )
    .unwrap();
    assert_eq!(cfg.api_key_env.as_deref(), Some("MY_KEY"));
    assert_eq!(cfg.max_tokens, 512);
    // The key itself is never configuration.
    assert!(
        serde_json::from_str::<OpenAiConfig>(r#"{"base_url": "x", "model": "m", "api_key": "sk"}"#)
            .is_err()
    );
    assert_eq!(cfg.reply_format, ReplyFormat::JsonSchema);
    let cfg: OpenAiConfig = serde_json::from_str(
        r#"{"base_url": "http://x/v1", "model": "m", "reply_format": "json-object-schema"}"#,
    )
    .unwrap();
    assert_eq!(cfg.reply_format, ReplyFormat::JsonObjectSchema);
    assert!(
        serde_json::from_str::<OpenAiConfig>(
            r#"{"base_url": "x", "model": "m", "reply_format": "xml"}"#
        )
        .is_err()
    );
    for f in ReplyFormat::ALL {
        assert_eq!(f.as_str().parse::<ReplyFormat>(), Ok(f));
    }
    assert!("json".parse::<ReplyFormat>().is_err());
    assert_eq!(ReplyFormat::Prompt.next(), None);
    assert_eq!(
        ReplyFormat::JsonSchema.next(),
        Some(ReplyFormat::JsonObjectSchema)
    );
}

#[test]
fn what_counts_as_a_refusal() {
    for status in [400, 422, 501] {
        assert!(is_refusal(status, ""), "{status}");
    }
    // llama-cpp-python's 500 names the field; a plain 500 does not.
    assert!(is_refusal(
        500,
        "{'loc': ('body', 'response_format', 'type')}"
    ));
    assert!(!is_refusal(500, "{\"error\": \"overloaded\"}"));
    assert!(!is_refusal(503, "try later"));
    // Authentication, URL, timeout and rate-limit errors are never walked down the ladder.
    for status in [401, 403, 404, 408, 429] {
        assert!(
            !is_refusal(status, "response_format json_schema"),
            "{status}"
        );
    }
    assert!(!is_refusal(200, "response_format"));
}
