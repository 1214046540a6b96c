//! Lineage queries over the store (paper §M4): ancestors, descendants, and the explanation of a
//! label — the strong path from the untrusted root that causes it.

use super::{EntryView, Memory};
use crate::error::Error;
use memlineage_core::EntryId;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::lineage::{
    self, Explanation, LineageGraph, LineageNode, LineageNodeInfo, LineageSource,
};
use memlineage_core::principal::Registry;

/// Which way to walk the DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Towards the roots (what shaped this entry).
    Ancestors,
    /// Towards the leaves (what this entry shaped).
    Descendants,
}

/// The store seen as a lineage DAG, with the registry for writer classes. A walk reads through
/// one read snapshot of the backend (one read transaction): one consistent state of the log,
/// and no transaction begun and ended per node (on SQLite, two WAL lock calls each).
pub(crate) struct StoreLineage<'a> {
    mem: &'a Memory,
    reads: Box<dyn crate::store::BackendRead + 'a>,
    registry: std::sync::Arc<Registry>,
    distrust: std::sync::Arc<super::distrusted::DistrustLog>,
}

impl LineageSource for StoreLineage<'_> {
    type Error = Error;

    fn node(&self, id: &EntryId) -> Result<Option<LineageNodeInfo>, Error> {
        let Some(stored) = self.reads.entry_by_id(id)? else {
            return Ok(None);
        };
        let view = EntryView::from_stored(stored)?;
        let body = view.entry.body();
        let text = view.text();
        Ok(Some(LineageNodeInfo {
            node: LineageNode {
                id: *id,
                label: view.label,
                effective_label: view.effective_label,
                writer: body.writer.clone(),
                kind: body.kind,
                snippet: lineage::snippet_of(text.as_deref()),
                distrusted: view.effective_label == TrustLabel::External
                    && view.label != TrustLabel::External,
            },
            parents: body.parents.clone(),
            tau: body.tau,
            fallback: body.fallback,
            writer_class: self
                .distrust
                .class_at(&self.registry, &body.writer, view.index),
            store_rule: Some(self.mem.store_rule()),
        }))
    }

    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error> {
        self.reads.children(id)
    }
}

impl Memory {
    pub(crate) fn lineage_source(&self) -> Result<StoreLineage<'_>, Error> {
        let reads = self.backend.snapshot()?;
        let super::registry::Replayed {
            registry, distrust, ..
        } = self.refresh_registry_and_distrust(&*reads)?;
        Ok(StoreLineage {
            mem: self,
            reads,
            registry,
            distrust,
        })
    }

    /// The lineage graph around `id`, up to `max_depth` edges away, with the explanation of its
    /// label.
    pub fn lineage(
        &self,
        id: &EntryId,
        direction: Direction,
        max_depth: usize,
    ) -> Result<LineageGraph, Error> {
        let src = self.lineage_source()?;
        if src.node(id)?.is_none() {
            return Err(Error::NotFound(*id));
        }
        match direction {
            Direction::Ancestors => lineage::ancestors(&src, id, max_depth),
            Direction::Descendants => lineage::descendants(&src, id, max_depth),
        }
    }

    /// Why `id` has its effective label.
    pub fn explain(&self, id: &EntryId) -> Result<Explanation, Error> {
        let src = self.lineage_source()?;
        if src.node(id)?.is_none() {
            return Err(Error::NotFound(*id));
        }
        lineage::explain(&src, id)
    }

    /// The strong path from `id` up to its untrusted root (`id` first); empty when trusted.
    pub fn taint_path(&self, id: &EntryId) -> Result<Vec<EntryId>, Error> {
        lineage::taint_path(&self.lineage_source()?, id)
    }
}
