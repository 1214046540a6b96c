//! Id prefixes in routes, resolved within the token's scopes: a unique prefix names its entry;
//! an ambiguous one is a 409 naming two readable entries; too short or not hex is a 400; and a
//! prefix never reveals an entry outside the caller's scopes — a hidden entry's prefix gets the
//! same 404 as a prefix of nothing, and a prefix shared by a visible and a hidden entry names
//! the visible one.
//!
//! Two ids sharing their first 8 hex digits (32 bits) are found before the service starts: the
//! entries are written with a fixed clock, so their ids can be computed from their bodies
//! without writing them (the writes then confirm every computed id).

mod common;

use common::{TestServer, scope};
use memlineage::{Clock, Memory, PrincipalName, WriteRequest};
use memlineage_core::entry::{EntryBody, EntryKind};
use memlineage_core::label::TrustLabel;
use memlineage_core::{AttributionName, Hash256, keys};
use std::collections::HashMap;

struct Fixed(u64);
impl Clock for Fixed {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

/// What the tests need: `same` (two `bench` entries sharing a prefix) and `cross` (one in
/// `bench`, one in `other`, sharing a prefix).
#[derive(Default)]
struct Ground {
    same: (String, String),
    cross: (String, String),
}

fn grind(c: &memlineage_server::Config) -> Ground {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mem = Memory::open_at(&c.store).unwrap().with_clock(Fixed(at));
    mem.keys().load_dir(&c.keys_dir).unwrap();
    let agent: PrincipalName = "agent".parse().unwrap();
    let key_id = keys::key_id(&mem.keys().get(&agent).unwrap().verifying_key());
    let settings = mem.settings().clone();
    let body = |s: &str, text: &str| EntryBody {
        scope: scope(s),
        writer: "agent".into(),
        key_id,
        kind: EntryKind::Observation,
        content_hash: Hash256::of(text.as_bytes()),
        content_len: text.len() as u64,
        source_hash: None,
        context_hash: None,
        parents: Vec::new(),
        attribution: AttributionName::NONE.as_str().to_string(),
        tau: settings.tau,
        fallback: settings.fallback,
        label: TrustLabel::Trusted,
        created_at_ms: at,
        metadata: Default::default(),
    };
    let id_of = |s: &str, text: &str| Hash256::of(&body(s, text).canonical_bytes()).to_hex();
    let mut seen: HashMap<String, (String, String)> = HashMap::new();
    let (mut same, mut cross) = (None, None);
    for n in 0u64.. {
        for s in ["bench", "other"] {
            let text = format!("prefix grind {n}");
            let id = id_of(s, &text);
            let p = id[..8].to_string();
            if let Some((s0, t0)) = seen.get(&p) {
                let pair = ((s0.clone(), t0.clone()), (s.to_string(), text.clone()));
                if s0 == "bench" && s == "bench" && same.is_none() {
                    same = Some(pair);
                } else if s0 != s && cross.is_none() {
                    cross = Some(if s0 == "bench" {
                        pair
                    } else {
                        (pair.1, pair.0)
                    });
                }
            } else {
                seen.insert(p, (s.to_string(), text));
            }
        }
        if same.is_some() && cross.is_some() {
            break;
        }
    }
    let write = |(s, text): &(String, String)| {
        let w = mem
            .write(
                WriteRequest::new(&agent, EntryKind::Observation, text.as_str())
                    .with_scope(scope(s)),
            )
            .unwrap();
        assert_eq!(
            w.id.to_hex(),
            id_of(s, text),
            "the computed id is the written one"
        );
        w.id.to_hex()
    };
    let (same, cross) = (same.unwrap(), cross.unwrap());
    Ground {
        same: (write(&same.0), write(&same.1)),
        cross: (write(&cross.0), write(&cross.1)),
    }
}

#[test]
fn prefixes_resolve_within_the_token_scopes_only() {
    let mut ground = Ground::default();
    let s = TestServer::start_with(|c| ground = grind(c));
    let (b1, b2) = &ground.same;
    let (bench, other) = &ground.cross;
    let get =
        |token: &str, id: &str| s.call("GET", &format!("/v1/entries/{id}"), Some(token), None);

    // A unique prefix within the scopes names its entry, on every id route.
    let (st, v) = get(&s.agent, &b1[..12]);
    if b1[..12] != b2[..12] {
        assert_eq!((st, v["id"].as_str()), (200, Some(b1.as_str())), "{v}");
    }
    let (st, v) = get(&s.agent, &bench[..8]);
    assert_eq!((st, v["id"].as_str()), (200, Some(bench.as_str())), "{v}");
    let (st, v) = s.call(
        "GET",
        &format!("/v1/entries/{}/proof", &bench[..8].to_uppercase()),
        Some(&s.agent),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = s.call(
        "GET",
        &format!("/v1/entries/{}/lineage", &bench[..10]),
        Some(&s.agent),
        None,
    );
    assert_eq!(st, 200, "{v}");
    // …and the same prefix names the other entry for a token of the other scope.
    let (st, v) = get(&s.other, &other[..8]);
    assert_eq!((st, v["id"].as_str()), (200, Some(other.as_str())), "{v}");

    // Ambiguous among readable entries: 409, naming both.
    let (st, v) = get(&s.agent, &b1[..8]);
    assert_eq!(
        (st, v["error"]["kind"].as_str()),
        (409, Some("ambiguous_id")),
        "{v}"
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(b1.as_str()) && msg.contains(b2.as_str()),
        "{msg}"
    );
    // The operator reads every scope: the cross pair is ambiguous to it.
    let (st, v) = get(&s.operator, &bench[..8]);
    assert_eq!(
        (st, v["error"]["kind"].as_str()),
        (409, Some("ambiguous_id")),
        "{v}"
    );

    // Hidden entries: the prefix of a `bench` entry, for a token of `other`, is answered
    // exactly as a prefix of no entry at all.
    let nothing = (0u32..)
        .map(|n| format!("{n:08x}"))
        .find(|p| get(&s.operator, p).0 == 404)
        .unwrap();
    let (st_hidden, hidden) = get(&s.other, &b1[..8]);
    let (st_none, none) = get(&s.other, &nothing);
    assert_eq!((st_hidden, st_none), (404, 404), "{hidden} {none}");
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&b1[..8], "P"),
        none["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&nothing, "P"),
    );
    assert_eq!(hidden["error"]["kind"], "not_found");
    // A forget through a prefix is the operator's, and resolves in every scope.
    let (st, v) = s.call(
        "POST",
        &format!("/v1/entries/{}/forget", &b2[..16]),
        Some(&s.operator),
        Some(serde_json::json!({"reason": "test"})),
    );
    if b1[..16] != b2[..16] {
        assert_eq!(st, 201, "{v}");
    }

    // Malformed: too short, not hex, too long.
    for bad in [&b1[..7], "zzzzzzzz", &format!("{b1}0")] {
        let (st, v) = get(&s.agent, bad);
        assert_eq!(
            (st, v["error"]["kind"].as_str()),
            (400, Some("invalid_request")),
            "{bad}: {v}"
        );
    }
}
