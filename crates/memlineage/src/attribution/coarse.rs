//! Coarse attribution: every parent that was in the context weighs 1.

use super::{AttributionError, Attributor, ParentText, coarse_weights};
use memlineage_core::label::Weight;

/// Weight 1 for every parent. Cheap, never wrong about *whether* a parent could have shaped
/// the child, and blind to *how much*: under max-of-strong-edges propagation it taints a child
/// with every untrusted entry that was merely present in the context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coarse;

/// The name Coarse records in entries.
pub const COARSE: &str = "coarse";

impl Attributor for Coarse {
    fn name(&self) -> String {
        COARSE.to_string()
    }

    fn attribute(
        &self,
        _child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Vec<Weight>, AttributionError> {
        Ok(coarse_weights(parents.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::{EntryId, Hash256};

    #[test]
    fn one_per_parent() {
        let id = EntryId(Hash256::of(b"p"));
        let ps = [ParentText { id, text: "a" }, ParentText { id, text: "b" }];
        assert_eq!(
            Coarse.attribute("c", &ps).expect("coarse"),
            vec![Weight::ONE; 2]
        );
        assert!(Coarse.attribute("c", &[]).expect("coarse").is_empty());
    }
}
