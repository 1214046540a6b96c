//! Where the service's log lines go: standard error, written in batches by the threads of the
//! service's runtime.
//!
//! Every request logs one JSON line (`telemetry::observe`). Written one `write(2)` per line,
//! the lines cost the request threads a system call each, on requests the service answers in
//! ≈ 60–100 µs of CPU (`docs/performance.md`, "Fewer full-text merges, a longer value tail,
//! the request log in batches"). A thread of the runtime instead keeps its lines in a buffer of its own and
//! writes them out together: when the buffer holds [`FLUSH_AT`] bytes, when the thread runs
//! out of work (tokio's `on_thread_park`, so a line waits at most as long as the thread stays
//! busy) and when the thread ends. Only the runtime's worker threads batch — a thread starts
//! batching at its first park ([`worker_parks`]), which the blocking pool's threads never
//! call —; any other thread (the library threads, the committer, the blocking pool, a test's
//! runtime) writes each line straight through, as before.
//!
//! Every write holds the process's lock on standard error, so the batches of two threads never
//! interleave, even through a pipe, and each batch is whole lines. A process killed while lines
//! wait in a buffer loses those lines (at most [`FLUSH_AT`] bytes per thread, written within the
//! thread's current burst of work): log lines, never data — an acknowledged write is durable
//! before its answer, whatever its log line.

use std::cell::RefCell;
use std::io::Write;
use tracing_subscriber::fmt::MakeWriter;

/// A thread's buffer is written out once it holds this many bytes (≈ 60 request lines).
pub const FLUSH_AT: usize = 16 * 1024;

/// A runtime thread's pending lines; written out when dropped (the thread ends).
struct Pending(Vec<u8>);

impl Drop for Pending {
    fn drop(&mut self) {
        write_out(&mut self.0);
    }
}

thread_local! {
    /// `Some` on a thread that batches its lines ([`batch_this_thread`]).
    static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
}

/// A worker thread of the runtime ran out of work (the runtime's `on_thread_park`): its
/// waiting lines are written out, and from now on its lines wait in its buffer.
pub fn worker_parks() {
    flush_this_thread();
    batch_this_thread();
}

/// From now on this thread's log lines wait in its buffer.
fn batch_this_thread() {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Some(Pending(Vec::with_capacity(FLUSH_AT + 1024)));
        }
    });
}

/// Writes out this thread's waiting lines (the runtime's `on_thread_stop`). Nothing to do on a
/// thread that does not batch.
pub fn flush_this_thread() {
    // `try_with`: during the thread's teardown the buffer may already be gone (then its drop
    // wrote it out).
    let _ = PENDING.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && let Some(pending) = p.as_mut()
        {
            write_out(&mut pending.0);
        }
    });
}

/// Writes `bytes` to standard error under its lock, and empties them. A failed write is
/// dropped: there is nowhere left to report it.
fn write_out(bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let _ = to_stderr(bytes);
    bytes.clear();
}

/// One write of whole lines to standard error, under its lock (in unit tests: to the
/// thread's record of what it wrote, so that they can check it without printing it).
#[cfg(not(test))]
fn to_stderr(bytes: &[u8]) -> std::io::Result<()> {
    std::io::stderr().lock().write_all(bytes)
}

#[cfg(test)]
thread_local! {
    static WRITTEN: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
fn to_stderr(bytes: &[u8]) -> std::io::Result<()> {
    WRITTEN.with(|w| w.borrow_mut().push(bytes.to_vec()));
    Ok(())
}

/// The [`MakeWriter`] of the log subscriber: standard error, batched on the threads that
/// asked for it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stderr;

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line
    }
}

/// One event's bytes (the formatter hands a whole line to one `write_all`).
#[derive(Debug)]
pub struct Line;

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let buffered = PENDING.try_with(|p| {
            let Ok(mut p) = p.try_borrow_mut() else {
                return false;
            };
            let Some(pending) = p.as_mut() else {
                return false;
            };
            pending.0.extend_from_slice(buf);
            if pending.0.len() >= FLUSH_AT {
                write_out(&mut pending.0);
            }
            true
        });
        if buffered != Ok(true) {
            to_stderr(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending_len() -> Option<usize> {
        PENDING.with(|p| p.borrow().as_ref().map(|p| p.0.len()))
    }

    fn written() -> Vec<Vec<u8>> {
        WRITTEN.with(|w| w.borrow().clone())
    }

    #[test]
    fn a_thread_that_does_not_batch_writes_each_line_at_once() {
        std::thread::spawn(|| {
            Line.write_all(b"{\"x\":1}\n").expect("written");
            assert_eq!(pending_len(), None);
            assert_eq!(written(), vec![b"{\"x\":1}\n".to_vec()]);
            flush_this_thread();
            assert_eq!(written().len(), 1);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_batching_thread_writes_its_lines_together_when_flushed_or_full() {
        std::thread::spawn(|| {
            Line.write_all(b"{\"x\":0}\n").expect("written at once");
            worker_parks();
            assert_eq!(written(), vec![b"{\"x\":0}\n".to_vec()]);
            Line.write_all(b"{\"x\":1}\n").expect("kept");
            Line.write_all(b"{\"x\":2}\n").expect("kept");
            assert_eq!(pending_len(), Some(16));
            assert_eq!(written().len(), 1);
            worker_parks();
            assert_eq!(pending_len(), Some(0));
            assert_eq!(written()[1], b"{\"x\":1}\n{\"x\":2}\n".to_vec());
            // Further lines, then the thread's end (`on_thread_stop`).
            Line.write_all(b"{\"x\":3}\n").expect("kept");
            flush_this_thread();
            assert_eq!(written()[2], b"{\"x\":3}\n".to_vec());
            WRITTEN.with(|w| w.borrow_mut().clear());
            let mut line = vec![b'a'; 999];
            line.push(b'\n');
            for _ in 0..(FLUSH_AT / 1000) {
                Line.write_all(&line).expect("kept");
            }
            assert_eq!(pending_len(), Some((FLUSH_AT / 1000) * 1000));
            assert!(written().is_empty());
            Line.write_all(&line).expect("kept");
            // Past FLUSH_AT: written out, in one write of whole lines.
            assert_eq!(pending_len(), Some(0));
            let all = written();
            assert_eq!(all.len(), 1);
            assert_eq!(all[0].len(), (FLUSH_AT / 1000 + 1) * 1000);
            assert!(all[0].ends_with(b"\n"));
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_buffer_dropped_with_its_thread_writes_its_lines_out() {
        std::thread::spawn(|| {
            drop(Pending(b"{\"x\":4}\n".to_vec()));
            assert_eq!(written(), vec![b"{\"x\":4}\n".to_vec()]);
        })
        .join()
        .expect("thread");
    }
}
