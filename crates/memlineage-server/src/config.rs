//! What `memlineage serve` is told: where the store, keys and tokens are, where to listen,
//! TLS, and the request limits.

use memlineage::StoreLocation;
use memlineage::search::TextEmbedder;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Request limits. Every one is checked before anything is written, and answered with a JSON
/// error that names the limit.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// The most entries in one batch write.
    pub max_batch: usize,
    /// The longest search query, in bytes.
    pub max_query_bytes: usize,
    /// The most entries a search, a recall, a log page or a gate context may name.
    pub max_ids: usize,
    /// How long a request may take before it is answered with a timeout.
    pub request_timeout: Duration,
    /// How long a client may take to send the request headers.
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 1 << 20,
            max_batch: 1000,
            max_query_bytes: 4096,
            max_ids: 256,
            request_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// TLS material: a PEM certificate chain and its PEM private key.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate chain (leaf first).
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// Semantic and hybrid search: the embedding model the service attaches, and where it saves
/// its vector index (`memlineage::memory::VectorIndexer`).
#[derive(Clone)]
pub struct SemanticSearch {
    /// The model (all-MiniLM-L6-v2 in the CLI, `memlineage::search::load_default_embedder`).
    pub embedder: Arc<dyn TextEmbedder>,
    /// Where the vector index is saved and loaded from (`<store file>.vectors/` in the CLI),
    /// or none: it is built from the stored embeddings at each start.
    pub saved_in: Option<PathBuf>,
}

impl std::fmt::Debug for SemanticSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticSearch")
            .field("model", &self.embedder.model_id())
            .field("saved_in", &self.saved_in)
            .finish()
    }
}

/// How the service runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The store (`sqlite:PATH` or a path, `memory:`, `postgres://…`).
    pub store: StoreLocation,
    /// The directory of the principals' secret key files.
    pub keys_dir: PathBuf,
    /// The token file.
    pub tokens_file: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// TLS, when given a certificate.
    pub tls: Option<TlsFiles>,
    /// Request limits.
    pub limits: Limits,
    /// Named gate policies (`--policy NAME=FILE`): name and TOML text.
    pub policies: Vec<(String, String)>,
    /// How long shutdown waits for requests in flight before closing their connections.
    pub shutdown_grace: Duration,
    /// An external signer for principals whose keys are not in the key directory: a PKCS#11
    /// URI (`memlineage::signer::open`; the PIN is never logged).
    pub signer: Option<String>,
    /// How long a call to the external signer may take before the write fails (closed).
    pub signer_timeout: Duration,
    /// Semantic and hybrid search, when an embedding model is given (else lexical only).
    pub semantic: Option<SemanticSearch>,
}

impl Config {
    /// A configuration for the store at `store` on `listen`, with the default limits and no
    /// TLS: keys in the store's key directory (`keys/` beside an SQLite file, else
    /// `.memlineage/keys`), the token file beside the key directory.
    pub fn new(store: StoreLocation, listen: SocketAddr) -> Config {
        let keys_dir = store
            .key_dir()
            .unwrap_or_else(|| PathBuf::from(".memlineage/keys"));
        Config {
            tokens_file: tokens_beside(&keys_dir),
            keys_dir,
            store,
            listen,
            tls: None,
            limits: Limits::default(),
            policies: Vec::new(),
            shutdown_grace: Duration::from_secs(30),
            signer: None,
            signer_timeout: memlineage::ExternalSigner::DEFAULT_TIMEOUT,
            semantic: None,
        }
    }
}

/// The token file that goes with a key directory: `tokens.json` in the directory holding it
/// (beside the store, for an SQLite file).
pub fn tokens_beside(keys_dir: &Path) -> PathBuf {
    match keys_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join(crate::tokens::TOKENS_FILE),
        _ => PathBuf::from(crate::tokens::TOKENS_FILE),
    }
}
