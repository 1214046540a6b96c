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
