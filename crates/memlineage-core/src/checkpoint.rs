//! STUB — to be replaced by C2SP tlog-checkpoint / signed-note.
#![allow(missing_docs)]
