//! `memlineage`: the command-line tool of MemLineage, a signed, lineage-labelled memory log for
//! LLM agents. See `docs/cli.md` for every command, its JSON shape and the exit codes.
#![forbid(unsafe_code)]

mod commands;
mod output;
mod paths;

use clap::{Parser, Subcommand};
use output::{CliError, EXIT_USAGE, Outcome};
use paths::StorePaths;
use std::path::PathBuf;
use std::process::ExitCode;

/// Signed, lineage-labelled memory for LLM agents.
///
/// Exit codes: 0 ok; 1 the command failed or was refused (including `verify` finding
/// problems); 2 bad usage or input (unknown flag, malformed id, weight, scope or name, a tool
/// call or policy that cannot be judged); 3 `gate` denied the call.
#[derive(Parser, Debug)]
#[command(name = "memlineage", version, about, long_about = None)]
struct Cli {
    /// The store: a database file (or a directory holding `store.db`), `sqlite:PATH`,
    /// `memory:` or `postgres://…`. Default: $MEMLINEAGE_STORE, else ./.memlineage/store.db.
    #[arg(long, global = true, value_name = "LOCATION")]
    store: Option<memlineage::StoreLocation>,

    /// The directory of secret key files. Default: $MEMLINEAGE_KEYS, else `keys/` beside an
    /// SQLite store file, else ./.memlineage/keys.
    #[arg(long, global = true, value_name = "DIR")]
    keys: Option<PathBuf>,

    /// An external signer for principals whose keys are not in the key directory: a PKCS#11
    /// URI (`pkcs11:token=NAME?module-path=MODULE.so&pin-source=FILE`; docs/service.md).
    #[arg(
        long,
        global = true,
        value_name = "URI",
        env = "MEMLINEAGE_SIGNER",
        hide_env_values = true
    )]
    signer: Option<String>,

    /// Seconds a call to the external signer may take before the write fails (closed).
    #[arg(long, global = true, value_name = "SECS", env = "MEMLINEAGE_SIGNER_TIMEOUT",
        default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    signer_timeout: u64,

    /// Print exactly one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,

    #[command(flatten)]
    reader: commands::trust::ReaderArgs,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a new store: operator key, genesis record, default principals `agent` and `web`.
    Init(commands::init::InitArgs),
    /// Manage principals (writers) and their keys.
    #[command(subcommand)]
    Principal(commands::principal::PrincipalCommand),
    /// Write a signed entry (content from the argument, or stdin when absent or `-`).
    Write(commands::write::WriteArgs),
    /// Show one entry: content, labels, provenance, and its inclusion proof.
    Get(commands::read::GetArgs),
    /// List entries in log order.
    Log(commands::read::LogArgs),
    /// Print an inclusion proof (`prove ID`) or a consistency proof (`prove --consistency OLD NEW`).
    Prove(commands::proof::ProveArgs),
    /// Sign a checkpoint of the current tree and print the note; print the log's verifier key
    /// (`--vkey`); get it cosigned by witnesses (`--witness`).
    Checkpoint(commands::checkpoint::CheckpointArgs),
    /// Forget an entry with a signed tombstone (and optionally erase its content).
    Forget(commands::control::ForgetArgs),
    /// Retroactively distrust an entry or a principal: descendants' effective labels rise.
    Distrust(commands::control::DistrustArgs),
    /// Audit the whole store: signatures, registry, labels, leaves, tree and checkpoint (and,
    /// with --trusted-checkpoint, that the store extends it).
    Verify,
    /// A witness with its own key and state: cosigns a log's checkpoints only when they are
    /// consistent with the last one it cosigned (C2SP tlog-witness).
    #[command(subcommand)]
    Witness(commands::witness::WitnessCommand),
    /// Follow the log from its checkpoints and proofs (read-only, no keys): report rollbacks,
    /// forks and entries that do not check.
    Monitor(commands::monitor::MonitorArgs),
    /// Copy the log into a new store (any location to any location, e.g. SQLite to
    /// PostgreSQL) and verify the copy end to end.
    Migrate(commands::migrate::MigrateArgs),
    /// Full-text search, verified before anything is returned, rendered for a prompt.
    Search(commands::query::SearchArgs),
    /// Show an entry's lineage (ancestors or descendants) and why it has its label.
    Lineage(commands::query::LineageArgs),
    /// Decide whether a tool call may be dispatched (allow, deny, or repair).
    Gate(commands::gate::GateArgs),
    /// Weigh stored parents of a child text with an attribution algorithm (writes nothing).
    Attribute(commands::attribute::AttributeArgs),
    /// The main job end to end: a two-session laundering attack on the store, the gate's
    /// denial and repair, an audit, then the evaluation's headline.
    Demo(commands::demo::DemoArgs),
    /// Run the deterministic evaluation and write its artifacts (docs/evaluation.md).
    Eval(commands::eval::EvalArgs),
    /// Measure every operation beside the raw primitives of the same run (`--json`: rows),
    /// the scale run (`--scale`), or generate a store (`--generate N --out FILE`); see
    /// docs/performance.md.
    Bench(commands::bench::BenchArgs),
    /// Serve the store over HTTP: JSON for every operation, bearer tokens, TLS, metrics,
    /// OpenAPI at /openapi.json (docs/service.md).
    #[cfg(feature = "server")]
    Serve(commands::serve::ServeArgs),
    /// Bearer tokens for `serve`: create (bound to a principal and scopes), list, revoke.
    #[cfg(feature = "server")]
    #[command(subcommand)]
    Token(commands::serve::TokenCommand),
    /// MemLineage over the Model Context Protocol: a memory server and a gateway (docs/mcp.md).
    #[cfg(feature = "mcp")]
    #[command(subcommand)]
    Mcp(commands::mcp::McpCommand),
    /// Testing aids (hidden).
    #[command(subcommand, hide = true)]
    Debug(commands::debug::DebugCommand),
}

/// What every command gets.
pub struct Ctx {
    /// Where the store is.
    pub paths: StorePaths,
    /// `--json` was given.
    pub json: bool,
}

fn main() -> ExitCode {
    let json_requested = std::env::args_os().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            if json_requested {
                let msg = e.kind().as_str().unwrap_or("invalid usage").to_string();
                let detail = e.to_string();
                let obj = serde_json::json!({
                    "ok": false,
                    "error": detail.lines().next().unwrap_or(&msg).trim_start_matches("error: "),
                    "exit_code": EXIT_USAGE,
                });
                println!("{obj}");
            }
            let _ = e.print();
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // `serve` logs JSON lines at info by default; every other command is silent unless
    // RUST_LOG says otherwise.
    if !is_serve(&cli.command) {
        init_tracing();
    }
    let mut paths = match StorePaths::resolve(cli.store, cli.keys.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            return ExitCode::from(output::emit_error(
                &CliError::usage(format!("{}: {e}", paths::STORE_ENV)),
                cli.json,
            ));
        }
    };
    paths.trust = match cli.reader.load() {
        Ok(t) => t,
        Err(e) => return ExitCode::from(output::emit_error(&e, cli.json)),
    };
    paths.signer = cli.signer.filter(|s| !s.is_empty());
    paths.signer_timeout = std::time::Duration::from_secs(cli.signer_timeout);
    let ctx = Ctx {
        paths,
        json: cli.json,
    };
    tracing::debug!(store = %ctx.paths.location, "resolved store");
    let code = match run(cli.command, &ctx) {
        Ok(outcome) => output::emit(&outcome, ctx.json),
        Err(e) => output::emit_error(&e, ctx.json),
    };
    ExitCode::from(code)
}

fn run(command: Command, ctx: &Ctx) -> Result<Outcome, CliError> {
    match command {
        Command::Init(a) => commands::init::run(a, ctx),
        Command::Principal(c) => commands::principal::run(c, ctx),
        Command::Write(a) => commands::write::run(a, ctx),
        Command::Get(a) => commands::read::get(a, ctx),
        Command::Log(a) => commands::read::log(a, ctx),
        Command::Prove(a) => commands::proof::prove(a, ctx),
        Command::Checkpoint(a) => commands::checkpoint::run(a, ctx),
        Command::Forget(a) => commands::control::forget(a, ctx),
        Command::Distrust(a) => commands::control::distrust(a, ctx),
        Command::Verify => commands::verify::run(ctx),
        Command::Witness(c) => commands::witness::run(c, ctx),
        Command::Monitor(a) => commands::monitor::run(a, ctx),
        Command::Migrate(a) => commands::migrate::run(a, ctx),
        Command::Search(a) => commands::query::search(a, ctx),
        Command::Lineage(a) => commands::query::lineage(a, ctx),
        Command::Gate(a) => commands::gate::gate(a, ctx),
        Command::Attribute(a) => commands::attribute::run(a, ctx),
        Command::Demo(a) => commands::demo::run(a, ctx),
        Command::Eval(a) => commands::eval::run(a, ctx),
        Command::Bench(a) => commands::bench::run(a, ctx),
        #[cfg(feature = "server")]
        Command::Serve(a) => commands::serve::serve(a, ctx),
        #[cfg(feature = "server")]
        Command::Token(c) => commands::serve::token(c, ctx),
        #[cfg(feature = "mcp")]
        Command::Mcp(c) => commands::mcp::run(c, ctx),
        Command::Debug(c) => commands::debug::run(c, ctx),
    }
}

#[cfg(feature = "server")]
fn is_serve(c: &Command) -> bool {
    matches!(c, Command::Serve(_))
}

#[cfg(not(feature = "server"))]
fn is_serve(_: &Command) -> bool {
    false
}

/// Tracing to stderr, configured by `RUST_LOG`; off by default.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `bench --connections` takes a list of 1 to 1024 connections, and only with `--service`.
    #[cfg(feature = "server")]
    #[test]
    fn bench_connections_are_bounded_and_need_the_service_run() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(["memlineage", "bench"].iter().chain(args))
                .map(|cli| match cli.command {
                    Command::Bench(a) => (a.service, a.connections),
                    _ => unreachable!("not the bench command"),
                })
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse(&["--service"]), Ok((true, vec![128, 160, 192])));
        assert_eq!(
            parse(&["--service", "--connections", "64"]),
            Ok((true, vec![64]))
        );
        assert_eq!(
            parse(&["--service", "--connections", "96,128"]),
            Ok((true, vec![96, 128]))
        );
        for bad in ["0", "1025", "many", "128,0", "128,"] {
            let err = parse(&["--service", "--connections", bad]).unwrap_err();
            assert!(err.contains("--connections"), "{bad}: {err}");
        }
        let err = parse(&["--connections", "8"]).unwrap_err();
        assert!(err.contains("--service"), "{err}");
    }
}
