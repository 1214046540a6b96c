//! Issue 12: witnesses over the HTTP interface of C2SP tlog-witness, with real peers on
//! loopback: the witness service (`memlineage witness serve`) cosigning a log's checkpoints
//! through the log's HTTP client; refusing a fork (422) and a rollback (409 naming a larger
//! size); a 409 answered by one retry from the size the witness names; malformed, oversized and
//! misrouted requests answered 400/413/404/405 with a message; a dead or silent witness
//! reported, with the k-of-n policy failing closed; and the bytes on the wire checked against
//! the spec's framing; and an `https://` witness under a private CA, reached only with that
//! CA as the roots (`WitnessRoots::from_pem`).

use memlineage::transparency::{
    FileWitness, HttpTimeouts, HttpWitness, WitnessRoots, WitnessTransport, WitnessTransports,
};
use memlineage::{Memory, PrincipalName, Settings, SqliteStore, StepClock, WriteRequest};
use memlineage_core::checkpoint::{CosignatureVerifier, NoteVerifier};
use memlineage_core::entry::EntryKind;
use memlineage_core::witness::{AddCheckpoint, Policy};
use memlineage_server::TlsFiles;
use memlineage_server::witness::{WitnessConfig, run_witness};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const ORIGIN: &str = "test.local/witnessed";

fn key(seed: u8) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[seed; 32])
}

fn name(s: &str) -> PrincipalName {
    PrincipalName::new(s).unwrap()
}

/// A log in memory whose operator key is `key(1)`, with `n` entries by `agent` written after
/// its genesis record, each text prefixed by `branch`.
fn log(branch: &str, n: usize) -> Memory {
    let mem = Memory::init(
        SqliteStore::in_memory().unwrap(),
        Settings::with_origin(ORIGIN),
        &name("operator"),
        key(1),
    )
    .unwrap()
    .with_clock(StepClock::new(1_800_000_000_000, 1000));
    mem.add_principal(
        &name("agent"),
        memlineage_core::label::TrustClass::Trusted,
        &key(2).verifying_key(),
    )
    .unwrap();
    mem.keys().insert(&name("agent"), key(2));
    append(&mem, branch, n);
    mem
}

fn append(mem: &Memory, branch: &str, n: usize) {
    for i in 0..n {
        mem.write(WriteRequest::new(
            &name("agent"),
            EntryKind::Observation,
            format!("{branch} {i}"),
        ))
        .unwrap();
    }
}

/// A witness directory trusting the log's key.
fn witness_dir(root: &Path, n: u8) -> (std::path::PathBuf, CosignatureVerifier) {
    let dir = root.join(format!("w{n}"));
    let mut w = FileWitness::init(&dir, &format!("w{n}.example/witness"), key(100 + n)).unwrap();
    w.add_log(NoteVerifier::new(ORIGIN, key(1).verifying_key()).unwrap())
        .unwrap();
    (dir, w.verifier().clone())
}

/// The witness service on a loopback port of its own runtime, until dropped.
struct Served {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl Served {
    fn start(dir: &Path) -> Served {
        Served::start_with(dir, None)
    }

    fn start_with(dir: &Path, tls: Option<TlsFiles>) -> Served {
        let mut config = WitnessConfig::new(dir.to_path_buf(), "127.0.0.1:0".parse().unwrap());
        config.tls = tls;
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(run_witness(
                config,
                move |addr, _| {
                    let _ = addr_tx.send(addr);
                },
                async move {
                    let _ = stopped.await;
                },
            ))
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the witness service did not start");
        Served {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn https_url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn policy(witnesses: &[(&str, &CosignatureVerifier, String)], quorum: &str) -> Policy {
    let mut text = String::new();
    for (n, v, url) in witnesses {
        text.push_str(&format!("witness {n} {v} {url}\n"));
    }
    text.push_str(quorum);
    Policy::parse(&text).unwrap()
}

fn quick() -> HttpTimeouts {
    HttpTimeouts {
        connect: Duration::from_secs(2),
        total: Duration::from_secs(2),
    }
}

/// A plain HTTP client that returns every status (ureq, not written by this project).
fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .new_agent()
}

/// Status, content type and body of a raw POST to the witness.
fn post(base: &str, path: &str, body: &[u8]) -> (u16, String, String) {
    let mut r = client().post(&format!("{base}{path}")).send(body).unwrap();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        r.status().as_u16(),
        ct,
        r.body_mut().read_to_string().unwrap(),
    )
}

#[test]
fn http_witness_cosigns_a_logs_checkpoints_and_serves_them_to_monitors() {
    let root = tempfile::tempdir().unwrap();
    let (dir, v) = witness_dir(root.path(), 1);
    let served = Served::start(&dir);
    let policy = policy(&[("w1", &v, served.url())], "quorum w1\n");
    let mem = log("main", 3);

    let round = mem.checkpoint_and_witness(&policy, quick()).unwrap();
    assert!(round.quorum_met, "{:?}", round.answers);
    assert_eq!(round.answers[0].status, 200);
    assert_eq!(round.answers[0].old_size, 0);
    assert!(round.answers[0].timestamp.unwrap() > 1_700_000_000);
    assert!(round.not_asked.is_empty());
    // The cosignature is kept beside the checkpoint, and a reader's policy accepts it.
    let (cp, note) = mem.witnessed_checkpoint(&policy).unwrap().unwrap();
    assert_eq!(cp.size, round.checkpoint.size);
    assert!(v.verify(&note).is_ok());

    // The next round starts from the size the witness cosigned: no 409 on the way.
    append(&mem, "main", 4);
    let next = mem.checkpoint_and_witness(&policy, quick()).unwrap();
    assert!(next.quorum_met, "{:?}", next.answers);
    assert_eq!(next.answers[0].old_size, cp.size);
    assert!(next.checkpoint.size > cp.size);

    // The spec's monitor retrieval: GET /<sha256(origin)>/checkpoint.
    let hash = hex_sha256(ORIGIN);
    let mut r = client()
        .get(&format!("{}/{hash}/checkpoint", served.url()))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let served_note = r.body_mut().read_to_string().unwrap();
    assert!(served_note.starts_with(&format!("{ORIGIN}\n{}\n", next.checkpoint.size)));
    assert!(v.verify(&served_note).is_ok());
    let mut none = client()
        .get(&format!("{}/{}/checkpoint", served.url(), "0".repeat(64)))
        .call()
        .unwrap();
    assert_eq!(none.status().as_u16(), 404);
    assert!(
        none.body_mut()
            .read_to_string()
            .unwrap()
            .contains("has not cosigned")
    );
}

#[test]
fn http_witness_refuses_a_fork_with_422_and_a_rollback_with_409() {
    let root = tempfile::tempdir().unwrap();
    let (dir, v) = witness_dir(root.path(), 1);
    let served = Served::start(&dir);
    let policy = policy(&[("w1", &v, served.url())], "quorum w1\n");
    let honest = log("honest", 4);
    let witnessed = honest.checkpoint_and_witness(&policy, quick()).unwrap();
    assert!(witnessed.quorum_met);

    // Same operator key, same origin, a different history of the same size: a fork. The
    // forked log never saw the cosignature, so it starts from 0, is told the witness's size
    // (409), retries with a proof from there, and the proof does not verify (422).
    let fork = log("forked", 4);
    let round = fork.checkpoint_and_witness(&policy, quick()).unwrap();
    assert_eq!(round.checkpoint.size, witnessed.checkpoint.size);
    assert_ne!(round.checkpoint.root, witnessed.checkpoint.root);
    assert!(!round.quorum_met);
    let a = &round.answers[0];
    assert_eq!(
        (a.status, a.old_size),
        (422, witnessed.checkpoint.size),
        "{a:?}"
    );
    assert!(a.message.contains("refusing to cosign"), "{a:?}");
    assert!(fork.witnessed_checkpoint(&policy).unwrap().is_none());

    // A smaller tree under the same key: the witness cosigned more than this log holds.
    let rolled_back = log("honest", 2);
    let round = rolled_back
        .checkpoint_and_witness(&policy, quick())
        .unwrap();
    assert!(!round.quorum_met);
    let a = &round.answers[0];
    assert_eq!(a.status, 409, "{a:?}");
    assert!(a.message.contains("the log went back"), "{a:?}");
    // Evidence of the fork was kept by the witness.
    assert_eq!(std::fs::read_dir(dir.join("evidence")).unwrap().count(), 1);
}

#[test]
fn a_409_is_answered_by_one_retry_from_the_size_the_witness_names() {
    let root = tempfile::tempdir().unwrap();
    let (dir, v) = witness_dir(root.path(), 1);
    let served = Served::start(&dir);
    let policy = policy(&[("w1", &v, served.url())], "quorum w1\n");
    let mem = log("main", 3);
    // The witness cosigns a checkpoint whose answer the log never stored (lost on the way).
    let note = mem.checkpoint().unwrap();
    let size = mem.size().unwrap();
    let http = HttpWitness::new(&served.url(), quick()).unwrap();
    let lost = http
        .add_checkpoint(mem.witness_request(&note, 0).unwrap().as_bytes())
        .unwrap();
    assert_eq!(lost.status, 200);
    // The same request again: the witness has moved on, and says where it is.
    let conflict = http
        .add_checkpoint(mem.witness_request(&note, 0).unwrap().as_bytes())
        .unwrap();
    assert_eq!(conflict.status, 409);
    assert_eq!(conflict.content_type, "text/x.tlog.size");
    assert_eq!(conflict.body, format!("{size}\n"));

    append(&mem, "main", 2);
    let round = mem.checkpoint_and_witness(&policy, quick()).unwrap();
    assert!(round.quorum_met, "{:?}", round.answers);
    assert_eq!(round.answers[0].status, 200);
    assert_eq!(
        round.answers[0].old_size, size,
        "retried from the size named"
    );
}

#[test]
fn bad_requests_get_a_status_and_a_message_never_a_crash() {
    let root = tempfile::tempdir().unwrap();
    let (dir, _) = witness_dir(root.path(), 1);
    let served = Served::start(&dir);
    let base = served.url();
    let mem = log("main", 2);
    let note = mem.checkpoint().unwrap();
    let good = mem.witness_request(&note, 0).unwrap();

    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("not the format", b"hello".to_vec(), 400, "malformed"),
        ("not UTF-8", vec![0xff, 0xfe, b'\n'], 400, "not UTF-8"),
        (
            "leading zero",
            b"old 01\n\nx\n".to_vec(),
            400,
            "leading zeros",
        ),
        (
            "old size beyond the checkpoint",
            good.replacen("old 0\n", "old 99\n", 1).into_bytes(),
            400,
            "larger than the checkpoint",
        ),
        (
            "unknown origin",
            good.replace(ORIGIN, "other.example/log").into_bytes(),
            404,
            "unknown log origin",
        ),
        (
            "no signature by a trusted key",
            good.replacen(
                &format!("\n\u{2014} {ORIGIN} "),
                "\n\u{2014} someone.else/key ",
                1,
            )
            .into_bytes(),
            403,
            "not signed by the log",
        ),
        (
            "oversized",
            format!("old 0\n\n{}", "a".repeat(70 * 1024)).into_bytes(),
            413,
            "larger than 65536 bytes",
        ),
    ];
    for (what, body, status, says) in cases {
        let (got, ct, text) = post(&base, "/add-checkpoint", &body);
        assert_eq!(got, status, "{what}: {text}");
        assert!(ct.starts_with("text/plain"), "{what}: {ct}");
        assert!(text.contains(says), "{what}: {text}");
    }
    // A tampered root in the signed body (the signature no longer verifies).
    let lines: Vec<&str> = good.split('\n').collect();
    let root_line = lines[4];
    let flipped = if root_line.starts_with('A') { "B" } else { "A" };
    let forged = good.replacen(root_line, &format!("{flipped}{}", &root_line[1..]), 1);
    let (got, _, text) = post(&base, "/add-checkpoint", forged.as_bytes());
    assert_eq!(got, 403, "{text}");

    let (got, _, text) = post(&base, "/nope", b"");
    assert_eq!(got, 404, "{text}");
    assert!(text.contains("POST /add-checkpoint"), "{text}");
    let mut r = client()
        .get(&format!("{base}/add-checkpoint"))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert!(r.body_mut().read_to_string().unwrap().contains("POST"));

    // After all that, the witness still works and recorded nothing.
    let (got, _, text) = post(&base, "/add-checkpoint", good.as_bytes());
    assert_eq!(got, 200, "{text}");
}

#[test]
fn dead_and_silent_witnesses_are_reported_and_the_quorum_fails_closed() {
    let root = tempfile::tempdir().unwrap();
    let (dir1, v1) = witness_dir(root.path(), 1);
    let (_, v2) = witness_dir(root.path(), 2);
    let (_, v3) = witness_dir(root.path(), 3);
    let served = Served::start(&dir1);
    // w2: nothing listens on its port (connection refused).
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // w3: accepts the connection and never answers (the client's deadline ends it).
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let hold = std::thread::spawn(move || {
        let (conn, _) = silent.accept().unwrap();
        std::thread::sleep(Duration::from_secs(4));
        drop(conn);
    });
    let ws = [
        ("w1", &v1, served.url()),
        ("w2", &v2, format!("http://{dead}")),
        ("w3", &v3, format!("http://{silent_addr}")),
    ];
    let all = policy(&ws, "group all 3 w1 w2 w3\nquorum all\n");
    let mem = log("main", 2);
    let started = Instant::now();
    let round = mem.checkpoint_and_witness(&all, quick()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "timeouts hold");
    assert!(!round.quorum_met, "2 of 3 did not cosign: not witnessed");
    let by = |n: &str| round.answers.iter().find(|a| a.name == n).unwrap();
    assert_eq!(by("w1").status, 200);
    for n in ["w2", "w3"] {
        let a = by(n);
        assert_eq!(a.status, 0, "{a:?}");
        assert!(a.message.starts_with("no answer: witness http://"), "{a:?}");
    }
    assert!(
        by("w3").message.to_lowercase().contains("timeout")
            || by("w3").message.to_lowercase().contains("timed out"),
        "{:?}",
        by("w3")
    );
    hold.join().unwrap();
    // The cosignature that came is kept; 1 of 3 is witnessed under a 1-of-3 policy, and a
    // reader requiring 3 of 3 finds no witnessed checkpoint.
    let any = policy(&ws, "group any 1 w1 w2 w3\nquorum any\n");
    assert!(mem.witnessed_checkpoint(&any).unwrap().is_some());
    assert!(mem.witnessed_checkpoint(&all).unwrap().is_none());
    // A witness without a URL is listed as not asked.
    let no_url = Policy::parse(&format!("witness w1 {v1}\nquorum w1\n")).unwrap();
    let round = mem.checkpoint_and_witness(&no_url, quick()).unwrap();
    assert_eq!(round.not_asked, vec!["w1".to_string()]);
    assert!(!round.quorum_met);
}

/// The bytes on the wire, both ways, against C2SP tlog-witness §add-checkpoint: a recording
/// relay between the log's client and the real witness service.
#[test]
fn the_bytes_on_the_wire_follow_the_spec() {
    let root = tempfile::tempdir().unwrap();
    let (dir, v) = witness_dir(root.path(), 1);
    let served = Served::start(&dir);
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let witness_addr = served.addr;
    let recorder = std::thread::spawn(move || {
        let mut exchanges = Vec::new();
        for _ in 0..2 {
            let (mut conn, _) = relay.accept().unwrap();
            let request = read_request(&mut conn);
            let mut upstream = TcpStream::connect(witness_addr).unwrap();
            upstream
                .write_all(&with_connection_close(&request))
                .unwrap();
            let mut response = Vec::new();
            upstream.read_to_end(&mut response).unwrap();
            conn.write_all(&response).unwrap();
            exchanges.push((request, response));
        }
        exchanges
    });
    let mem = log("main", 5);
    let note = mem.checkpoint().unwrap();
    let http = HttpWitness::new(&format!("http://{relay_addr}/"), quick()).unwrap();
    let body = mem.witness_request(&note, 0).unwrap();
    let ok = http.add_checkpoint(body.as_bytes()).unwrap();
    let again = http.add_checkpoint(body.as_bytes()).unwrap();
    let exchanges = recorder.join().unwrap();

    // The request: POST <prefix>/add-checkpoint, the body exactly `old N\n`, proof lines, an
    // empty line and the checkpoint note.
    let (req, resp) = &exchanges[0];
    let (head, sent) = split_http(req);
    assert!(
        head.starts_with("POST /add-checkpoint HTTP/1.1\r\n"),
        "{head}"
    );
    assert_eq!(sent, body.as_bytes());
    let parsed = AddCheckpoint::parse(sent).unwrap();
    assert_eq!(parsed.old_size, 0);
    assert!(parsed.proof.is_empty(), "no proof from size 0");
    assert_eq!(parsed.checkpoint, note);
    // The answer: 200 and one or more signature lines, each `— <name> <base64>\n`.
    let (head, answer) = split_http(resp);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let answer = std::str::from_utf8(answer).unwrap();
    assert!(answer.ends_with('\n'));
    for line in answer.lines() {
        assert!(line.starts_with("\u{2014} w1.example/witness "), "{line}");
    }
    assert_eq!(ok.body, answer);
    assert!(v.verify(&format!("{note}{answer}")).is_ok());
    // The conflict: 409, Content-Type text/x.tlog.size, the size in decimal and a newline.
    let (head, answer) = split_http(&exchanges[1].1);
    assert!(head.starts_with("HTTP/1.1 409 Conflict\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\ncontent-type: text/x.tlog.size\r\n"),
        "{head}"
    );
    assert_eq!(answer, format!("{}\n", parsed_size(&note)).as_bytes());
    assert_eq!(again.status, 409);
}

/// A private CA (PEM) and, in `dir`, the witness's certificate for `localhost` and 127.0.0.1
/// that it issued, with its key.
fn private_ca(dir: &Path, org: &str) -> (String, TlsFiles) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::OrganizationName, org);
    let ca_key = KeyPair::generate().unwrap();
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_pem = leaf.signed_by(&leaf_key, &issuer).unwrap().pem();
    let files = TlsFiles {
        cert: dir.join(format!("{org}-cert.pem")),
        key: dir.join(format!("{org}-key.pem")),
    };
    std::fs::write(&files.cert, leaf_pem).unwrap();
    std::fs::write(&files.key, leaf_key.serialize_pem()).unwrap();
    (ca_pem, files)
}

#[test]
fn an_https_witness_under_a_private_ca_is_reached_with_that_ca_only() {
    let root = tempfile::tempdir().unwrap();
    let (dir, v) = witness_dir(root.path(), 1);
    let (ca_pem, tls) = private_ca(root.path(), "witness-ca");
    let (other_ca_pem, _) = private_ca(root.path(), "other-ca");
    let served = Served::start_with(&dir, Some(tls));
    let policy = policy(&[("w1", &v, served.https_url())], "quorum w1\n");
    let mem = log("main", 3);

    // Mozilla's roots do not vouch for a private CA: the witness is reported unreachable
    // (status 0, naming the certificate problem) and the quorum fails closed.
    let round = mem.checkpoint_and_witness(&policy, quick()).unwrap();
    assert!(!round.quorum_met);
    assert_eq!(round.answers[0].status, 0);
    assert!(
        round.answers[0]
            .message
            .to_lowercase()
            .contains("certificate")
            || round.answers[0].message.to_lowercase().contains("issuer"),
        "{}",
        round.answers[0].message
    );
    // Another private CA does not either.
    let other = WitnessRoots::from_pem(other_ca_pem.as_bytes(), "other.pem").unwrap();
    let note = mem.checkpoint().unwrap();
    let transports = WitnessTransports::for_policy_with_roots(&policy, quick(), &other);
    let round = mem
        .witness_checkpoint(&note, &policy, &transports.as_refs())
        .unwrap();
    assert!(!round.quorum_met);
    assert_eq!(round.answers[0].status, 0);

    // The witness's own CA: cosigned over TLS, and kept beside the checkpoint.
    let roots = WitnessRoots::from_pem(ca_pem.as_bytes(), "ca.pem").unwrap();
    assert_eq!(roots.len(), 1);
    let transports = WitnessTransports::for_policy_with_roots(&policy, quick(), &roots);
    let round = mem
        .witness_checkpoint(&note, &policy, &transports.as_refs())
        .unwrap();
    assert!(round.quorum_met, "{:?}", round.answers);
    assert_eq!(round.answers[0].status, 200);
    let (cp, cosigned) = mem.witnessed_checkpoint(&policy).unwrap().unwrap();
    assert_eq!(cp.size, round.checkpoint.size);
    assert!(v.verify(&cosigned).is_ok());
}

fn parsed_size(note: &str) -> u64 {
    note.lines().nth(1).unwrap().parse().unwrap()
}

/// One HTTP/1.1 request with a Content-Length body, read whole.
fn read_request(conn: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn.read(&mut chunk).unwrap();
        assert!(n > 0, "the client closed before sending a whole request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .expect("a Content-Length header")
                .trim()
                .parse()
                .unwrap();
            if buf.len() >= end + 4 + len {
                return buf;
            }
        }
    }
}

fn with_connection_close(request: &[u8]) -> Vec<u8> {
    let end = find(request, b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&request[..end]);
    let kept: Vec<&str> = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    let mut out = format!("{}\r\nconnection: close\r\n\r\n", kept.join("\r\n")).into_bytes();
    out.extend_from_slice(&request[end + 4..]);
    out
}

fn split_http(message: &[u8]) -> (String, &[u8]) {
    let end = find(message, b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&message[..end + 2]).into_owned(),
        &message[end + 4..],
    )
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn hex_sha256(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}
