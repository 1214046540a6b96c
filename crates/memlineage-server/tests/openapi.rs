//! The OpenAPI 3.1 document: served at /openapi.json, it names every route the router serves,
//! and `openapi-spec-validator` (PyPI; a validator this project did not write) accepts it.
//! Without the validator the last check says so and passes, except under `CI=1`.

mod common;

use common::TestServer;
use serde_json::Value;

#[test]
fn the_document_is_openapi_3_1_and_lists_every_route() {
    let s = TestServer::start();
    let (st, doc) = s.call("GET", "/openapi.json", None, None);
    assert_eq!(st, 200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/healthz",
        "/readyz",
        "/v1/whoami",
        "/v1/principals",
        "/v1/principals/{name}/rotate",
        "/v1/principals/{name}/revoke",
        "/v1/entries",
        "/v1/entries/batch",
        "/v1/entries/{id}",
        "/v1/entries/{id}/proof",
        "/v1/entries/{id}/lineage",
        "/v1/entries/{id}/forget",
        "/v1/log",
        "/v1/consistency",
        "/v1/checkpoint",
        "/v1/distrust",
        "/v1/search",
        "/v1/recall",
        "/v1/gate",
        "/v1/verify",
        "/v1/verify/{job}",
    ] {
        assert!(paths.contains_key(p), "{p} is missing from the document");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        Value::String("bearer".into())
    );
    // The same text the CLI prints with `serve --openapi`.
    assert_eq!(
        serde_json::from_str::<Value>(memlineage_server::openapi::json()).unwrap(),
        doc
    );
}

#[test]
fn openapi_spec_validator_accepts_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, memlineage_server::openapi::json()).unwrap();
    // scripts/test.sh installs it in a venv and names it; else the one on PATH.
    let validator = std::env::var("MEMLINEAGE_OPENAPI_VALIDATOR")
        .unwrap_or_else(|_| "openapi-spec-validator".to_string());
    let run = std::process::Command::new(&validator).arg(&file).output();
    match run {
        Ok(out) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.status.success(),
                "openapi-spec-validator rejects the document:\n{text}"
            );
            assert!(text.contains("OK"), "{text}");
        }
        Err(e) => {
            assert!(
                std::env::var("CI").is_err(),
                "{validator} is not installed ({e}); scripts/test.sh installs it (scripts/openapi-validator.sh)"
            );
            eprintln!(
                "skipped: {validator} is not installed ({e}): run scripts/openapi-validator.sh or pip install openapi-spec-validator"
            );
        }
    }
}
