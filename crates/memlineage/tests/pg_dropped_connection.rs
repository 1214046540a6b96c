//! A PostgreSQL connection dropped in the middle of an append (`docs/store.md`, "The PostgreSQL
//! store", Failures): the server terminates the append's session (`pg_terminate_backend`, as
//! a server restart, a proxy or a network failure would) after a chosen write stage.
//!
//! - Before the commit (after the leaves, the nodes or the derived rows): the transaction is
//!   rolled back by the server, and the store retries the whole append on a new connection,
//!   running the handle's guard again — the batch lands once, at the end of the log.
//! - At the commit (after everything is written, before `COMMIT` is answered): when the
//!   server's termination notice is the answer, the commit certainly failed and the append is
//!   retried; when the connection is just gone, the outcome is unknown to the client, so the
//!   store looks the batch up on a new connection once it holds the log head (the lost
//!   transaction has then ended) — here, not committed — and appends it again; had the retries
//!   run out, the caller would get a retryable error with nothing of the batch in the log, and
//!   its retry would land it once. (The rows of a batch are one statement, so a session
//!   dropped after any stage may first surface at the commit.)
//!
//! Either way every acknowledged entry is there exactly once, no partial batch is, and the log
//! verifies.

mod common;

use common::{p, setup_with};
use memlineage::store::{AppendGuard, Backend, BackendRead, NoteRow, WriteStage};
use memlineage::{Error, ErrorKind, Memory, OpenMode, StoreLocation, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use std::sync::{Arc, Mutex};

/// A backend whose append's session the server terminates once, after the armed stage.
struct Dropper {
    inner: Box<dyn Backend>,
    admin: Mutex<postgres::Client>,
    database: String,
    armed: Mutex<Option<WriteStage>>,
}

impl Dropper {
    /// Terminates the session of this database that is inside a transaction (the append's:
    /// nothing else runs here), waiting until it is gone.
    fn drop_the_append(&self) {
        let mut admin = self.admin.lock().unwrap();
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) \
                 FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'",
                &[&self.database],
            )
            .unwrap()
            .get(0);
        assert_eq!(n, 1, "exactly the append's session is terminated");
    }
}

common::backends::delegate_backend!(Dropper, inner);
impl common::backends::Edit for Dropper {}

impl Backend for Dropper {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn location(&self) -> String {
        self.inner.location()
    }
    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        self.inner.snapshot()
    }
    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        memlineage::unchecked::append_with_faults(&*self.inner, guard, &mut |stage| {
            let mut armed = self.armed.lock().unwrap();
            if *armed == Some(stage) {
                *armed = None;
                drop(armed);
                self.drop_the_append();
            }
            Ok(())
        })
    }
    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.inner.save_checkpoint(note)
    }
    fn save_values(&self, rows: &memlineage::store::ValueRows) -> Result<(), memlineage::Error> {
        self.inner.save_values(rows)
    }
    fn commits(&self) -> Option<u64> {
        self.inner.commits()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
}

/// A shared handle to the [`Dropper`], so the test arms it after the handle owns it.
struct Shared(Arc<Dropper>);

common::backends::delegate_backend!(Shared, 0);
impl common::backends::Edit for Shared {}

impl Backend for Shared {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn location(&self) -> String {
        self.0.location()
    }
    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        self.0.snapshot()
    }
    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        self.0.append(guard)
    }
    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.0.save_checkpoint(note)
    }
    fn save_values(&self, rows: &memlineage::store::ValueRows) -> Result<(), memlineage::Error> {
        self.0.save_values(rows)
    }
    fn commits(&self) -> Option<u64> {
        self.0.commits()
    }
    fn read_only(&self) -> bool {
        self.0.read_only()
    }
}

fn batch(tag: &str, n: usize) -> Vec<WriteRequest> {
    (0..n)
        .map(|i| {
            WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                format!("{tag} fact {i} about the vault"),
            )
        })
        .collect()
}

/// Every acknowledged entry once, at its index; nothing else; the log verifies.
fn check(mem: &Memory, acked: &[(EntryId, u64)], size: u64) {
    assert_eq!(
        mem.size().unwrap(),
        size,
        "nothing unacknowledged, nothing twice"
    );
    for (id, index) in acked {
        assert_eq!(mem.get(id).unwrap().index, *index);
    }
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn a_connection_dropped_mid_append_loses_nothing_and_leaves_no_partial_batch() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let url = cluster.database();
    let database = url
        .rsplit('/')
        .next()
        .and_then(|s| s.split('?').next())
        .unwrap()
        .to_string();
    let inner = StoreLocation::Postgres(url).open(OpenMode::Create).unwrap();
    let dropper = Arc::new(Dropper {
        inner,
        admin: Mutex::new(cluster.admin()),
        database,
        armed: Mutex::new(None),
    });
    let mem = setup_with(Shared(dropper.clone()));
    let mut acked: Vec<(EntryId, u64)> = Vec::new();
    for (round, stage) in WriteStage::ALL.into_iter().enumerate() {
        let size = mem.size().unwrap();
        *dropper.armed.lock().unwrap() = Some(stage);
        // One word, in no other round's entries: a search for it finds only this batch.
        let tag = format!("round{round}tag");
        let written = match mem.write_batch(batch(&tag, 6)) {
            // Retried on a new connection (at the commit too, when the server's termination
            // notice answered `COMMIT`: then it certainly did not commit).
            Ok(w) => w,
            Err(e) => {
                // Lost at the commit: looked up, not applied, retryable; nothing of it is there.
                assert_eq!(stage, WriteStage::Commit, "{e}");
                assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
                assert!(e.to_string().contains("not applied"), "{e}");
                assert_eq!(mem.size().unwrap(), size);
                let hits = mem.search(&tag, &Scope::default(), 10).unwrap();
                assert!(hits.entries.is_empty());
                mem.write_batch(batch(&tag, 6)).unwrap()
            }
        };
        assert!(dropper.armed.lock().unwrap().is_none(), "{stage:?} struck");
        assert_eq!(written.len(), 6);
        for (i, w) in written.iter().enumerate() {
            assert_eq!(
                w.index,
                size + i as u64,
                "{stage:?}: the batch lands once, at the end"
            );
            acked.push((w.id, w.index));
        }
        check(&mem, &acked, size + 6);
    }
}
