//! Integration tests that need the model file.
//!
//! One test binary, so the model is read and parsed once ([`common::model`]). When the model
//! file is missing each test prints how to get it and returns early, except when the `CI`
//! environment variable is set: CI fetches the model first, so there a missing model fails.

mod attribution;
mod chat;
mod common;
mod embed;
mod forward;
mod prefix;
mod tokenizer;
