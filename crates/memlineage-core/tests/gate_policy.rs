//! Policy parsing: the accepted shapes, the defaults, and errors that name line and column.

use memlineage_core::gate::{
    Carriers, Citations, Mode, ParamType, Policy, Provenance, Unjustified,
};
use memlineage_core::label::TrustLabel;

#[test]
fn the_issue_example_is_accepted() {
    let p = Policy::parse(
        r#"
mode = "enforce"
[tools.send_money.params]
recipient = { type = "iban",   require = "DERIVED_TRUSTED", unjustified = "deny" }
amount    = { type = "amount", require = "DERIVED_TRUSTED", unjustified = "allow" }
"#,
    )
    .expect("parses");
    assert_eq!(p.mode, Mode::Enforce);
    let tool = &p.tools["send_money"];
    let r = &tool.params["recipient"];
    assert!(matches!(r.kind, ParamType::Iban));
    assert_eq!(r.require, TrustLabel::DerivedTrusted);
    assert_eq!(r.unjustified, Unjustified::Deny);
    assert_eq!(tool.params["amount"].unjustified, Unjustified::Allow);
    assert!(p.is_sensitive("send_money"));
    assert!(!p.is_sensitive("get_balance"));
}

#[test]
fn defaults_and_other_forms() {
    let p = Policy::parse(
        r#"
[tools.send_money.params]
recipient = { type = "iban" }

[tools.update_scheduled_transaction.params.currency]
type = "regex"
pattern = "^[A-Z]{3}$"
require = "TRUSTED"

[tools.send_email.params]
to = { type = "email", require = "EXTERNAL", unjustified = "allow" }
link = { type = "url" }
when = { type = "date" }
body = { type = "free_text" }

[tools.noop]
"#,
    )
    .expect("parses");
    assert_eq!(p.mode, Mode::Enforce, "mode defaults to enforce");
    assert_eq!(
        p.citations,
        Citations::Verify,
        "citations default to verify"
    );
    let r = &p.tools["send_money"].params["recipient"];
    assert_eq!(
        r.require,
        TrustLabel::DerivedTrusted,
        "require defaults to DERIVED_TRUSTED"
    );
    assert_eq!(
        r.unjustified,
        Unjustified::Deny,
        "unjustified defaults to deny"
    );
    let cur = &p.tools["update_scheduled_transaction"].params["currency"];
    let ParamType::Regex(re) = &cur.kind else {
        panic!("regex type expected");
    };
    assert!(re.is_match("EUR"));
    assert!(!re.is_match("xEURx"), "regex matches anchored");
    assert_eq!(cur.require, TrustLabel::Trusted);
    let email = &p.tools["send_email"];
    assert_eq!(email.params.len(), 4);
    assert_eq!(email.params["to"].require, TrustLabel::External);
    assert!(p.tools["noop"].params.is_empty());

    assert_eq!(p.carriers, Carriers::Any, "carriers default to any");
    assert_eq!(
        p.provenance,
        Provenance::Value,
        "provenance defaults to value"
    );
    let r = Policy::parse(
        "mode = \"record\"\ncitations = \"trust\"\ncarriers = \"all\"\nprovenance = \"entry\"",
    )
    .expect("parses");
    assert_eq!(r.mode, Mode::Record);
    assert_eq!(r.citations, Citations::Trust);
    assert_eq!(r.carriers, Carriers::All);
    assert_eq!(r.provenance, Provenance::Entry);
    assert!(r.tools.is_empty());
    assert!(Policy::parse("").expect("empty policy").tools.is_empty());
}

#[test]
fn errors_name_line_column_and_problem() {
    let table: &[(&str, usize, usize, &str)] = &[
        (
            "mod = \"enforce\"",
            1,
            1,
            "unknown key \"mod\" at the top level",
        ),
        ("mode = \"enforcing\"", 1, 8, "unknown mode \"enforcing\""),
        (
            "mode = 1",
            1,
            8,
            "`mode` must be a string, found an integer",
        ),
        ("citations = \"maybe\"", 1, 13, "unknown citations setting"),
        (
            "carriers = \"some\"",
            1,
            12,
            "unknown carriers setting \"some\" (expected \"any\" or \"all\")",
        ),
        (
            "\nprovenance = true",
            2,
            14,
            "`provenance` must be a string, found a boolean",
        ),
        (
            "provenance = \"lineage\"",
            1,
            14,
            "unknown provenance setting \"lineage\"",
        ),
        ("tools = 3", 1, 9, "`tools` must be a table"),
        (
            "[tools.send_money]\nparms = {}",
            2,
            1,
            "unknown key \"parms\" in tool `send_money` (expected `params` or `default`)",
        ),
        (
            "[tools.send_money.params]\nrecipient = { type = \"ibna\" }",
            2,
            22,
            "unknown parameter type \"ibna\" in parameter `recipient` of tool `send_money` (expected one of iban, amount, date, email, url, free_text, regex)",
        ),
        (
            "# comment\n[tools.send_money.params]\nrecipient = { type = \"iban\", require = \"trusted\" }",
            3,
            40,
            "invalid label \"trusted\" in `require`",
        ),
        (
            "[tools.t.params]\nx = { type = \"iban\", unjustified = \"maybe\" }",
            2,
            36,
            "invalid `unjustified` \"maybe\"",
        ),
        (
            "[tools.t.params]\nx = { type = \"iban\", requires = \"TRUSTED\" }",
            2,
            22,
            "unknown key \"requires\" in parameter `x` of tool `t`",
        ),
        (
            "[tools.t.params]\nx = { require = \"TRUSTED\" }",
            2,
            1,
            "has no `type`",
        ),
        (
            "[tools.t.params]\nx = \"iban\"",
            2,
            5,
            "must be a table, found a string",
        ),
        (
            "[tools.t.params]\nx = { type = \"regex\", pattern = \"[A-Z\" }",
            2,
            33,
            "invalid regex pattern \"[A-Z\" in parameter `x` of tool `t`: unclosed character class",
        ),
        (
            "[tools.t.params]\nx = { type = \"regex\" }",
            2,
            14,
            "has type \"regex\" but no `pattern`",
        ),
        (
            "[tools.t.params]\nx = { type = \"iban\", pattern = \"x\" }",
            2,
            32,
            "`pattern` is only allowed with type = \"regex\"",
        ),
        ("[tools.t.params]\nx = { type = \"iban\"", 2, 20, ""),
        (
            "mode = \"enforce\"\nmode = \"record\"",
            2,
            1,
            "duplicate key",
        ),
        (
            "[tools.\"\".params]\nx = { type = \"iban\" }",
            1,
            8,
            "tool name is empty",
        ),
    ];
    for (text, line, column, needle) in table {
        let e = Policy::parse(text).expect_err(text);
        assert_eq!((e.line, e.column), (*line, *column), "{text:?}: {e}");
        assert!(e.message.contains(needle), "{text:?}: {e}");
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("policy line {line}, column {column}: ")),
            "{shown}"
        );
    }
}

#[test]
fn columns_count_characters() {
    let e = Policy::parse("# é\n[tools.t.params]\nx = { type = \"ïban\" }").expect_err("bad type");
    assert_eq!((e.line, e.column), (3, 14));
}
