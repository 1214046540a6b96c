//! The stdio transport of the servers (MCP "stdio" transport: one JSON-RPC message per line,
//! https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio).
//!
//! rmcp's own line transport drops a line that is not JSON, or longer than its limit, without
//! a word. Ours answers each with a JSON-RPC error that says what is wrong (JSON-RPC 2.0 §5.1:
//! -32700 parse error and -32600 invalid request, with `id: null` when the id cannot be read)
//! and goes on reading; nothing of such a message reaches the server, so nothing is written.
//!
//! Reads are cancel-safe (rmcp polls `receive` in a `select!`): a partial line stays in the
//! transport. Writes go through one writer task, so an error reply never interleaves with a
//! response.

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// A line transport with clear errors for bad input.
pub struct LineTransport<R> {
    read: R,
    line: Vec<u8>,
    max: usize,
    /// An oversized line is being skipped up to its end; its size so far.
    skipping: Option<usize>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl<R: AsyncBufRead + Unpin + Send> LineTransport<R> {
    /// Reads messages from `read`, writes to `write`; a line over `max` bytes is refused.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W, max: usize) -> Self {
        let (out, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(async move {
            let mut write = write;
            while let Some(line) = rx.recv().await {
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
        });
        LineTransport {
            read,
            line: Vec::new(),
            max,
            skipping: None,
            out,
            writer: Some(writer),
        }
    }

    fn reply_error(&self, id: Value, code: i64, message: String) {
        let reply =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let mut line = reply.to_string().into_bytes();
        line.push(b'\n');
        let _ = self.out.send(line);
    }

    /// The next whole line, or `None` at the end of input. An oversized line is answered and
    /// skipped.
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let avail = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("stdin: {e}");
                    return None;
                }
            };
            if avail.is_empty() {
                return None;
            }
            let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(pos) => (&avail[..pos], Some(pos + 1)),
                None => (avail, None),
            };
            let taken = done.unwrap_or(avail.len());
            match self.skipping.as_mut() {
                Some(n) => *n += chunk.len(),
                None if self.line.len() + chunk.len() > self.max => {
                    self.skipping = Some(self.line.len() + chunk.len());
                    self.line.clear();
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.read.consume(taken);
            if done.is_some() {
                if let Some(n) = self.skipping.take() {
                    self.reply_error(
                        Value::Null,
                        -32600,
                        format!(
                            "Invalid Request: the message is {n} bytes, over this server's limit of {} bytes; it was not read",
                            self.max
                        ),
                    );
                    continue;
                }
                return Some(std::mem::take(&mut self.line));
            }
        }
    }
}

impl<R: AsyncBufRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = serde_json::to_vec(&item)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.out.send(line).map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::NotConnected, "stdout closed")
                })
            });
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = self.next_line().await?;
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = match serde_json::from_slice(text) {
                Ok(v) => v,
                Err(e) => {
                    self.reply_error(
                        Value::Null,
                        -32700,
                        format!("Parse error: the message is not valid JSON ({e})"),
                    );
                    continue;
                }
            };
            let id = match value.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            };
            match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
                Ok(msg) => return Some(msg),
                Err(e) => self.reply_error(
                    id,
                    -32600,
                    format!(
                        "Invalid Request: not a JSON-RPC 2.0 MCP message this server accepts ({e})"
                    ),
                ),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Let the writer finish what is queued, then stop it.
        let (closed, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.out, closed));
        if let Some(w) = self.writer.take() {
            let _ = w.await;
        }
        Ok(())
    }
}
