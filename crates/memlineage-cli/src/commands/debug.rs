//! Hidden testing aids: `memlineage debug write-storm N`.

use super::{open, parse_name, refused};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{Args, Subcommand};
use memlineage::{PrincipalName, WriteRequest};
use memlineage_core::entry::EntryKind;
use serde_json::json;
use std::io::Write;

/// `memlineage debug …`.
#[derive(Subcommand, Debug)]
pub enum DebugCommand {
    /// Write N entries one by one (one transaction each), printing each acknowledged id on
    /// stdout as soon as its write is durable (flushed line by line).
    WriteStorm(StormArgs),
}

/// `debug write-storm`.
#[derive(Args, Debug)]
pub struct StormArgs {
    /// How many entries.
    n: u64,
    /// The writer.
    #[arg(long = "as", value_name = "PRINCIPAL", default_value = "agent", value_parser = parse_name)]
    writer: PrincipalName,
    /// A tag put in every entry's content.
    #[arg(long, default_value = "storm")]
    tag: String,
}

/// Runs a `debug` subcommand.
pub fn run(c: DebugCommand, ctx: &Ctx) -> Result<Outcome, CliError> {
    match c {
        DebugCommand::WriteStorm(a) => storm(a, ctx),
    }
}

fn storm(a: StormArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let pid = std::process::id();
    let mut ids = Vec::new();
    let mut out = std::io::stdout().lock();
    for i in 0..a.n {
        let content = format!("{} pid {pid} entry {i}", a.tag);
        let w = mem
            .write(WriteRequest::new(
                &a.writer,
                EntryKind::Observation,
                content,
            ))
            .map_err(|e| refused(e, &ctx.paths))?;
        if !ctx.json {
            writeln!(out, "{}", w.id).and_then(|()| out.flush())?;
        }
        ids.push(w.id.to_hex());
    }
    let json = json!({ "written": ids.len(), "ids": ids });
    Ok(Outcome::ok(json, String::new()))
}
