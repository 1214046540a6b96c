//! A real service on a loopback port, over a real store, for the integration tests: the store
//! of the service benchmark (principals `operator`, `agent`, `user` trusted, `mail` external;
//! the gate scenario of docs/gate.md in scope `bench`), tokens for several roles, and a small
//! HTTP client (ureq, a client this project did not write).
#![allow(dead_code)]

use memlineage::StoreLocation;
use memlineage_core::entry::Scope;
use memlineage_server::bench::{Prepared, prepare};
use memlineage_server::tokens::TokenFileAt;
use memlineage_server::{Config, FileKeys, Limits};
use serde_json::Value;
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct TestServer {
    pub base: String,
    pub dir: tempfile::TempDir,
    pub prepared: Prepared,
    /// `agent` (trusted) in scope `bench`.
    pub agent: String,
    /// `mail` (external) in scope `bench`.
    pub mail: String,
    /// `operator` with the operator role, scope `default`.
    pub operator: String,
    /// `agent` in scope `other` only.
    pub other: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), String>>>,
    http: ureq::Agent,
}

pub fn scope(s: &str) -> Scope {
    Scope::new(s).unwrap()
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(|_| {})
    }

    pub fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(dir.path()).unwrap();
        let tokens = TokenFileAt::new(&prepared.tokens_file);
        let make = |p: &str, s: &str, op: bool| {
            tokens.create(p, &[scope(s)], op, "test", 1).unwrap().token
        };
        let mail = make("mail", "bench", false);
        let operator = make("operator", "default", true);
        let other = make("agent", "other", false);
        let mut config = Config::new(
            StoreLocation::Sqlite(prepared.db.clone()),
            "127.0.0.1:0".parse().unwrap(),
        );
        config.keys_dir = prepared.keys_dir.clone();
        config.tokens_file = prepared.tokens_file.clone();
        config.policies = vec![(
            "bench".to_string(),
            memlineage_server::bench::POLICY.to_string(),
        )];
        config.limits = Limits {
            max_body_bytes: 64 * 1024,
            max_batch: 50,
            max_query_bytes: 256,
            ..Limits::default()
        };
        tweak(&mut config);
        let tls = config.tls.is_some();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let keys = Arc::new(FileKeys::new(&config.keys_dir));
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(memlineage_server::run(
                config,
                keys,
                move |addr, _| {
                    let _ = addr_tx.send(addr);
                },
                async move {
                    let _ = stop_rx.await;
                },
            ))
        });
        let addr = addr_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the service did not start");
        let scheme = if tls { "https" } else { "http" };
        TestServer {
            base: format!("{scheme}://{addr}"),
            agent: prepared.token.clone(),
            dir,
            prepared,
            mail,
            operator,
            other,
            stop: Some(stop_tx),
            thread: Some(thread),
            http: client(None),
        }
    }

    /// Replaces the HTTP client (TLS roots).
    pub fn with_client(mut self, http: ureq::Agent) -> TestServer {
        self.http = http;
        self
    }

    /// A JSON request; the status and the JSON answer (`Value::Null` when not JSON).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
        self.raw(method, path, token, Some("application/json"), bytes)
    }

    /// A request with a raw body; the status and the answer parsed as JSON.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> (u16, Value) {
        let (status, text) = self.text(method, path, token, content_type, body);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A request; the status and the answer's text.
    pub fn text(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        let auth = token.map(|t| format!("Bearer {t}"));
        let result = match body {
            Some(b) => {
                let mut req = ureq::http::Request::builder().method(method).uri(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                if let Some(ct) = content_type {
                    req = req.header("Content-Type", ct);
                }
                self.http.run(req.body(b).unwrap())
            }
            None => {
                let mut req = ureq::http::Request::builder().method(method).uri(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                self.http.run(req.body(()).unwrap())
            }
        };
        let mut resp = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, text)
    }

    /// The log's size, as the operator sees it.
    pub fn size(&self) -> u64 {
        let (s, v) = self.call("GET", "/v1/log?limit=1", Some(&self.operator), None);
        assert_eq!(s, 200, "{v}");
        v["size"].as_u64().unwrap()
    }

    /// Stops the service and waits for its shutdown (the store stays, until drop).
    pub fn stop(&mut self) -> Result<(), String> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| "the service thread panicked".to_string())?,
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// A ureq agent that returns 4xx/5xx answers instead of errors, with extra TLS roots.
pub fn client(root_pem: Option<&str>) -> ureq::Agent {
    // Every request on a fresh connection: the server closes a connection after refusing a
    // request whose body it did not read (an oversized one), and a pooled connection closed
    // that way would fail the test's next request with "peer disconnected" — a race of the
    // client's pool, not something these tests check.
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections(0);
    if let Some(pem) = root_pem {
        let cert = ureq::tls::Certificate::from_pem(pem.as_bytes())
            .unwrap()
            .to_owned();
        config = config.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::new_with_certs(&[cert]))
                .build(),
        );
    }
    config.build().into()
}

/// The error kind of an error answer.
pub fn kind(v: &Value) -> &str {
    v["error"]["kind"].as_str().unwrap_or("(not an error body)")
}
