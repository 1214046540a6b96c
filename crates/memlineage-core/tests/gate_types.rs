//! Normalisation, matching and extraction of every parameter type, as tables.

use memlineage_core::gate::{Amount, Date, NormValue, ParamType};
use serde_json::{Value, json};

fn norm(t: &ParamType, s: &str) -> Option<String> {
    t.normalise_str(s).ok().map(|v| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    })
}

fn extract(t: &ParamType, text: &str) -> Vec<String> {
    t.extract(text).iter().map(ToString::to_string).collect()
}

fn check_table(t: &ParamType, table: &[(&str, Option<&str>)]) {
    for (input, want) in table {
        assert_eq!(
            norm(t, input).as_deref(),
            *want,
            "{} normalising {input:?}",
            t.name()
        );
    }
}

fn check_extraction(t: &ParamType, table: &[(&str, &[&str])]) {
    for (text, want) in table {
        assert_eq!(
            extract(t, text),
            *want,
            "{} extracting from {text:?}",
            t.name()
        );
        // Every extracted value is found again by matching.
        for v in t.extract(text) {
            assert!(
                t.occurs_in(&v, text),
                "{v} extracted but not matched in {text:?}"
            );
        }
    }
}

fn occurs(t: &ParamType, value: &str, text: &str) -> bool {
    let v = t.normalise_str(value).expect("valid value");
    v.iter().any(|n| t.occurs_in(n, text))
}

#[test]
fn iban() {
    let t = ParamType::Iban;
    check_table(
        &t,
        &[
            (
                "GB29 NWBK 6016 1331 9268 19",
                Some("GB29NWBK60161331926819"),
            ),
            (
                "gb29-nwbk-6016-1331-9268-19",
                Some("GB29NWBK60161331926819"),
            ),
            (" UK12345678901234567890 ", Some("UK12345678901234567890")),
            ("NO9386011117947", Some("NO9386011117947")),
            ("GB29", None),
            ("29GB NWBK 6016 1331 9268 19", None),
            ("GB29 NWBK 6016 1331 9268 1é", None),
            (
                "GB29.NWBK.6016.1331.9268.19",
                Some("GB29NWBK60161331926819"),
            ),
            ("GB29,NWBK,6016,1331,9268,19", None),
            ("GB2912345678901234567890123456789012", None),
            ("", None),
        ],
    );
    check_extraction(
        &t,
        &[
            (
                "Please pay to IBAN UK12 3456 7890 1234 5678 90, amount 98.70",
                &["UK12345678901234567890"],
            ),
            (
                "Landlord IBAN: GB29 NWBK 6016 1331 9268 19",
                &["GB29NWBK60161331926819"],
            ),
            ("iban=gb29nwbk60161331926819;", &["GB29NWBK60161331926819"]),
            (
                "DE89 3704 0044 0532 0130 00 Bank and NO93 8601 1117 947.",
                &["DE89370400440532013000", "NO9386011117947"],
            ),
            ("no IBAN here: AB12 CD34, XGB29NWBK60161331926819", &[]),
        ],
    );
    let v = "GB29NWBK60161331926819";
    for (text, want) in [
        ("to GB29 NWBK 6016 1331 9268 19.", true),
        ("to gb29-nwbk-6016-1331-9268-19", true),
        ("GB29NWBK60161331926819", true),
        ("GB29 NWBK 6016 1331 9268 190", false),
        // Separator runs of any kind, formatting and compatibility forms are read through.
        ("GB29  NWBK 6016 1331 9268 19", true),
        ("GB29\u{a0}NWBK\u{200b}6016\u{2009}1331\n9268.19", true),
        ("ＧＢ２９ＮＷＢＫ６０１６１３３１９２６８１９", true),
        ("XGB29NWBK60161331926819", false),
        ("GB29NWBK6016133192681", false),
    ] {
        assert_eq!(occurs(&t, v, text), want, "{text:?}");
    }
}

#[test]
fn amount() {
    let t = ParamType::Amount;
    check_table(
        &t,
        &[
            ("1,000.00", Some("1000.00")),
            ("1000", Some("1000")),
            ("$1,000", Some("1000")),
            ("1000.0 EUR", Some("1000.0")),
            ("EUR 1.000,00", Some("1000.00")),
            ("98,70 €", Some("98.70")),
            ("-5", Some("-5")),
            ("+ 7", Some("7")),
            ("-$5", Some("-5")),
            ("1,5", Some("1.5")),
            ("1.000", Some("1.000")),
            ("1.000.000", Some("1000000")),
            ("12,345.67 USD", Some("12345.67")),
            ("0.05", Some("0.05")),
            ("abc", None),
            ("", None),
            ("1,2,3", None),
            ("1.2.3", None),
            ("1e3", None),
            ("1 000", None),
            ("12,34,567", None),
            ("$", None),
        ],
    );
    let thousand = Amount::new(false, 1000, 0);
    for s in ["1,000.00", "1000", "$1,000", "1000.0 EUR"] {
        assert_eq!(Amount::parse(s), thousand, "{s}");
    }
    for (j, want) in [
        (json!(98.7), "98.7"),
        (json!(98.70), "98.7"),
        (json!(1000), "1000"),
        (json!(-3), "-3"),
        (json!(1e21), "1000000000000000000000"),
        (json!(1.5e-7), "0.00000015"),
        (json!("98.70"), "98.70"),
    ] {
        let v = t.normalise(&j).expect("amount");
        assert_eq!(v.primary.to_string(), want, "{j}");
    }
    check_extraction(
        &t,
        &[
            ("amount 98.70, fee $1,000 and 5%", &["98.70", "1000", "5"]),
            (
                "IBAN GB29 NWBK 6016 1331 9268 19, due 2024-01-05 at 10:30",
                &[],
            ),
            (
                "pay EUR98.70 or -5, not x-3, A1 or 3rd",
                &["98.70", "-5", "3", "3"],
            ),
            ("mail a1@b.com or https://x.org/pay/100", &[]),
            ("total: 1.000,50 EUR", &["1000.50"]),
        ],
    );
    assert!(occurs(&t, "98.7", "amount 98.70"));
    assert!(occurs(&t, "$1,000", "pay 1000.00 EUR"));
    assert!(!occurs(&t, "98.7", "amount 98.71"));
    assert!(!occurs(&t, "6016", "GB29 NWBK 6016 1331 9268 19"));
}

#[test]
fn date() {
    let t = ParamType::Date;
    check_table(
        &t,
        &[
            ("2024-01-05", Some("2024-01-05")),
            ("2024/1/5", Some("2024-01-05")),
            ("05.01.2024", Some("2024-01-05")),
            ("5-1-2024", Some("2024-01-05")),
            ("5 January 2024", Some("2024-01-05")),
            ("5th Jan. 2024", Some("2024-01-05")),
            ("January 5, 2024", Some("2024-01-05")),
            ("Sept 30 2024", Some("2024-09-30")),
            ("13/01/2024", Some("2024-01-13")),
            ("01/13/2024", Some("2024-01-13")),
            ("05/01/2024", Some("2024-05-01 | 2024-01-05")),
            ("05/05/2024", Some("2024-05-05")),
            ("2024-02-29", Some("2024-02-29")),
            ("2023-02-29", None),
            ("2024-13-01", None),
            ("Jan 2024", None),
            ("2024-01-05T10:00", None),
            ("05/01/24", None),
            ("yesterday", None),
        ],
    );
    check_extraction(
        &t,
        &[
            (
                "Due 2024-01-05T10:00Z, or by 5 February 2024; was March 3rd, 2023.",
                &["2024-01-05", "2024-02-05", "2023-03-03"],
            ),
            ("on 02/03/2024", &["2024-02-03", "2024-03-02"]),
            ("version 1.2.3 and 12345-01-01", &[]),
        ],
    );
    assert!(occurs(&t, "2024-03-02", "on 02/03/2024"));
    assert!(occurs(&t, "02/03/2024", "on 2024-03-02"));
    assert!(!occurs(&t, "2024-03-04", "on 02/03/2024"));
    assert_eq!(Date::new(2024, 2, 30), None);
}

#[test]
fn email() {
    let t = ParamType::Email;
    check_table(
        &t,
        &[
            ("Bob.Smith+x@Example.COM", Some("bob.smith+x@example.com")),
            ("mailto:BOB@EXAMPLE.COM", Some("bob@example.com")),
            ("Bob <bob@example.com>", Some("bob@example.com")),
            ("o'brien@example.ie", Some("o'brien@example.ie")),
            ("bob", None),
            ("bob@", None),
            ("@example.com", None),
            ("bob@localhost", None),
            ("bob@example.c", None),
            ("bob@-example.com", None),
            ("a b@example.com", None),
        ],
    );
    check_extraction(
        &t,
        &[
            (
                "Write to Bob.Smith+x@Example.COM, or (alice@mail.example.org). Not a@b.",
                &["bob.smith+x@example.com", "alice@mail.example.org"],
            ),
            (
                "contact: <ops@corp.example.com>.",
                &["ops@corp.example.com"],
            ),
        ],
    );
    assert!(occurs(&t, "ALICE@example.org", "mail alice@Example.org"));
    assert!(!occurs(&t, "alice@example.org", "mail malice@example.org"));
}

#[test]
fn url() {
    let t = ParamType::Url;
    check_table(
        &t,
        &[
            ("HTTPS://Example.COM/", Some("https://example.com")),
            ("https://example.com:443/a/", Some("https://example.com/a")),
            (
                "http://example.com:8080/a%2fb?x=1#",
                Some("https://example.com:8080/a%2Fb?x=1"),
            ),
            (
                "https://example.com/A?Q=B",
                Some("https://example.com/A?Q=B"),
            ),
            // Web URLs without a scheme are URLs (read as https).
            ("example.com", Some("https://example.com")),
            (
                "www.Example.com/page/",
                Some("https://www.example.com/page"),
            ),
            ("example", None),
            ("https://", None),
            ("https://a b.com", None),
        ],
    );
    check_extraction(
        &t,
        &[
            (
                "(see https://x.org/a). Or <HTTP://Y.org/b?q=1>, or ftp://z.org:21/.",
                &["https://x.org/a", "https://y.org/b?q=1", "ftp://z.org"],
            ),
            (
                "Wiki: https://en.wikipedia.org/wiki/Foo_(bar)!",
                &["https://en.wikipedia.org/wiki/Foo_(bar)"],
            ),
        ],
    );
    assert!(occurs(&t, "https://x.org", "go to HTTPS://X.ORG/ now"));
    assert!(occurs(&t, "www.x.org/a", "go to http://www.x.org/a/ now"));
    assert!(occurs(&t, "https://www.x.org/a", "go to www.x.org/a now"));
    assert!(!occurs(&t, "https://x.org/a", "go to https://x.org/ab"));
}

#[test]
fn free_text() {
    let t = ParamType::FreeText;
    check_table(
        &t,
        &[
            ("  Rent  for\nMARCH ", Some("rent for march")),
            ("", Some("")),
        ],
    );
    assert!(occurs(
        &t,
        "rent for march",
        "Please pay the RENT   for March, thanks"
    ));
    assert!(occurs(&t, "Café", "au CAFÉ"));
    assert!(!occurs(&t, "rent for april", "rent for march"));
    assert!(!occurs(&t, "   ", "anything at all"));
    assert!(t.extract("anything").is_empty());
    assert!(!t.can_repair());
}

#[test]
fn regex() {
    let t = ParamType::regex("[A-Z]{3}").expect("compiles");
    check_table(
        &t,
        &[
            ("EUR", Some("EUR")),
            ("EURO", None),
            ("eur", None),
            (" EUR", None),
        ],
    );
    check_extraction(
        &t,
        &[(
            "Currency: EUR. Not EURO, but (USD) and GBP",
            &["EUR", "USD", "GBP"],
        )],
    );
    assert!(occurs(&t, "EUR", "in EUR-denominated"));
    assert!(!occurs(&t, "EUR", "in EURO"));
    let digits = ParamType::regex(r"\d{6}").expect("compiles");
    assert_eq!(norm(&digits, "123456").as_deref(), Some("123456"));
    assert!(digits.normalise(&json!(123456)).is_ok());
    assert!(ParamType::regex("[A-Z").is_err());
}

#[test]
fn repaired_values_keep_the_json_type() {
    let a = NormValue::Amount(Amount::parse("98.70").expect("amount"));
    assert_eq!(a.to_json(&json!(1)), json!(98.7));
    assert_eq!(a.to_json(&json!("1")), json!("98.70"));
    let whole = NormValue::Amount(Amount::parse("1,000.00").expect("amount"));
    assert_eq!(whole.to_json(&json!(1)), json!(1000));
    assert_eq!(whole.to_json(&json!("x")), json!("1000.00"));
    let d = NormValue::Date(Date::new(2024, 1, 5).expect("date"));
    assert_eq!(d.to_json(&json!("5 Jan 2024")), json!("2024-01-05"));
    let tok = NormValue::Token("123456".to_string());
    assert_eq!(tok.to_json(&json!(1)), json!(123456));
    assert_eq!(tok.to_json(&Value::String("1".into())), json!("123456"));
}

#[test]
fn wrong_json_types_are_rejected_with_a_message() {
    for (t, v, needle) in [
        (ParamType::Iban, json!(12), "found a number"),
        (ParamType::Amount, json!(null), "found null"),
        (ParamType::Date, json!([1]), "found an array"),
        (ParamType::Email, json!(true), "found a boolean"),
        (ParamType::FreeText, json!({}), "found an object"),
    ] {
        let e = t.normalise(&v).expect_err("rejected");
        assert!(e.problem.contains(needle), "{}: {}", t.name(), e.problem);
    }
}
