//! E-mail addresses, compared case-insensitively (the whole address is lower-cased).
//!
//! In text, an address is `local@domain` where the local part uses letters, digits and `._%+-`
//! and the domain has at least two dot-separated labels of letters, digits and hyphens, the last
//! one alphabetic and at least two letters long. A parameter may also be written `mailto:…` or
//! `Name <…>`, and its local part may use any RFC 5322 `atext` character.

use super::scan::is_alnum;
use std::ops::ControlFlow;

fn text_local_char(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn param_local_char(b: u8) -> bool {
    is_alnum(b) || b"!#$%&'*+-/=?^_`{|}~.".contains(&b)
}

fn domain_char(b: u8) -> bool {
    is_alnum(b) || b == b'-' || b == b'.'
}

/// Whether `d` is a valid domain: two or more labels, each 1..=63 letters, digits or inner
/// hyphens, the last alphabetic and at least two letters.
fn valid_domain(d: &[u8]) -> bool {
    if d.is_empty() || d.len() > 253 {
        return false;
    }
    let mut labels = 0;
    let mut last: &[u8] = &[];
    for label in d.split(|&c| c == b'.') {
        if label.is_empty()
            || label.len() > 63
            || label[0] == b'-'
            || label[label.len() - 1] == b'-'
            || !label.iter().all(|&c| is_alnum(c) || c == b'-')
        {
            return false;
        }
        labels += 1;
        last = label;
    }
    labels >= 2 && last.len() >= 2 && last.iter().all(u8::is_ascii_alphabetic)
}

/// The span of the address around the `@` at `at`, if there is one.
fn around(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut s = at;
    while s > 0 && text_local_char(b[s - 1]) {
        s -= 1;
    }
    while s < at && b[s] == b'.' {
        s += 1;
    }
    let mut e = at + 1;
    while e < b.len() && domain_char(b[e]) {
        e += 1;
    }
    while e > at + 1 && matches!(b[e - 1], b'.' | b'-') {
        e -= 1;
    }
    (s < at && at - s <= 64 && valid_domain(&b[at + 1..e])).then_some((s, e))
}

/// Calls `f(start, end)` for every address in `text`.
pub(crate) fn for_each_span(
    text: &str,
    mut f: impl FnMut(usize, usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    for (at, _) in text.match_indices('@') {
        if let Some((s, e)) = around(b, at) {
            f(s, e)?;
        }
    }
    ControlFlow::Continue(())
}

/// Whether the lower-case address `addr` occurs in `text`.
pub(crate) fn occurs(addr: &str, text: &str) -> bool {
    let b = text.as_bytes();
    for_each_span(text, |s, e| {
        if b[s..e].eq_ignore_ascii_case(addr.as_bytes()) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// Every address in `text`, lower-cased.
pub(crate) fn extract(text: &str, out: &mut Vec<String>) {
    let _ = for_each_span(text, |s, e| {
        out.push(text[s..e].to_ascii_lowercase());
        ControlFlow::Continue(())
    });
}

/// Normalises a parameter value: `addr`, `mailto:addr` or `Name <addr>`, lower-cased.
pub(crate) fn normalise(s: &str) -> Option<String> {
    let mut t = s.trim();
    if let (Some(open), true) = (t.rfind('<'), t.ends_with('>')) {
        t = &t[open + 1..t.len() - 1];
    }
    if t.get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("mailto:"))
    {
        t = &t[7..];
    }
    let (local, domain) = t.rsplit_once('@')?;
    let ok = !local.is_empty()
        && local.len() <= 64
        && local.bytes().all(param_local_char)
        && valid_domain(domain.as_bytes());
    ok.then(|| t.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_param_forms() {
        let mut v = Vec::new();
        extract(
            "Write to Bob.Smith+x@Example.COM, or (alice@mail.example.org). Not a@b or @x.com.",
            &mut v,
        );
        assert_eq!(v, ["bob.smith+x@example.com", "alice@mail.example.org"]);
        for p in [
            "Bob.Smith+x@example.com",
            "mailto:BOB.SMITH+X@EXAMPLE.COM",
            "Bob <bob.smith+x@example.com>",
        ] {
            assert_eq!(
                normalise(p).as_deref(),
                Some("bob.smith+x@example.com"),
                "{p}"
            );
        }
        for bad in [
            "bob",
            "bob@",
            "@x.com",
            "bob@x",
            "bob@x.c",
            "bob@-x.com",
            "a b@x.com",
        ] {
            assert_eq!(normalise(bad), None, "{bad}");
        }
        assert!(occurs(
            "alice@mail.example.org",
            "mail ALICE@Mail.Example.org now"
        ));
        assert!(!occurs(
            "alice@mail.example.org",
            "mail malice@mail.example.org now"
        ));
    }
}
