//! A bounded, loopback-only HTTP load generator for the service benchmark.
//!
//! It opens `connections` keep-alive HTTP/1.1 connections to a service on this host and sends
//! requests on each as fast as the answers come back, until `requests` were sent or `max_time`
//! passed — whichever is first, so it always stops by itself. It refuses any address that is
//! not a loopback address. Every answer's status is checked, and the latency of each request is
//! kept to report the median and the 99th percentile (nearest rank).
//!
//! It shares the machine's cores with the service it measures, so it is kept lean: every
//! request (head and body) is built before the clock starts, each connection writes it with one
//! call and reads the answer's status and length from its head (no client stack, no header map), and
//! the caller runs it on one thread ([`crate::bench::over_http_blocking`]) so that it never
//! takes more than one core from the service.

use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What to send.
pub struct Load {
    /// The service (a loopback address).
    pub addr: SocketAddr,
    /// `Authorization: Bearer` token.
    pub token: String,
    /// The path to POST to.
    pub path: String,
    /// The request bodies (JSON): request `i` sends `bodies[i % bodies.len()]`. Built before
    /// the load starts, so that making them costs the measured service nothing.
    pub bodies: Vec<Bytes>,
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

/// The whole HTTP/1.1 request for each body: head and body in one buffer.
fn requests_of(load: &Load) -> Result<Vec<Bytes>, String> {
    if load
        .path
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        || !load.path.starts_with('/')
    {
        return Err(format!("not a request path: {:?}", load.path));
    }
    if load
        .token
        .bytes()
        .any(|b| b.is_ascii_control() || !b.is_ascii())
    {
        return Err("the token is not printable ASCII".into());
    }
    Ok(load
        .bodies
        .iter()
        .map(|body| {
            let head = format!(
                "POST {} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                load.path,
                load.token,
                body.len()
            );
            let mut whole = Vec::with_capacity(head.len() + body.len());
            whole.extend_from_slice(head.as_bytes());
            whole.extend_from_slice(body);
            Bytes::from(whole)
        })
        .collect())
}

/// Refuses an address off this host.
fn loopback_only(addr: SocketAddr) -> Result<(), String> {
    if !addr.ip().is_loopback() {
        return Err(format!(
            "the load generator only targets this host (a loopback address), not {addr}"
        ));
    }
    Ok(())
}

/// One `GET path` on a connection of its own (the benchmark reads `/metrics` between loads):
/// the answer's status and body (refusing a non-loopback address).
pub async fn get(addr: SocketAddr, path: &str) -> Result<(u16, Vec<u8>), String> {
    loopback_only(addr)?;
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut buf = Vec::with_capacity(8192);
    // No status is expected, so the body is always kept.
    let answer = read_answer(&mut stream, &mut buf, 0).await?;
    Ok((answer.status, answer.body))
}

/// Runs the load (refusing a non-loopback address).
pub async fn run(load: Load) -> Result<LoadReport, String> {
    loopback_only(load.addr)?;
    if load.connections == 0 || load.requests == 0 || load.bodies.is_empty() {
        return Err("the load needs at least one connection, one request and one body".into());
    }
    let wire = Arc::new(requests_of(&load)?);
    let load = Arc::new(load);
    let next = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + load.max_time;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(load.connections);
    let per_connection = usize::try_from(load.requests / load.connections as u64 + 1).unwrap_or(0);
    for _ in 0..load.connections {
        let (load, next, wire) = (Arc::clone(&load), Arc::clone(&next), Arc::clone(&wire));
        tasks.push(tokio::spawn(async move {
            connection(&load, &wire, &next, deadline, per_connection).await
        }));
    }
    let mut latencies: Vec<u64> = Vec::with_capacity(usize::try_from(load.requests).unwrap_or(0));
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

/// The most bytes an answer's head may take: the service's heads are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// The most bytes an answer's body may take (the benchmark's answers are under 2 KiB; a
/// larger one is read, counted as the body it is, up to this).
const MAX_BODY: usize = 1024 * 1024;

/// One answer: its status, and its body when the status was not the expected one (only a
/// failure's body is reported).
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// Reads one answer from `stream`; `buf` holds bytes already read past the previous answer and
/// keeps those read past this one.
async fn read_answer(
    stream: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
    expect: u16,
) -> Result<Answer, String> {
    let head_len = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if buf.len() >= MAX_HEAD {
            return Err("an answer's head is too long".into());
        }
        read_more(stream, buf).await?;
    };
    let (status, length) = parse_head(&buf[..head_len])?;
    if length > MAX_BODY {
        return Err(format!("an answer of {length} bytes"));
    }
    while buf.len() < head_len + length {
        read_more(stream, buf).await?;
    }
    let body = if status == expect {
        Vec::new()
    } else {
        buf[head_len..head_len + length].to_vec()
    };
    buf.drain(..head_len + length);
    Ok(Answer { status, body })
}

/// The status and `content-length` of an answer's head (`HTTP/1.1 200 OK\r\n…\r\n\r\n`).
/// A chunked answer is refused: the service sends a length with every answer.
fn parse_head(head: &[u8]) -> Result<(u16, usize), String> {
    let text = std::str::from_utf8(head).map_err(|_| "an answer's head is not text")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = match status_line.split(' ').collect::<Vec<_>>().as_slice() {
        [version, code, ..] if version.starts_with("HTTP/1.") => code
            .parse::<u16>()
            .map_err(|_| format!("a malformed status line: {status_line:?}"))?,
        _ => return Err(format!("a malformed status line: {status_line:?}")),
    };
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("a malformed content-length: {value:?}"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err("a chunked answer (the service sends a length)".into());
        }
    }
    Ok((status, length.ok_or("an answer without content-length")?))
}

async fn read_more(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Result<(), String> {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) => Err("the service closed the connection".into()),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) => Err(format!("reading the answer: {e}")),
    }
}

async fn connection(
    load: &Load,
    wire: &[Bytes],
    next: &AtomicU64,
    deadline: Instant,
    expected: usize,
) -> ConnResult {
    let mut out = ConnResult {
        ok: 0,
        failed: 0,
        first_failure: None,
        latencies: Vec::with_capacity(expected),
    };
    let fail = |out: &mut ConnResult, why: String| {
        out.failed += 1;
        if out.first_failure.is_none() {
            out.first_failure = Some(why);
        }
    };
    let mut stream = match tokio::net::TcpStream::connect(load.addr).await {
        Ok(s) => s,
        Err(e) => {
            fail(&mut out, format!("connect: {e}"));
            return out;
        }
    };
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let n = wire.len() as u64;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= load.requests || Instant::now() >= deadline {
            break;
        }
        // `n` is at least 1 (checked in `run`) and the index is below it.
        let Some(request) = wire.get((i % n) as usize) else {
            break;
        };
        let sent = Instant::now();
        let answer = match stream.write_all(request).await {
            Ok(()) => read_answer(&mut stream, &mut buf, load.expect).await,
            Err(e) => Err(format!("sending: {e}")),
        };
        match answer {
            Ok(a) if a.status == load.expect => {
                out.ok += 1;
                out.latencies.push(sent.elapsed().as_nanos() as u64);
            }
            Ok(a) => fail(
                &mut out,
                format!(
                    "status {}: {}",
                    a.status,
                    String::from_utf8_lossy(&a.body)
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
    let _ = stream.shutdown().await;
    out
}

#[cfg(test)]
mod tests {
    use super::parse_head;

    #[test]
    fn heads_are_read_or_refused() {
        let ok =
            b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nContent-Length: 42\r\n\r\n";
        assert_eq!(parse_head(ok), Ok((201, 42)));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").is_err());
        assert!(parse_head(b"SMTP 200 OK\r\ncontent-length: 1\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 2x0 OK\r\ncontent-length: 1\r\n\r\n").is_err());
    }
}
