//! Connections to the server: each keeps the statements it prepared, and a small pool keeps
//! idle ones between operations (last in, first out, so a thread that works repeatedly gets a
//! connection whose statements are prepared).
//!
//! A connection found closed, or one whose state is unknown after an error in a transaction,
//! is dropped instead of returned.

use crate::error::Error;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, SimpleQueryMessage, SimpleQueryRow, Statement};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// The most idle connections kept per store value.
const MAX_IDLE: usize = 8;

/// Parameters of a statement.
pub(super) type Params<'a> = [&'a (dyn ToSql + Sync)];

/// One connection and the statements prepared on it (a statement lives as long as its
/// connection, across transactions).
pub(super) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Conn {
    /// Connects and makes commits durable on this session whatever the server's default: a
    /// server configured with `synchronous_commit = off` would acknowledge a commit before its
    /// WAL record is flushed, and an acknowledged append must survive a crash.
    pub(super) fn connect(config: &Config) -> Result<Conn, Error> {
        let mut client = config.connect(NoTls)?;
        let sync: String = client
            .query_one("SELECT current_setting('synchronous_commit')", &[])?
            .try_get(0)?;
        if sync == "off" || sync == "local" {
            client.batch_execute("SET synchronous_commit = on")?;
        }
        Ok(Conn {
            client,
            prepared: HashMap::new(),
        })
    }

    /// The statement for `sql`, prepared once per connection.
    fn statement(&mut self, sql: &str) -> Result<Statement, Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Every row of `sql`.
    pub(super) fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>, Error> {
        let s = self.statement(sql)?;
        Ok(self.client.query(&s, params)?)
    }

    /// The row of `sql`, if any (an error if there are several).
    pub(super) fn query_opt(
        &mut self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Option<Row>, Error> {
        let s = self.statement(sql)?;
        Ok(self.client.query_opt(&s, params)?)
    }

    /// Runs `sql`, returning the number of rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, Error> {
        let s = self.statement(sql)?;
        Ok(self.client.execute(&s, params)?)
    }

    /// Runs statements without parameters (transaction control, schema changes).
    pub(super) fn batch(&mut self, sql: &str) -> Result<(), Error> {
        Ok(self.client.batch_execute(sql)?)
    }

    /// The rows of statements without parameters sent in one message (the simple query
    /// protocol: one round trip for all of them; under READ COMMITTED each statement still
    /// takes its own snapshot), as text.
    pub(super) fn simple_rows(&mut self, sql: &str) -> Result<Vec<SimpleQueryRow>, Error> {
        Ok(self
            .client
            .simple_query(sql)?
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r),
                _ => None,
            })
            .collect())
    }

    /// Whether the connection is known to be closed.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Idle connections to one database.
pub(super) struct Pool {
    config: Config,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    pub(super) fn new(config: Config) -> Pool {
        Pool {
            config,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A connection: an idle one, or a new one.
    pub(super) fn get(&self) -> Result<Pooled<'_>, Error> {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match reused {
            Some(c) if !c.is_closed() => c,
            _ => Conn::connect(&self.config)?,
        };
        Ok(Pooled {
            conn: Some(conn),
            pool: self,
            keep: true,
        })
    }

    /// Drops every idle connection (after the server restarted, they are all closed).
    pub(super) fn clear(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    fn put(&self, conn: Conn) {
        if conn.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(conn);
        }
    }
}

/// A connection lent by the pool, returned when dropped unless discarded.
pub(super) struct Pooled<'a> {
    conn: Option<Conn>,
    pool: &'a Pool,
    keep: bool,
}

impl Pooled<'_> {
    /// Closes the connection instead of returning it (its state is unknown).
    pub(super) fn discard(&mut self) {
        self.keep = false;
    }
}

impl Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // `conn` is `Some` until the value is dropped.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take()
            && self.keep
        {
            self.pool.put(c);
        }
    }
}

/// The SQLSTATE of the server's error, when `e` is one.
pub(super) fn sqlstate(e: &Error) -> Option<&str> {
    let Error::Storage(s) = e else {
        return None;
    };
    s.source
        .as_ref()
        .and_then(|src| src.downcast_ref::<postgres::Error>())
        .and_then(postgres::Error::code)
        .map(|c| c.code())
}
