//! The service's one error type, and the one mapping from library errors to HTTP statuses.
//!
//! Every failure reaches the client as `{"error": {"status": N, "kind": "…", "message": "…"}}`
//! with a message that says what is wrong and what to do; `kind` is stable (documented in
//! `docs/service.md`), the message is for people. Library errors are classified in
//! [`From<memlineage::Error>`]; nothing else in the crate decides a status for them.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// An error answered to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable classification.
    pub kind: &'static str,
    /// What is wrong, in words.
    pub message: String,
}

/// The JSON body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// The HTTP status, repeated.
    pub status: u16,
    /// A stable classification: `invalid_request`, `invalid_json`, `payload_too_large`,
    /// `unsupported_media_type`, `unauthorized`, `forbidden`, `not_found`, `unknown_route`,
    /// `method_not_allowed`, `unknown_parent`, `refused`, `cannot_judge`, `conflict`, `ambiguous_id`,
    /// `limit_exceeded`, `timeout`, `unavailable`, `integrity`, `store`, `internal`.
    pub kind: String,
    /// What is wrong and what to do, for people.
    pub message: String,
}

impl ApiError {
    /// An error with this status, kind and message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            message: message.into(),
        }
    }

    /// 400: a request the client can fix.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 401: no valid bearer token.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: the token may not do this.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404: nothing here (or nothing this token may see).
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 413/400: a configured request limit was exceeded.
    pub fn limit(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "limit_exceeded", message)
    }

    /// 503: the service cannot take the request now (shutting down, queue closed).
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// 500: a bug or an unexpected failure inside the service.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                status: self.status.as_u16(),
                kind: self.kind.to_string(),
                message: self.message.clone(),
            },
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.kind,
            self.message
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        let mut resp = (status, Json(self.body())).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"memlineage\""),
            );
        }
        resp
    }
}

/// The classification of library errors (`memlineage::Error::kind()`): the one place that
/// decides a status for them. Two refinements of `kind()`: a call the gate cannot judge is 422
/// `cannot_judge` (do not dispatch it), a parent not in the log is 422 `unknown_parent`.
impl From<memlineage::Error> for ApiError {
    fn from(e: memlineage::Error) -> ApiError {
        use memlineage::ErrorKind as K;
        let message = e.to_string();
        let (status, kind) = match (&e, e.kind()) {
            (memlineage::Error::Gate(_), _) => (StatusCode::UNPROCESSABLE_ENTITY, "cannot_judge"),
            (memlineage::Error::UnknownParent(_), _) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "unknown_parent")
            }
            (_, K::InvalidInput) => (StatusCode::BAD_REQUEST, "invalid_request"),
            (_, K::NotFound) => (StatusCode::NOT_FOUND, "not_found"),
            (_, K::Refused) => (StatusCode::FORBIDDEN, "refused"),
            (_, K::Conflict) => (StatusCode::CONFLICT, "conflict"),
            (_, K::Integrity) => (StatusCode::INTERNAL_SERVER_ERROR, "integrity"),
            (_, K::Storage | K::Io) => (StatusCode::INTERNAL_SERVER_ERROR, "store"),
            (_, K::Unavailable) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, kind, message)
    }
}

/// The result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::{EntryId, PrincipalName};

    #[test]
    fn library_errors_map_to_statuses() {
        let id = EntryId(memlineage_core::Hash256::default());
        let cases = [
            (memlineage::Error::NotFound(id), 404, "not_found"),
            (memlineage::Error::UnknownParent(id), 422, "unknown_parent"),
            (
                memlineage::Error::Input(memlineage::error::InputError::EmptyContent),
                400,
                "invalid_request",
            ),
            (
                memlineage::Error::NoKey(PrincipalName::new("a").expect("a valid name")),
                403,
                "refused",
            ),
            (
                memlineage::Error::integrity(memlineage::error::IntegrityCheck::Content, "x"),
                500,
                "integrity",
            ),
            (
                memlineage::Error::Storage(memlineage::error::StorageError::new("sqlite", "x")),
                500,
                "store",
            ),
            (
                memlineage::Error::Storage(memlineage::error::StorageError {
                    retryable: true,
                    ..memlineage::error::StorageError::new("sqlite", "busy")
                }),
                503,
                "unavailable",
            ),
            (memlineage::Error::Internal("x".into()), 500, "internal"),
        ];
        for (e, status, kind) in cases {
            let api = ApiError::from(e);
            assert_eq!(api.status.as_u16(), status, "{api}");
            assert_eq!(api.kind, kind);
        }
    }

    #[test]
    fn unauthorized_names_the_scheme() {
        let r = ApiError::unauthorized("no token").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(r.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
