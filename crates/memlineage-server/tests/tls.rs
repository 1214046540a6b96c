//! TLS: given a certificate and key, the service speaks HTTPS (rustls) and a client that trusts
//! the certificate's issuer gets the same answers; plain HTTP to it fails.

mod common;

use common::{TestServer, client};
use memlineage::StoreLocation;
use memlineage_server::TlsFiles;

#[test]
fn https_with_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let cert_pem = cert.cert.pem();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, &cert_pem).unwrap();
    std::fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    let s = TestServer::start_with(|c| {
        c.tls = Some(TlsFiles {
            cert: cert_file.clone(),
            key: key_file.clone(),
        })
    })
    .with_client(client(Some(&cert_pem)));
    assert!(s.base.starts_with("https://"));
    let (st, w) = s.call("GET", "/v1/whoami", Some(&s.agent), None);
    assert_eq!(st, 200, "{w}");
    assert_eq!(w["principal"], "agent");
    let (st, e) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.agent),
        Some(serde_json::json!({"content": "over TLS"})),
    );
    assert_eq!(st, 201, "{e}");
    // Plain HTTP to the TLS port gets no answer.
    let plain = s.base.replacen("https://", "http://", 1);
    let r = client(None).get(format!("{plain}/healthz")).call();
    assert!(r.is_err() || r.is_ok_and(|r| r.status() != 200));
}

#[test]
fn a_bad_certificate_file_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, "not a certificate").unwrap();
    std::fs::write(&key_file, "not a key").unwrap();
    let prepared = memlineage_server::bench::prepare(dir.path()).unwrap();
    let mut config = memlineage_server::Config::new(
        StoreLocation::Sqlite(prepared.db.clone()),
        "127.0.0.1:0".parse().unwrap(),
    );
    config.tls = Some(TlsFiles {
        cert: cert_file,
        key: key_file,
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    let keys = std::sync::Arc::new(memlineage_server::FileKeys::new(&prepared.keys_dir));
    let err = rt
        .block_on(memlineage_server::run(config, keys, |_, _| {}, async {}))
        .unwrap_err();
    assert!(err.contains("TLS certificate"), "{err}");
}
