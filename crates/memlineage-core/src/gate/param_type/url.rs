//! URLs (`scheme://authority/path?query#fragment`), normalised for comparison.
//!
//! Normal form: scheme and host lower-cased; the default port of `http`, `https`, `ws`, `wss`
//! and `ftp` dropped; percent-escapes upper-cased (`%2f` → `%2F`); trailing slashes of the path
//! removed (`https://x.org/` = `https://x.org`, `https://x.org/a/` = `https://x.org/a`); an
//! empty query or fragment dropped. The rest (user info, path, query, fragment) compares exactly.
//!
//! In text a URL starts at a scheme followed by `://` and runs to white space or one of
//! ``<>"`{}|\^``; trailing punctuation (`.,;:!?'*`) and unbalanced closing brackets are not part
//! of it, so `(see https://x.org/a).` yields `https://x.org/a`.

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
        let limit = p + 3 + MAX_URL;
        let mut e = p + 3;
        for (k, c) in text[p + 3..].char_indices() {
            if stop(c) || p + 3 + k >= limit {
                break;
            }
            e = p + 3 + k + c.len_utf8();
        }
        let count = |c: u8| b[s..e].iter().filter(|&&x| x == c).count();
        let (open_paren, mut close_paren) = (count(b'('), count(b')'));
        let (open_bracket, mut close_bracket) = (count(b'['), count(b']'));
        while e > p + 3 {
            match b[e - 1] {
                b'.' | b',' | b';' | b':' | b'!' | b'?' | b'\'' | b'*' => {}
                b')' if open_paren < close_paren => close_paren -= 1,
                b']' if open_bracket < close_bracket => close_bracket -= 1,
                _ => break,
            }
            e -= 1;
        }
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
        match hostport.rsplit_once(':') {
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
    let mut out = String::with_capacity(u.len());
    out.push_str(&scheme);
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

/// Whether the normalised URL `url` occurs in `text`.
pub(crate) fn occurs(url: &str, text: &str) -> bool {
    for_each_span(text, |s, e| {
        if normalise(&text[s..e]).as_deref() == Some(url) {
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
        if let Some(u) = normalise(&text[s..e]) {
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
            (
                "http://example.com:8080/a%2fb?x=%7e#",
                "http://example.com:8080/a%2Fb?x=%7E",
            ),
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
        ] {
            assert_eq!(normalise(bad), None, "{bad}");
        }
    }

    #[test]
    fn text_spans() {
        let mut v = Vec::new();
        extract(
            "(see https://x.org/a). Or <HTTP://Y.org/b?q=1>, ftp://z.org:21/.",
            &mut v,
        );
        assert_eq!(v, ["https://x.org/a", "http://y.org/b?q=1", "ftp://z.org"]);
    }
}
