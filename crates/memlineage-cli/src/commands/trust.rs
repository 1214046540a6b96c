//! The reader's flags, global to every command that opens the store: the checkpoint the store
//! must extend, the directory that remembers it, and the witnesses a checkpoint needs
//! (`docs/cli.md`, "Trusting the store's history").

use crate::output::CliError;
use clap::Args;
use memlineage::transparency::{ReaderTrust, TrustedCheckpoint};
use memlineage_core::witness::Policy;
use std::path::{Path, PathBuf};

/// `--trusted-checkpoint`, `--client-state`, `--require-witnesses`.
#[derive(Args, Debug, Default)]
pub struct ReaderArgs {
    /// A signed checkpoint (a file holding the note, e.g. saved from `memlineage checkpoint` or
    /// a witness) that the store must extend: every command refuses a store that rolled back
    /// or forked from it.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        conflicts_with = "client_state"
    )]
    trusted_checkpoint: Option<PathBuf>,

    /// A directory this client owns, apart from the store, that remembers the latest verified
    /// checkpoint of each log and advances it after each check (trust on first use when empty).
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "MEMLINEAGE_CLIENT_STATE"
    )]
    client_state: Option<PathBuf>,

    /// A C2SP tlog-policy file: retrieval anchors only to checkpoints whose witness
    /// cosignatures meet its quorum, and the client remembers only those.
    #[arg(long, global = true, value_name = "POLICY")]
    require_witnesses: Option<PathBuf>,
}

impl ReaderArgs {
    /// The reader trust these flags ask for (exit 2 when a file cannot be used).
    pub fn load(&self) -> Result<ReaderTrust, CliError> {
        let checkpoint = match (&self.trusted_checkpoint, &self.client_state) {
            (Some(f), _) => Some(TrustedCheckpoint::Note(read(f, "--trusted-checkpoint")?)),
            (None, Some(d)) => Some(TrustedCheckpoint::StateDir(d.clone())),
            (None, None) => None,
        };
        let witnesses = self
            .require_witnesses
            .as_deref()
            .map(|p| load_policy(p, "--require-witnesses"))
            .transpose()?;
        Ok(ReaderTrust {
            checkpoint,
            witnesses,
        })
    }
}

fn read(path: &Path, flag: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("{flag} {}: {e}", path.display())))
}

/// Reads and parses a tlog-policy file (exit 2 when it cannot be used).
pub fn load_policy(path: &Path, flag: &str) -> Result<Policy, CliError> {
    Policy::parse(&read(path, flag)?)
        .map_err(|e| CliError::usage(format!("{flag} {}: {e}", path.display())))
}
