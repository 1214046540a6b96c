//! The sensitive-action gate (paper §M6).
//!
//! A [`Policy`] names the sensitive tools and, for each checked parameter, its [`ParamType`],
//! the least trusted label that may justify it, and what to do with a value nothing justifies.
//! [`decide`] traces every checked parameter of a [`ToolCall`] to the context entries that
//! justify it — explicit citation, else normalised value matching, else attribution weights
//! above τ — and allows the call, denies it (naming the parameter, the offending entry and its
//! lineage path to the untrusted root), or repairs it with values of trusted provenance.
//!
//! This module is pure: the policy arrives as text, the entries as values, and the decision
//! leaves as a value for the caller to log and act on; it borrows the call and the entries, and
//! writes its human text only when asked ([`GateDecision`]). The rules are written out in
//! `docs/gate.md`.

mod call;
pub mod canon;
mod confirm;
mod decide;
mod decision;
mod earliest;
mod error;
pub(crate) mod hidden;
mod ids;
mod judge;
mod message;
mod param_type;
mod path;
mod policy;
mod prepared;
mod provenance;
pub mod renderings;
mod repair;
mod spelt;
mod summary;
mod trace;
mod value_key;
mod wire;
mod words;

pub use call::ToolCall;
pub use confirm::Confirmation;
pub use decide::decide;
pub use decision::{Decision, GateDecision, Outcome, ParamReason, Repair, Via};
pub use earliest::{Earliest, FirstCarrier, FirstCarriers};
pub use error::GateError;
pub use param_type::{Amount, Carry, Date, NormValue, ParamType, ParamValue, ValueError};
pub use policy::{
    Carriers, Citations, Mode, ParamPolicy, Policy, PolicyError, Provenance, TYPED_VALUE_TYPES,
    ToolPolicy, Unjustified, Unlisted,
};
pub use prepared::PreparedContext;
pub use value_key::{INDEXED_TYPES, ValueKey, value_keys_of_arguments, value_keys_of_text};

use crate::entry::EntryKind;
use crate::hash::EntryId;
use crate::label::{Fallback, TrustLabel, Weight};
use std::collections::BTreeMap;

/// An entry of the active context, as the gate sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextEntry {
    /// The entry id.
    pub id: EntryId,
    /// The entry's *effective* label (after retroactive distrust, if any).
    pub label: TrustLabel,
    /// The writer principal, for messages.
    pub writer: String,
    /// The entry kind, for messages.
    pub kind: EntryKind,
    /// The content, `None` if it was erased (an erased entry justifies nothing by value).
    pub content: Option<String>,
    /// The strong lineage path from this entry up to its untrusted root, this entry first;
    /// empty if the entry is trusted.
    pub taint_path: Vec<EntryId>,
}

/// An entry of the lineage behind the context, for value provenance: the entry (with its
/// effective label, content and taint path) and the ids of *all* its parents, whatever their
/// edge weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AncestryNode {
    /// The entry.
    pub entry: ContextEntry,
    /// Every parent of the entry, strong or weak.
    pub parents: Vec<EntryId>,
}

/// The lineage behind the context, by entry id: every context entry that has parents, and
/// every ancestor of those (`docs/gate.md`, "Value provenance"). An entry that is absent is
/// taken to have no parents; a parent id that is listed but absent could not be examined and
/// counts as an untrusted carrier (fail closed).
pub type Ancestry = BTreeMap<EntryId, AncestryNode>;

/// Everything [`decide`] needs besides the policy.
#[derive(Clone, Copy, Debug)]
pub struct GateInput<'a> {
    /// The tool call.
    pub call: &'a ToolCall,
    /// The entries in the prompt, including the user's request, in prompt order.
    pub context: &'a [ContextEntry],
    /// Explicit citations: parameter → entry ids, which must be in `context`.
    pub citations: &'a BTreeMap<String, Vec<EntryId>>,
    /// Attribution weights the caller computed per parameter: entry ids (in `context`) and
    /// weights. The call is judged as a derived entry of them: edges strictly above `tau` are
    /// strong, and under the strict `fallback` weak untrusted edges still taint.
    pub attribution: &'a BTreeMap<String, Vec<(EntryId, Weight)>>,
    /// The attribution threshold τ.
    pub tau: Weight,
    /// Whether to try authority repair when the call would be denied.
    pub repair: bool,
    /// Further repair candidates, from store retrieval with the user's request as the query.
    pub repair_pool: &'a [ContextEntry],
    /// The label fallback applied when attribution weights justify a parameter (the call is
    /// treated as a derived entry, paper §M4); the store's setting. Default strict.
    pub fallback: Fallback,
    /// The lineage behind the context and the pool, for value provenance.
    pub ancestry: &'a Ancestry,
    /// The context's values, extracted once ([`PreparedContext`]); ignored unless it was
    /// prepared from exactly `context`.
    pub prepared: Option<&'a PreparedContext>,
    /// The store's answers on where the checked values (and the repair candidates) first
    /// appeared in the log, for the earliest-carrier rule of value provenance (issue 19,
    /// `docs/gate.md`, "Earliest carrier"); `None`: the rule is off (a decision without a
    /// store).
    pub first_carriers: Option<&'a FirstCarriers>,
    /// Where context entries were read from, as the integration that made the tool calls
    /// recorded it: entry id (in `context`) → the document's name (the tool call's argument
    /// that names it, such as a file path). Never taken from an entry's content or from the
    /// model: a call denied only because of values from a document that the user's trusted
    /// request names is a [`Decision::Confirm`] (`docs/gate.md`, "Confirm").
    pub sources: &'a BTreeMap<EntryId, String>,
}

static NO_CITATIONS: BTreeMap<String, Vec<EntryId>> = BTreeMap::new();
static NO_ATTRIBUTION: BTreeMap<String, Vec<(EntryId, Weight)>> = BTreeMap::new();
static NO_ANCESTRY: Ancestry = BTreeMap::new();
static NO_SOURCES: BTreeMap<EntryId, String> = BTreeMap::new();

impl<'a> GateInput<'a> {
    /// An input with no citations, no attribution, and no repair.
    pub fn new(call: &'a ToolCall, context: &'a [ContextEntry], tau: Weight) -> GateInput<'a> {
        GateInput {
            call,
            context,
            citations: &NO_CITATIONS,
            attribution: &NO_ATTRIBUTION,
            tau,
            repair: false,
            repair_pool: &[],
            fallback: Fallback::Strict,
            ancestry: &NO_ANCESTRY,
            prepared: None,
            first_carriers: None,
            sources: &NO_SOURCES,
        }
    }

    /// With the store's answers on where values first appeared in the log.
    pub fn with_first_carriers(mut self, firsts: &'a FirstCarriers) -> Self {
        self.first_carriers = Some(firsts);
        self
    }

    /// With the documents context entries were read from (entry id → document name), as the
    /// integration recorded them: what makes a confirm possible.
    pub fn with_sources(mut self, sources: &'a BTreeMap<EntryId, String>) -> Self {
        self.sources = sources;
        self
    }

    /// With the context's values extracted once, for several decisions over one context.
    pub fn with_prepared(mut self, prepared: &'a PreparedContext) -> Self {
        self.prepared = Some(prepared);
        self
    }

    /// With the store's label fallback (for attribution-justified parameters).
    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// With the lineage behind the context, for value provenance.
    pub fn with_ancestry(mut self, ancestry: &'a Ancestry) -> Self {
        self.ancestry = ancestry;
        self
    }

    /// With explicit citations.
    pub fn with_citations(mut self, citations: &'a BTreeMap<String, Vec<EntryId>>) -> Self {
        self.citations = citations;
        self
    }

    /// With attribution weights.
    pub fn with_attribution(
        mut self,
        attribution: &'a BTreeMap<String, Vec<(EntryId, Weight)>>,
    ) -> Self {
        self.attribution = attribution;
        self
    }

    /// With repair enabled, drawing extra candidates from `pool`.
    pub fn with_repair(mut self, pool: &'a [ContextEntry]) -> Self {
        self.repair = true;
        self.repair_pool = pool;
        self
    }
}
