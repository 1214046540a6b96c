//! Crash and fault tests at the backend, in the manner of redb's crash-consistency tests: a
//! wrapper ([`Faulty`]) fails an append — or kills the whole process — at a chosen point (after
//! the leaves are written and before their Merkle nodes, after the nodes, after the derived
//! rows, just before the commit) or a checkpoint before it is saved. After each fault every
//! acknowledged entry must be in the log, nothing of the failed write may be, the store must
//! verify, and the next write must land where it should. On the SQLite file store and on
//! PostgreSQL; the crash runs in a child process (this test binary, run again) that aborts at
//! the fault, so nothing of it is unwound or flushed.

mod common;

use common::backends::{postgres_store, sqlite_file};
use common::{key, p, setup_with};
use memlineage::store::{AppendGuard, Backend, BackendRead, NoteRow, WriteStage};
use memlineage::{Error, Memory, StoreLocation, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::merkle::NodeId;
use std::process::Command;
use std::sync::Mutex;

/// Where a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    /// An append, after `stage` was written.
    Append(WriteStage),
    /// A checkpoint, before it is saved.
    Checkpoint,
}

const POINTS: [Point; 5] = [
    Point::Append(WriteStage::Entries),
    Point::Append(WriteStage::Nodes),
    Point::Append(WriteStage::Derived),
    Point::Append(WriteStage::Commit),
    Point::Checkpoint,
];

/// What a fault does.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// The write fails with an error.
    Fail,
    /// The process dies on the spot (`abort`: no unwinding, no destructor, no flush).
    Crash,
}

/// A backend that forwards everything and strikes once at the armed point.
struct Faulty {
    inner: Box<dyn Backend>,
    armed: Mutex<Option<(Point, Action)>>,
}

impl Faulty {
    fn new(inner: Box<dyn Backend>) -> Faulty {
        Faulty {
            inner,
            armed: Mutex::new(None),
        }
    }

    fn arm(&self, point: Point, action: Action) {
        *self.armed.lock().unwrap() = Some((point, action));
    }

    /// Strikes if armed at `point` (once).
    fn strike(&self, point: Point) -> Result<(), Error> {
        let mut armed = self.armed.lock().unwrap();
        match *armed {
            Some((at, action)) if at == point => {
                *armed = None;
                match action {
                    Action::Fail => Err(memlineage::error::StorageError::new(
                        "test",
                        format!("injected fault at {point:?}"),
                    )
                    .into()),
                    Action::Crash => std::process::abort(),
                }
            }
            _ => Ok(()),
        }
    }
}

common::backends::delegate_backend!(Faulty, inner);
impl common::backends::Edit for Faulty {}

impl Backend for Faulty {
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
            self.strike(Point::Append(stage))
        })
    }
    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.strike(Point::Checkpoint)?;
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

/// A shared handle to a [`Faulty`], so the test can arm it after the handle owns it.
struct Shared(std::sync::Arc<Faulty>);

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

/// A batch of `n` notes by `agent`.
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

/// Everything acknowledged is there at its index, the log is dense and verifies.
fn check_survivors(mem: &Memory, acked: &[(EntryId, u64)], expected_size: u64) {
    assert_eq!(mem.size().unwrap(), expected_size, "nothing unacknowledged");
    for (id, index) in acked {
        assert_eq!(
            mem.get(id).unwrap().index,
            *index,
            "acknowledged entry {id}"
        );
    }
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}

/// Every fault point, as an error: the store is exactly as before, verifies, and takes the
/// next write.
fn faults_leave_the_store_as_it_was(store: Box<dyn Backend>) {
    let faulty = std::sync::Arc::new(Faulty::new(store));
    let mem = setup_with(Shared(faulty.clone()));
    let mut acked = Vec::new();
    for (round, point) in POINTS.into_iter().enumerate() {
        for w in mem.write_batch(batch(&format!("ok {round}"), 5)).unwrap() {
            acked.push((w.id, w.index));
        }
        mem.checkpoint().unwrap();
        let size = mem.size().unwrap();
        let root = mem.root_at(size).unwrap();
        let note = faulty.latest_checkpoint().unwrap();
        faulty.arm(point, Action::Fail);
        match point {
            Point::Append(_) => {
                let err = mem.write_batch(batch("doomed", 7)).unwrap_err();
                assert!(err.to_string().contains("injected fault"), "{err}");
                // The checkpoint saved before still covers the whole log.
                let hits = mem.search("doomed", &Scope::default(), 10).unwrap();
                assert!(hits.entries.is_empty());
            }
            Point::Checkpoint => {
                mem.write(WriteRequest::new(&p("agent"), EntryKind::Observation, "x"))
                    .map(|w| acked.push((w.id, w.index)))
                    .unwrap();
                let err = mem.checkpoint().unwrap_err();
                assert!(err.to_string().contains("injected fault"), "{err}");
                assert_eq!(faulty.latest_checkpoint().unwrap(), note);
            }
        }
        let now = mem.size().unwrap();
        if matches!(point, Point::Append(_)) {
            assert_eq!(now, size, "{point:?}: nothing of the failed batch");
            assert_eq!(mem.root_at(size).unwrap(), root);
            assert!(faulty.nodes(&[NodeId::leaf(size)]).is_err());
        }
        check_survivors(&mem, &acked, now);
        // The next write lands at the end.
        let next = mem
            .write(WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                "after",
            ))
            .unwrap();
        assert_eq!(next.index, now);
        acked.push((next.id, next.index));
    }
    mem.checkpoint().unwrap();
    check_survivors(&mem, &acked, mem.size().unwrap());
}

#[test]
fn faults_on_sqlite() {
    faults_leave_the_store_as_it_was(sqlite_file());
}

#[test]
fn faults_on_postgres() {
    if let Some(store) = postgres_store() {
        faults_leave_the_store_as_it_was(store);
    }
}

/// The environment variables a crash child reads.
const CHILD_STORE: &str = "MEMLINEAGE_CRASH_STORE";
const CHILD_POINT: &str = "MEMLINEAGE_CRASH_POINT";

/// The child side of the crash tests: writes acknowledged batches (one `ACK id index` line each
/// entry, flushed), then arms a crash at the point and writes once more. Does nothing unless
/// run by `crash_at`.
#[test]
fn crash_child() {
    let (Some(store), Some(point)) = (std::env::var_os(CHILD_STORE), std::env::var_os(CHILD_POINT))
    else {
        return;
    };
    let location: StoreLocation = store.to_str().unwrap().parse().unwrap();
    let point = POINTS[point.to_str().unwrap().parse::<usize>().unwrap()];
    let faulty = std::sync::Arc::new(Faulty::new(
        location.open(memlineage::OpenMode::Existing).unwrap(),
    ));
    let mem = Memory::open(Shared(faulty.clone())).unwrap();
    mem.keys().insert(&p("operator"), key(1));
    mem.keys().insert(&p("agent"), key(2));
    use std::io::Write;
    // Raw stdout, starting on a line of its own (the harness printed `test crash_child ... `).
    let mut out = std::io::stdout();
    writeln!(out).unwrap();
    for round in 0..3 {
        for w in mem
            .write_batch(batch(&format!("child {round}"), 9))
            .unwrap()
        {
            writeln!(out, "ACK {} {}", w.id.to_hex(), w.index).unwrap();
        }
        out.flush().unwrap();
    }
    faulty.arm(point, Action::Crash);
    match point {
        Point::Append(_) => {
            let _ = mem.write_batch(batch("crash", 11));
        }
        Point::Checkpoint => {
            let _ = mem.checkpoint();
        }
    }
    panic!("the armed crash at {point:?} did not strike");
}

/// Runs `crash_child` in a child process on the store at `location`, which aborts at `point`;
/// then checks what survived.
fn crash_at(location: &str, point: usize) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, location)
        .env(CHILD_POINT, point.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the child should have crashed at {:?}: {stdout}\n{}",
        POINTS[point],
        String::from_utf8_lossy(&out.stderr)
    );
    let acked = common::acknowledged(&stdout);
    assert_eq!(acked.len(), 27, "{stdout}");
    let location: StoreLocation = location.parse().unwrap();
    let mem = Memory::open_at(&location).unwrap();
    mem.keys().insert(&p("operator"), key(1));
    mem.keys().insert(&p("agent"), key(2));
    let last = acked.last().unwrap().1;
    check_survivors(&mem, &acked, last + 1);
    let next = mem
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "after the crash",
        ))
        .unwrap();
    assert_eq!(next.index, last + 1);
    mem.checkpoint().unwrap();
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}

/// A store with the fixture principals at `location` (new), a checkpoint signed.
fn fresh_at(location: &str) {
    let location: StoreLocation = location.parse().unwrap();
    let mem = setup_with(location.open(memlineage::OpenMode::Create).unwrap());
    mem.checkpoint().unwrap();
}

#[test]
fn crashes_on_sqlite() {
    for point in 0..POINTS.len() {
        let dir = tempfile::tempdir().unwrap();
        let file = format!("sqlite:{}", dir.path().join("store.db").display());
        fresh_at(&file);
        crash_at(&file, point);
    }
}

#[test]
fn crashes_on_postgres() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    for point in 0..POINTS.len() {
        let url = cluster.database();
        fresh_at(&url);
        crash_at(&url, point);
    }
}
