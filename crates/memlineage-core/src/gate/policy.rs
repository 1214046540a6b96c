//! The gate policy: which tools are sensitive, and for each parameter its type, the least
//! trusted label that may justify it, and what to do with a value nothing justifies.
//!
//! The TOML format and its defaults are specified in `docs/gate.md`. Parsing walks the spanned
//! TOML document, so every error names the line and column of the offending key or value.

use super::param_type::ParamType;
use crate::label::TrustLabel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

/// Enforce the decision, or only record it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A denied call is not dispatched; a repaired call is dispatched with the repaired
    /// arguments. The default.
    #[default]
    Enforce,
    /// Decide and log, but dispatch every call as made: for rolling out a policy.
    Record,
}

impl Mode {
    /// `enforce` or `record`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Record => "record",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do with a parameter value that no entry justifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unjustified {
    /// Let it through (for values the model may legitimately make up, such as a note).
    Allow,
    /// Deny the call. The default.
    #[default]
    Deny,
}

impl Unjustified {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unjustified::Allow => "allow",
            Unjustified::Deny => "deny",
        }
    }
}

/// How explicit citations are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Citations {
    /// A cited entry justifies a value only if it carries the value (by the type's matching);
    /// citations the model invents for a value that came from elsewhere are ignored. The
    /// default.
    #[default]
    Verify,
    /// A cited entry justifies the value whatever its content (for callers whose citations do
    /// not come from the model).
    Trust,
}

impl Citations {
    /// `verify` or `trust`.
    pub fn as_str(self) -> &'static str {
        match self {
            Citations::Verify => "verify",
            Citations::Trust => "trust",
        }
    }
}

/// Which of the entries that carry a value decide whether it is justified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Carriers {
    /// The value is justified when *some* carrier is trusted enough: a value the user (or a
    /// trusted lineage) supplied stays the user's choice even if an untrusted entry echoes it,
    /// so an attacker cannot block a legitimate call by repeating its values. With value
    /// provenance on, a trusted-looking carrier whose value was copied from an untrusted
    /// ancestor does not count. The default.
    #[default]
    Any,
    /// The value is justified only when *every* carrier is trusted enough (the least trusted
    /// carrier decides): for deployments that want any untrusted mention of a value to block it.
    All,
}

impl Carriers {
    /// `any` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            Carriers::Any => "any",
            Carriers::All => "all",
        }
    }
}

/// How far the gate traces a value that an entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Through the carrier's ancestors, whatever the edge weights: a carrier whose value first
    /// appeared in an untrusted ancestor counts at that ancestor's derived label (closes the
    /// under-τ and trusted-cover laundering attacks, `docs/gate.md`). The default.
    #[default]
    Value,
    /// The carrier's own (effective) label only, as in the paper.
    Entry,
}

impl Provenance {
    /// `value` or `entry`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Value => "value",
            Provenance::Entry => "entry",
        }
    }
}

/// What becomes of what a policy does not list: the arguments of a named tool that no parameter
/// path covers, and (at the top level) the tools it does not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unlisted {
    /// Not checked: an unlisted argument passes, an unnamed tool is not sensitive. The default.
    #[default]
    Allow,
    /// Denied: a call with an unlisted argument is denied (naming it), and so is every call of a
    /// tool the policy does not name (a deny-by-default policy).
    Deny,
}

impl Unlisted {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unlisted::Allow => "allow",
            Unlisted::Deny => "deny",
        }
    }
}

/// The policy of one parameter of a sensitive tool.
#[derive(Clone, Debug)]
pub struct ParamPolicy {
    /// The parameter's type.
    pub kind: ParamType,
    /// The least trusted label that may justify the value (default `DERIVED_TRUSTED`).
    pub require: TrustLabel,
    /// What to do when nothing justifies the value (default `deny`).
    pub unjustified: Unjustified,
    /// For free text: the types of the values found *inside* the text that must each be
    /// justified like a parameter of their type, with this parameter's `require` (default none).
    pub typed_values: Vec<ParamType>,
    /// What to do with a typed value found inside the text that nothing justifies (default
    /// `deny`).
    pub typed_unjustified: Unjustified,
    /// Whether a failing value of this parameter (and the typed values inside it) may make the
    /// call a confirm (`docs/gate.md`, "Confirm"); `None`: the policy's `confirm`.
    pub confirm: Option<bool>,
}

impl ParamPolicy {
    /// A parameter of type `kind` with the defaults: `require = DERIVED_TRUSTED`,
    /// `unjustified = deny`, no typed values checked inside free text.
    pub fn new(kind: ParamType) -> ParamPolicy {
        ParamPolicy {
            kind,
            require: Policy::DEFAULT_REQUIRE,
            unjustified: Unjustified::Deny,
            typed_values: Vec::new(),
            typed_unjustified: Unjustified::Deny,
            confirm: None,
        }
    }
}

/// The policy of one sensitive tool.
#[derive(Clone, Debug, Default)]
pub struct ToolPolicy {
    /// The checked parameters by path (`recipient`, `recipients[]`, `payee.iban`,
    /// `items[].account`; `docs/gate.md`, "Parameter paths").
    pub params: BTreeMap<String, ParamPolicy>,
    /// What becomes of an argument that no path covers; `None`: the policy's `default`.
    pub default: Option<Unlisted>,
}

/// A gate policy.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Enforce or record (default enforce).
    pub mode: Mode,
    /// How explicit citations are treated (default verify).
    pub citations: Citations,
    /// Which carriers of a value decide (default any).
    pub carriers: Carriers,
    /// How far a carried value is traced (default value).
    pub provenance: Provenance,
    /// What becomes of unlisted arguments and unnamed tools (default allow).
    pub default: Unlisted,
    /// Whether a call that would be denied may be a confirm: every failing value comes from a
    /// document the user's trusted request names (`docs/gate.md`, "Confirm"). Default `false`:
    /// a policy opts in, and each parameter may opt out (or in) with its own `confirm`.
    pub confirm: bool,
    /// The sensitive tools by name; a tool not named is not sensitive (under `default =
    /// "allow"`).
    pub tools: BTreeMap<String, ToolPolicy>,
}

/// An invalid policy file: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy line {line}, column {column}: {message}")]
pub struct PolicyError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong, as a sentence.
    pub message: String,
}

impl PolicyError {
    fn at(text: &str, offset: usize, message: impl Into<String>) -> PolicyError {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        PolicyError {
            line,
            column,
            message: message.into(),
        }
    }
}

type Key<'i> = Spanned<DeString<'i>>;
type Val<'i> = Spanned<DeValue<'i>>;

/// The entries of a table in source order (the parsed map is sorted by key).
fn entries<'a, 'i>(t: &'a DeTable<'i>) -> Vec<(&'a Key<'i>, &'a Val<'i>)> {
    let mut v: Vec<_> = t.iter().collect();
    v.sort_by_key(|(k, _)| k.span().start);
    v
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

struct Ctx<'t> {
    text: &'t str,
}

impl Ctx<'_> {
    fn err(&self, offset: usize, message: impl Into<String>) -> PolicyError {
        PolicyError::at(self.text, offset, message)
    }

    fn string<'a>(&self, v: &'a Val<'_>, what: &str) -> Result<&'a str, PolicyError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.as_ref()),
            other => Err(self.err(
                v.span().start,
                format!("{what} must be a string, found {}", type_name(other)),
            )),
        }
    }

    fn table<'a, 'i>(&self, v: &'a Val<'i>, what: &str) -> Result<&'a DeTable<'i>, PolicyError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(t),
            other => Err(self.err(
                v.span().start,
                format!("{what} must be a table, found {}", type_name(other)),
            )),
        }
    }

    fn name(&self, k: &Key<'_>, what: &str) -> Result<String, PolicyError> {
        let s: &str = k.get_ref().as_ref();
        if s.trim().is_empty() {
            return Err(self.err(k.span().start, format!("{what} name is empty")));
        }
        Ok(s.to_string())
    }
}

/// The last line of a regex error (`error: unclosed group`), without the diagram.
fn regex_problem(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(
            || text.split_whitespace().collect::<Vec<_>>().join(" "),
            str::to_string,
        )
}

impl Policy {
    /// The default `require`: `DERIVED_TRUSTED`.
    pub const DEFAULT_REQUIRE: TrustLabel = TrustLabel::DerivedTrusted;

    /// Parses a policy from TOML text (format in `docs/gate.md`). Errors name the line and
    /// column and the problem: TOML syntax, unknown keys, unknown types, bad labels, bad regular
    /// expressions, bad modes.
    pub fn parse(toml_text: &str) -> Result<Policy, PolicyError> {
        let cx = Ctx { text: toml_text };
        let doc = DeTable::parse(toml_text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            cx.err(offset, e.message().trim().to_string())
        })?;
        let mut policy = Policy::default();
        for (k, v) in entries(doc.get_ref()) {
            match k.get_ref().as_ref() {
                "mode" => {
                    policy.mode = match cx.string(v, "`mode`")? {
                        "enforce" => Mode::Enforce,
                        "record" => Mode::Record,
                        other => {
                            return Err(cx.err(
                                v.span().start,
                                format!(
                                    "unknown mode {other:?} (expected \"enforce\" or \"record\")"
                                ),
                            ));
                        }
                    }
                }
                "citations" => {
                    policy.citations = match cx.string(v, "`citations`")? {
                        "verify" => Citations::Verify,
                        "trust" => Citations::Trust,
                        other => {
                            return Err(cx.err(
                                v.span().start,
                                format!(
                                    "unknown citations setting {other:?} (expected \"verify\" or \"trust\")"
                                ),
                            ));
                        }
                    }
                }
                "carriers" => {
                    policy.carriers = match cx.string(v, "`carriers`")? {
                        "any" => Carriers::Any,
                        "all" => Carriers::All,
                        other => {
                            return Err(cx.err(
                                v.span().start,
                                format!(
                                    "unknown carriers setting {other:?} (expected \"any\" or \"all\")"
                                ),
                            ));
                        }
                    }
                }
                "provenance" => {
                    policy.provenance = match cx.string(v, "`provenance`")? {
                        "value" => Provenance::Value,
                        "entry" => Provenance::Entry,
                        other => {
                            return Err(cx.err(
                                v.span().start,
                                format!(
                                    "unknown provenance setting {other:?} (expected \"value\" or \"entry\")"
                                ),
                            ));
                        }
                    }
                }
                "default" => policy.default = parse_default(&cx, v, "the policy")?,
                "confirm" => policy.confirm = parse_confirm(&cx, v, "the policy")?,
                "tools" => {
                    for (tk, tv) in entries(cx.table(v, "`tools`")?) {
                        let tool = cx.name(tk, "tool")?;
                        let tp = parse_tool(&cx, &tool, tv)?;
                        policy.tools.insert(tool, tp);
                    }
                }
                other => {
                    return Err(cx.err(
                        k.span().start,
                        format!(
                            "unknown key {other:?} at the top level (expected `mode`, `citations`, `carriers`, `provenance`, `default`, `confirm` or `tools`)"
                        ),
                    ));
                }
            }
        }
        Ok(policy)
    }

    /// Whether calls of `tool` are judged: it is named in the policy, or the policy's default
    /// is deny (an unnamed tool is then denied).
    pub fn is_sensitive(&self, tool: &str) -> bool {
        self.tools.contains_key(tool) || self.default == Unlisted::Deny
    }

    /// What becomes of the unlisted arguments of `tool`: its own `default`, else the policy's.
    pub fn default_for(&self, tool: &ToolPolicy) -> Unlisted {
        tool.default.unwrap_or(self.default)
    }

    /// Whether a failing value of parameter `param` may make a call a confirm: its own
    /// `confirm`, else the policy's.
    pub fn confirm_for(&self, param: &ParamPolicy) -> bool {
        param.confirm.unwrap_or(self.confirm)
    }
}

/// `confirm = true` or `false`.
fn parse_confirm(cx: &Ctx<'_>, v: &Val<'_>, where_: &str) -> Result<bool, PolicyError> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        other => Err(cx.err(
            v.span().start,
            format!(
                "`confirm` of {where_} must be true or false, found {}",
                type_name(other)
            ),
        )),
    }
}

fn parse_default(cx: &Ctx<'_>, v: &Val<'_>, where_: &str) -> Result<Unlisted, PolicyError> {
    match cx.string(v, "`default`")? {
        "allow" => Ok(Unlisted::Allow),
        "deny" => Ok(Unlisted::Deny),
        other => Err(cx.err(
            v.span().start,
            format!("invalid `default` {other:?} of {where_} (expected \"allow\" or \"deny\")"),
        )),
    }
}

fn parse_tool(cx: &Ctx<'_>, tool: &str, v: &Val<'_>) -> Result<ToolPolicy, PolicyError> {
    let mut tp = ToolPolicy::default();
    for (k, pv) in entries(cx.table(v, &format!("tool `{tool}`"))?) {
        match k.get_ref().as_ref() {
            "params" => {
                for (pk, pval) in entries(cx.table(pv, &format!("`tools.{tool}.params`"))?) {
                    let param = cx.name(pk, "parameter")?;
                    parse_params(cx, tool, &param, pk, pval, &mut tp.params)?;
                }
            }
            "default" => tp.default = Some(parse_default(cx, pv, &format!("tool `{tool}`"))?),
            other => {
                return Err(cx.err(
                    k.span().start,
                    format!(
                        "unknown key {other:?} in tool `{tool}` (expected `params` or `default`)"
                    ),
                ));
            }
        }
    }
    Ok(tp)
}

/// The keys a parameter's table may have.
const PARAM_KEYS: [&str; 7] = [
    "type",
    "require",
    "unjustified",
    "pattern",
    "typed_values",
    "typed_unjustified",
    "confirm",
];

/// Parses the parameter at `path`, or — for a table without `type` whose entries are all tables
/// (TOML's dotted keys: `payee.iban = { … }`) — the parameters below it.
fn parse_params(
    cx: &Ctx<'_>,
    tool: &str,
    path: &str,
    key: &Key<'_>,
    v: &Val<'_>,
    out: &mut BTreeMap<String, ParamPolicy>,
) -> Result<(), PolicyError> {
    if let DeValue::Table(t) = v.get_ref()
        && !t.is_empty()
        && t.iter().all(|(k, sub)| {
            !PARAM_KEYS.contains(&k.get_ref().as_ref())
                && matches!(sub.get_ref(), DeValue::Table(_))
        })
    {
        for (sk, sv) in entries(t) {
            let seg = cx.name(sk, "parameter")?;
            parse_params(cx, tool, &format!("{path}.{seg}"), sk, sv, out)?;
        }
        return Ok(());
    }
    super::path::Pattern::parse(path).map_err(|problem| {
        cx.err(
            key.span().start,
            format!("invalid parameter path {path:?} of tool `{tool}`: {problem}"),
        )
    })?;
    let pp = parse_param(cx, tool, path, key, v)?;
    if out.insert(path.to_string(), pp).is_some() {
        return Err(cx.err(
            key.span().start,
            format!("parameter `{path}` of tool `{tool}` is given twice"),
        ));
    }
    Ok(())
}

fn parse_param(
    cx: &Ctx<'_>,
    tool: &str,
    param: &str,
    key: &Key<'_>,
    v: &Val<'_>,
) -> Result<ParamPolicy, PolicyError> {
    let where_ = format!("parameter `{param}` of tool `{tool}`");
    let t = cx.table(v, &where_)?;
    let mut kind: Option<(&str, usize)> = None;
    let mut pattern: Option<(&str, usize)> = None;
    let mut require = Policy::DEFAULT_REQUIRE;
    let mut unjustified = Unjustified::Deny;
    let mut typed: Option<(Vec<ParamType>, usize)> = None;
    let mut typed_unjustified: Option<(Unjustified, usize)> = None;
    let mut confirm = None;
    let unjustified_value = |val: &Val<'_>, what: &str| -> Result<Unjustified, PolicyError> {
        match cx.string(val, what)? {
            "allow" => Ok(Unjustified::Allow),
            "deny" => Ok(Unjustified::Deny),
            other => Err(cx.err(
                val.span().start,
                format!("invalid {what} {other:?} in {where_} (expected \"allow\" or \"deny\")"),
            )),
        }
    };
    for (k, val) in entries(t) {
        let start = val.span().start;
        match k.get_ref().as_ref() {
            "typed_values" => typed = Some((parse_typed_values(cx, val, &where_)?, start)),
            "typed_unjustified" => {
                typed_unjustified = Some((unjustified_value(val, "`typed_unjustified`")?, start));
            }
            "type" => kind = Some((cx.string(val, "`type`")?, start)),
            "pattern" => pattern = Some((cx.string(val, "`pattern`")?, start)),
            "require" => {
                let s = cx.string(val, "`require`")?;
                require = s.parse().map_err(|_| {
                    cx.err(
                        start,
                        format!(
                            "invalid label {s:?} in `require` of {where_} (expected \"TRUSTED\", \"DERIVED_TRUSTED\", \"DERIVED_UNTRUSTED\" or \"EXTERNAL\")"
                        ),
                    )
                })?;
            }
            "unjustified" => unjustified = unjustified_value(val, "`unjustified`")?,
            "confirm" => confirm = Some(parse_confirm(cx, val, &where_)?),
            other => {
                return Err(cx.err(
                    k.span().start,
                    format!(
                        "unknown key {other:?} in {where_} (expected `type`, `require`, `unjustified`, `pattern`, `typed_values`, `typed_unjustified` or `confirm`)"
                    ),
                ));
            }
        }
    }
    let expected = ParamType::NAMES.join(", ");
    let Some((type_name, type_at)) = kind else {
        return Err(cx.err(
            key.span().start,
            format!("{where_} has no `type` (expected one of {expected})"),
        ));
    };
    let kind = if type_name == "regex" {
        let Some((pat, pat_at)) = pattern else {
            return Err(cx.err(
                type_at,
                format!("{where_} has type \"regex\" but no `pattern`"),
            ));
        };
        ParamType::regex(pat).map_err(|e| {
            cx.err(
                pat_at,
                format!(
                    "invalid regex pattern {pat:?} in {where_}: {}",
                    regex_problem(&e)
                ),
            )
        })?
    } else {
        if let Some((_, pat_at)) = pattern {
            return Err(cx.err(
                pat_at,
                format!("`pattern` is only allowed with type = \"regex\" ({where_} has type {type_name:?})"),
            ));
        }
        ParamType::from_name(type_name).ok_or_else(|| {
            cx.err(
                type_at,
                format!(
                    "unknown parameter type {type_name:?} in {where_} (expected one of {expected})"
                ),
            )
        })?
    };
    let free_text = matches!(kind, ParamType::FreeText);
    for at in [typed.as_ref().map(|t| t.1), typed_unjustified.map(|t| t.1)]
        .into_iter()
        .flatten()
    {
        if !free_text {
            return Err(cx.err(
                at,
                format!(
                    "`typed_values` and `typed_unjustified` are only allowed with type = \"free_text\" ({where_} has type {:?})",
                    kind.name()
                ),
            ));
        }
    }
    Ok(ParamPolicy {
        kind,
        require,
        unjustified,
        typed_values: typed.map(|t| t.0).unwrap_or_default(),
        typed_unjustified: typed_unjustified.map_or(Unjustified::Deny, |t| t.0),
        confirm,
    })
}

/// The types whose values inside free text are checked.
pub const TYPED_VALUE_TYPES: [&str; 5] = ["iban", "url", "email", "amount", "date"];

/// `typed_values = true` (every type of [`TYPED_VALUE_TYPES`]), `false`, or a list of them.
fn parse_typed_values(
    cx: &Ctx<'_>,
    v: &Val<'_>,
    where_: &str,
) -> Result<Vec<ParamType>, PolicyError> {
    let expected = TYPED_VALUE_TYPES.join(", ");
    let by_name = |name: &str, at: usize| {
        TYPED_VALUE_TYPES
            .contains(&name)
            .then(|| ParamType::from_name(name))
            .flatten()
            .ok_or_else(|| {
                cx.err(
                    at,
                    format!("unknown type {name:?} in `typed_values` of {where_} (expected some of {expected})"),
                )
            })
    };
    match v.get_ref() {
        DeValue::Boolean(true) => TYPED_VALUE_TYPES
            .iter()
            .map(|n| by_name(n, v.span().start))
            .collect(),
        DeValue::Boolean(false) => Ok(Vec::new()),
        DeValue::Array(items) => {
            let mut out: Vec<ParamType> = Vec::new();
            for item in items {
                let name = cx.string(item, "an entry of `typed_values`")?;
                let t = by_name(name, item.span().start)?;
                if !out.iter().any(|o| o.name() == t.name()) {
                    out.push(t);
                }
            }
            Ok(out)
        }
        other => Err(cx.err(
            v.span().start,
            format!(
                "`typed_values` of {where_} must be true, false or a list of types, found {}",
                type_name(other)
            ),
        )),
    }
}
