//! The gateway's configuration file (`docs/mcp.md`, "Configuration"): the downstream servers,
//! who authored their results, and the gate policy of each.
//!
//! ```toml
//! [gateway]
//! user = "user"              # trusted principal of the user's requests (optional)
//! recorder = "gateway"       # trusted principal of session records and gate decisions
//!
//! [servers.bank]
//! command = "python3"
//! args = ["bank_server.py"]
//! principal = "bank"         # author of this server's results
//! policy = "policy.toml"     # gate policy, tool names as the server has them
//!
//! [servers.bank.tools.get_transactions]
//! fields = { "transactions[].subject" = "senders" }
//! ```
//!
//! Unknown keys, a server with both or neither of `command` and `url`, bad names, paths and
//! policies are errors that name the file, and the line and column where TOML gives them.

use crate::authors::Authors;
use crate::field_path::FieldPath;
use memlineage_core::entry::Scope;
use memlineage_core::gate::Policy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The separator between a server's name and its tool's name in the gateway's tool list.
pub const SEPARATOR: &str = "__";

/// The default limit on one downstream result, serialised: 4 MiB.
pub const DEFAULT_MAX_RESULT: usize = 4 * 1024 * 1024;

/// How long a downstream call may take by default.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGateway {
    recorder: Option<String>,
    user: Option<String>,
    session: Option<String>,
    scope: Option<String>,
    max_result_bytes: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env: Option<String>,
    ca_file: Option<PathBuf>,
    principal: String,
    policy: Option<PathBuf>,
    repair: Option<bool>,
    timeout_secs: Option<u64>,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    principal: Option<String>,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    source: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    gateway: RawGateway,
    servers: BTreeMap<String, RawServer>,
}

/// How to reach a downstream server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the configuration file's directory).
        cwd: PathBuf,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// The environment variable whose value the gateway sends as `Authorization: Bearer`
        /// (read when it connects; the token itself never sits in the configuration file).
        bearer_token_env: Option<String>,
        /// The certificate authorities (PEM, read at start-up) an `https://` server's
        /// certificate must chain to, instead of the system's roots.
        ca: Option<CaBundle>,
    },
}

/// The certificate authorities of a `ca_file`: the file's name (for messages) and its
/// certificates, checked to parse at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaBundle {
    /// The file, as resolved against the configuration's directory.
    pub path: PathBuf,
    /// Its PEM bytes.
    pub pem: Vec<u8>,
}

impl CaBundle {
    /// Reads and checks `path`: at least one certificate, every block parsing.
    fn read(path: PathBuf, here: &str) -> Result<CaBundle, String> {
        let pem = std::fs::read(&path)
            .map_err(|e| format!("{here}: `ca_file` {}: {e}", path.display()))?;
        let bundle = CaBundle { path, pem };
        bundle.certificates().map_err(|e| format!("{here}: {e}"))?;
        Ok(bundle)
    }

    /// The certificates, for the HTTP client.
    pub fn certificates(&self) -> Result<Vec<reqwest::Certificate>, String> {
        let bad = |what: String| format!("`ca_file` {}: {what}", self.path.display());
        let certs = reqwest::Certificate::from_pem_bundle(&self.pem)
            .map_err(|e| bad(format!("not a PEM file of certificates: {e}")))?;
        if certs.is_empty() {
            return Err(bad(
                "holds no certificate (expected `-----BEGIN CERTIFICATE-----` blocks)".into(),
            ));
        }
        Ok(certs)
    }
}

/// One downstream server.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// Its name: the prefix of its tools in the gateway's list.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The default author of its results.
    pub principal: String,
    /// Per-tool authors (tools not named here: all results by `principal`).
    pub tools: BTreeMap<String, Authors>,
    /// Per tool, the argument of its calls that names the document its result was read from
    /// (`source`: a file path, a document id), as AgentDojo's trust maps say it
    /// (`docs/mcp.md`, "Confirm").
    pub sources: BTreeMap<String, String>,
    /// The gate policy for its tools (names as the server has them); `None`: nothing sensitive.
    pub policy: Option<Arc<Policy>>,
    /// Repair a call the gate would deny when a trusted value can replace the offending one.
    pub repair: bool,
    /// How long a call may take.
    pub timeout: Duration,
}

impl ServerSpec {
    /// Who authored the results of `tool`.
    pub fn authors(&self, tool: &str) -> Authors {
        self.tools
            .get(tool)
            .cloned()
            .unwrap_or_else(|| Authors::whole(&self.principal))
    }

    /// The argument of `tool`'s calls that names the document its result was read from.
    pub fn source_arg(&self, tool: &str) -> Option<&str> {
        self.sources.get(tool).map(String::as_str)
    }

    /// Every principal named for this server.
    pub fn principals(&self) -> Vec<String> {
        let mut out = vec![self.principal.clone()];
        for a in self.tools.values() {
            for p in a.principals() {
                if !out.iter().any(|o| o == p) {
                    out.push(p.to_string());
                }
            }
        }
        out
    }
}

/// The gateway's configuration, checked.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The principal that signs session records and gate decisions (default: the operator).
    pub recorder: Option<String>,
    /// The principal of the user's requests, when clients pass them.
    pub user: Option<String>,
    /// The session of requests that name none.
    pub session: String,
    /// The scope entries are written in.
    pub scope: Scope,
    /// The largest downstream result accepted, serialised.
    pub max_result_bytes: usize,
    /// The downstream servers, by name.
    pub servers: Vec<ServerSpec>,
}

impl GatewayConfig {
    /// Reads and checks the configuration file at `path`; relative paths in it are relative to
    /// its directory.
    pub fn load(path: &Path) -> Result<GatewayConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read the gateway configuration {}: {e}",
                path.display()
            )
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        GatewayConfig::parse(&text, &dir).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses configuration text; relative paths are relative to `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<GatewayConfig, String> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        let g = raw.gateway;
        for p in g.recorder.iter().chain(&g.user) {
            check_principal(p, "[gateway]")?;
        }
        let session = g.session.unwrap_or_else(|| "default".to_string());
        crate::session::validate_key(&session).map_err(|e| format!("[gateway] session: {e}"))?;
        let scope = match g.scope {
            Some(s) => Scope::new(&s).map_err(|e| format!("[gateway] scope: {e}"))?,
            None => Scope::default(),
        };
        if raw.servers.is_empty() {
            return Err("no downstream server: add at least one [servers.NAME] table".into());
        }
        let mut servers = Vec::new();
        for (name, s) in raw.servers {
            servers.push(server(&name, s, dir)?);
        }
        Ok(GatewayConfig {
            recorder: g.recorder,
            user: g.user,
            session,
            scope,
            max_result_bytes: g.max_result_bytes.unwrap_or(DEFAULT_MAX_RESULT),
            servers,
        })
    }
}

/// An environment variable's name as POSIX shells write them: `[A-Za-z_][A-Za-z0-9_]*`.
fn check_env_name(var: &str, here: &str) -> Result<(), String> {
    let mut chars = var.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{here}: `bearer_token_env` must name an environment variable (letters, digits, `_`), not {:?}",
            var.chars().take(64).collect::<String>()
        ))
    }
}

/// Whether `url` is plain HTTP to this machine (127.0.0.0/8, `localhost`, `[::1]`), where a
/// token does not cross a network.
fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn server(name: &str, s: RawServer, dir: &Path) -> Result<ServerSpec, String> {
    let here = format!("[servers.{name}]");
    check_server_name(name)?;
    check_principal(&s.principal, &here)?;
    let transport = match (s.command, s.url) {
        (Some(_), None) if s.bearer_token_env.is_some() => {
            return Err(format!(
                "{here}: `bearer_token_env` is for a `url`; give a `command` its secrets in `env`"
            ));
        }
        (Some(_), None) if s.ca_file.is_some() => {
            return Err(format!("{here}: `ca_file` is for an https:// `url`"));
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(format!("{here}: `command` is empty"));
            }
            Transport::Stdio {
                command,
                args: s.args,
                env: s.env,
                cwd: s.cwd.map_or_else(|| dir.to_path_buf(), |c| dir.join(c)),
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "{here}: `url` must be an http:// or https:// URL, not {url:?}"
                ));
            }
            if !s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some() {
                return Err(format!(
                    "{here}: `args`, `env` and `cwd` are for a `command`, not a `url`"
                ));
            }
            if let Some(var) = &s.bearer_token_env {
                check_env_name(var, &here)?;
                if !url.starts_with("https://") && !is_loopback_http(&url) {
                    return Err(format!(
                        "{here}: `bearer_token_env` needs an https:// URL (or http:// to this \
                         machine): over {url} the token would cross the network in clear"
                    ));
                }
            }
            let ca = match s.ca_file {
                Some(_) if !url.starts_with("https://") => {
                    return Err(format!(
                        "{here}: `ca_file` is for an https:// `url`, not {url}"
                    ));
                }
                Some(f) => Some(CaBundle::read(dir.join(f), &here)?),
                None => None,
            };
            Transport::Http {
                url,
                bearer_token_env: s.bearer_token_env,
                ca,
            }
        }
        (Some(_), Some(_)) => {
            return Err(format!("{here}: give `command` or `url`, not both"));
        }
        (None, None) => {
            return Err(format!(
                "{here}: give `command` (a stdio server) or `url` (a Streamable HTTP server)"
            ));
        }
    };
    let policy = match s.policy {
        Some(p) => {
            let path = dir.join(&p);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("{here}: cannot read the policy {}: {e}", path.display()))?;
            Some(Arc::new(Policy::parse(&text).map_err(|e| {
                format!("{here}: policy {}: {e}", path.display())
            })?))
        }
        None => None,
    };
    let mut tools = BTreeMap::new();
    let mut sources = BTreeMap::new();
    for (tool, t) in s.tools {
        let there = format!("[servers.{name}.tools.{tool}]");
        if tool.is_empty() {
            return Err(format!("{there}: empty tool name"));
        }
        let principal = t.principal.unwrap_or_else(|| s.principal.clone());
        check_principal(&principal, &there)?;
        let mut fields = Vec::new();
        for (path, p) in t.fields {
            let path = FieldPath::parse(&path).map_err(|e| format!("{there} fields: {e}"))?;
            check_principal(&p, &there)?;
            fields.push((path, p));
        }
        if let Some(arg) = t.source {
            if arg.is_empty() || arg.len() > 128 || arg.chars().any(char::is_control) {
                return Err(format!(
                    "{there}: `source` names an argument of the tool's calls: 1 to 128 characters, none a control character"
                ));
            }
            sources.insert(tool.clone(), arg);
        }
        tools.insert(tool, Authors { principal, fields });
    }
    let timeout = s.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout == 0 || timeout > 24 * 3600 {
        return Err(format!("{here}: `timeout_secs` must be from 1 to 86400"));
    }
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        principal: s.principal,
        tools,
        sources,
        policy,
        repair: s.repair.unwrap_or(true),
        timeout: Duration::from_secs(timeout),
    })
}

fn check_principal(name: &str, here: &str) -> Result<(), String> {
    memlineage_core::principal::validate_name(name).map_err(|e| format!("{here}: {e}"))
}

/// A server name: 1 to 32 letters, digits, `-` or `_`, without the separator `__` or a
/// trailing `_` (so `server__tool` splits one way only).
fn check_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains(SEPARATOR)
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid server name {:?}: 1 to 32 letters, digits, `-` or `_`, without `__` or a trailing `_`",
            name.chars().take(80).collect::<String>()
        ))
    }
}

/// A TOML error with its line and column.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {col}: {msg}")
        }
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[gateway]
user = "user"

[servers.bank]
command = "python3"
args = ["bank.py"]
principal = "bank"

[servers.bank.tools.get_transactions]
fields = { "transactions[].subject" = "senders" }

[servers.bank.tools.read_file]
principal = "files"
source = "file_path"

[servers.web]
url = "http://127.0.0.1:9000/mcp"
principal = "web"
"#;

    #[test]
    fn parses_servers_tools_and_fields() {
        let c = GatewayConfig::parse(GOOD, Path::new("/etc/ml")).unwrap();
        assert_eq!(c.session, "default");
        assert_eq!(c.user.as_deref(), Some("user"));
        assert_eq!(c.servers.len(), 2);
        let bank = &c.servers[0];
        assert_eq!(bank.name, "bank");
        assert!(
            matches!(&bank.transport, Transport::Stdio { cwd, .. } if cwd == Path::new("/etc/ml"))
        );
        let a = bank.authors("get_transactions");
        assert_eq!(a.principal, "bank");
        assert_eq!(a.fields[0].1, "senders");
        assert_eq!(bank.authors("send_money"), Authors::whole("bank"));
        assert_eq!(bank.principals(), vec!["bank", "senders", "files"]);
        assert_eq!(bank.source_arg("read_file"), Some("file_path"));
        assert_eq!(bank.source_arg("get_transactions"), None);
        assert!(matches!(c.servers[1].transport, Transport::Http { .. }));
    }

    #[test]
    fn bearer_tokens_come_from_the_environment_and_never_cross_a_network_in_clear() {
        let parse = |server: &str| {
            GatewayConfig::parse(
                &format!("[servers.a]\nprincipal = \"x\"\n{server}"),
                Path::new("/etc/gw"),
            )
        };
        for ok in [
            "url = \"https://tools.example/mcp\"\nbearer_token_env = \"TOOLS_TOKEN\"\n",
            "url = \"http://127.0.0.1:9000/mcp\"\nbearer_token_env = \"_T1\"\n",
            "url = \"http://localhost/mcp\"\nbearer_token_env = \"T\"\n",
            "url = \"http://[::1]:8/mcp\"\nbearer_token_env = \"T\"\n",
        ] {
            let c = parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(matches!(
                &c.servers[0].transport,
                Transport::Http {
                    bearer_token_env: Some(_),
                    ..
                }
            ));
        }
        for (bad, want) in [
            (
                "url = \"http://tools.example/mcp\"\nbearer_token_env = \"T\"\n",
                "in clear",
            ),
            (
                "url = \"http://127.0.0.1.evil.example/mcp\"\nbearer_token_env = \"T\"\n",
                "in clear",
            ),
            (
                "url = \"http://localhost@evil.example/mcp\"\nbearer_token_env = \"T\"\n",
                "in clear",
            ),
            (
                "url = \"https://t/mcp\"\nbearer_token_env = \"1X\"\n",
                "environment variable",
            ),
            (
                "url = \"https://t/mcp\"\nbearer_token_env = \"A-B\"\n",
                "environment variable",
            ),
            (
                "url = \"https://t/mcp\"\nbearer_token_env = \"\"\n",
                "environment variable",
            ),
            (
                "command = \"c\"\nbearer_token_env = \"T\"\n",
                "is for a `url`",
            ),
        ] {
            let e = parse(bad).map(|_| ()).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
            assert!(e.contains("[servers.a]"), "{e}");
        }
    }

    #[test]
    fn a_ca_file_must_hold_certificates_and_goes_with_https_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.pem"), "").unwrap();
        std::fs::write(
            dir.path().join("key.pem"),
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("broken.pem"),
            "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let parse = |server: &str| {
            GatewayConfig::parse(
                &format!("[servers.a]\nprincipal = \"x\"\n{server}"),
                dir.path(),
            )
            .map(|_| ())
        };
        for (bad, want) in [
            (
                "url = \"https://t/mcp\"\nca_file = \"missing.pem\"\n",
                "missing.pem",
            ),
            (
                "url = \"https://t/mcp\"\nca_file = \"empty.pem\"\n",
                "no certificate",
            ),
            (
                "url = \"https://t/mcp\"\nca_file = \"key.pem\"\n",
                "no certificate",
            ),
            (
                "url = \"https://t/mcp\"\nca_file = \"broken.pem\"\n",
                "broken.pem",
            ),
            (
                "url = \"http://127.0.0.1/mcp\"\nca_file = \"empty.pem\"\n",
                "https://",
            ),
            ("command = \"c\"\nca_file = \"empty.pem\"\n", "https://"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
            assert!(e.contains("[servers.a]"), "{e}");
        }
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let cases = [
            ("[servers.a]\nprincipal = \"x\"\n", "give `command`"),
            (
                "[servers.a]\ncommand = \"c\"\nurl = \"http://x\"\nprincipal = \"x\"\n",
                "not both",
            ),
            (
                "[servers.a]\ncommand = \"c\"\nprincipal = \"x\"\ncolour = 1\n",
                "line 4",
            ),
            (
                "[servers.a__b]\ncommand = \"c\"\nprincipal = \"x\"\n",
                "invalid server name",
            ),
            (
                "[servers.a]\nurl = \"ftp://x\"\nprincipal = \"x\"\n",
                "http://",
            ),
            (
                "[servers.a]\ncommand = \"c\"\nprincipal = \"x\"\n[servers.a.tools.t]\nfields = { \"a[0]\" = \"p\" }\n",
                "invalid field path",
            ),
            (
                "[servers.a]\ncommand = \"c\"\nprincipal = \"x\"\n[servers.a.tools.t]\nsource = \"\"\n",
                "`source` names an argument",
            ),
            (
                "[gateway]\nsession = \"a b\"\n[servers.a]\ncommand = \"c\"\nprincipal = \"x\"\n",
                "session",
            ),
            ("[gateway]\n", "servers"),
        ];
        for (text, want) in cases {
            let e = GatewayConfig::parse(text, Path::new(".")).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
