//! Problems found out of report order, held until their turn: the audit checks several things
//! at once (a chunk's entries while the previous chunk's signatures are verified; the derived
//! state in the same pass as the leaves) but reports them in the order of the checks — a
//! chunk's entries, its Merkle nodes, its signatures, the next chunk; then the tree, the
//! settings, the derived state.

use super::{AuditProblem, AuditReport, MAX_LISTED};
use memlineage_core::EntryId;

/// Problems in the order found: the first [`MAX_LISTED`] in full, all of them counted.
#[derive(Debug, Default)]
pub(super) struct Problems {
    listed: Vec<AuditProblem>,
    count: u64,
}

impl Problems {
    /// Notes one problem.
    pub(super) fn problem(&mut self, index: Option<u64>, id: Option<EntryId>, reason: String) {
        self.count += 1;
        if self.listed.len() < MAX_LISTED {
            self.listed.push(AuditProblem {
                index,
                id: id.map(|i| i.to_hex()),
                reason,
            });
        }
    }

    /// Appends these problems to `report`, after the ones it has.
    pub(super) fn report_into(self, report: &mut AuditReport) {
        report.problem_count += self.count;
        let room = MAX_LISTED.saturating_sub(report.problems.len());
        report.problems.extend(self.listed.into_iter().take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_counts_beyond_the_list() {
        let mut report = AuditReport::default();
        report.problem(Some(1), None, "first".into());
        let mut later = Problems::default();
        for i in 0..(MAX_LISTED as u64 + 5) {
            later.problem(Some(i), None, format!("later {i}"));
        }
        later.report_into(&mut report);
        assert_eq!(report.problem_count, MAX_LISTED as u64 + 6);
        assert_eq!(report.problems.len(), MAX_LISTED);
        assert_eq!(report.problems[0].reason, "first");
        assert_eq!(report.problems[1].reason, "later 0");
    }
}
