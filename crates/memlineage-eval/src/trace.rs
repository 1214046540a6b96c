//! The laundering trace (stub).
