//! The MemLineage memory handle.
