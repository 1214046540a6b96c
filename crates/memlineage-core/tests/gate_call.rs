//! Tool-call parsing: the accepted shapes and clear errors for malformed calls.

use memlineage_core::gate::{GateError, ToolCall};
use serde_json::{Value, json};

fn args(c: &ToolCall) -> Value {
    Value::Object(c.arguments.clone())
}

#[test]
fn accepted_shapes() {
    let want = json!({"recipient": "GB29NWBK60161331926819", "amount": 98.7});
    for text in [
        r#"{"name":"send_money","arguments":{"recipient":"GB29NWBK60161331926819","amount":98.7}}"#,
        r#"{"name":"send_money","arguments":"{\"recipient\":\"GB29NWBK60161331926819\",\"amount\":98.7}"}"#,
        r#"{"id":"call_1","type":"function","function":{"name":"send_money","arguments":"{\"recipient\":\"GB29NWBK60161331926819\",\"amount\":98.7}"}}"#,
        r#"{"function":{"name":"send_money","arguments":{"recipient":"GB29NWBK60161331926819","amount":98.7}}}"#,
        r#"{"type":"tool_use","id":"toolu_1","name":"send_money","input":{"recipient":"GB29NWBK60161331926819","amount":98.7}}"#,
    ] {
        let c = ToolCall::from_openai_json(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(c.name, "send_money");
        assert_eq!(args(&c), want, "{text}");
    }
    for text in [
        r#"{"name":"get_balance"}"#,
        r#"{"name":"get_balance","arguments":""}"#,
        r#"{"name":"get_balance","arguments":"  "}"#,
        r#"{"name":"get_balance","arguments":{}}"#,
    ] {
        let c = ToolCall::from_openai_json(text).expect(text);
        assert!(c.arguments.is_empty(), "{text}");
    }
}

#[test]
fn malformed_calls_are_errors_that_say_what_is_wrong() {
    let table: &[(&str, &str)] = &[
        ("", "not valid JSON"),
        ("{", "not valid JSON"),
        (r#"{"name":"x"} trailing"#, "not valid JSON"),
        (
            "[1,2]",
            "expected a JSON object with `name` and `arguments`, found an array",
        ),
        (r#"{"arguments":{}}"#, "has no `name`"),
        (r#"{"name":"","arguments":{}}"#, "`name` is empty"),
        (
            r#"{"name":42,"arguments":{}}"#,
            "`name` must be a string, found a number",
        ),
        (
            r#"{"name":"x","arguments":[1]}"#,
            "`arguments` must be a JSON object or a string holding one, found an array",
        ),
        (r#"{"name":"x","arguments":null}"#, "found null"),
        (
            r#"{"name":"x","arguments":"{\"a\":"}"#,
            "`arguments` is a string but not valid JSON",
        ),
        (
            r#"{"name":"x","arguments":"[1]"}"#,
            "`arguments` must encode a JSON object, found an array",
        ),
        (
            r#"{"name":"x","arguments":{"a":1,"a":2}}"#,
            "duplicate key \"a\"",
        ),
        (
            r#"{"name":"x","arguments":"{\"to\":\"me\",\"to\":\"attacker\"}"}"#,
            "duplicate key \"to\"",
        ),
        (r#"{"name":"x","name":"y"}"#, "duplicate key \"name\""),
        (
            r#"{"name":"x","args":{}}"#,
            "unknown key \"args\" in the tool call",
        ),
        (
            r#"{"name":"x","arguments":{},"input":{}}"#,
            "both `arguments` and `input`",
        ),
        (
            r#"{"type":"tool","function":{"name":"x"}}"#,
            "the wrapper's `type` must be \"function\"",
        ),
        (
            r#"{"function":"x"}"#,
            "`function` must be an object, found a string",
        ),
        (
            r#"{"function":{"name":"x","input":{}}}"#,
            "unknown key \"input\" in `function`",
        ),
        (
            r#"{"function":{"name":"x"},"extra":1}"#,
            "unknown key \"extra\" in the tool call wrapper",
        ),
    ];
    for (text, needle) in table {
        let e = ToolCall::from_openai_json(text).expect_err(text);
        assert!(matches!(e, GateError::Call(_)), "{text}");
        let msg = e.to_string();
        assert!(msg.starts_with("malformed tool call: "), "{msg}");
        assert!(msg.contains(needle), "{text}: {msg}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!(
        r#"{{"name":"x","arguments":{{"a":{}1{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(ToolCall::from_openai_json(&deep).is_err());
}
