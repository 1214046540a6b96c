//! A downstream result (or tool list) as the entries that record it: each author's part under
//! its principal (`authors.rs`), kind `tool_output`, with the server, tool and part in the
//! metadata.

use crate::authors::{Authors, ToolOutput};
use crate::content::block_text;
use crate::handle::NewEntry;
use crate::sessions::ShownText;
use memlineage_core::entry::EntryKind;
use memlineage_core::label::TrustClass;
use rmcp::model::{CallToolResult, Tool};

/// The entries that record `result` of `server`'s `tool`. `class_of` gives each author's trust
/// class (text that cannot be split by field goes to the least trusted author).
pub fn result_texts(
    server: &str,
    tool: &str,
    authors: &Authors,
    result: &CallToolResult,
    class_of: impl Fn(&str) -> TrustClass,
) -> Vec<ShownText> {
    let texts: Vec<String> = result.content.iter().map(block_text).collect();
    let principals = authors.principals();
    let least_trusted = principals
        .iter()
        .find(|p| class_of(p) == TrustClass::External)
        .copied()
        .unwrap_or(authors.principal.as_str());
    authors
        .split(
            ToolOutput {
                texts: &texts,
                structured: result.structured_content.as_ref(),
            },
            least_trusted,
        )
        .into_iter()
        .map(|a| {
            let part = a.part.clone();
            ShownText {
                entry: NewEntry::new(&a.principal, EntryKind::ToolOutput, a.text)
                    .meta("mcp.server", server)
                    .meta("mcp.tool", tool)
                    .meta("mcp.part", &a.part),
                part: format!("{server}/{tool}/{part}"),
            }
        })
        .collect()
}

/// The entry that records `server`'s tool list as the agent is shown it (names, descriptions
/// and input schemas are the server's words, and can carry instructions too).
pub fn listing_text(server: &str, principal: &str, tools: &[Tool]) -> Option<ShownText> {
    if tools.is_empty() {
        return None;
    }
    let mut text = String::new();
    for t in tools {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&t.name);
        if let Some(title) = &t.title {
            text.push_str(" (");
            text.push_str(title);
            text.push(')');
        }
        if let Some(d) = &t.description {
            text.push_str(": ");
            text.push_str(d);
        }
        text.push_str("\n  input: ");
        text.push_str(&serde_json::Value::Object((*t.input_schema).clone()).to_string());
    }
    Some(ShownText {
        entry: NewEntry::new(principal, EntryKind::ToolOutput, text)
            .meta("mcp.server", server)
            .meta("mcp.part", "tools/list"),
        part: format!("{server}/tools/list"),
    })
}
