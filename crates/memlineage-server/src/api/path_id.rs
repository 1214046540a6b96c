//! Entry ids in routes: a full id, or a unique prefix of at least
//! [`IdPrefix::MIN_LEN`](memlineage::IdPrefix::MIN_LEN) hexadecimal characters — the CLI's
//! rule (`docs/cli.md`) — resolved **within the caller's scopes**.
//!
//! Only entries the token may read can match a prefix
//! ([`Memory::resolve_prefix_visible`](memlineage::Memory::resolve_prefix_visible)), so the
//! answer never tells a caller that an id outside its scopes exists: a prefix of a hidden entry
//! is answered exactly as one of no entry (404), a prefix shared by one visible and one hidden
//! entry names the visible one, and "ambiguous" (409) names two entries the caller may read.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::http::StatusCode;
use memlineage::IdPrefix;
use memlineage::error::IdPrefixError;
use memlineage_core::EntryId;

/// The entry `text` (a route's `{id}`) names for `caller`.
pub async fn resolve(state: &AppState, caller: &Caller, text: &str) -> ApiResult<EntryId> {
    let prefix: IdPrefix = text.parse().map_err(|_| {
        ApiError::invalid(format!(
            "`id`: `{}` is not an entry id: expected 64 hexadecimal characters, or a unique prefix of at least {}",
            text.chars().take(80).collect::<String>(),
            IdPrefix::MIN_LEN
        ))
    })?;
    if let Some(id) = prefix.full() {
        return Ok(id);
    }
    let caller = caller.clone();
    state
        .read(move |mem| {
            mem.resolve_prefix_visible(&prefix, &|scope| caller.may_read(scope))
                .map_err(|e| match e {
                    memlineage::Error::IdPrefix(IdPrefixError::NoMatch { prefix }) => {
                        ApiError::not_found(format!(
                            "no entry id starts with `{prefix}` within this token's scopes ({})",
                            caller.scopes_text()
                        ))
                    }
                    memlineage::Error::IdPrefix(IdPrefixError::Ambiguous {
                        prefix,
                        first,
                        second,
                    }) => ApiError::new(
                        StatusCode::CONFLICT,
                        "ambiguous_id",
                        format!(
                            "the id prefix `{prefix}` matches more than one entry within this token's scopes ({first}, {second}, at least): give more characters"
                        ),
                    ),
                    other => ApiError::from(other),
                })
        })
        .await
}
