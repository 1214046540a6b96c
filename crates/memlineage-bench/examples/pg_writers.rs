//! Writer processes appending to one PostgreSQL log at once: entries per second and the
//! latency of each batch's commit (`Memory::write_batch`, signing included), p50 and p99 over
//! every batch of every writer (issue 13's target: 4 writers × batch 256 ≥ 15,000 entries/s,
//! p99 ≤ 50 ms; `docs/performance.md`, "PostgreSQL beside SQLite").
//!
//! ```text
//! cargo run --release -p memlineage-bench --features postgres --example pg_writers -- \
//!     [--writers 4] [--batch 256] [--batches 12] [--rounds 1] [--rate ENTRIES_PER_S] [--warm 256] \
//!     [--set name=value]... [--db-sql STATEMENT]... [--statements] [--series] \
//!     [--after-sql STATEMENT]... [--explain LOG_COPY]
//! ```
//!
//! **Two ways to load the log.** Without `--rate`, each writer appends its batches back to
//! back (a closed loop): the log runs saturated, and a batch's latency is mostly the time it
//! queues behind the other writers' batches — by Little's law its mean is `writers × batch /
//! throughput` (4 × 256 at 20,000 entries/s: 51 ms), whatever the store does. With `--rate R`
//! the writers offer `R` entries/s between them (an open loop, as wrk2 and YCSB's target
//! throughput do): writer `w` starts batch `i` at `T0 + (i + w / writers) × writers × batch /
//! R`, and a batch's latency runs from that *scheduled* start to its commit, so a writer that
//! falls behind is charged for the wait (no coordinated omission); `svc` is the time from the
//! batch's actual start. That answers "how long does a commit take at 15,000 entries/s".
//!
//! A throwaway cluster is started (`memlineage-pgtest`: `fsync` and `synchronous_commit` on,
//! plus its recommended settings) and a log initialised with 256 root entries (the parent
//! pool). Each writer is its own process with its own handle and connection; it drafts its
//! batches first, waits for the start signal, then appends them back to back. Entries per
//! second: every entry appended over the time from the first start to the last finish.
//! `--set` changes a server setting (`ALTER SYSTEM`, then a reload) before the run;
//! `--statements` loads `pg_stat_statements` and prints where the server spent its time;
//! `--series` prints each batch slot's latency per writer, in schedule order (where the tail
//! is); `--db-sql` runs statements on the store's database before the run, `--after-sql` after
//! it (each printed with its time and first rows: experiments on the log the run left).
//! `--rounds N` repeats the run N times on the same log (one line each). `--warm N` (default
//! 256, one batch) is what each writer appends, untimed, before its timed batches: a writer
//! that has been running has its connection, prepared statements and label cache, and the
//! store past its first thousand entries (with `--warm 1`, the first round's first batches on
//! a brand-new store take 40–80 ms: `docs/performance.md`, "Open loop"). At the end the log
//! is checked: its size is every batch appended, and `Memory::verify` passes.

use memlineage::{Memory, OpenMode, StoreLocation, WriteRequest};
use memlineage_bench::fixtures::{PRINCIPALS, Workload, fresh_memory_on, name, principal_key};
use memlineage_bench::fmt_ns;
use memlineage_core::EntryId;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..])
    } else {
        parent(&args)
    };
    if let Err(e) = result {
        eprintln!("error: {e:?}");
        std::process::exit(1);
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A handle on the store at `url` with every fixture key loaded.
fn writer_on(url: &str) -> Res<Memory> {
    let location: StoreLocation = url.parse()?;
    let mem = Memory::open_at(&location)?;
    for (n, _) in PRINCIPALS {
        mem.keys().insert(&name(n)?, principal_key(1, n));
    }
    Ok(mem)
}

/// `--child URL POOL_FILE SEED BATCH BATCHES INTERVAL_NS OFFSET_NS WARM`: draft, append `WARM`
/// entries untimed, say `ready`, wait
/// for `go T0_NS`, append, print `lat NS SVC_NS` per batch and `span START_NS END_NS`. With an
/// interval (not 0), batch `i` is scheduled at `T0 + OFFSET + i × INTERVAL` (wall clock, shared
/// by the writers) and its latency counts from then; without, batches run back to back from
/// `T0` and both figures are the batch's own time.
fn child(args: &[String]) -> Res<()> {
    let [url, pool_file, seed, batch, batches, interval, offset, warm] = args else {
        return Err(
            "child: expected URL POOL_FILE SEED BATCH BATCHES INTERVAL_NS OFFSET_NS WARM".into(),
        );
    };
    let warm: usize = warm.parse()?;
    let (seed, batch, batches): (u64, usize, usize) =
        (seed.parse()?, batch.parse()?, batches.parse()?);
    let (interval, offset): (u128, u128) = (interval.parse()?, offset.parse()?);
    let pool: Vec<EntryId> = std::fs::read_to_string(pool_file)?
        .lines()
        .map(|l| l.parse())
        .collect::<Result<_, _>>()?;
    let mem = writer_on(url)?;
    let mut workload = Workload::new(seed);
    let mut all: Vec<Vec<WriteRequest>> = Vec::with_capacity(batches);
    for _ in 0..batches {
        all.push(
            (0..batch)
                .map(|_| workload.next_request(&pool))
                .collect::<Result<_, _>>()?,
        );
    }
    // A warm-up write first, untimed (`--warm`): connections, prepared statements, the label
    // cache, as a running writer has them.
    mem.write_batch(
        (0..warm)
            .map(|_| workload.next_request(&pool))
            .collect::<Result<_, _>>()?,
    )?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let t0: u128 = match line.trim().split_once(' ') {
        Some(("go", t)) => t.parse()?,
        _ => return Err(format!("child: expected `go T0_NS`, got {line:?}").into()),
    };
    wait_until(t0);
    let start = now_ns();
    let cpu_before = cpu_ticks("self");
    let mut lats = Vec::with_capacity(batches);
    for (i, reqs) in all.into_iter().enumerate() {
        let scheduled = if interval == 0 {
            now_ns()
        } else {
            t0 + offset + i as u128 * interval
        };
        wait_until(scheduled);
        let t = Instant::now();
        mem.write_batch(reqs)?;
        let svc = t.elapsed().as_nanos();
        lats.push((now_ns().saturating_sub(scheduled).max(svc), svc));
    }
    let end = now_ns();
    let cpu = cpu_ticks("self") - cpu_before;
    for (l, svc) in lats {
        writeln!(out, "lat {l} {svc}")?;
    }
    writeln!(out, "cpu {cpu}")?;
    writeln!(out, "span {start} {end}")?;
    out.flush()?;
    // Wait until the parent has read the server's CPU time (this writer's server process
    // ends with it).
    std::io::stdin().read_line(&mut line)?;
    Ok(())
}

/// Sleeps until the wall clock reads `at_ns` (returns at once when it is past).
fn wait_until(at_ns: u128) {
    let now = now_ns();
    if at_ns > now {
        let ns = u64::try_from(at_ns - now).unwrap_or(u64::MAX);
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

/// User and system CPU time of process `pid` (`self` or a number), in clock ticks
/// (`/proc/PID/stat` fields 14 and 15), 0 when unreadable.
fn cpu_ticks(pid: &str) -> i64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name may hold spaces: the fields after it start past the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of the whole line are 11 and 12 after the name (field 3 is index 0).
    get(11) + get(12)
}

/// The server's processes: the postmaster (the parent of the backend serving `client`) and
/// its children.
fn server_pids(client: &mut postgres::Client) -> Res<Vec<String>> {
    let backend: i32 = client.query_one("SELECT pg_backend_pid()", &[])?.get(0);
    let ppid_of = |pid: &str| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = stat.rsplit_once(')')?.1.to_string();
        rest.split_whitespace().nth(1).map(str::to_string)
    };
    let postmaster = ppid_of(&backend.to_string()).ok_or("no postmaster")?;
    let mut pids = vec![postmaster.clone()];
    for e in std::fs::read_dir("/proc")?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.chars().all(|c| c.is_ascii_digit())
            && ppid_of(&name).as_deref() == Some(&postmaster)
        {
            pids.push(name);
        }
    }
    Ok(pids)
}

/// CPU ticks of the server's processes now (per pid, so that processes that ended are left
/// out of a difference rather than subtracted).
fn server_cpu(client: &mut postgres::Client) -> Res<std::collections::HashMap<String, i64>> {
    Ok(server_pids(client)?
        .into_iter()
        .map(|p| {
            let t = cpu_ticks(&p);
            (p, t)
        })
        .collect())
}

struct Options {
    writers: usize,
    batch: usize,
    batches: usize,
    rounds: usize,
    warm: usize,
    /// Entries per second offered by all writers together (open loop); `None`: back to back.
    rate: Option<f64>,
    settings: Vec<(String, String)>,
    statements: bool,
    series: bool,
    explain: Option<String>,
    db_sql: Vec<String>,
    after_sql: Vec<String>,
}

fn options(args: &[String]) -> Res<Options> {
    let mut o = Options {
        writers: 4,
        batch: 256,
        batches: 12,
        rounds: 1,
        warm: 256,
        rate: None,
        settings: Vec::new(),
        statements: false,
        series: false,
        explain: None,
        db_sql: Vec::new(),
        after_sql: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--writers" => o.writers = value()?.parse()?,
            "--batch" => o.batch = value()?.parse()?,
            "--batches" => o.batches = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--warm" => o.warm = value()?.parse()?,
            "--rate" => {
                let r: f64 = value()?.parse()?;
                if !(r.is_finite() && r > 0.0) {
                    return Err("--rate takes a positive number of entries per second".into());
                }
                o.rate = Some(r);
            }
            "--set" => {
                let v = value()?;
                let (k, v) = v.split_once('=').ok_or("--set takes name=value")?;
                o.settings.push((k.to_string(), v.to_string()));
            }
            "--statements" => o.statements = true,
            "--series" => o.series = true,
            "--explain" => o.explain = Some(value()?.clone()),
            "--db-sql" => o.db_sql.push(value()?.clone()),
            "--after-sql" => o.after_sql.push(value()?.clone()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(o)
}

fn parent(args: &[String]) -> Res<()> {
    let o = options(args)?;
    let cluster = memlineage_pgtest::Cluster::start().ok_or("PostgreSQL is not installed")?;
    let mut admin = cluster.admin();
    for (k, v) in &o.settings {
        admin.batch_execute(&format!("ALTER SYSTEM SET {k} = '{v}'"))?;
    }
    if o.statements {
        admin.batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")?;
    }
    if o.explain.is_some() {
        admin.batch_execute("LOAD 'auto_explain'")?;
        for (k, v) in [
            ("shared_preload_libraries", "auto_explain"),
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_buffers", "on"),
            ("auto_explain.log_wal", "on"),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_level", "warning"),
        ] {
            admin.batch_execute(&format!("ALTER SYSTEM SET {k} = '{v}'"))?;
        }
    }
    if o.statements || o.explain.is_some() || o.settings.iter().any(|(k, _)| k == "shared_buffers")
    {
        cluster.restart("fast");
        admin = cluster.admin();
    } else {
        admin.batch_execute("SELECT pg_reload_conf()")?;
    }
    let url = cluster.database();
    let store = StoreLocation::Postgres(url.clone()).open(OpenMode::Create)?;
    let (mem, pool, _) = fresh_memory_on(store, 1, 256)?;
    let dir = tempfile::tempdir()?;
    let pool_file = dir.path().join("pool");
    let text: String = pool.iter().map(|id| format!("{id}\n")).collect();
    std::fs::write(&pool_file, text)?;
    if o.statements {
        admin.batch_execute("CREATE EXTENSION pg_stat_statements")?;
    }
    if !o.db_sql.is_empty() {
        let mut db = postgres::Client::connect(&url, postgres::NoTls)?;
        for sql in &o.db_sql {
            db.batch_execute(sql)?;
        }
    }
    let before = mem.size()?;
    println!(
        "{} writers x {} batches of {}{}; settings {:?} {:?}; load {}",
        o.writers,
        o.batches,
        o.batch,
        o.rate.map_or_else(String::new, |r| format!(
            ", offered {r:.0} entries/s (open loop)"
        )),
        o.settings,
        o.db_sql,
        load()
    );
    for round in 0..o.rounds {
        if o.statements {
            admin.batch_execute(
                "SELECT pg_stat_statements_reset(); SELECT pg_stat_reset_shared('wal')",
            )?;
        }
        run_round(&o, &url, &pool_file, round)?;
        if o.statements {
            statements(&mut admin)?;
        }
    }
    let mem = writer_on(&url)?;
    let size = mem.size()?;
    let expected = before + (o.rounds * o.writers * (o.batches * o.batch + o.warm)) as u64;
    if size != expected {
        return Err(format!("the log holds {size} entries, expected {expected}").into());
    }
    if !o.after_sql.is_empty() {
        let mut db = postgres::Client::connect(&url, postgres::NoTls)?;
        for sql in &o.after_sql {
            let t = Instant::now();
            let rows = db.simple_query(sql)?;
            let shown: Vec<String> = rows
                .iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => Some(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL"))
                            .collect::<Vec<_>>()
                            .join("|"),
                    ),
                    _ => None,
                })
                .take(20)
                .collect();
            println!(
                "after-sql {}: {sql} -> {shown:?}",
                fmt_ns(t.elapsed().as_nanos() as f64)
            );
        }
    }
    if let Some(to) = &o.explain {
        std::fs::copy(cluster.log_file(), to)?;
    }
    let report = mem.verify(&mut |_, _| {})?;
    if !report.problems.is_empty() {
        return Err(format!("verify found problems: {:?}", report.problems).into());
    }
    println!("log of {size} entries: dense, verify clean");
    Ok(())
}

fn run_round(o: &Options, url: &str, pool_file: &std::path::Path, round: usize) -> Res<()> {
    let exe = std::env::current_exe()?;
    // A writer's batches are `writers × batch / rate` apart, the writers spread evenly
    // within that interval.
    let interval = o
        .rate
        .map_or(0u128, |r| ((o.writers * o.batch) as f64 / r * 1e9) as u128);
    let mut children = Vec::new();
    for w in 0..o.writers {
        let offset = interval * w as u128 / o.writers as u128;
        let seed = 100 + (round * o.writers + w) as u64;
        let mut c = Command::new(&exe)
            .arg("--child")
            .arg(url)
            .arg(pool_file)
            .arg(seed.to_string())
            .arg(o.batch.to_string())
            .arg(o.batches.to_string())
            .arg(interval.to_string())
            .arg(offset.to_string())
            .arg(o.warm.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut out = BufReader::new(c.stdout.take().ok_or("child stdout")?);
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ready" {
            return Err(format!("writer {w} did not start: {line:?}").into());
        }
        children.push((c, out));
    }
    let mut admin = postgres::Client::connect(url, postgres::NoTls)?;
    let server_before = server_cpu(&mut admin)?;
    // A start a little ahead, so that every writer has its `go` before it.
    let t0 = now_ns() + 50_000_000;
    for (c, _) in &mut children {
        let stdin = c.stdin.as_mut().ok_or("child stdin")?;
        writeln!(stdin, "go {t0}")?;
        stdin.flush()?;
    }
    let (mut lats, mut svcs, mut first, mut last, mut client_cpu) =
        (Vec::new(), Vec::new(), u128::MAX, 0u128, 0i64);
    let mut series: Vec<Vec<u128>> = Vec::new();
    for (_, out) in &mut children {
        series.push(Vec::new());
        loop {
            let mut line = String::new();
            if out.read_line(&mut line)? == 0 {
                return Err("a writer ended early".into());
            }
            let f: Vec<&str> = line.trim().split(' ').collect();
            match f.as_slice() {
                ["lat", ns, svc] => {
                    lats.push(ns.parse::<u128>()?);
                    if let Some(s) = series.last_mut() {
                        s.push(ns.parse::<u128>()?);
                    }
                    svcs.push(svc.parse::<u128>()?);
                }
                ["cpu", t] => client_cpu += t.parse::<i64>()?,
                ["span", s, e] => {
                    first = first.min(s.parse()?);
                    last = last.max(e.parse()?);
                    break;
                }
                _ => return Err(format!("writer said {line:?}").into()),
            }
        }
    }
    let server_after = server_cpu(&mut admin)?;
    let server: i64 = server_after
        .iter()
        .map(|(p, t)| t - server_before.get(p).copied().unwrap_or(0))
        .sum();
    for (mut c, _) in children {
        if let Some(stdin) = c.stdin.as_mut() {
            writeln!(stdin, "bye")?;
        }
        if !c.wait()?.success() {
            return Err("a writer failed".into());
        }
    }
    if o.series {
        // Batch `i` of writer `w` was scheduled at `offset(w) + i × interval`: one line per
        // slot, in schedule order, the writers' latencies in ms.
        for i in 0..o.batches {
            let row: Vec<String> = series
                .iter()
                .map(|s| {
                    s.get(i)
                        .map_or("-".into(), |ns| format!("{:.0}", *ns as f64 / 1e6))
                })
                .collect();
            println!("  slot {i:>3}: {}", row.join(" "));
        }
    }
    lats.sort_unstable();
    svcs.sort_unstable();
    let pct_of = |v: &[u128], q: f64| {
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[i] as f64
    };
    let pct = |q: f64| pct_of(&lats, q);
    let entries = (o.writers * o.batches * o.batch) as f64;
    let secs = (last - first) as f64 / 1e9;
    // Clock ticks are 10 ms (USER_HZ 100).
    let per_entry = |ticks: i64| ticks as f64 * 1e7 / entries;
    let svc = if o.rate.is_some() {
        format!(
            " (from the actual start: p50 {} p99 {})",
            fmt_ns(pct_of(&svcs, 0.50)),
            fmt_ns(pct_of(&svcs, 0.99))
        )
    } else {
        String::new()
    };
    println!(
        "round {round}: {:.0} entries/s ({} entries in {:.2} s), per batch p50 {} p99 {} max {}{svc} ({} batches); CPU per entry: writers {}, server {}; load {}",
        entries / secs,
        entries,
        secs,
        fmt_ns(pct(0.50)),
        fmt_ns(pct(0.99)),
        fmt_ns(pct(1.0)),
        lats.len(),
        fmt_ns(per_entry(client_cpu)),
        fmt_ns(per_entry(server)),
        load()
    );
    Ok(())
}

/// Where the server spent its time, by statement, and the WAL it wrote.
fn statements(admin: &mut postgres::Client) -> Res<()> {
    let w = admin.query_one(
        "SELECT wal_records, wal_fpi, wal_bytes::float8, wal_write, wal_sync FROM pg_stat_wal",
        &[],
    )?;
    let (records, fpi, bytes, writes, syncs): (i64, i64, f64, i64, i64) =
        (w.get(0), w.get(1), w.get(2), w.get(3), w.get(4));
    println!(
        "  WAL: {records} records, {fpi} full-page images, {:.0} KiB, {writes} writes, {syncs} syncs",
        bytes / 1024.0
    );
    let rows = admin.query(
        "SELECT calls, total_exec_time, mean_exec_time, wal_bytes::float8, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) \
         FROM pg_stat_statements WHERE calls > 0 ORDER BY total_exec_time DESC LIMIT 14",
        &[],
    )?;
    println!(
        "  {:>6} {:>10} {:>9} {:>10}  statement",
        "calls", "total ms", "mean ms", "WAL KiB"
    );
    for r in rows {
        let (calls, total, mean): (i64, f64, f64) = (r.get(0), r.get(1), r.get(2));
        let (wal, q): (f64, String) = (r.get(3), r.get(4));
        println!(
            "  {calls:>6} {total:>10.1} {mean:>9.2} {:>10.0}  {q}",
            wal / 1024.0
        );
    }
    Ok(())
}

/// The load average, for the record.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
