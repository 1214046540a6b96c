//! Rendering (paper §M5 and §M4): entries into a prompt, and lineage graphs into text, JSON,
//! Graphviz DOT and Mermaid.
//!
//! * [`prompt`]: one structural `<memory …>` block per entry, carrying its id, effective trust
//!   label, writer, kind and strong parents; [`prompt::context_hash`] is h_ctx.
//! * [`escape`]: the content escaping that keeps an entry from closing its block or forging a
//!   label, and its strict inverse.
//! * [`lineage`]: the lineage graph formats.
//!
//! The formats, the escaping table and why a block cannot be forged are in `docs/rendering.md`.

pub mod escape;
pub mod lineage;
pub mod prompt;

pub use escape::{UnescapeError, escape_attribute, escape_content, unescape, unescape_attribute};
pub use prompt::{RenderedEntry, context_hash, render_json, render_text};
