//! URLs (`scheme://authority/path?query#fragment`), normalised for comparison.
//!
//! Normal form: scheme and host lower-cased; the default port of `http`, `https`, `ws`, `wss`
//! and `ftp` dropped; percent-escapes upper-cased (`%2f` → `%2F`); trailing slashes of the path
//! removed (`https://x.org/` = `https://x.org`, `https://x.org/a/` = `https://x.org/a`); an
//! empty query or fragment dropped. The rest (user info, path, query, fragment) compares exactly.
//!
//! **Web URLs**: `http`, `https` and a URL written without a scheme (`www.example.com/page`,
//! `example.com`, as people and models usually write them) are one kind of value, written
//! `https://…` in normal form. Which of the two schemes a link uses is not what an attacker
//! chooses when they plant it; where it points is.
//!
//! In text a URL starts at a scheme followed by `://` and runs to white space or one of
//! ``<>"`{}|\^``; trailing punctuation (`.,;:!?'*`) and unbalanced closing brackets are not part
//! of it, so `(see https://x.org/a).` yields `https://x.org/a`. A URL without a scheme is a host
//! name of two or more dot-separated labels (the last alphabetic, two letters or more, not glued
//! to `@`, `.`, `/`, `:` or a letter or digit before it) that starts with `www.`, or ends in a
//! common top-level domain (`.com`, `.org`, `.net`, `.io`, country codes of the main economies …),
//! or is followed by a path (`/`); the rest of it (port, path, query, fragment) is read as after
//! a scheme. So a file name (`notes.md`) or an e-mail domain is not a URL.

use std::ops::ControlFlow;

/// Longest URL read from a text, in bytes (keeps the scan linear on hostile input).
const MAX_URL: usize = 4096;

fn scheme_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

fn stop(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c, '<' | '>' | '"' | '`' | '{' | '}' | '|' | '\\' | '^')
}

/// Top-level domains that make a bare host name a URL without `www.` or a path.
const COMMON_TLDS: [&str; 52] = [
    "ai", "app", "at", "au", "bank", "be", "biz", "blog", "br", "ca", "ch", "cloud", "cn", "co",
    "com", "cz", "de", "dev", "dk", "edu", "es", "eu", "fi", "fr", "gov", "gr", "ie", "in", "info",
    "int", "io", "it", "jp", "me", "mil", "net", "nl", "no", "nz", "online", "org", "pay", "pl",
    "pt", "ru", "se", "shop", "site", "store", "tech", "uk", "us",
];

fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "ws" => Some("80"),
        "https" | "wss" => Some("443"),
        "ftp" => Some("21"),
        _ => None,
    }
}

/// Calls `f(start, end)` for every URL in `text`.
pub(crate) fn for_each_span(
    text: &str,
    mut f: impl FnMut(usize, usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut last_end = 0;
    for_each_schemed(text, |s, e| {
        for_each_bare(text, last_end, s, &mut f)?;
        last_end = e;
        f(s, e)
    })?;
    for_each_bare(text, last_end, text.len(), &mut f)
}

/// The URLs without a scheme in `text[from..to]` (see the module documentation).
fn for_each_bare(
    text: &str,
    from: usize,
    to: usize,
    f: &mut impl FnMut(usize, usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let b = text.as_bytes();
    let mut i = from;
    while i < to {
        // A host name starts at a letter or digit not glued to a host, path or address.
        let glued =
            i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"@./:-_%~+#".contains(&b[i - 1]));
        if !b[i].is_ascii_alphanumeric() || glued {
            i += 1;
            continue;
        }
        let mut e = i;
        let mut labels = 0;
        let mut last = (i, i);
        loop {
            let ls = e;
            while e < to && (b[e].is_ascii_alphanumeric() || b[e] == b'-') {
                e += 1;
            }
            if e == ls || b[e - 1] == b'-' || b[ls] == b'-' {
                break;
            }
            labels += 1;
            last = (ls, e);
            if e + 1 < to && b[e] == b'.' && b[e + 1].is_ascii_alphanumeric() {
                e += 1;
            } else {
                break;
            }
        }
        let host_end = last.1;
        let tld = &text[last.0..last.1];
        let alphabetic = tld.len() >= 2 && tld.bytes().all(|c| c.is_ascii_alphabetic());
        if labels < 2 || !alphabetic || b.get(host_end) == Some(&b'@') {
            i = host_end.max(i + 1);
            continue;
        }
        let www = b[i..host_end].len() > 4 && b[i..i + 4].eq_ignore_ascii_case(b"www.");
        let path = b.get(host_end) == Some(&b'/');
        let common = COMMON_TLDS.contains(&tld.to_ascii_lowercase().as_str());
        if !(www || path || common) {
            i = host_end;
            continue;
        }
        let e = span_end(text, i, host_end, to);
        f(i, e)?;
        i = e.max(i + 1);
    }
    ControlFlow::Continue(())
}

/// Where a URL whose authority starts at `s` (its host or scheme-specific part begins at
/// `from`) ends: at white space or a stop character (at most [`MAX_URL`] bytes, not past
/// `to`), without trailing punctuation or unbalanced closing brackets.
fn span_end(text: &str, s: usize, from: usize, to: usize) -> usize {
    let b = text.as_bytes();
    let limit = (from + MAX_URL).min(to);
    let mut e = from;
    for (k, c) in text[from..to].char_indices() {
        if stop(c) || from + k >= limit {
            break;
        }
        e = from + k + c.len_utf8();
    }
    let count = |c: u8| b[s..e].iter().filter(|&&x| x == c).count();
    let (open_paren, mut close_paren) = (count(b'('), count(b')'));
    let (open_bracket, mut close_bracket) = (count(b'['), count(b']'));
    while e > from {
        match b[e - 1] {
            b'.' | b',' | b';' | b':' | b'!' | b'?' | b'\'' | b'*' => {}
            b')' if open_paren < close_paren => close_paren -= 1,
            b']' if open_bracket < close_bracket => close_bracket -= 1,
            _ => break,
        }
        e -= 1;
    }
    e
}

/// Calls `f(start, end)` for every URL with a scheme in `text`.
fn for_each_schemed(
    text: &str,
    mut f: impl FnMut(usize, usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if !text.contains("://") {
        return ControlFlow::Continue(());
    }
    let b = text.as_bytes();
    for (p, _) in text.match_indices("://") {
        let mut s = p;
        while s > 0 && scheme_char(b[s - 1]) {
            s -= 1;
        }
        while s < p && !b[s].is_ascii_alphabetic() {
            s += 1;
        }
        if s == p {
            continue;
        }
        let e = span_end(text, s, p + 3, text.len());
        let auth_end = b[p + 3..e]
            .iter()
            .position(|c| matches!(c, b'/' | b'?' | b'#'))
            .map_or(e, |k| p + 3 + k);
        if auth_end > p + 3 {
            f(s, e)?;
        }
    }
    ControlFlow::Continue(())
}

fn push_pct_upper(out: &mut String, s: &str) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            out.push_str(&s[last..i]);
            out.push('%');
            out.push(char::from(b[i + 1].to_ascii_uppercase()));
            out.push(char::from(b[i + 2].to_ascii_uppercase()));
            i += 3;
            last = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
}

/// Normalises a URL (see the module documentation); `None` if it is not `scheme://host…`.
pub(crate) fn normalise(u: &str) -> Option<String> {
    if u.chars().any(stop) {
        return None;
    }
    let (scheme, rest) = u.split_once("://")?;
    let sb = scheme.as_bytes();
    if sb.is_empty() || !sb[0].is_ascii_alphabetic() || !sb.iter().all(|&c| scheme_char(c)) {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    // Web URLs are written with `https` (see the module documentation).
    let shown_scheme = if scheme == "http" {
        "https"
    } else {
        scheme.as_str()
    };
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = if hostport.starts_with('[') {
        let close = hostport.find(']')?;
        let after = &hostport[close + 1..];
        match after.strip_prefix(':') {
            Some(p) => (&hostport[..=close], Some(p)),
            None if after.is_empty() => (hostport, None),
            None => return None,
        }
    } else {
        // A host outside brackets holds no `:` (else its normal form, with an empty port
        // dropped, would read back as another host and port: `a://1:2x:/` → `a://1:2x`).
        match hostport.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => return None,
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) if !p.bytes().all(|c| c.is_ascii_digit()) => return None,
        Some("") | None => None,
        Some(p) => {
            let t = p.trim_start_matches('0');
            let t = if t.is_empty() { "0" } else { t };
            (default_port(&scheme) != Some(t)).then_some(t)
        }
    };
    let (before_frag, fragment) = match tail.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (tail, None),
    };
    let (path, query) = match before_frag.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (before_frag, None),
    };
    let mut out = String::with_capacity(u.len() + 1);
    out.push_str(shown_scheme);
    out.push_str("://");
    if let Some(ui) = userinfo {
        out.push_str(ui);
        out.push('@');
    }
    out.push_str(&host.to_ascii_lowercase());
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    push_pct_upper(&mut out, path.trim_end_matches('/'));
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        out.push('?');
        push_pct_upper(&mut out, q);
    }
    if let Some(f) = fragment.filter(|f| !f.is_empty()) {
        out.push('#');
        push_pct_upper(&mut out, f);
    }
    Some(out)
}

/// Normalises a URL parameter: with a scheme, or without one (a web URL, read as `https://`).
pub(crate) fn normalise_param(u: &str) -> Option<String> {
    let t = u.trim();
    if t.contains("://") {
        return normalise(t);
    }
    let host_end = t.find(['/', '?', '#', ':']).unwrap_or(t.len());
    let host = &t[..host_end];
    let labels: Vec<&str> = host.split('.').collect();
    let tld = labels.last().copied().unwrap_or_default();
    let ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && tld.chars().count() >= 2
        && tld.chars().all(char::is_alphabetic);
    if !ok {
        return None;
    }
    normalise(&format!("https://{t}"))
}

/// A span of text as a URL: normalised with its scheme, or as a web URL without one.
fn normalise_span(span: &str) -> Option<String> {
    if span.contains("://") {
        normalise(span)
    } else {
        normalise_param(span)
    }
}

/// The normal form of a URL without its scheme and `://` (the key of separator-blind
/// matching: a look-alike of the link is the same link whatever the scheme).
pub(crate) fn without_scheme(url: &str) -> &str {
    url.split_once("://").map_or(url, |(_, rest)| rest)
}

/// Whether the normalised URL `url` occurs in `text`.
pub(crate) fn occurs(url: &str, text: &str) -> bool {
    for_each_span(text, |s, e| {
        if normalise_span(&text[s..e]).as_deref() == Some(url) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// Every URL in `text`, normalised.
pub(crate) fn extract(text: &str, out: &mut Vec<String>) {
    let _ = for_each_span(text, |s, e| {
        if let Some(u) = normalise_span(&text[s..e]) {
            out.push(u);
        }
        ControlFlow::Continue(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_forms() {
        for (a, b) in [
            ("HTTPS://Example.COM/", "https://example.com"),
            ("https://example.com:443/a/", "https://example.com/a"),
            ("http://example.com:80/a/", "https://example.com/a"),
            (
                "http://example.com:8080/a%2fb?x=%7e#",
                "https://example.com:8080/a%2Fb?x=%7E",
            ),
            ("ftp://Example.com:21/", "ftp://example.com"),
            ("https://u@[::1]:443/", "https://u@[::1]"),
        ] {
            assert_eq!(normalise(a).as_deref(), Some(b), "{a}");
        }
        for bad in [
            "example.com",
            "https://",
            "https:///x",
            "1ttp://x",
            "https://x:y/",
            "https://a b",
            "a://10:30https://x.org/a/",
            "https://a:b:80/",
        ] {
            assert_eq!(normalise(bad), None, "{bad}");
        }
    }

    /// A normal form normalises to itself (found by the property test of extraction: a host
    /// holding a `:` lost its empty port and read back as another host and port).
    #[test]
    fn normal_forms_are_fixed_points() {
        for u in [
            "https://Example.COM:443/a/",
            "a://h:/x",
            "https://u@[::1]:8080/p?q#f",
            "x://host//double//slash/",
        ] {
            let once = normalise(u).expect(u);
            assert_eq!(normalise(&once).as_deref(), Some(once.as_str()), "{u}");
        }
        let mut v = Vec::new();
        extract("a://10:30https://x.org/a/", &mut v);
        assert_eq!(v, ["https://x.org/a"]);
    }

    #[test]
    fn text_spans() {
        let mut v = Vec::new();
        extract(
            "(see https://x.org/a). Or <HTTP://Y.org/b?q=1>, ftp://z.org:21/.",
            &mut v,
        );
        assert_eq!(v, ["https://x.org/a", "https://y.org/b?q=1", "ftp://z.org"]);
    }

    #[test]
    fn urls_without_a_scheme() {
        for (a, b) in [
            ("www.Example.com/page", "https://www.example.com/page"),
            ("example.com", "https://example.com"),
            (
                "example.co.uk:8443/a/?q=1",
                "https://example.co.uk:8443/a?q=1",
            ),
        ] {
            assert_eq!(normalise_param(a).as_deref(), Some(b), "{a}");
        }
        for bad in [
            "example",
            "example.c",
            "exa mple.com",
            "1.5",
            "-x.com",
            "x.123",
        ] {
            assert_eq!(normalise_param(bad), None, "{bad}");
        }
        let mut v = Vec::new();
        extract(
            "Visit www.shop.example/deals, example.com or docs.rs/regex. Not notes.md, \
             bob@mail.example.com, 98.70 or e.g. this; https://x.org/a has no second URL.",
            &mut v,
        );
        assert_eq!(
            v,
            [
                "https://www.shop.example/deals",
                "https://example.com",
                "https://docs.rs/regex",
                "https://x.org/a"
            ]
        );
    }
}
