//! `Memory::attribute_parents`: verified parent content in, weighted parents out.

mod common;

use common::p;

use common::setup;
use memlineage::attribution::{
    AttributionError, Attributor, Coarse, JudgeBackend, LmSelfEval, ParentText,
};
use memlineage::{Error, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::EntryKind;
use memlineage_core::label::{TrustLabel, Weight};
use std::sync::Mutex;

/// One call an attributor saw: the child and its (id, text) parents.
type SeenCall = (String, Vec<(EntryId, String)>);

/// Weighs each parent by whether the child contains its first word; remembers its inputs.
#[derive(Default)]
struct FirstWord {
    seen: Mutex<Vec<SeenCall>>,
}

impl Attributor for FirstWord {
    fn name(&self) -> String {
        "first-word".into()
    }
    fn attribute(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Vec<Weight>, AttributionError> {
        self.seen.lock().unwrap().push((
            child.to_string(),
            parents.iter().map(|p| (p.id, p.text.to_string())).collect(),
        ));
        Ok(parents
            .iter()
            .map(|p| {
                let word = p.text.split_whitespace().next().unwrap_or("");
                if child.contains(word) {
                    Weight::ONE
                } else {
                    Weight::from_bp(1000).unwrap()
                }
            })
            .collect())
    }
}

fn root(mem: &memlineage::Memory, writer: &str, text: &str) -> EntryId {
    mem.write(WriteRequest::new(&p(writer), EntryKind::Observation, text))
        .unwrap()
        .id
}

#[test]
fn weights_follow_the_attributor_and_feed_the_label() {
    let mem = setup();
    let user = root(&mem, "user", "Lisbon trip on 14 May");
    let web = root(&mem, "web", "Casino bonus codes, click now");
    let attr = FirstWord::default();
    let child = "Lisbon: flight on 14 May";
    let ps = mem.attribute_parents(&attr, child, &[user, web]).unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!((ps[0].id, ps[0].weight), (user, Weight::ONE));
    assert_eq!(
        (ps[1].id, ps[1].weight),
        (web, Weight::from_bp(1000).unwrap())
    );
    // The attributor saw the verified content, in order.
    let seen = attr.seen.lock().unwrap();
    assert_eq!(seen[0].0, child);
    assert_eq!(seen[0].1[0], (user, "Lisbon trip on 14 May".to_string()));
    assert_eq!(
        seen[0].1[1],
        (web, "Casino bonus codes, click now".to_string())
    );
    drop(seen);
    // The weights go straight into a write; the web parent is weak, so (τ = 0.5) the child
    // is labelled by its strong trusted parent... unless the strict fallback keeps the taint.
    let w = mem
        .write(
            WriteRequest::new(&p("agent"), EntryKind::Derived, child)
                .with_parents(ps, attr.name().parse().unwrap()),
        )
        .unwrap();
    assert!(w.label >= TrustLabel::DerivedTrusted);
    assert_eq!(
        mem.get(&w.id).unwrap().entry.body().attribution,
        "first-word"
    );
}

#[test]
fn coarse_gives_one_everywhere_and_the_detailed_form_names_the_algorithm() {
    let mem = setup();
    let a = root(&mem, "user", "a");
    let b = root(&mem, "email", "b");
    let d = mem
        .attribute_parents_detailed(&Coarse, "c", &[a, b])
        .unwrap();
    assert_eq!(d.attribution, "coarse");
    assert!(d.parents.iter().all(|p| p.weight == Weight::ONE));
    assert!(d.fell_back.is_none() && d.unread.is_empty());
    let w = mem
        .write(
            WriteRequest::new(&p("agent"), EntryKind::Derived, "c")
                .with_parents(d.parents, d.attribution),
        )
        .unwrap();
    assert_eq!(w.label, TrustLabel::DerivedUntrusted);
}

#[test]
fn unknown_parent_is_an_error() {
    let mem = setup();
    let a = root(&mem, "user", "a");
    let ghost = EntryId(memlineage_core::Hash256::of(b"ghost"));
    assert!(matches!(
        mem.attribute_parents(&Coarse, "c", &[a, ghost]),
        Err(Error::UnknownParent(id)) if id == ghost
    ));
}

#[test]
fn forgotten_parents_are_not_shown_and_weigh_one() {
    let mem = setup();
    let keep = root(&mem, "user", "keep this");
    let gone = root(&mem, "web", "forget this");
    mem.forget(&p("operator"), &gone, true, "test").unwrap();
    let attr = FirstWord::default();
    let d = mem
        .attribute_parents_detailed(&attr, "nothing in common", &[keep, gone])
        .unwrap();
    assert_eq!(d.unread, vec![gone]);
    assert_eq!(d.parents[1].weight, Weight::ONE, "fail closed");
    assert_eq!(d.parents[0].weight, Weight::from_bp(1000).unwrap());
    let seen = attr.seen.lock().unwrap();
    assert_eq!(seen[0].1.len(), 1, "the forgotten parent was not shown");
}

#[test]
fn a_failing_judge_falls_back_to_coarse_and_says_so() {
    struct Down;
    impl JudgeBackend for Down {
        fn model_id(&self) -> String {
            "down".into()
        }
        fn complete(&self, _: &str, _: &str) -> Result<String, AttributionError> {
            Ok("I think the first one matters most.".into())
        }
    }
    let mem = setup();
    let a = root(&mem, "user", "a");
    let b = root(&mem, "web", "b");
    let lm = LmSelfEval::new(Down);
    let d = mem.attribute_parents_detailed(&lm, "c", &[a, b]).unwrap();
    assert_eq!(d.attribution, "lm-self-eval:down");
    assert!(d.fell_back.is_some());
    assert!(d.parents.iter().all(|p| p.weight == Weight::ONE));
}

#[test]
fn attributor_errors_surface() {
    struct Broken;
    impl Attributor for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn attribute(
            &self,
            _: &str,
            _: &[ParentText<'_>],
        ) -> Result<Vec<Weight>, AttributionError> {
            Ok(vec![]) // wrong count
        }
    }
    let mem = setup();
    let a = root(&mem, "user", "a");
    assert!(matches!(
        mem.attribute_parents(&Broken, "c", &[a]),
        Err(Error::Input(
            memlineage::error::InputError::Attribution { .. }
        ))
    ));
}
