//! `memlineage serve`: the memory service over HTTP (`docs/service.md`), and `memlineage
//! token`: the bearer tokens its clients present. Built with the CLI's default `server`
//! feature; the service itself is the `memlineage-server` crate.

use super::{open, parse_name, parse_scope};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{Args, Subcommand};
use memlineage::PrincipalName;
use memlineage_core::entry::Scope;
use memlineage_core::label::TrustClass;
use memlineage_server::config::tokens_beside;
use memlineage_server::tokens::{TOKENS_FILE, TokenFileAt};
use memlineage_server::{Config, FileKeys, Limits, TlsFiles};
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `memlineage serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8446")]
    listen: SocketAddr,
    /// TLS certificate chain (PEM); with --tls-key, the service speaks HTTPS only.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The token file (default: tokens.json beside the store).
    #[arg(long, value_name = "FILE")]
    tokens: Option<PathBuf>,
    /// A gate policy clients may name (`"policy_name": NAME`), repeatable.
    #[arg(long = "policy", value_name = "NAME=FILE")]
    policies: Vec<String>,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    max_body: usize,
    /// Most entries in one batch write.
    #[arg(long, default_value_t = Limits::default().max_batch)]
    max_batch: usize,
    /// Longest search or repair query in bytes.
    #[arg(long, default_value_t = Limits::default().max_query_bytes)]
    max_query: usize,
    /// Most ids one request may name (search limit, recall, gate context, parents).
    #[arg(long, default_value_t = Limits::default().max_ids)]
    max_ids: usize,
    /// How long a request may take before it is answered 503 `timeout` (nothing written):
    /// seconds (`30`), or a number and a unit `ms`, `s` or `m` (`500ms`, `2m`).
    #[arg(long, visible_alias = "request-timeout", value_name = "DURATION", default_value = "30",
        value_parser = parse_timeout)]
    timeout: Duration,
    /// Seconds shutdown waits for requests in flight.
    #[arg(long, default_value_t = 30)]
    shutdown_grace: u64,
    /// Log lines as text instead of JSON.
    #[arg(long)]
    text_logs: bool,
    /// Semantic and hybrid search (`"mode"` in `POST /v1/search`): attach the embedding
    /// model all-MiniLM-L6-v2 — `default` (where scripts/fetch-embedding-model.sh installs
    /// it, or $MEMLINEAGE_EMBEDDING_MODEL) or its directory. A background thread indexes the
    /// log; the index is saved beside the store (`<store file>.vectors/`). Needs the cargo
    /// feature `models`. Without it the service searches lexically only.
    #[arg(long, value_name = "default|DIR")]
    embedding_model: Option<PathBuf>,
    /// Print the OpenAPI 3.1 document and exit.
    #[arg(long)]
    openapi: bool,
}

/// Runs `serve` until SIGTERM or Ctrl-C.
pub fn serve(a: ServeArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    if a.openapi {
        println!("{}", memlineage_server::openapi::json());
        return Ok(Outcome::ok(serde_json::Value::Null, ""));
    }
    memlineage_server::telemetry::init_logs(!a.text_logs);
    // Opened once here for the CLI's message when there is no store (the service opens its
    // own handle).
    drop(open(&ctx.paths)?);
    let mut policies = Vec::new();
    for p in &a.policies {
        let (name, file) = p
            .split_once('=')
            .ok_or_else(|| CliError::usage(format!("--policy `{p}`: expected NAME=FILE")))?;
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::usage(format!("--policy {name}: cannot read {file}: {e}")))?;
        policies.push((name.to_string(), text));
    }
    let mut config = Config::new(ctx.paths.location.clone(), a.listen);
    config.keys_dir = ctx.paths.keys.clone();
    config.signer = ctx.paths.signer.clone();
    config.signer_timeout = ctx.paths.signer_timeout;
    config.tokens_file = a.tokens.unwrap_or_else(|| default_tokens(ctx));
    config.tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    config.limits = Limits {
        max_body_bytes: a.max_body,
        max_batch: a.max_batch,
        max_query_bytes: a.max_query,
        max_ids: a.max_ids,
        request_timeout: a.timeout,
        ..Limits::default()
    };
    config.policies = policies;
    if let Some(model) = &a.embedding_model {
        config.semantic = Some(semantic_search(model, ctx)?);
    }
    config.shutdown_grace = Duration::from_secs(a.shutdown_grace);
    let keys = Arc::new(FileKeys::new(&config.keys_dir));
    let json_mode = ctx.json;
    memlineage_server::server::run_blocking(config, keys, move |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        if json_mode {
            println!("{}", json!({ "listening": addr.to_string(), "tls": tls }));
        } else {
            println!("listening on {scheme}://{addr}");
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
    })
    .map_err(CliError::failed)?;
    Ok(Outcome::ok(serde_json::Value::Null, ""))
}

/// The embedding model named by `--embedding-model`, with the vector index saved beside the
/// store.
fn semantic_search(
    model: &std::path::Path,
    ctx: &Ctx,
) -> Result<memlineage_server::SemanticSearch, CliError> {
    Ok(memlineage_server::SemanticSearch {
        embedder: super::embedding_model(model)?,
        saved_in: Some(ctx.paths.vectors_dir()),
    })
}

/// `memlineage token …`.
#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a bearer token for a principal and scopes (printed once; only its hash is kept).
    Create(CreateArgs),
    /// List tokens (ids, principals, scopes, roles; never the tokens).
    List(FileArgs),
    /// Revoke a token by id (a running service refuses it within a second).
    Revoke(RevokeArgs),
}

/// Where the token file is.
#[derive(Args, Debug)]
pub struct FileArgs {
    /// The token file (default: tokens.json beside the store).
    #[arg(long, value_name = "FILE")]
    tokens: Option<PathBuf>,
}

/// `token create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The principal the token writes and gates as (registered, its key in the key directory).
    #[arg(long, value_parser = parse_name)]
    principal: PrincipalName,
    /// A scope it may read and write, with everything below it (repeatable; default `default`).
    #[arg(long = "scope", value_parser = parse_scope)]
    scopes: Vec<Scope>,
    /// The operator role: registry changes, forget, distrust, checkpoints, verify, every scope
    /// readable. Only for a trusted principal.
    #[arg(long)]
    operator: bool,
    /// A note for people (who holds the token).
    #[arg(long, default_value = "")]
    note: String,
    /// Refuse the token after this long: a number and a unit, `s`, `m`, `h` or `d` (`90d`,
    /// `12h`). Default: it does not expire (revoke it with `token revoke`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms)]
    expires_in: Option<u64>,
    #[command(flatten)]
    file: FileArgs,
}

/// `token revoke`.
#[derive(Args, Debug)]
pub struct RevokeArgs {
    /// The token's id (16 hex digits, as `token list` shows it).
    id: String,
    #[command(flatten)]
    file: FileArgs,
}

fn token_file(ctx: &Ctx, f: &FileArgs) -> TokenFileAt {
    TokenFileAt::new(f.tokens.clone().unwrap_or_else(|| default_tokens(ctx)))
}

/// The token file `serve` and `token` use when `--tokens` is not given: `tokens.json` beside
/// an SQLite store file, else beside the key directory.
fn default_tokens(ctx: &Ctx) -> PathBuf {
    match ctx.paths.dir() {
        Some(dir) => dir.join(TOKENS_FILE),
        None => tokens_beside(&ctx.paths.keys),
    }
}

/// Parses `90d`, `12h`, `30m`, `45s` into milliseconds (clap value parser).
fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let bad =
        || format!("`{s}` is not a duration: expected a number and a unit s, m, h or d (`90d`)");
    let unit_at = s.len().checked_sub(1).ok_or_else(bad)?;
    let (n, unit) = s.split_at(unit_at);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(secs * 1000)
        .filter(|&ms| ms > 0)
        .ok_or_else(|| {
            format!("`{s}`: the duration must be above zero and below 500 million years")
        })
}

/// Parses a request timeout: seconds (`30`), or `500ms`, `30s`, `2m` (clap value parser).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "`{s}` is not a timeout: expected seconds (`30`) or a number and a unit ms, s or m (`500ms`)"
        )
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = s.split_at(digits);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let ms = match unit {
        "" | "s" => n.checked_mul(1000),
        "ms" => Some(n),
        "m" => n.checked_mul(60_000),
        _ => return Err(bad()),
    };
    ms.filter(|&ms| ms > 0 && ms <= 86_400_000)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{s}`: the timeout must be above zero and at most a day"))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs a `token` subcommand.
pub fn token(c: TokenCommand, ctx: &Ctx) -> Result<Outcome, CliError> {
    match c {
        TokenCommand::Create(a) => create(a, ctx),
        TokenCommand::List(f) => list(&token_file(ctx, &f)),
        TokenCommand::Revoke(a) => {
            let r = token_file(ctx, &a.file)
                .revoke(&a.id, now_ms())
                .map_err(|e| CliError::failed(e.to_string()))?;
            Ok(Outcome::ok(
                json!({ "id": r.id, "principal": r.principal, "revoked_at_ms": r.revoked_at_ms }),
                format!("Revoked token {} (principal `{}`)", r.id, r.principal),
            ))
        }
    }
}

fn create(a: CreateArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let registry = mem.registry()?;
    let p = registry.get(a.principal.as_str()).ok_or_else(|| {
        CliError::failed(format!(
            "principal `{}` is not registered: add it with `memlineage principal add {} --class trusted|external`",
            a.principal, a.principal
        ))
    })?;
    if a.operator && p.class != TrustClass::Trusted {
        return Err(CliError::failed(format!(
            "principal `{}` is external: the operator role is only for a trusted principal",
            a.principal
        )));
    }
    if let Some(at) = p.revoked_at {
        return Err(CliError::failed(format!(
            "principal `{}` was revoked at log index {at}: a token for it could not write",
            a.principal
        )));
    }
    if !mem.can_sign(&a.principal) {
        eprintln!(
            "note: no secret key for `{}` in {} (nor in the external signer, if one is given): the service cannot write as it until the key is there",
            a.principal,
            ctx.paths.keys.display()
        );
    }
    let scopes = if a.scopes.is_empty() {
        vec![Scope::default()]
    } else {
        a.scopes
    };
    let file = token_file(ctx, &a.file);
    let now = now_ms();
    let expires_at_ms = a.expires_in.map(|d| now.saturating_add(d));
    let t = file
        .create_expiring(
            a.principal.as_str(),
            &scopes,
            a.operator,
            &a.note,
            now,
            expires_at_ms,
        )
        .map_err(|e| CliError::failed(e.to_string()))?;
    let json = json!({
        "token": t.token,
        "id": t.record.id,
        "principal": t.record.principal,
        "scopes": t.record.scopes,
        "operator": t.record.operator,
        "expires_at_ms": t.record.expires_at_ms,
        "tokens_file": file.path().display().to_string(),
    });
    Ok(Outcome::ok(json, t.token))
}

fn list(file: &TokenFileAt) -> Result<Outcome, CliError> {
    let records = file.load().map_err(|e| CliError::failed(e.to_string()))?;
    let now = now_ms();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.principal.clone(),
                r.scopes.join(","),
                if r.operator { "operator" } else { "-" }.to_string(),
                match (r.revoked_at_ms, r.expires_at_ms) {
                    (Some(_), _) => "revoked".to_string(),
                    (None, Some(at)) if now >= at => "expired".to_string(),
                    _ => "active".to_string(),
                },
                r.note.clone(),
            ]
        })
        .collect();
    let items: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            json!({ "id": r.id, "principal": r.principal, "scopes": r.scopes,
                    "operator": r.operator, "created_at_ms": r.created_at_ms,
                    "revoked_at_ms": r.revoked_at_ms, "expires_at_ms": r.expires_at_ms,
                    "note": r.note })
        })
        .collect();
    let text = crate::output::table(
        &["ID", "PRINCIPAL", "SCOPES", "ROLE", "STATUS", "NOTE"],
        &rows,
    );
    Ok(Outcome::ok(
        json!({ "tokens_file": file.path().display().to_string(), "tokens": items }),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::{parse_duration_ms, parse_timeout};
    use std::time::Duration;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_timeout("2m"), Ok(Duration::from_secs(120)));
        for bad in [
            "",
            "0",
            "0ms",
            "s",
            "1.5s",
            "-1",
            "10h",
            "2d",
            "99999999999999999999",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("90d"), Ok(90 * 86_400_000));
        assert_eq!(parse_duration_ms("12h"), Ok(12 * 3_600_000));
        assert_eq!(parse_duration_ms("30m"), Ok(1_800_000));
        assert_eq!(parse_duration_ms("45s"), Ok(45_000));
        for bad in [
            "",
            "d",
            "10",
            "10w",
            "-1d",
            "0s",
            "1.5h",
            "99999999999999999d",
        ] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }
}
