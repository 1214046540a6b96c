//! The sessions of one server and what both servers do with them: find a request's session,
//! record what the agent is about to be shown, and record the user's request when the client
//! passes it.
//!
//! Which session a request belongs to: the client may name it in the request's `_meta` under
//! [`SESSION_KEY`]; otherwise it is the server's configured session (`--session`, default
//! `default`). Session keys are chosen by the client application, never by the model (the
//! model writes tool arguments, not `_meta`). MCP's own session id is not used: the 2026-07-28
//! revision of the protocol has none, and an id that changes when the server restarts would
//! start a fresh, empty lineage — laundering by restart.

use crate::handle::{self, MemError, NewEntry, SharedMem};
use crate::session::{Session, validate_key};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Mutex;

/// `_meta` key naming the session of a request (a client's choice).
pub const SESSION_KEY: &str = "io.memlineage/session";

/// `_meta` key carrying the user's request that led to this call (a client's choice).
pub const USER_REQUEST_KEY: &str = "io.memlineage/user_request";

/// The longest user request recorded, in bytes.
pub const MAX_USER_REQUEST: usize = 64 * 1024;

/// A session, locked while its state changes.
pub type SessionHandle = Arc<Mutex<Session>>;

/// The sessions of one server.
pub struct Sessions {
    mem: SharedMem,
    /// The trusted principal that signs session records.
    recorder: String,
    /// The principal of the user's requests, if the server records them.
    user: Option<String>,
    scope: Scope,
    default_key: String,
    open: std::sync::Mutex<HashMap<String, SessionHandle>>,
}

/// A piece of text the agent is about to be shown, by its author.
#[derive(Clone, Debug)]
pub struct ShownText {
    /// The entry to write (writer, kind, text, metadata).
    pub entry: NewEntry,
    /// Which part of what was shown (for de-duplication within the session).
    pub part: String,
}

impl Sessions {
    /// Sessions recorded by `recorder` in `scope`; requests that name none use `default_key`.
    pub fn new(
        mem: SharedMem,
        recorder: &str,
        user: Option<&str>,
        scope: Scope,
        default_key: &str,
    ) -> Result<Sessions, String> {
        validate_key(default_key)?;
        Ok(Sessions {
            mem,
            recorder: recorder.to_string(),
            user: user.map(str::to_string),
            scope,
            default_key: default_key.to_string(),
            open: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The memory handle.
    pub fn mem(&self) -> &SharedMem {
        &self.mem
    }

    /// The principal that signs session records and gate decisions.
    pub fn recorder(&self) -> &str {
        &self.recorder
    }

    /// The scope entries are written in.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The session a request with this `_meta` belongs to, restored from the log on first use.
    pub async fn session(
        &self,
        meta: Option<&Map<String, Value>>,
    ) -> Result<SessionHandle, String> {
        let key = match meta.and_then(|m| m.get(SESSION_KEY)) {
            None => self.default_key.clone(),
            Some(Value::String(k)) => {
                validate_key(k)?;
                k.clone()
            }
            Some(_) => return Err(format!("`_meta.{SESSION_KEY}` must be a string")),
        };
        let found = {
            let open = self
                .open
                .lock()
                .map_err(|_| "the session table was poisoned by a panic".to_string())?;
            open.get(&key).cloned()
        };
        if let Some(s) = found {
            return Ok(s);
        }
        let recorder = self.recorder.clone();
        let k = key.clone();
        let restored = handle::blocking(&self.mem, move |mem| Session::restore(mem, &k, &recorder))
            .await
            .map_err(|e| e.0)?;
        let mut open = self
            .open
            .lock()
            .map_err(|_| "the session table was poisoned by a panic".to_string())?;
        Ok(open
            .entry(key)
            .or_insert_with(|| Arc::new(Mutex::new(restored)))
            .clone())
    }

    /// Writes the texts the agent is about to be shown (each once per session) and records
    /// them as shown — read from the document `source`, when the tool call named one — and
    /// returns their entry ids. On error nothing may be shown.
    pub async fn show_texts(
        &self,
        session: &mut Session,
        texts: Vec<ShownText>,
        source: Option<&str>,
    ) -> Result<Vec<EntryId>, MemError> {
        let mut ids: Vec<Option<EntryId>> = Vec::with_capacity(texts.len());
        let mut to_write = Vec::new();
        for t in &texts {
            let known = session.recorded(&t.entry.writer, &t.part, &t.entry.text);
            if known.is_none() {
                to_write.push(t.entry.clone());
            }
            ids.push(known);
        }
        let scope = self.scope.clone();
        let written = if to_write.is_empty() {
            Vec::new()
        } else {
            handle::blocking(&self.mem, move |mem| {
                handle::write_all(mem, &scope, to_write)
            })
            .await?
        };
        let mut written = written.into_iter();
        let mut out = Vec::with_capacity(texts.len());
        for (t, id) in texts.iter().zip(ids) {
            let id = match id {
                Some(id) => id,
                None => {
                    let w = written.next().ok_or_else(|| {
                        MemError("the store wrote fewer entries than asked".into())
                    })?;
                    session.remember_text(&t.entry.writer, &t.part, &t.entry.text, w.id);
                    w.id
                }
            };
            out.push(id);
        }
        self.show_ids_from(session, out.clone(), source).await?;
        Ok(out)
    }

    /// Records that the agent is about to be shown existing entries. Cancel-safe: if the
    /// caller stops waiting, the record may be in the log without the session knowing — more
    /// context, never less.
    pub async fn show_ids(&self, session: &mut Session, ids: Vec<EntryId>) -> Result<(), MemError> {
        self.show_ids_from(session, ids, None).await
    }

    /// [`Sessions::show_ids`] of entries read from the document `source`.
    pub async fn show_ids_from(
        &self,
        session: &mut Session,
        ids: Vec<EntryId>,
        source: Option<&str>,
    ) -> Result<(), MemError> {
        let new = session.unseen(&ids);
        let sources = session.new_sources(&ids, source);
        if new.is_empty() && sources.is_empty() {
            return Ok(());
        }
        let recorder = self.recorder.clone();
        let scope = self.scope.clone();
        let key = session.key().to_string();
        let since = session.since();
        let ids = new.clone();
        let documents = sources.clone();
        let since = handle::blocking(&self.mem, move |mem| {
            crate::session::write_record(mem, &recorder, &scope, &key, since, &ids, &documents)
        })
        .await?;
        session.shown(new, sources, since);
        Ok(())
    }

    /// Records the user's request when the client passed one in `_meta`, as a `user_input`
    /// entry of the configured user principal, and shows it. Without a user principal the
    /// request is not recorded (and a warning is logged): the gate then judges without it,
    /// which can only deny more.
    pub async fn user_request(
        &self,
        session: &mut Session,
        meta: Option<&Map<String, Value>>,
    ) -> Result<(), String> {
        let text = match meta.and_then(|m| m.get(USER_REQUEST_KEY)) {
            None => return Ok(()),
            Some(Value::String(s)) => s,
            Some(_) => return Err(format!("`_meta.{USER_REQUEST_KEY}` must be a string")),
        };
        if text.len() > MAX_USER_REQUEST {
            return Err(format!(
                "`_meta.{USER_REQUEST_KEY}` is {} bytes, over the limit of {MAX_USER_REQUEST}",
                text.len()
            ));
        }
        if text.trim().is_empty() {
            return Ok(());
        }
        let Some(user) = &self.user else {
            tracing::warn!(
                "the client passed the user's request, but no user principal is configured: not recorded"
            );
            return Ok(());
        };
        let entry = NewEntry::new(user, EntryKind::UserInput, text.clone())
            .meta("mcp.part", "user_request");
        self.show_texts(
            session,
            vec![ShownText {
                entry,
                part: "user_request".into(),
            }],
            None,
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("the user's request could not be recorded: {e}"))
    }
}
