//! Property test of the confirm rule (`docs/gate.md`, "Confirm"): over every mix of where each
//! parameter's value comes from, the call is a confirm exactly when some value fails and every
//! failing value is carried by the document the user's request names — never when a failing
//! value is unjustified, unlisted, a look-alike or from a document the user did not name.

use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{ContextEntry, Decision, GateInput, Outcome, Policy, ToolCall, decide};
use memlineage_core::hash::{EntryId, Hash256};
use memlineage_core::label::{TrustLabel, Weight};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Where one parameter's value is found.
#[derive(Clone, Copy, Debug, PartialEq)]
enum From {
    /// The user's request: justified.
    Request,
    /// The bill the request names: confirmable.
    NamedBill,
    /// An e-mail the request does not name: untrusted, not confirmable.
    Mail,
    /// Nowhere: unjustified (denied).
    Nowhere,
    /// The bill, as a look-alike (letter O for digit 0): untrusted by look.
    LookAlike,
    /// Not in the call.
    Absent,
}

const PARAMS: [&str; 3] = ["a", "b", "c"];
/// One IBAN per parameter: (value, as a look-alike).
const IBANS: [(&str, &str); 3] = [
    ("DE89370400440532013000", "DE89 37O4 OO44 O532 O13O OO"),
    ("GB29NWBK60161331926819", "GB29 NWBK 6O16 1331 9268 19"),
    (
        "FR1420041010050500013M02606",
        "FR14 2OO4 1O1O O5O5 OO13 MO26 O6",
    ),
];

fn id(name: &str) -> EntryId {
    EntryId(Hash256::of(name.as_bytes()))
}

fn entry(name: &str, label: TrustLabel, kind: EntryKind, text: String) -> ContextEntry {
    ContextEntry {
        id: id(name),
        label,
        writer: name.into(),
        kind,
        content: Some(text),
        taint_path: if label.is_untrusted() {
            vec![id(name)]
        } else {
            Vec::new()
        },
    }
}

fn from() -> impl Strategy<Value = From> {
    prop::sample::select(vec![
        From::Request,
        From::NamedBill,
        From::Mail,
        From::Nowhere,
        From::LookAlike,
        From::Absent,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn confirm_exactly_when_every_failing_value_is_from_the_named_document(
        froms in prop::array::uniform3(from()),
        confirmable in prop::array::uniform3(any::<bool>()),
        all_carriers in any::<bool>(),
        extra_argument in any::<bool>(),
        deny_unlisted in any::<bool>(),
    ) {
        let mut policy = String::from("confirm = true\n");
        if all_carriers {
            policy.push_str("carriers = \"all\"\n");
        }
        if deny_unlisted {
            policy.push_str("default = \"deny\"\n");
        }
        policy.push_str("[tools.pay.params]\n");
        for (p, ok) in PARAMS.iter().zip(confirmable) {
            policy.push_str(&format!("{p} = {{ type = \"iban\", confirm = {ok} }}\n"));
        }
        let policy = Policy::parse(&policy).expect("policy");
        let (mut request, mut bill, mut mail) = (
            String::from("Please pay what 'bill-dec.txt' says."),
            String::from("Bill:"),
            String::from("Mail:"),
        );
        let mut args = Map::new();
        for ((p, f), (iban, look)) in PARAMS.iter().zip(froms).zip(IBANS) {
            match f {
                From::Request => request.push_str(&format!(" {p}: {iban}.")),
                From::NamedBill => bill.push_str(&format!(" {p}: {iban}.")),
                From::Mail => mail.push_str(&format!(" {p}: {iban}.")),
                From::LookAlike => bill.push_str(&format!(" {p}: {look}.")),
                From::Nowhere | From::Absent => {}
            }
            if f != From::Absent {
                args.insert((*p).into(), Value::String(iban.into()));
            }
        }
        if extra_argument {
            args.insert("note".into(), json!("thanks"));
        }
        let ctx = [
            entry("user", TrustLabel::Trusted, EntryKind::UserInput, request),
            entry("bill", TrustLabel::External, EntryKind::ToolOutput, bill),
            entry("mail", TrustLabel::External, EntryKind::ToolOutput, mail),
        ];
        let sources: BTreeMap<EntryId, String> =
            [(id("bill"), "bill-dec.txt".to_string()), (id("mail"), "inbox".to_string())].into();
        let call = ToolCall::new("pay", args);
        let input = GateInput::new(&call, &ctx, Weight::ONE).with_sources(&sources);
        let d = decide(&policy, &input).expect("decides");
        let failing: Vec<_> = d.reasons.iter().filter(|r| r.outcome.fails()).collect();
        let expected = !failing.is_empty()
            && PARAMS.iter().zip(froms).zip(confirmable).all(|((p, f), ok)| {
                let fails = failing.iter().any(|r| r.param == *p);
                !fails || (f == From::NamedBill && ok)
            })
            && !failing.iter().any(|r| r.outcome == Outcome::Unlisted);
        prop_assert_eq!(d.decision == Decision::Confirm, expected, "{:?} {:?}: {}", froms, confirmable, d.summary());
        if d.decision == Decision::Confirm {
            prop_assert!(!d.dispatched);
            prop_assert!(failing.iter().all(|r| r.outcome == Outcome::Untrusted));
            let confirmed: Vec<&str> = d.confirmations.iter().map(|c| c.param.as_str()).collect();
            let failed: Vec<&str> = failing.iter().map(|r| &*r.param).collect();
            prop_assert_eq!(confirmed, failed);
            prop_assert!(d.confirmations.iter().all(|c| c.source == id("bill") && c.named_by == id("user")));
        } else {
            prop_assert!(d.confirmations.is_empty());
        }
    }
}
