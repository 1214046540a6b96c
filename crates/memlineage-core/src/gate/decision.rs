//! The decision value: the verdict, one reason per checked parameter, the arguments to dispatch
//! and the repairs.
//!
//! [`decide`](super::decide) does not write the decision's human text. Writing it (entry
//! descriptions, quoted values, lineage paths) took more time than deciding (issue 7), and most
//! decisions are acted on, not read. A decision keeps the facts its text is made of, borrowed from
//! the policy and the input where it can, and renders the text when asked: [`summary`],
//! [`message`], `Display`, serialisation. Borrowing is also why the arguments of a call dispatched
//! as made are not copied. [`GateDecision::into_owned`] renders the text once, for a decision
//! that must outlive its input; a decision read back from JSON holds the text it was written with.
//!
//! [`summary`]: GateDecision::summary
//! [`message`]: ParamReason::message

use super::message::Said;
use super::policy::Mode;
use super::summary::Summary;
use crate::hash::EntryId;
use crate::label::TrustLabel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The gate's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Every checked parameter is justified within its required label (or the tool is not
    /// sensitive).
    Allow,
    /// Some parameter is not, and could not be repaired.
    Deny,
    /// Some parameters were replaced by values of trusted provenance; the repaired call passes.
    Repair,
    /// The call would be denied, but every failing value comes from a document the user's
    /// trusted request names: it needs the user's approval, and is not dispatched until it has
    /// it ([`GateDecision::confirmations`] say why; `docs/gate.md`, "Confirm").
    Confirm,
}

impl Decision {
    /// `allow`, `deny`, `repair` or `confirm`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Repair => "repair",
            Decision::Confirm => "confirm",
        }
    }

    /// Whether the call may be dispatched as decided (allow or repair): a deny never, a confirm
    /// only once the user approved it.
    pub fn dispatches(self) -> bool {
        matches!(self, Decision::Allow | Decision::Repair)
    }
}

/// What became of one checked parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Justified at or below the required label.
    Justified,
    /// Nothing justifies it, and the policy allows that.
    UnjustifiedAllowed,
    /// Nothing justifies it, and the policy denies that.
    UnjustifiedDenied,
    /// Justified only at a label above the required one.
    Untrusted,
    /// Replaced by a value of trusted provenance.
    Repaired,
    /// Not in the call (or `null`): nothing to check.
    Absent,
    /// An argument that no parameter path of the policy covers, under `default = "deny"`.
    Unlisted,
}

impl Outcome {
    /// Whether this outcome denies the call.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Outcome::UnjustifiedDenied | Outcome::Untrusted | Outcome::Unlisted
        )
    }
}

/// How a parameter was traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// Explicit citation.
    Citation,
    /// Normalised value matching against the entries' content.
    ValueMatch,
    /// Attribution weights (the call judged as a derived entry).
    Attribution,
    /// Nothing justifies it.
    None,
}

/// The reason for one checked value. Its sentence is [`message`](Self::message) (also its
/// `Display`), written when asked for.
#[derive(Clone)]
pub struct ParamReason<'a> {
    /// The concrete path of the value (`recipient`, `recipients[1]`, `items[0].account`; for a
    /// typed value found inside free text, the text's path, its type and its index:
    /// `body.url[0]`).
    pub param: Cow<'a, str>,
    /// What became of it.
    pub outcome: Outcome,
    /// How it was traced.
    pub via: Via,
    /// The entries that justify it (for a repaired parameter: its new value).
    pub justifying: Vec<EntryId>,
    /// The label at which the value is justified: the decisive entry's value label (see
    /// `docs/gate.md`, "Decision rules"); `None` when nothing justifies it.
    pub label: Option<TrustLabel>,
    /// For an untrusted (or repaired) parameter: the decisive (least trusted) justifying entry.
    pub offending: Option<EntryId>,
    /// The offending entry's lineage path to its untrusted root, the entry first.
    pub taint_path: Vec<EntryId>,
    /// What the message says.
    pub(crate) said: Said<'a>,
}

impl ParamReason<'_> {
    /// A sentence a person can read.
    pub fn message(&self) -> String {
        self.said.render(&self.param, &self.taint_path)
    }

    /// The same reason with its message written out, borrowing nothing.
    pub fn into_owned(self) -> ParamReason<'static> {
        let text = self.message();
        ParamReason {
            param: Cow::Owned(self.param.into_owned()),
            outcome: self.outcome,
            via: self.via,
            justifying: self.justifying,
            label: self.label,
            offending: self.offending,
            taint_path: self.taint_path,
            said: Said::Text(text),
        }
    }
}

impl fmt::Display for ParamReason<'_> {
    /// The message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl fmt::Debug for ParamReason<'_> {
    /// The fields and the rendered message (the facts behind it are an implementation detail).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamReason")
            .field("param", &self.param)
            .field("outcome", &self.outcome)
            .field("via", &self.via)
            .field("justifying", &self.justifying)
            .field("label", &self.label)
            .field("offending", &self.offending)
            .field("taint_path", &self.taint_path)
            .field("message", &self.message())
            .finish()
    }
}

impl PartialEq for ParamReason<'_> {
    /// Equal fields and equal messages, however each message is held (facts or text).
    fn eq(&self, other: &Self) -> bool {
        self.param == other.param
            && self.outcome == other.outcome
            && self.via == other.via
            && self.justifying == other.justifying
            && self.label == other.label
            && self.offending == other.offending
            && self.taint_path == other.taint_path
            && self.message() == other.message()
    }
}

/// One replaced parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repair {
    /// The parameter.
    pub param: String,
    /// The value the model produced.
    pub old: Value,
    /// The value of trusted provenance that replaces it.
    pub new: Value,
    /// The entry that supplies the new value.
    #[serde(with = "super::ids::one")]
    pub source: EntryId,
    /// That entry's label.
    pub source_label: TrustLabel,
}

/// The gate's decision on one call, with its reasons: what the caller logs and acts on. It
/// borrows from the policy and the input it was decided on ([`into_owned`](Self::into_owned)
/// to keep it longer); its sentence is [`summary`](Self::summary) (also its `Display`).
#[derive(Clone)]
pub struct GateDecision<'a> {
    /// Allow, deny or repair.
    pub decision: Decision,
    /// The tool.
    pub tool: Cow<'a, str>,
    /// The policy's mode.
    pub mode: Mode,
    /// Whether the caller dispatches the call: in enforce mode for allow and repair; in record
    /// mode always.
    pub dispatched: bool,
    /// One reason per parameter the policy names for this tool, in name order.
    pub reasons: Vec<ParamReason<'a>>,
    /// The arguments to dispatch: the repaired ones for a repair in enforce mode, else the
    /// original ones (record mode dispatches the call as made), borrowed from the call.
    pub arguments: Cow<'a, Map<String, Value>>,
    /// The replaced parameters, for a repair.
    pub repairs: Vec<Repair>,
    /// For a confirm: per failing value, the document the user's request names that it comes
    /// from, and the lineage that shows it (empty otherwise).
    pub confirmations: Vec<super::Confirmation>,
    /// What the summary says.
    pub(crate) says: Summary,
}

impl GateDecision<'_> {
    /// One sentence summing up the decision.
    pub fn summary(&self) -> String {
        self.says.render(self)
    }

    /// The same decision with its summary and messages written out, borrowing nothing.
    pub fn into_owned(self) -> GateDecision<'static> {
        let text = self.summary();
        GateDecision {
            decision: self.decision,
            tool: Cow::Owned(self.tool.into_owned()),
            mode: self.mode,
            dispatched: self.dispatched,
            reasons: self
                .reasons
                .into_iter()
                .map(ParamReason::into_owned)
                .collect(),
            arguments: Cow::Owned(self.arguments.into_owned()),
            repairs: self.repairs,
            confirmations: self.confirmations,
            says: Summary::Text(text),
        }
    }
}

impl fmt::Display for GateDecision<'_> {
    /// The summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl fmt::Debug for GateDecision<'_> {
    /// The fields and the rendered summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GateDecision")
            .field("decision", &self.decision)
            .field("tool", &self.tool)
            .field("mode", &self.mode)
            .field("dispatched", &self.dispatched)
            .field("summary", &self.summary())
            .field("reasons", &self.reasons)
            .field("arguments", &self.arguments)
            .field("repairs", &self.repairs)
            .field("confirmations", &self.confirmations)
            .finish()
    }
}

impl PartialEq for GateDecision<'_> {
    /// Equal fields and equal texts, however each text is held (facts or text).
    fn eq(&self, other: &Self) -> bool {
        self.decision == other.decision
            && self.tool == other.tool
            && self.mode == other.mode
            && self.dispatched == other.dispatched
            && self.reasons == other.reasons
            && self.arguments == other.arguments
            && self.repairs == other.repairs
            && self.confirmations == other.confirmations
            && self.summary() == other.summary()
    }
}

#[cfg(test)]
mod tests {
    use crate::entry::EntryKind;
    use crate::gate::{ContextEntry, GateDecision, GateInput, Policy, ToolCall, decide};
    use crate::hash::{EntryId, Hash256};
    use crate::label::{TrustLabel, Weight};
    use serde_json::json;

    /// Written out, serialised and read back, a decision says the same thing.
    #[test]
    fn texts_survive_into_owned_and_json() {
        let policy = Policy::parse(
            "[tools.send_money.params]\nrecipient = { type = \"iban\" }\nmemo = { type = \"free_text\" }\n",
        )
        .expect("policy");
        let mail = ContextEntry {
            id: EntryId(Hash256::of(b"mail")),
            label: TrustLabel::External,
            writer: "mail".into(),
            kind: EntryKind::ToolOutput,
            content: Some("Pay UK12 3456 7890 1234 5678 90".into()),
            taint_path: vec![EntryId(Hash256::of(b"mail"))],
        };
        let args = json!({"recipient": "UK12345678901234567890"});
        let call = ToolCall::new("send_money", args.as_object().cloned().unwrap_or_default());
        let ctx = [mail.clone()];
        let d = decide(&policy, &GateInput::new(&call, &ctx, Weight::ONE)).expect("decides");
        let short = mail.id.short();
        let expected = format!(
            "`recipient` = \"UK12345678901234567890\" is justified by its value in entry {short} (EXTERNAL, tool_output by `mail`), less trusted than the required DERIVED_TRUSTED; lineage to the untrusted root: {short}."
        );
        assert_eq!(d.reasons[1].message(), expected);
        assert_eq!(d.reasons[1].to_string(), expected);
        assert_eq!(
            d.reasons[0].message(),
            "`memo` is not in the call: nothing to check."
        );
        assert_eq!(d.to_string(), d.summary());
        let json = serde_json::to_value(&d).expect("serialises");
        assert_eq!(json["reasons"][1]["message"], expected.as_str());
        assert_eq!(json["summary"], d.summary().as_str());
        let back: GateDecision<'static> = serde_json::from_value(json.clone()).expect("reads");
        assert_eq!(back, d);
        assert_eq!(serde_json::to_value(&back).expect("serialises"), json);
        let owned = d.clone().into_owned();
        assert_eq!(owned, d);
        assert_eq!(owned.reasons[1].message(), expected);
    }
}
