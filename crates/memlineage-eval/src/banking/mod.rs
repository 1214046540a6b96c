//! Banking pairs (stub).
