//! The witnesses a log's policy names, reached by the URL each `witness` line carries
//! (C2SP tlog-policy): `file:///DIR` is a local witness directory ([`FileWitness`]),
//! `https://…` or `http://…` a witness's submission prefix ([`HttpWitness`], feature
//! `witness-http`). A witness that cannot be reached is still listed: asking it fails with the
//! reason, which the round reports as that witness's answer, and the quorum decides.

#[cfg(feature = "witness-http")]
pub use super::http_witness::{HttpTimeouts, HttpWitness, WitnessRoots};
use super::witness::{FileWitness, WitnessTransport};
use crate::error::Error;
use memlineage_core::witness::{Policy, WitnessResponse};
use std::path::Path;

/// Timeouts of HTTP witnesses: the same fields as with the `witness-http` feature, so that
/// callers build either way, but without it no witness is reached over HTTP to use them.
#[cfg(not(feature = "witness-http"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// To open the connection.
    pub connect: std::time::Duration,
    /// For the whole exchange.
    pub total: std::time::Duration,
}

/// The roots of HTTPS witnesses (without the `witness-http` feature there are none to set).
#[cfg(not(feature = "witness-http"))]
#[derive(Clone, Debug, Default)]
pub struct WitnessRoots {
    _none: (),
}

/// The transports to the witnesses of a policy that have a URL, by the policy's names.
pub struct WitnessTransports {
    by_name: Vec<(String, Box<dyn WitnessTransport>)>,
}

impl WitnessTransports {
    /// A transport for every witness of `policy` that has a URL; witnesses without one are
    /// left out (the round lists them as not asked).
    pub fn for_policy(policy: &Policy, timeouts: HttpTimeouts) -> WitnessTransports {
        WitnessTransports::for_policy_with_roots(policy, timeouts, &WitnessRoots::default())
    }

    /// As [`WitnessTransports::for_policy`], `https://` witnesses' certificates checked
    /// against `roots` (a private CA) instead of Mozilla's roots.
    pub fn for_policy_with_roots(
        policy: &Policy,
        timeouts: HttpTimeouts,
        roots: &WitnessRoots,
    ) -> WitnessTransports {
        let by_name = policy
            .witnesses()
            .iter()
            .filter_map(|w| {
                let url = w.url.as_deref()?;
                Some((w.name.clone(), transport(url, timeouts, roots)))
            })
            .collect();
        WitnessTransports { by_name }
    }

    /// The `(name, transport)` pairs `Memory::witness_checkpoint` takes.
    pub fn as_refs(&self) -> Vec<(&str, &dyn WitnessTransport)> {
        self.by_name
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_ref()))
            .collect()
    }
}

impl std::fmt::Debug for WitnessTransports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.by_name.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("WitnessTransports")
            .field("witnesses", &names)
            .finish()
    }
}

fn transport(url: &str, timeouts: HttpTimeouts, roots: &WitnessRoots) -> Box<dyn WitnessTransport> {
    let made = if let Some(dir) = url.strip_prefix("file://") {
        FileWitness::open(Path::new(dir)).map(|w| Box::new(w) as Box<dyn WitnessTransport>)
    } else if url.starts_with("https://") || url.starts_with("http://") {
        http(url, timeouts, roots)
    } else {
        Err(Error::Unavailable(format!(
            "witness URL `{url}`: expected file:///DIR, https://… or http://…"
        )))
    };
    made.unwrap_or_else(|e| Box::new(Unreachable(e.to_string())))
}

#[cfg(feature = "witness-http")]
fn http(
    url: &str,
    timeouts: HttpTimeouts,
    roots: &WitnessRoots,
) -> Result<Box<dyn WitnessTransport>, Error> {
    Ok(Box::new(HttpWitness::with_roots(url, timeouts, roots)?))
}

#[cfg(not(feature = "witness-http"))]
fn http(url: &str, _: HttpTimeouts, _: &WitnessRoots) -> Result<Box<dyn WitnessTransport>, Error> {
    Err(Error::Unavailable(format!(
        "witness {url}: this build has no HTTP witness client (feature `witness-http`)"
    )))
}

/// A witness that could not be set up (its directory does not open, its URL is unusable):
/// asking it reports why.
struct Unreachable(String);

impl WitnessTransport for Unreachable {
    fn add_checkpoint(&self, _body: &[u8]) -> Result<WitnessResponse, Error> {
        Err(Error::Unavailable(self.0.clone()))
    }
}
