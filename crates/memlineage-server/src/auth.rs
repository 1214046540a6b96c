//! Who is calling: the bearer token, checked against the token file, as an extractor.
//!
//! Every `/v1` route takes a [`Caller`]: a request without a valid token is answered 401 before
//! the handler runs. What a caller may do is decided here and nowhere else:
//!
//! - it writes and gates **as its token's principal** only (no request field names a writer),
//!   so a token for an external principal can never write as a trusted one;
//! - it reads, writes and gates only within its **scopes** (each with everything below it);
//!   an entry outside them is answered as if it did not exist (404), so scopes do not leak
//!   which ids exist;
//! - registry changes, forget, distrust, checkpoints, verify and the unfiltered log need the
//!   **operator** role, which also reads every scope.

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::tokens::Grant;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use memlineage::PrincipalName;
use memlineage_core::EntryId;
use memlineage_core::entry::Scope;

/// The authenticated caller of a request.
#[derive(Clone, Debug)]
pub struct Caller(pub Grant);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)?;
        let grant = state.tokens.check(token).map_err(|why| {
            ApiError::unauthorized(format!(
                "{why}; create one with `memlineage token create --principal NAME --scope SCOPE`"
            ))
        })?;
        // The operator role is only for a trusted principal (`token create` refuses it
        // otherwise); a token file edited by hand must not give an external principal the
        // role either, so it is checked against the registry on every request (cached).
        if grant.operator
            && state.class_of(&grant.principal).await?
                != memlineage_core::label::TrustClass::Trusted
        {
            return Err(ApiError::forbidden(format!(
                "this token has the operator role, but principal `{}` is external: the role is only for a trusted principal; revoke the token",
                grant.principal
            )));
        }
        Ok(Caller(grant))
    }
}

/// The bearer token of a request.
pub fn bearer(parts: &Parts) -> ApiResult<&str> {
    let value = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("no bearer token: send `Authorization: Bearer <token>`")
    })?;
    let text = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not ASCII"))?;
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Ok(token.trim()),
        _ => Err(ApiError::unauthorized(
            "the Authorization header must be `Bearer <token>`",
        )),
    }
}

impl Caller {
    /// The principal.
    pub fn principal(&self) -> &PrincipalName {
        &self.0.principal
    }

    /// Whether the caller holds the operator role.
    pub fn is_operator(&self) -> bool {
        self.0.operator
    }

    /// Refuses callers without the operator role.
    pub fn require_operator(&self, what: &str) -> ApiResult<()> {
        if self.0.operator {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "{what} needs a token with the operator role (`memlineage token create … --operator`); this token is for principal `{}`",
                self.0.principal
            )))
        }
    }

    /// The scope a request that names none works in: the token's first scope.
    pub fn default_scope(&self) -> ApiResult<Scope> {
        self.0
            .scopes
            .first()
            .cloned()
            .ok_or_else(|| ApiError::forbidden("this token has no scope"))
    }

    /// The scope a request names (or the default), refused when outside the token's scopes.
    pub fn scope_for_write(&self, requested: Option<&str>) -> ApiResult<Scope> {
        let scope = match requested {
            Some(s) => Scope::new(s).map_err(|e| ApiError::invalid(e.to_string()))?,
            None => self.default_scope()?,
        };
        if !self.0.covers(&scope) {
            return Err(ApiError::forbidden(format!(
                "scope `{scope}` is outside this token's scopes ({}); nothing was written",
                self.0.scopes_text()
            )));
        }
        Ok(scope)
    }

    /// Whether the caller may read an entry of `scope`.
    pub fn may_read(&self, scope: &Scope) -> bool {
        self.0.operator || self.0.covers(scope)
    }

    /// The answer for an entry the caller may not see (the same as for one that does not
    /// exist).
    pub fn hidden(&self, id: &EntryId) -> ApiError {
        ApiError::not_found(format!(
            "no entry {id} within this token's scopes ({})",
            self.0.scopes_text()
        ))
    }

    /// The scopes whose entries the caller may read, for the gate's earliest-carrier rule
    /// (a value's earliest carrier is looked for among them): `None` for an operator, who may
    /// read every scope.
    pub fn readable_scopes(&self) -> Option<Vec<Scope>> {
        (!self.0.operator).then(|| self.0.scopes.clone())
    }

    /// The token's scopes as text.
    pub fn scopes_text(&self) -> String {
        self.0.scopes_text()
    }
}
