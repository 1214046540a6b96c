//! Which witnesses a checkpoint needs: C2SP tlog-policy (<https://c2sp.org/tlog-policy>).
//!
//! ```text
//! log <vkey> [<url>]                 a log's key (type 0x01); its name is the log's origin
//! witness <name> <vkey> [<url>]      a witness's cosignature key (type 0x04)
//! group <name> all|any|<k> <name>... k of the members (witnesses or earlier groups)
//! quorum <name>|none                 what a checkpoint needs, exactly one line
//! ```
//!
//! Lines are separated by newlines, items by spaces or tabs; `#` starts a comment line. Names
//! are defined before use (so groups cannot be circular) and listed at most once per group. A
//! log can be configured with witnesses and a k-of-n quorum with this file; a reader requires a
//! witnessed checkpoint with one. The URL of a witness is where to reach it: this project reads
//! `file://` URLs of local witness directories; an HTTP witness is served by the service.

use crate::checkpoint::{CosignatureVerifier, NoteVerifier};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// The most logs, witnesses or groups a policy may define (the spec recommends supporting at
/// least 32 of each).
pub const MAX_POLICY_ITEMS: usize = 256;

/// Why a policy file was rejected: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy line {line}: {reason} (C2SP tlog-policy)")]
pub struct PolicyError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// A log listed by a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLog {
    /// Its checkpoint key; the key name is the log's origin.
    pub verifier: NoteVerifier,
    /// Where to reach it, if given.
    pub url: Option<String>,
}

/// A witness listed by a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    /// The policy's name for it (used only within the policy).
    pub name: String,
    /// Its cosignature key.
    pub verifier: CosignatureVerifier,
    /// Where to reach it, if given.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Group {
    name: String,
    threshold: usize,
    members: Vec<Member>,
}

/// A parsed tlog-policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    logs: Vec<PolicyLog>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    /// `None`: `quorum none`.
    quorum: Option<Member>,
}

/// What the cosignatures of one note satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumCheck {
    /// Policy names of the witnesses whose cosignature verified, with its timestamp.
    pub cosigned: Vec<(String, u64)>,
    /// Policy names of witnesses with a cosignature line that does not verify.
    pub invalid: Vec<String>,
    /// Whether the quorum is met.
    pub met: bool,
}

impl Policy {
    /// A policy that asks for no cosignature (`quorum none`) and lists nothing.
    pub fn none() -> Policy {
        Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        }
    }

    /// Parses a policy file.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let mut p = Policy::none();
        let mut names: HashMap<String, Member> = HashMap::new();
        let mut quorum_seen = false;
        for (i, raw) in text.split('\n').enumerate() {
            let line = i + 1;
            let err = |reason: String| PolicyError { line, reason };
            if let Some(b) = raw
                .bytes()
                .find(|b| (*b < 0x20 && *b != b'\t') || *b == 0x7f)
            {
                return Err(err(format!(
                    "control character 0x{b:02x}; only tab and newline are allowed"
                )));
            }
            let items: Vec<&str> = raw.split([' ', '\t']).filter(|s| !s.is_empty()).collect();
            let Some((&keyword, args)) = items.split_first() else {
                continue;
            };
            if keyword.starts_with('#') {
                continue;
            }
            if p.logs.len() + p.witnesses.len() + p.groups.len() >= 3 * MAX_POLICY_ITEMS {
                return Err(err("too many definitions".into()));
            }
            match keyword {
                "log" => {
                    let (vkey, url) = match args {
                        [v] => (*v, None),
                        [v, u] => (*v, Some((*u).to_string())),
                        _ => return Err(err("expected `log <vkey> [<url>]`".into())),
                    };
                    let verifier = NoteVerifier::parse(vkey).map_err(|e| err(e.to_string()))?;
                    if p.logs.iter().any(|l| l.verifier.key() == verifier.key()) {
                        return Err(err("a log with this key is already listed".into()));
                    }
                    p.logs.push(PolicyLog { verifier, url });
                }
                "witness" => {
                    let (name, vkey, url) = match args {
                        [n, v] => (*n, *v, None),
                        [n, v, u] => (*n, *v, Some((*u).to_string())),
                        _ => {
                            return Err(err("expected `witness <name> <vkey> [<url>]`".into()));
                        }
                    };
                    define(&names, name).map_err(err)?;
                    let verifier =
                        CosignatureVerifier::parse(vkey).map_err(|e| err(e.to_string()))?;
                    if p.witnesses
                        .iter()
                        .any(|w| w.verifier.key() == verifier.key())
                    {
                        return Err(err("a witness with this key is already listed".into()));
                    }
                    names.insert(name.to_string(), Member::Witness(p.witnesses.len()));
                    p.witnesses.push(PolicyWitness {
                        name: name.to_string(),
                        verifier,
                        url,
                    });
                }
                "group" => {
                    let [name, k, members @ ..] = args else {
                        return Err(err("expected `group <name> all|any|<k> <member>...`".into()));
                    };
                    define(&names, name).map_err(err)?;
                    if members.is_empty() {
                        return Err(err("a group needs at least one member".into()));
                    }
                    let mut seen = BTreeSet::new();
                    let mut list = Vec::with_capacity(members.len());
                    for m in members {
                        if !seen.insert(*m) {
                            return Err(err(format!("`{m}` is listed twice")));
                        }
                        let member = names.get(*m).copied().ok_or_else(|| {
                            err(format!("`{m}` is not a witness or group defined above"))
                        })?;
                        list.push(member);
                    }
                    let n = list.len();
                    let threshold = match *k {
                        "all" => n,
                        "any" => 1,
                        k => match k.parse::<usize>() {
                            Ok(v) if (1..=n).contains(&v) && v.to_string() == k => v,
                            _ => {
                                return Err(err(format!(
                                    "threshold `{k}` is not all, any or a decimal from 1 to {n}"
                                )));
                            }
                        },
                    };
                    names.insert(name.to_string(), Member::Group(p.groups.len()));
                    p.groups.push(Group {
                        name: name.to_string(),
                        threshold,
                        members: list,
                    });
                }
                "quorum" => {
                    if quorum_seen {
                        return Err(err("a policy has exactly one quorum line".into()));
                    }
                    quorum_seen = true;
                    p.quorum = match args {
                        ["none"] => None,
                        [name] => Some(names.get(*name).copied().ok_or_else(|| {
                            err(format!("`{name}` is not a witness or group defined above"))
                        })?),
                        _ => return Err(err("expected `quorum <name>` or `quorum none`".into())),
                    };
                }
                other => {
                    return Err(err(format!(
                        "unknown keyword `{}` (expected log, witness, group or quorum)",
                        other.chars().take(40).collect::<String>()
                    )));
                }
            }
        }
        if !quorum_seen {
            return Err(PolicyError {
                line: 0,
                reason: "no quorum line (write `quorum none` to require no cosignature)".into(),
            });
        }
        Ok(p)
    }

    /// The logs listed.
    pub fn logs(&self) -> &[PolicyLog] {
        &self.logs
    }

    /// The witnesses listed.
    pub fn witnesses(&self) -> &[PolicyWitness] {
        &self.witnesses
    }

    /// True for `quorum none`: no cosignature is needed.
    pub fn requires_nothing(&self) -> bool {
        self.quorum.is_none()
    }

    /// Whether the witnesses for which `cosigned(i)` holds (indices into
    /// [`witnesses`](Self::witnesses)) meet the quorum.
    pub fn quorum_met(&self, cosigned: impl Fn(usize) -> bool) -> bool {
        match self.quorum {
            None => true,
            Some(m) => self.member_met(m, &cosigned, 0),
        }
    }

    fn member_met(&self, m: Member, cosigned: &impl Fn(usize) -> bool, depth: usize) -> bool {
        match m {
            Member::Witness(i) => cosigned(i),
            Member::Group(g) => {
                // Groups only refer to earlier definitions, so depth is bounded by their count.
                let Some(group) = self.groups.get(g).filter(|_| depth <= self.groups.len()) else {
                    return false;
                };
                let met = group
                    .members
                    .iter()
                    .filter(|m| self.member_met(**m, cosigned, depth + 1))
                    .count();
                met >= group.threshold
            }
        }
    }

    /// Verifies the cosignatures of the listed witnesses on `note` and says whether they meet
    /// the quorum. The log's own signature is not checked here.
    pub fn check(&self, note: &str) -> QuorumCheck {
        let mut cosigned = Vec::new();
        let mut invalid = Vec::new();
        let mut ok = vec![false; self.witnesses.len()];
        for (i, w) in self.witnesses.iter().enumerate() {
            match w.verifier.verify(note) {
                Ok(ts) => {
                    ok[i] = true;
                    cosigned.push((w.name.clone(), ts));
                }
                Err(crate::checkpoint::CheckpointError::NoVerifiedSignature { .. }) => {}
                Err(_) => invalid.push(w.name.clone()),
            }
        }
        let met = self.quorum_met(|i| ok.get(i).copied().unwrap_or(false));
        QuorumCheck {
            cosigned,
            invalid,
            met,
        }
    }

    /// The quorum in words, e.g. `2 of {w1, w2, w3}` or `none`.
    pub fn describe_quorum(&self) -> String {
        match self.quorum {
            None => "none".to_string(),
            Some(m) => self.describe(m),
        }
    }

    fn describe(&self, m: Member) -> String {
        match m {
            Member::Witness(i) => self
                .witnesses
                .get(i)
                .map_or_else(|| "?".to_string(), |w| w.name.clone()),
            Member::Group(g) => match self.groups.get(g) {
                Some(group) => {
                    let inner: Vec<String> =
                        group.members.iter().map(|m| self.describe(*m)).collect();
                    format!("{} of {{{}}}", group.threshold, inner.join(", "))
                }
                None => "?".to_string(),
            },
        }
    }
}

fn define(names: &HashMap<String, Member>, name: &str) -> Result<(), String> {
    if name == "none" {
        return Err("`none` is predefined and cannot be redefined".into());
    }
    if names.contains_key(name) {
        return Err(format!("`{name}` is already defined"));
    }
    Ok(())
}

impl fmt::Display for Policy {
    /// The policy in the file format (comments and URLs of the source are kept only as
    /// parsed: URLs yes, comments no).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.logs {
            write!(f, "log {}", l.verifier)?;
            if let Some(u) = &l.url {
                write!(f, " {u}")?;
            }
            writeln!(f)?;
        }
        for w in &self.witnesses {
            write!(f, "witness {} {}", w.name, w.verifier)?;
            if let Some(u) = &w.url {
                write!(f, " {u}")?;
            }
            writeln!(f)?;
        }
        for g in &self.groups {
            let members: Vec<&str> = g
                .members
                .iter()
                .map(|m| match m {
                    Member::Witness(i) => self.witnesses.get(*i).map_or("?", |w| w.name.as_str()),
                    Member::Group(j) => self.groups.get(*j).map_or("?", |g| g.name.as_str()),
                })
                .collect();
            writeln!(f, "group {} {} {}", g.name, g.threshold, members.join(" "))?;
        }
        match self.quorum {
            None => writeln!(f, "quorum none"),
            Some(Member::Witness(i)) => writeln!(
                f,
                "quorum {}",
                self.witnesses.get(i).map_or("none", |w| w.name.as_str())
            ),
            Some(Member::Group(g)) => writeln!(
                f,
                "quorum {}",
                self.groups.get(g).map_or("none", |g| g.name.as_str())
            ),
        }
    }
}
