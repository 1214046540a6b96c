//! A bounded, loopback-only HTTP load generator for the service benchmark.
//!
//! It opens `connections` keep-alive HTTP/1.1 connections to a service on this host and sends
//! requests on each as fast as the answers come back, until `requests` were sent or `max_time`
//! passed — whichever is first, so it always stops by itself. It refuses any address that is
//! not a loopback address. Every answer's status is checked, and the latency of each request is
//! kept to report the median and the 99th percentile (nearest rank).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to send.
pub struct Load {
    /// The service (a loopback address).
    pub addr: SocketAddr,
    /// `Authorization: Bearer` token.
    pub token: String,
    /// The path to POST to.
    pub path: String,
    /// The body of request `i` (JSON).
    pub body: Arc<dyn Fn(u64) -> Vec<u8> + Send + Sync>,
    /// The status every answer must have.
    pub expect: u16,
    /// Concurrent connections.
    pub connections: usize,
    /// Requests to send in all.
    pub requests: u64,
    /// Stop sending after this long, whatever was sent.
    pub max_time: Duration,
}

/// What happened.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    /// Answers with the expected status.
    pub ok: u64,
    /// Other answers and failed requests.
    pub failed: u64,
    /// The first unexpected answer, for the report.
    pub first_failure: Option<String>,
    /// Wall time from the first request to the last answer.
    pub seconds: f64,
    /// `ok` per second.
    pub per_second: f64,
    /// Median latency (ns).
    pub p50_ns: u64,
    /// 99th percentile latency (ns).
    pub p99_ns: u64,
    /// Largest latency (ns).
    pub max_ns: u64,
}

/// Runs the load (refusing a non-loopback address).
pub async fn run(load: Load) -> Result<LoadReport, String> {
    if !load.addr.ip().is_loopback() {
        return Err(format!(
            "the load generator only targets this host (a loopback address), not {}",
            load.addr
        ));
    }
    if load.connections == 0 || load.requests == 0 {
        return Err("the load needs at least one connection and one request".into());
    }
    let load = Arc::new(load);
    let next = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + load.max_time;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(load.connections);
    for _ in 0..load.connections {
        let (load, next) = (Arc::clone(&load), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            connection(&load, &next, deadline).await
        }));
    }
    let mut latencies: Vec<u64> = Vec::new();
    let (mut ok, mut failed, mut first_failure) = (0u64, 0u64, None);
    for t in tasks {
        let r = t.await.map_err(|e| format!("a load task failed: {e}"))?;
        ok += r.ok;
        failed += r.failed;
        if first_failure.is_none() {
            first_failure = r.first_failure;
        }
        latencies.extend(r.latencies);
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let rank = |p: f64| -> u64 {
        if latencies.is_empty() {
            return 0;
        }
        let i = ((p * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i]
    };
    Ok(LoadReport {
        ok,
        failed,
        first_failure,
        seconds,
        per_second: ok as f64 / seconds.max(1e-9),
        p50_ns: rank(0.50),
        p99_ns: rank(0.99),
        max_ns: latencies.last().copied().unwrap_or(0),
    })
}

struct ConnResult {
    ok: u64,
    failed: u64,
    first_failure: Option<String>,
    latencies: Vec<u64>,
}

async fn connection(load: &Load, next: &AtomicU64, deadline: Instant) -> ConnResult {
    let mut out = ConnResult {
        ok: 0,
        failed: 0,
        first_failure: None,
        latencies: Vec::new(),
    };
    let fail = |out: &mut ConnResult, why: String| {
        out.failed += 1;
        if out.first_failure.is_none() {
            out.first_failure = Some(why);
        }
    };
    let stream = match tokio::net::TcpStream::connect(load.addr).await {
        Ok(s) => s,
        Err(e) => {
            fail(&mut out, format!("connect: {e}"));
            return out;
        }
    };
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream)).await {
            Ok(x) => x,
            Err(e) => {
                fail(&mut out, format!("handshake: {e}"));
                return out;
            }
        };
    let driver = tokio::spawn(conn);
    let auth = format!("Bearer {}", load.token);
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= load.requests || Instant::now() >= deadline {
            break;
        }
        let req = Request::post(load.path.as_str())
            .header(hyper::header::HOST, "localhost")
            .header(hyper::header::AUTHORIZATION, auth.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from((load.body)(i))));
        let req = match req {
            Ok(r) => r,
            Err(e) => {
                fail(&mut out, format!("request: {e}"));
                break;
            }
        };
        let sent = Instant::now();
        let answer = match sender.send_request(req).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                match resp.into_body().collect().await {
                    Ok(body) => Ok((status, body.to_bytes())),
                    Err(e) => Err(format!("reading the answer: {e}")),
                }
            }
            Err(e) => Err(format!("sending: {e}")),
        };
        match answer {
            Ok((status, _)) if status == load.expect => {
                out.ok += 1;
                out.latencies.push(sent.elapsed().as_nanos() as u64);
            }
            Ok((status, body)) => fail(
                &mut out,
                format!(
                    "status {status}: {}",
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(300)
                        .collect::<String>()
                ),
            ),
            Err(e) => {
                fail(&mut out, e);
                break;
            }
        }
    }
    drop(sender);
    let _ = driver.await;
    out
}
