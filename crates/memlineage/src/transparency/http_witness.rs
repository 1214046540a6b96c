//! The log's HTTP client of a witness: C2SP tlog-witness `POST <submission prefix>/add-checkpoint`
//! (<https://c2sp.org/tlog-witness>), over `ureq` (blocking, rustls with ring; the library
//! keeps no async runtime).
//!
//! The request body is [`AddCheckpoint::to_body`](memlineage_core::witness::AddCheckpoint)'s
//! bytes unchanged; the answer's status, `Content-Type` and body are handed back as a
//! [`WitnessResponse`] for `Memory::witness_checkpoint` to judge, exactly as a local
//! [`FileWitness`](super::FileWitness) answers. Every request has a connect timeout and an
//! overall deadline; redirects are not followed (a witness answers where it is configured) and
//! an answer larger than [`MAX_ANSWER_BYTES`] is refused rather than read.
//!
//! An `https://` witness's certificate is checked against Mozilla's roots (webpki-roots) by
//! default, or against the certificate authorities of a PEM file ([`WitnessRoots::from_pem`],
//! `memlineage checkpoint --witness-ca FILE`), which then *replace* the default roots, as
//! curl's `--cacert` does: a witness run inside an organisation under its own CA is reached
//! without trusting every public CA for it, and a public CA cannot stand in for it.

use super::witness::WitnessTransport;
use crate::error::{Error, InputError};
use memlineage_core::witness::{SIZE_CONTENT_TYPE, TEXT_CONTENT_TYPE, WitnessResponse};
use std::sync::Arc;
use std::time::Duration;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// The largest answer read from a witness: a few cosignature lines are a few hundred bytes.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// How long to wait for a witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// To open the connection (TCP and TLS).
    pub connect: Duration,
    /// For the whole exchange, connection included.
    pub total: Duration,
}

impl Default for HttpTimeouts {
    /// 5 s to connect, 20 s in all: a witness checks one proof and writes one file.
    fn default() -> HttpTimeouts {
        HttpTimeouts {
            connect: Duration::from_secs(5),
            total: Duration::from_secs(20),
        }
    }
}

/// The certificate authorities an `https://` witness's certificate must chain to.
#[derive(Clone, Debug, Default)]
pub struct WitnessRoots {
    /// `None`: Mozilla's roots (webpki-roots); else exactly these.
    specific: Option<Arc<Vec<Certificate<'static>>>>,
}

impl WitnessRoots {
    /// Mozilla's roots, as shipped by webpki-roots (the default).
    pub fn webpki() -> WitnessRoots {
        WitnessRoots::default()
    }

    /// Exactly the certificates of a PEM file (`-----BEGIN CERTIFICATE-----` blocks; other
    /// blocks, such as a private key left in the file, are ignored). `source` names the file
    /// in errors. Fails when a block does not parse or no certificate is found: a CA file that
    /// yields nothing would otherwise fail every witness later with a less clear message.
    pub fn from_pem(pem: &[u8], source: &str) -> Result<WitnessRoots, Error> {
        let bad = |problem: String| {
            Error::Input(InputError::CertificateFile {
                path: source.to_string(),
                problem,
            })
        };
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem) {
            match item.map_err(|e| bad(format!("not a PEM file: {e}")))? {
                PemItem::Certificate(c) => certs.push(c),
                _ => continue,
            }
        }
        if certs.is_empty() {
            return Err(bad(
                "holds no certificate (expected PEM blocks `-----BEGIN CERTIFICATE-----`)".into(),
            ));
        }
        Ok(WitnessRoots {
            specific: Some(Arc::new(certs)),
        })
    }

    /// How many certificates replace the default roots (0: the default roots are used).
    pub fn len(&self) -> usize {
        self.specific.as_ref().map_or(0, |c| c.len())
    }

    /// Whether the default roots are used.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn tls(&self) -> TlsConfig {
        let roots = match &self.specific {
            Some(certs) => RootCerts::Specific(Arc::clone(certs)),
            None => RootCerts::WebPki,
        };
        TlsConfig::builder().root_certs(roots).build()
    }
}

/// A witness reached over HTTP(S) at its submission prefix.
#[derive(Debug)]
pub struct HttpWitness {
    url: String,
    agent: ureq::Agent,
}

impl HttpWitness {
    /// A client of the witness whose submission prefix is `prefix` (`https://…` or
    /// `http://…`; a trailing `/` is dropped), its certificate checked against Mozilla's
    /// roots. Reaches nothing yet.
    pub fn new(prefix: &str, timeouts: HttpTimeouts) -> Result<HttpWitness, Error> {
        HttpWitness::with_roots(prefix, timeouts, &WitnessRoots::webpki())
    }

    /// As [`HttpWitness::new`], an `https://` witness's certificate checked against `roots`.
    pub fn with_roots(
        prefix: &str,
        timeouts: HttpTimeouts,
        roots: &WitnessRoots,
    ) -> Result<HttpWitness, Error> {
        if !(prefix.starts_with("https://") || prefix.starts_with("http://")) {
            return Err(Error::Unavailable(format!(
                "witness URL `{prefix}` must start with https:// or http://"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(timeouts.connect))
            .timeout_global(Some(timeouts.total))
            .http_status_as_error(false)
            .max_redirects(0)
            .tls_config(roots.tls())
            .user_agent(concat!("memlineage/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(HttpWitness {
            url: format!("{}/add-checkpoint", prefix.trim_end_matches('/')),
            agent,
        })
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn failed(&self, what: impl std::fmt::Display) -> Error {
        Error::Unavailable(format!("witness {}: {what}", self.url))
    }
}

impl WitnessTransport for HttpWitness {
    fn add_checkpoint(&self, body: &[u8]) -> Result<WitnessResponse, Error> {
        let mut response = self
            .agent
            .post(&self.url)
            .send(body)
            .map_err(|e| self.failed(e))?;
        let status = response.status().as_u16();
        let content_type = match response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
        {
            Some(t) if media_type(t) == SIZE_CONTENT_TYPE => SIZE_CONTENT_TYPE,
            _ => TEXT_CONTENT_TYPE,
        };
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| self.failed(format!("reading its answer ({status}): {e}")))?;
        Ok(WitnessResponse {
            status,
            content_type,
            body,
        })
    }
}

/// The media type of a `Content-Type` value, without parameters, in lowercase.
fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_media_types() {
        let w = HttpWitness::new("http://127.0.0.1:9/w1/", HttpTimeouts::default()).unwrap();
        assert_eq!(w.url(), "http://127.0.0.1:9/w1/add-checkpoint");
        assert!(HttpWitness::new("ftp://x", HttpTimeouts::default()).is_err());
        assert_eq!(
            media_type("Text/X.Tlog.Size; charset=utf-8"),
            "text/x.tlog.size"
        );
        assert_eq!(media_type(""), "");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_by_name() {
        let key_only =
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
        for pem in [&b""[..], b"not a pem file at all", &key_only[..]] {
            let e = WitnessRoots::from_pem(pem, "/etc/ca.pem").unwrap_err();
            let text = e.to_string();
            assert!(text.contains("/etc/ca.pem"), "{text}");
            assert!(matches!(
                e,
                Error::Input(InputError::CertificateFile { .. })
            ));
        }
        assert!(WitnessRoots::webpki().is_empty());
    }
}
