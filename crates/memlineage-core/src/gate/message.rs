//! What a reason's message says, kept as facts and written out when asked for.
//!
//! [`decide`](super::decide) records why each parameter passed or failed ([`Said`]); the
//! sentence ([`ParamReason::message`](super::ParamReason::message)) is written from those facts,
//! the reason's parameter name and its taint path. The facts borrow the entries and the call's
//! values, so recording them costs no copy; the sentences are the ones
//! `docs/gate.md` shows, byte for byte as they were written eagerly before (tests below).

use super::ContextEntry;
use super::decision::Via;
use super::earliest::Earlier;
use super::param_type::NormValue;
use super::words::{entry_desc, id_list, path_desc, show_json, type_phrase};
use crate::hash::EntryId;
use crate::label::{TrustLabel, Weight};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// What one reason's message says.
// Boxing the facts would cost an allocation per checked parameter, which is what this module
// exists to avoid; a reason is moved only a couple of times.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum Said<'a> {
    /// The text itself: a reason read back from JSON, or made to outlive its input.
    Text(String),
    /// The parameter is not in the call.
    Absent,
    /// An argument no parameter path covers, under `default = "deny"`.
    Unlisted,
    /// The parameter was traced and judged.
    Checked(Facts<'a>),
}

/// The facts behind the message of a checked parameter.
#[derive(Clone, Debug)]
pub(crate) struct Facts<'a> {
    /// The value in the call that was checked.
    pub(crate) value: Cow<'a, Value>,
    /// What the trace and the judgement found.
    pub(crate) finding: Finding<'a>,
    /// Cited entries ignored because they do not carry the value.
    pub(crate) ignored: Vec<EntryId>,
    /// What repair made of a failing parameter, appended to the message.
    pub(crate) repair: Option<RepairNote<'a>>,
    /// For a failing value that comes from a document the user's request names: why it may be
    /// confirmed (`docs/gate.md`, "Confirm").
    pub(crate) confirm: Option<super::Confirmation>,
}

/// What the trace and the judgement found.
#[derive(Clone, Debug)]
pub(crate) enum Finding<'a> {
    /// Nothing justifies the value.
    Unjustified {
        /// Whether the policy allows unjustified values.
        allowed: bool,
        /// Whether attribution weights were given but none counted (no strong edge, no taint).
        weak: bool,
    },
    /// Some entries justify the value, at `label`.
    Judged(Judged<'a>),
}

/// A justified value: how, by which entry, at which label.
#[derive(Clone, Debug)]
pub(crate) struct Judged<'a> {
    /// How it was traced.
    pub(crate) how: Via,
    /// How many entries justify it.
    pub(crate) carriers: usize,
    /// The entry that decides.
    pub(crate) decisive: &'a ContextEntry,
    /// Whether the decisive entry carries the value only by look.
    pub(crate) by_look: bool,
    /// The label at which the value is justified.
    pub(crate) label: TrustLabel,
    /// The parameter's required label.
    pub(crate) require: TrustLabel,
    /// For attribution: why the call, as a derived entry, has its label.
    pub(crate) rule: Option<Rule>,
    /// The ancestor where the value first appeared, when it raised the decisive entry's label.
    pub(crate) raised_by: Option<EntryId>,
    /// The value's earliest carrier in the log, when it raised the label (issue 19).
    pub(crate) earlier: Option<Earlier<'a>>,
    /// Less trusted carriers that a trusted one overruled (`carriers = "any"`).
    pub(crate) overruled: Vec<EntryId>,
}

/// Why the call, judged as an entry derived from the attributed entries, has its label.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    /// The call's label.
    pub(crate) label: TrustLabel,
    /// The attribution threshold.
    pub(crate) tau: Weight,
    /// The rule of paper §M4 that gave the label.
    pub(crate) why: Why,
}

/// The rule that gave the call its label.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Why {
    /// A strong edge to this untrusted entry.
    StrongEdgeTo(EntryId),
    /// Every strong edge is trusted.
    TrustedStrongEdges,
    /// No strong edge, and the strict fallback keeps the taint of this weak untrusted edge.
    WeakEdgeTo(EntryId),
    /// No strong edge, and the untrusted edges together weigh this much (basis points).
    UntrustedSum(u32),
}

/// What repair made of a failing parameter.
#[derive(Clone, Debug)]
pub(crate) enum RepairNote<'a> {
    /// Replaced by the candidate.
    Repaired(Candidate<'a>),
    /// A candidate was found, but the call is denied because another parameter has none.
    Unused(Candidate<'a>),
    /// Several distinct trusted values.
    Ambiguous(Vec<NormValue>),
    /// No trusted value of the type of this name.
    Nothing(&'static str),
    /// Free text is never repaired.
    FreeText,
    /// A typed value found inside free text is never repaired (the text would have to be
    /// rewritten).
    Inner,
}

/// The one trusted candidate for a failing parameter.
#[derive(Clone, Debug)]
pub(crate) struct Candidate<'a> {
    /// The value that replaces the parameter's.
    pub(crate) new: Value,
    /// The entry it comes from.
    pub(crate) source: &'a ContextEntry,
    /// The name of the parameter's type.
    pub(crate) kind: &'static str,
}

impl Said<'_> {
    /// The value that was checked, if the facts are kept.
    pub(crate) fn value(&self) -> Option<&Value> {
        match self {
            Said::Checked(f) => Some(&f.value),
            _ => None,
        }
    }

    /// Why the value may be confirmed, if it may (and the facts are kept).
    pub(crate) fn confirmation(&self) -> Option<&super::Confirmation> {
        match self {
            Said::Checked(f) => f.confirm.as_ref(),
            _ => None,
        }
    }

    /// The message of parameter `name`, whose reason has `taint_path`.
    pub(crate) fn render(&self, name: &str, taint_path: &[EntryId]) -> String {
        match self {
            Said::Text(t) => t.clone(),
            Said::Absent => format!("`{name}` is not in the call: nothing to check."),
            Said::Unlisted => format!(
                "`{name}` is not covered by any parameter path of the policy, and the policy's default for this tool is deny."
            ),
            Said::Checked(f) => f.render(name, taint_path),
        }
    }
}

impl Facts<'_> {
    fn render(&self, name: &str, taint_path: &[EntryId]) -> String {
        let val = show_json(&self.value);
        let mut note = String::new();
        if let [one] = self.ignored.as_slice() {
            note = format!(
                " Cited entry {} does not carry the value and was ignored.",
                one.short()
            );
        } else if !self.ignored.is_empty() {
            note = format!(
                " Cited entries {} do not carry the value and were ignored.",
                id_list(&self.ignored)
            );
        }
        let mut m = match &self.finding {
            Finding::Unjustified { allowed, weak } => {
                let verb = if *allowed { "allows" } else { "denies" };
                let weak = if *weak {
                    " (attribution gives no edge above τ and no taint)"
                } else {
                    ""
                };
                format!(
                    "No entry of the context justifies `{name}` = {val} (no citation, no entry carrying the value, no attribution above τ){weak}; the policy {verb} unjustified values.{note}"
                )
            }
            Finding::Judged(j) => j.render(name, &val, taint_path, &note),
        };
        if let Some(r) = &self.repair {
            m.push(' ');
            r.render_into(&mut m);
        }
        m
    }
}

impl Judged<'_> {
    fn render(&self, name: &str, val: &str, taint_path: &[EntryId], note: &str) -> String {
        let how = match self.how {
            Via::Citation => "citation of",
            Via::ValueMatch => "its value in",
            Via::Attribution => "attribution to",
            Via::None => "",
        };
        let mut about = String::new();
        if let Some(rule) = &self.rule {
            about.push_str(&format!(" ({rule})"));
        }
        if let Some(origin) = self.raised_by {
            about.push_str(&format!(
                ", whose value first appears in its ancestor {} (value provenance: {})",
                origin.short(),
                self.label
            ));
        }
        match self.earlier {
            Some(Earlier::Entry(first)) if first.id == self.decisive.id => about.push_str(
                ", the earliest entry of the log that carries the value (the context omits it; earliest carrier)",
            ),
            Some(Earlier::Entry(first)) => about.push_str(&format!(
                ", whose value first appears in the log in the earlier {} (earliest carrier: {})",
                entry_desc(first),
                self.label
            )),
            Some(Earlier::NotLookedUp) => about.push_str(
                ", and where the value first appears in the log was not looked up (counted EXTERNAL)",
            ),
            None => {}
        }
        let mut desc = entry_desc(self.decisive);
        if self.decisive.content.is_none() {
            desc.push_str(
                ", whose content is erased, so it counts as carrying every value it may have carried",
            );
        } else if self.by_look {
            desc.push_str(
                ", which carries it by look (look-alike characters, or separators between its characters)",
            );
        }
        let require = self.require;
        if self.label > require {
            let path = path_desc(taint_path);
            return format!(
                "`{name}` = {val} is justified by {how} {desc}{about}, less trusted than the required {require}; {path}.{note}"
            );
        }
        let n = self.carriers;
        let mut m = format!(
            "`{name}` = {val} is justified by {how} {n} entr{}, the decisive one being {desc}{about}, within the required {require}.",
            if n == 1 { "y" } else { "ies" },
        );
        if let [one] = self.overruled.as_slice() {
            m.push_str(&format!(
                " Less trusted entry {} carries the value too; a trusted carrier suffices (carriers = \"any\").",
                one.short()
            ));
        } else if !self.overruled.is_empty() {
            m.push_str(&format!(
                " Less trusted entries {} carry the value too; a trusted carrier suffices (carriers = \"any\").",
                id_list(&self.overruled)
            ));
        }
        m.push_str(note);
        m
    }
}

impl fmt::Display for Rule {
    /// `the call, as an entry derived from the context, is EXTERNAL because …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tau = self.tau;
        write!(
            f,
            "the call, as an entry derived from the context, is {} because ",
            self.label
        )?;
        match self.why {
            Why::StrongEdgeTo(id) => write!(
                f,
                "its attribution edge to {} weighs more than τ = {tau}",
                id.short()
            ),
            Why::TrustedStrongEdges => write!(
                f,
                "its strong attribution edges (above τ = {tau}) are trusted"
            ),
            Why::WeakEdgeTo(id) => write!(
                f,
                "no edge weighs more than τ = {tau}, and under the strict fallback the weak edge to untrusted {} keeps its taint",
                id.short()
            ),
            Why::UntrustedSum(sum_bp) => write!(
                f,
                "under the strict fallback its untrusted edges together weigh {}.{:04} > τ = {tau}",
                sum_bp / 10_000,
                sum_bp % 10_000
            ),
        }
    }
}

impl RepairNote<'_> {
    fn render_into(&self, m: &mut String) {
        match self {
            RepairNote::Repaired(c) => {
                m.push_str("Repaired to ");
                c.render_into(m);
                m.push('.');
            }
            RepairNote::Unused(c) => {
                m.push_str("A repair was found (");
                c.render_into(m);
                m.push_str(
                    "), but the call is denied because other parameters cannot be repaired.",
                );
            }
            RepairNote::Ambiguous(values) => {
                let shown: Vec<String> = values.iter().take(5).map(|v| format!("{v}")).collect();
                m.push_str(&format!(
                    "No repair: ambiguous: {} trusted candidates ({}{}).",
                    values.len(),
                    shown.join(", "),
                    if values.len() > 5 { ", …" } else { "" }
                ));
            }
            RepairNote::Nothing(kind) => m.push_str(&format!(
                "No repair: no trusted candidate {} in the context or the repair pool.",
                type_phrase(kind)
            )),
            RepairNote::FreeText => m.push_str("No repair: free text cannot be repaired."),
            RepairNote::Inner => m.push_str(
                "No repair: a value found inside free text cannot be repaired (the text would have to be rewritten).",
            ),
        }
    }
}

impl Candidate<'_> {
    /// `"GB29…" from entry 1a2b3c4d5e6f (TRUSTED, user_input by `user`), the only trusted
    /// candidate of type iban`.
    fn render_into(&self, m: &mut String) {
        m.push_str(&format!(
            "{} from {}, the only trusted candidate {}",
            show_json(&self.new),
            entry_desc(self.source),
            type_phrase(self.kind)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryKind;
    use crate::hash::Hash256;
    use serde_json::json;

    fn entry(name: &str, label: TrustLabel, writer: &str, kind: EntryKind) -> ContextEntry {
        ContextEntry {
            id: EntryId(Hash256::of(name.as_bytes())),
            label,
            writer: writer.to_string(),
            kind,
            content: Some(String::new()),
            taint_path: Vec::new(),
        }
    }

    fn judged<'a>(decisive: &'a ContextEntry, label: TrustLabel) -> Judged<'a> {
        Judged {
            how: Via::ValueMatch,
            carriers: 1,
            decisive,
            by_look: false,
            label,
            require: TrustLabel::DerivedTrusted,
            rule: None,
            raised_by: None,
            earlier: None,
            overruled: Vec::new(),
        }
    }

    fn facts<'a>(value: Value, finding: Finding<'a>) -> Facts<'a> {
        Facts {
            value: Cow::Owned(value),
            finding,
            ignored: Vec::new(),
            repair: None,
            confirm: None,
        }
    }

    #[test]
    fn absent_and_text() {
        assert_eq!(
            Said::Absent.render("date", &[]),
            "`date` is not in the call: nothing to check."
        );
        assert_eq!(
            Said::Text("as written".into()).render("x", &[]),
            "as written"
        );
    }

    /// The example of `docs/gate.md`, "Reasons", with its ids.
    #[test]
    fn untrusted_message_names_the_entry_and_its_path() {
        let mail = entry("mail", TrustLabel::External, "mail", EntryKind::ToolOutput);
        let root = EntryId(Hash256::of(b"root"));
        let said = Said::Checked(facts(
            json!("UK12345678901234567890"),
            Finding::Judged(judged(&mail, TrustLabel::External)),
        ));
        let text = said.render("recipient", &[mail.id, root]);
        assert_eq!(
            text,
            format!(
                "`recipient` = \"UK12345678901234567890\" is justified by its value in entry {} (EXTERNAL, tool_output by `mail`), less trusted than the required DERIVED_TRUSTED; lineage to the untrusted root: {} → {}.",
                mail.id.short(),
                mail.id.short(),
                root.short()
            )
        );
    }

    #[test]
    fn justified_message_with_overruled_and_ignored_entries() {
        let user = entry("user", TrustLabel::Trusted, "user", EntryKind::UserInput);
        let (a, b) = (EntryId(Hash256::of(b"a")), EntryId(Hash256::of(b"b")));
        let mut j = judged(&user, TrustLabel::Trusted);
        j.carriers = 3;
        j.overruled = vec![a, b];
        let mut f = facts(json!(98.7), Finding::Judged(j));
        f.ignored = vec![a];
        let text = Said::Checked(f).render("amount", &[]);
        assert_eq!(
            text,
            format!(
                "`amount` = 98.7 is justified by its value in 3 entries, the decisive one being entry {} (TRUSTED, user_input by `user`), within the required DERIVED_TRUSTED. Less trusted entries {}, {} carry the value too; a trusted carrier suffices (carriers = \"any\"). Cited entry {} does not carry the value and was ignored.",
                user.id.short(),
                a.short(),
                b.short(),
                a.short()
            )
        );
    }

    #[test]
    fn attribution_rule_and_value_provenance() {
        let note = entry(
            "note",
            TrustLabel::DerivedTrusted,
            "agent",
            EntryKind::Derived,
        );
        let web = EntryId(Hash256::of(b"web"));
        let tau = Weight::from_bp(5000).expect("tau");
        let mut j = judged(&note, TrustLabel::DerivedUntrusted);
        j.how = Via::Attribution;
        j.rule = Some(Rule {
            label: TrustLabel::DerivedUntrusted,
            tau,
            why: Why::UntrustedSum(12_345),
        });
        j.raised_by = Some(web);
        let text = Said::Checked(facts(json!("x"), Finding::Judged(j))).render("memo", &[]);
        assert_eq!(
            text,
            format!(
                "`memo` = \"x\" is justified by attribution to entry {} (DERIVED_TRUSTED, derived by `agent`) (the call, as an entry derived from the context, is DERIVED_UNTRUSTED because under the strict fallback its untrusted edges together weigh 1.2345 > τ = 0.5), whose value first appears in its ancestor {} (value provenance: DERIVED_UNTRUSTED), less trusted than the required DERIVED_TRUSTED; no lineage path to an untrusted root was supplied.",
                note.id.short(),
                web.short()
            )
        );
    }

    #[test]
    fn unjustified_and_repair_notes() {
        let user = entry("user", TrustLabel::Trusted, "user", EntryKind::UserInput);
        let mut f = facts(
            json!("UK12345678901234567890"),
            Finding::Unjustified {
                allowed: false,
                weak: true,
            },
        );
        let base = "No entry of the context justifies `recipient` = \"UK12345678901234567890\" (no citation, no entry carrying the value, no attribution above τ) (attribution gives no edge above τ and no taint); the policy denies unjustified values.";
        let candidate = Candidate {
            new: json!("GB29NWBK60161331926819"),
            source: &user,
            kind: "iban",
        };
        let from = format!(
            "\"GB29NWBK60161331926819\" from entry {} (TRUSTED, user_input by `user`), the only trusted candidate of type iban",
            user.id.short()
        );
        for (note, tail) in [
            (
                RepairNote::Repaired(candidate.clone()),
                format!("Repaired to {from}."),
            ),
            (
                RepairNote::Unused(candidate),
                format!(
                    "A repair was found ({from}), but the call is denied because other parameters cannot be repaired."
                ),
            ),
            (
                RepairNote::Ambiguous(
                    (1..=6)
                        .map(|i| NormValue::Token(format!("V{i}")))
                        .collect(),
                ),
                "No repair: ambiguous: 6 trusted candidates (V1, V2, V3, V4, V5, …).".into(),
            ),
            (
                RepairNote::Nothing("regex"),
                "No repair: no trusted candidate matching the pattern in the context or the repair pool.".into(),
            ),
            (
                RepairNote::FreeText,
                "No repair: free text cannot be repaired.".into(),
            ),
        ] {
            f.repair = Some(note);
            assert_eq!(
                Said::Checked(f.clone()).render("recipient", &[]),
                format!("{base} {tail}")
            );
        }
    }
}
