//! Decisions as JSON, for the log: the same keys, in the same order, with the texts written out.
//!
//! A decision keeps its texts as facts ([`super::decision`]), so it is serialised through a
//! mirror that holds the rendered summary and messages; it is read back into a decision that
//! holds the texts as they were written.

use super::confirm::Confirmation;
use super::decision::{Decision, GateDecision, Outcome, ParamReason, Repair, Via};
use super::ids;
use super::message::Said;
use super::policy::Mode;
use super::summary::Summary;
use crate::hash::EntryId;
use crate::label::TrustLabel;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A reason as written: the fields in their order, the message last.
#[derive(Serialize)]
struct ReasonOut<'x> {
    param: &'x str,
    outcome: Outcome,
    via: Via,
    #[serde(serialize_with = "ids::list::serialize")]
    justifying: &'x [EntryId],
    label: Option<TrustLabel>,
    #[serde(serialize_with = "ids::opt::serialize")]
    offending: Option<EntryId>,
    #[serde(serialize_with = "ids::list::serialize")]
    taint_path: &'x [EntryId],
    message: String,
}

impl Serialize for ParamReason<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ReasonOut {
            param: &self.param,
            outcome: self.outcome,
            via: self.via,
            justifying: &self.justifying,
            label: self.label,
            offending: self.offending,
            taint_path: &self.taint_path,
            message: self.message(),
        }
        .serialize(s)
    }
}

/// A reason as read.
#[derive(Deserialize)]
struct ReasonIn {
    param: String,
    outcome: Outcome,
    via: Via,
    #[serde(with = "ids::list")]
    justifying: Vec<EntryId>,
    label: Option<TrustLabel>,
    #[serde(with = "ids::opt")]
    offending: Option<EntryId>,
    #[serde(with = "ids::list")]
    taint_path: Vec<EntryId>,
    message: String,
}

impl<'de> Deserialize<'de> for ParamReason<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = ReasonIn::deserialize(d)?;
        Ok(ParamReason {
            param: Cow::Owned(r.param),
            outcome: r.outcome,
            via: r.via,
            justifying: r.justifying,
            label: r.label,
            offending: r.offending,
            taint_path: r.taint_path,
            said: Said::Text(r.message),
        })
    }
}

/// A decision as written: the fields in their order, the summary after `dispatched`.
#[derive(Serialize)]
struct DecisionOut<'x, 'a> {
    decision: Decision,
    tool: &'x str,
    mode: Mode,
    dispatched: bool,
    summary: String,
    reasons: &'x [ParamReason<'a>],
    arguments: &'x Map<String, Value>,
    repairs: &'x [Repair],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    confirm: &'x [Confirmation],
}

impl Serialize for GateDecision<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DecisionOut {
            decision: self.decision,
            tool: &self.tool,
            mode: self.mode,
            dispatched: self.dispatched,
            summary: self.summary(),
            reasons: &self.reasons,
            arguments: &self.arguments,
            repairs: &self.repairs,
            confirm: &self.confirmations,
        }
        .serialize(s)
    }
}

/// A decision as read.
#[derive(Deserialize)]
struct DecisionIn<'a> {
    decision: Decision,
    tool: String,
    mode: Mode,
    dispatched: bool,
    summary: String,
    reasons: Vec<ParamReason<'a>>,
    arguments: Map<String, Value>,
    repairs: Vec<Repair>,
    #[serde(default)]
    confirm: Vec<Confirmation>,
}

impl<'de> Deserialize<'de> for GateDecision<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let g = DecisionIn::deserialize(d)?;
        Ok(GateDecision {
            decision: g.decision,
            tool: Cow::Owned(g.tool),
            mode: g.mode,
            dispatched: g.dispatched,
            reasons: g.reasons,
            arguments: Cow::Owned(g.arguments),
            repairs: g.repairs,
            confirmations: g.confirm,
            says: Summary::Text(g.summary),
        })
    }
}

/// A reason with its keys in sorted order ([`GateDecision::to_sorted_json`]).
#[derive(Serialize)]
struct ReasonSorted<'x> {
    #[serde(serialize_with = "ids::list::serialize")]
    justifying: &'x [EntryId],
    label: Option<TrustLabel>,
    message: String,
    #[serde(serialize_with = "ids::opt::serialize")]
    offending: Option<EntryId>,
    outcome: Outcome,
    param: &'x str,
    #[serde(serialize_with = "ids::list::serialize")]
    taint_path: &'x [EntryId],
    via: Via,
}

/// A repair with its keys in sorted order.
#[derive(Serialize)]
struct RepairSorted<'x> {
    new: &'x Value,
    old: &'x Value,
    param: &'x str,
    #[serde(serialize_with = "ids::one::serialize")]
    source: &'x EntryId,
    source_label: TrustLabel,
}

/// A confirmation with its keys in sorted order.
#[derive(Serialize)]
struct ConfirmationSorted<'x> {
    #[serde(serialize_with = "ids::one::serialize")]
    carrier: &'x EntryId,
    document: &'x str,
    #[serde(serialize_with = "ids::one::serialize")]
    named_by: &'x EntryId,
    param: &'x str,
    #[serde(serialize_with = "ids::list::serialize")]
    path: &'x [EntryId],
    #[serde(serialize_with = "ids::one::serialize")]
    source: &'x EntryId,
}

/// A decision with its keys in sorted order, at every level.
#[derive(Serialize)]
struct DecisionSorted<'x> {
    arguments: &'x Map<String, Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    confirm: Vec<ConfirmationSorted<'x>>,
    decision: Decision,
    dispatched: bool,
    mode: Mode,
    reasons: Vec<ReasonSorted<'x>>,
    repairs: Vec<RepairSorted<'x>>,
    summary: String,
    tool: &'x str,
}

impl GateDecision<'_> {
    /// The decision as compact JSON with every object's keys in sorted order: the bytes a
    /// `gate_decision` record holds (`docs/formats.md`, "Control records"), the same as
    /// serialising it into a `serde_json::Value` (whose maps sort their keys) and that value
    /// into bytes, without building the value. Written straight from mirrors whose fields are
    /// declared in sorted order; `arguments` and the repairs' values are JSON maps already.
    /// Returned as raw JSON (`serde_json::value::to_raw_value`: written once, never parsed
    /// again), so that it can be embedded in the record and in an answer as it is.
    pub fn to_sorted_json(&self) -> Result<Box<serde_json::value::RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(&DecisionSorted {
            arguments: &self.arguments,
            confirm: self
                .confirmations
                .iter()
                .map(|c| ConfirmationSorted {
                    carrier: &c.carrier,
                    document: &c.document,
                    named_by: &c.named_by,
                    param: &c.param,
                    path: &c.path,
                    source: &c.source,
                })
                .collect(),
            decision: self.decision,
            dispatched: self.dispatched,
            mode: self.mode,
            reasons: self
                .reasons
                .iter()
                .map(|r| ReasonSorted {
                    justifying: &r.justifying,
                    label: r.label,
                    message: r.message(),
                    offending: r.offending,
                    outcome: r.outcome,
                    param: &r.param,
                    taint_path: &r.taint_path,
                    via: r.via,
                })
                .collect(),
            repairs: self
                .repairs
                .iter()
                .map(|r| RepairSorted {
                    new: &r.new,
                    old: &r.old,
                    param: &r.param,
                    source: &r.source,
                    source_label: r.source_label,
                })
                .collect(),
            summary: self.summary(),
            tool: &self.tool,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Hash256;
    use serde_json::json;

    fn id(s: &str) -> EntryId {
        EntryId(Hash256::of(s.as_bytes()))
    }

    /// Every field filled: a reason with and without a label, a repair, a confirmation, nested
    /// arguments with keys out of order.
    fn full() -> GateDecision<'static> {
        let arguments =
            json!({"z": 1, "amount": "10.00", "nested": {"b": [1, {"y": 2, "x": 1}], "a": null}})
                .as_object()
                .cloned()
                .unwrap_or_default();
        GateDecision {
            decision: Decision::Repair,
            tool: Cow::Owned("send_money".into()),
            mode: Mode::Enforce,
            dispatched: true,
            reasons: vec![
                ParamReason {
                    param: Cow::Owned("recipient".into()),
                    outcome: Outcome::Repaired,
                    via: Via::ValueMatch,
                    justifying: vec![id("a"), id("b")],
                    label: Some(TrustLabel::External),
                    offending: Some(id("b")),
                    taint_path: vec![id("b"), id("c")],
                    said: Said::Text("replaced \"x\"\n".into()),
                },
                ParamReason {
                    param: Cow::Owned("memo".into()),
                    outcome: Outcome::Absent,
                    via: Via::None,
                    justifying: vec![],
                    label: None,
                    offending: None,
                    taint_path: vec![],
                    said: Said::Text("not in the call".into()),
                },
            ],
            arguments: Cow::Owned(arguments),
            repairs: vec![Repair {
                param: "recipient".into(),
                old: json!({"k": "UK12", "a": 1.5}),
                new: json!("GB29NWBK60161331926819"),
                source: id("d"),
                source_label: TrustLabel::Trusted,
            }],
            confirmations: vec![Confirmation {
                param: "recipient".into(),
                carrier: id("b"),
                source: id("e"),
                document: "bill.pdf".into(),
                named_by: id("f"),
                path: vec![id("b"), id("e")],
            }],
            says: Summary::Text("repaired: é ✓".into()),
        }
    }

    #[test]
    fn sorted_json_is_the_bytes_of_the_json_value() {
        let mut d = full();
        for round in 0..3 {
            let through_value =
                serde_json::to_vec(&serde_json::to_value(&d).expect("value")).expect("bytes");
            assert_eq!(
                d.to_sorted_json().expect("sorted").get(),
                String::from_utf8(through_value).expect("utf-8"),
                "round {round}"
            );
            // Then without the optional parts.
            match round {
                0 => d.confirmations.clear(),
                _ => {
                    d.repairs.clear();
                    d.reasons.truncate(1);
                }
            }
        }
    }
}
