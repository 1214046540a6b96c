//! Many writer processes on one PostgreSQL log (`docs/store.md`, "The PostgreSQL store"):
//!
//! - N processes append at once: the indices are dense, every acknowledged entry is in the log
//!   at the index it was acknowledged with, each writer's entries are in its own order, and the
//!   log verifies;
//! - a writer killed with SIGKILL in the middle of a batch (inside its transaction) loses
//!   nothing it acknowledged, leaves nothing half-written, and holds no lock afterwards;
//! - the server restarted (`pg_ctl restart -m immediate`, a crash) and stopped and started
//!   again under load: writers retry or fail with a retryable error, and nothing acknowledged
//!   is lost.
//!
//! The writers are this test binary run again (`writer_child`), each with its own handle and
//! connections, as separate programs on separate hosts would be.

mod common;

use common::{key, p, setup_with};
use memlineage::store::{AppendGuard, Backend, BackendRead, NoteRow, WriteStage};
use memlineage::{Error, ErrorKind, Memory, StoreLocation, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::EntryKind;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_URL: &str = "MEMLINEAGE_PG_WRITER_URL";
const CHILD_NAME: &str = "MEMLINEAGE_PG_WRITER_NAME";
const CHILD_MODE: &str = "MEMLINEAGE_PG_WRITER_MODE";
const CHILD_STOP: &str = "MEMLINEAGE_PG_WRITER_STOP";

/// The principals of the writer processes (registered by the parent).
const WRITERS: [&str; 4] = ["w0", "w1", "w2", "w3"];

fn writer_key(name: &str) -> ed25519_dalek::SigningKey {
    key(100 + WRITERS.iter().position(|w| *w == name).unwrap() as u64)
}

/// A new store at a fresh database of `cluster`, with the writers registered.
fn store_for_writers(url: &str) {
    let location: StoreLocation = url.parse().unwrap();
    let mem = setup_with(location.open(memlineage::OpenMode::Create).unwrap());
    for w in WRITERS {
        mem.add_principal(
            &p(w),
            memlineage_core::label::TrustClass::Trusted,
            &writer_key(w).verifying_key(),
        )
        .unwrap();
    }
    mem.checkpoint().unwrap();
}

/// A backend that, in `pause` mode, announces `MID` on stdout after the nodes of an append
/// are written (inside the transaction) and then sleeps: the parent kills it there.
struct PauseMidBatch {
    inner: Box<dyn Backend>,
    /// Appends so far: the first (of 5 entries) is acknowledged, the second pauses.
    appends: std::sync::atomic::AtomicUsize,
}

common::backends::delegate_backend!(PauseMidBatch, inner);
impl common::backends::Edit for PauseMidBatch {}

impl Backend for PauseMidBatch {
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
        let result = memlineage::unchecked::append_with_faults(&*self.inner, guard, &mut |stage| {
            if stage == WriteStage::Nodes
                && self.appends.load(std::sync::atomic::Ordering::SeqCst) == 1
            {
                // Raw stdout: the test harness captures `println!`.
                let mut out = std::io::stdout();
                let _ = writeln!(out, "MID");
                let _ = out.flush();
                std::thread::sleep(Duration::from_secs(120));
            }
            Ok(())
        });
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        result
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

/// The writer process. Modes: `batches` (a fixed number of batches of varied sizes, each
/// entry derived from the writer's previous one), `loop` (batches of 16 until the stop file
/// exists, retrying after any retryable error), `pause` (acknowledged batches, then one that
/// stops inside its transaction). Prints `ACK id index` per acknowledged entry, `ERR kind
/// message` per failed attempt. Does nothing unless run by a test below.
#[test]
fn writer_child() {
    let (Some(url), Some(name), Some(mode)) = (
        std::env::var(CHILD_URL).ok(),
        std::env::var(CHILD_NAME).ok(),
        std::env::var(CHILD_MODE).ok(),
    ) else {
        return;
    };
    let location: StoreLocation = url.parse().unwrap();
    let backend = location.open(memlineage::OpenMode::Existing).unwrap();
    let mem = if mode == "pause" {
        Memory::open(PauseMidBatch {
            inner: backend,
            appends: std::sync::atomic::AtomicUsize::new(0),
        })
        .unwrap()
    } else {
        Memory::open(backend).unwrap()
    };
    let me = p(&name);
    mem.keys().insert(&me, writer_key(&name));
    // Raw stdout (the harness captures `println!`), starting on a line of its own: the harness
    // has printed `test writer_child ... ` without a newline.
    let mut out = std::io::stdout();
    writeln!(out).unwrap();
    let mut last: Option<EntryId> = None;
    let mut n = 0usize;
    let mut write = |size: usize, out: &mut std::io::Stdout| -> Result<(), Error> {
        let reqs: Vec<WriteRequest> = (0..size)
            .map(|i| {
                let text = format!("{name} note {n} {i} about the shared vault");
                match (i, last) {
                    (0, Some(parent)) => common::derived(&name, &text, &[(parent, "0.8")]),
                    _ => WriteRequest::new(&me, EntryKind::Observation, text),
                }
            })
            .collect();
        let written = mem.write_batch(reqs)?;
        for w in &written {
            writeln!(out, "ACK {} {}", w.id.to_hex(), w.index).unwrap();
        }
        out.flush().unwrap();
        last = written.last().map(|w| w.id);
        n += 1;
        Ok(())
    };
    match mode.as_str() {
        "batches" => {
            for size in [1usize, 7, 32, 3, 64, 16, 1, 40] {
                write(size, &mut out).unwrap();
            }
        }
        "pause" => {
            write(5, &mut out).unwrap_or_else(|e| panic!("{e}"));
            // The backend stops inside this one.
            write(50, &mut out).unwrap();
            unreachable!("the parent kills this process mid-batch");
        }
        "loop" => {
            let stop = std::env::var(CHILD_STOP).unwrap();
            while !std::path::Path::new(&stop).exists() {
                if let Err(e) = write(16, &mut out) {
                    writeln!(out, "ERR {} {e}", e.kind()).unwrap();
                    out.flush().unwrap();
                    assert!(
                        matches!(e.kind(), ErrorKind::Unavailable),
                        "a failure under a restart must be retryable: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        other => panic!("unknown mode {other}"),
    }
}

fn spawn_writer(url: &str, name: &str, mode: &str, stop: Option<&std::path::Path>) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["writer_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_URL, url)
        .env(CHILD_NAME, name)
        .env(CHILD_MODE, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(stop) = stop {
        cmd.env(CHILD_STOP, stop);
    }
    cmd.spawn().unwrap()
}

/// What one writer process printed.
#[derive(Default)]
struct Output {
    acked: Vec<(EntryId, u64)>,
    errors: Vec<String>,
}

fn parse(line: &str, into: &mut Output) {
    if let Some(rest) = line.strip_prefix("ACK ") {
        let (id, index) = rest.split_once(' ').unwrap();
        into.acked
            .push((id.parse().unwrap(), index.parse().unwrap()));
    } else if let Some(rest) = line.strip_prefix("ERR ") {
        into.errors.push(rest.to_string());
    }
}

/// Waits for a writer and returns what it printed; it must have exited cleanly.
fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "writer failed: {}\n{text}",
        out.status
    );
    let mut o = Output::default();
    for line in text.lines() {
        parse(line, &mut o);
    }
    o
}

/// The log holds exactly `before + acknowledged` entries, densely, every acknowledged one at
/// its index, each writer's in order; it verifies; and it takes another write.
fn check_log(url: &str, before: u64, outputs: &[Output]) {
    let location: StoreLocation = url.parse().unwrap();
    let mem = Memory::open_at(&location).unwrap();
    mem.keys().insert(&p("operator"), key(1));
    let acked: usize = outputs.iter().map(|o| o.acked.len()).sum();
    let size = mem.size().unwrap();
    assert_eq!(
        size,
        before + acked as u64,
        "exactly the acknowledged entries"
    );
    let log = mem.log(0, size).unwrap();
    for (i, v) in log.iter().enumerate() {
        assert_eq!(v.index, i as u64, "dense indices");
    }
    for o in outputs {
        assert!(
            o.acked.windows(2).all(|w| w[0].1 < w[1].1),
            "a writer's own order"
        );
        for (id, index) in &o.acked {
            assert_eq!(
                log[*index as usize].entry.id(),
                *id,
                "acknowledged at {index}"
            );
        }
    }
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert_eq!(report.entries, size);
}

#[test]
fn concurrent_writer_processes_share_one_total_order() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let url = cluster.database();
    store_for_writers(&url);
    let before = Memory::open_at(&url.parse().unwrap())
        .unwrap()
        .size()
        .unwrap();
    let children: Vec<Child> = WRITERS
        .iter()
        .map(|w| spawn_writer(&url, w, "batches", None))
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(finish).collect();
    for o in &outputs {
        assert_eq!(o.acked.len(), 164);
    }
    // The writers' batches interleave in the log (they ran at once), never within a batch.
    check_log(&url, before, &outputs);
}

#[test]
fn a_writer_killed_mid_batch_loses_nothing_acknowledged() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let url = cluster.database();
    store_for_writers(&url);
    let before = Memory::open_at(&url.parse().unwrap())
        .unwrap()
        .size()
        .unwrap();
    let mut child = spawn_writer(&url, "w0", "pause", None);
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut victim = Output::default();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the writer ended early"
        );
        if line.trim() == "MID" {
            break;
        }
        parse(line.trim(), &mut victim);
    }
    assert_eq!(victim.acked.len(), 5);
    // SIGKILL inside the transaction (it holds the log head's row lock).
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    // The server notices the closed connection, rolls back and releases the lock: another
    // writer gets through at once.
    let t = Instant::now();
    let other = finish(spawn_writer(&url, "w1", "batches", None));
    assert!(t.elapsed() < Duration::from_secs(60));
    check_log(&url, before, &[victim, other]);
}

#[test]
fn restarts_under_load_lose_nothing_acknowledged() {
    let Some(cluster) = memlineage_pgtest::Cluster::start() else {
        return;
    };
    let url = cluster.database();
    store_for_writers(&url);
    let before = Memory::open_at(&url.parse().unwrap())
        .unwrap()
        .size()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let mut children: Vec<Child> = WRITERS[..3]
        .iter()
        .map(|w| spawn_writer(&url, w, "loop", Some(&stop)))
        .collect();
    // Read each writer's output on a thread, counting acknowledgements as they come.
    let acks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let readers: Vec<std::thread::JoinHandle<Output>> = children
        .iter_mut()
        .map(|c| {
            let stdout = c.stdout.take().unwrap();
            let acks = acks.clone();
            std::thread::spawn(move || {
                let mut o = Output::default();
                for line in BufReader::new(stdout).lines() {
                    let line = line.unwrap();
                    let had = o.acked.len();
                    parse(&line, &mut o);
                    acks.fetch_add(o.acked.len() - had, std::sync::atomic::Ordering::SeqCst);
                }
                o
            })
        })
        .collect();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while acks.load(std::sync::atomic::Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "the writers stalled");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(200);
    cluster.restart("immediate");
    let after_restart = acks.load(std::sync::atomic::Ordering::SeqCst);
    wait_for(after_restart + 200);
    cluster.stop("immediate");
    std::thread::sleep(Duration::from_millis(500));
    cluster.start_again();
    let after_stop = acks.load(std::sync::atomic::Ordering::SeqCst);
    wait_for(after_stop + 200);
    std::fs::write(&stop, b"").unwrap();
    for c in &mut children {
        assert!(c.wait().unwrap().success(), "a writer failed");
    }
    let outputs: Vec<Output> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    check_log(&url, before, &outputs);
}
