//! Tools: definitions, listing and call results.

use serde::Serialize;
use serde_json::Value;

use super::{Content, Map, ResourceContents};

/// Hints about a tool's behaviour. They come from the server and are untrusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool changes nothing (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (absent means `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no further effect (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside the server's own world (absent means `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ToolAnnotations {
    title: "title" optional,
    read_only_hint: "readOnlyHint" optional,
    destructive_hint: "destructiveHint" optional,
    idempotent_hint: "idempotentHint" optional,
    open_world_hint: "openWorldHint" optional,
});

setters!(ToolAnnotations {
    with_title => title: String,
    with_read_only_hint => read_only_hint: bool,
    with_destructive_hint => destructive_hint: bool,
    with_idempotent_hint => idempotent_hint: bool,
    with_open_world_hint => open_world_hint: bool,
});

/// A tool the server offers.
///
/// The schemas are kept as raw JSON, so every keyword and the key order survive.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the `arguments` object.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` in results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Execution properties such as `{"taskSupport": "optional"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

impl Tool {
    /// A tool called `name` taking arguments described by `input_schema`.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            execution: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The description, or `""` when there is none.
    pub fn description(&self) -> &str {
        self.description.as_deref().unwrap_or("")
    }

    /// The name to show a person: `title`, else `annotations.title`, else `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }
}

deserialize_struct!(Tool {
    name: "name" required,
    title: "title" optional,
    description: "description" optional,
    input_schema: "inputSchema" required,
    output_schema: "outputSchema" optional,
    annotations: "annotations" optional,
    icons: "icons" optional,
    execution: "execution" optional,
    meta: "_meta" optional,
});

setters!(Tool {
    with_title => title: String,
    with_description => description: String,
    with_output_schema => output_schema: Value,
    with_annotations => annotations: ToolAnnotations,
    with_icons => icons: Vec<Value>,
    with_execution => execution: Value,
    with_meta => meta: Map,
});

/// The result of `tools/list`: one page of tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Opaque cursor for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

impl ListToolsResult {
    /// A page holding `tools`.
    pub fn new(tools: Vec<Tool>) -> Self {
        Self {
            tools,
            ..Self::default()
        }
    }
}

deserialize_struct!(ListToolsResult {
    tools: "tools" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

setters!(ListToolsResult { with_next_cursor => next_cursor: String, with_meta => meta: Map });

/// The result of `tools/call`.
///
/// A tool that ran and failed answers with `isError: true` ([`CallToolResult::failed`]); that is
/// a result, not a protocol error.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// The content blocks.
    pub content: Vec<Content>,
    /// Structured output, conforming to the tool's `outputSchema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

impl CallToolResult {
    /// A result of a call that worked.
    pub fn success(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A result of a call that failed (`isError: true`).
    pub fn error(content: Vec<Content>) -> Self {
        Self {
            content,
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// `isError` is `true`.
    pub fn failed(&self) -> bool {
        self.is_error == Some(true)
    }

    /// Every text block, and the text of every embedded text resource, joined with `"\n"`.
    pub fn text(&self) -> String {
        let texts = self.content.iter().filter_map(|block| match block {
            Content::Text(t) => Some(t.text.as_str()),
            Content::Resource(r) => match &r.resource {
                ResourceContents::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            _ => None,
        });
        texts.collect::<Vec<_>>().join("\n")
    }
}

deserialize_struct!(CallToolResult {
    content: "content" required,
    structured_content: "structuredContent" optional,
    is_error: "isError" optional,
    meta: "_meta" optional,
});

setters!(CallToolResult {
    with_structured_content => structured_content: Value,
    with_is_error => is_error: bool,
    with_meta => meta: Map,
});

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::super::{BlobResourceContents, EmbeddedResource, TextResourceContents};
    use super::*;

    /// A 2020-12 schema whose keys are deliberately not in alphabetical order.
    const SCHEMA: &str = concat!(
        r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","##,
        r##""properties":{"unit":{"$ref":"#/$defs/unit"},"city":{"type":"string","minLength":1},"##,
        r##""zip":{"type":"string"}},"required":["city"],"additionalProperties":false,"##,
        r##""$defs":{"unit":{"enum":["c","f"],"default":"c"}},"##,
        r##""allOf":[{"if":{"properties":{"unit":{"const":"f"}}},"then":{"required":["zip"]},"##,
        r##""else":{"not":{"required":["zip"]}}}]}"##
    );

    #[test]
    fn tool_schema_survives_byte_identical() {
        let wire = format!(
            r#"{{"name":"get_weather","title":"Weather","description":"Forecast for a city","inputSchema":{SCHEMA},"outputSchema":{{"type":"object","properties":{{"temp":{{"type":"number"}}}}}},"annotations":{{"readOnlyHint":true,"openWorldHint":true}},"execution":{{"taskSupport":"optional"}},"_meta":{{"k":"v"}},"x-vendor":7}}"#
        );
        let tool: Tool = serde_json::from_str(&wire).expect("parse");
        assert_eq!(
            serde_json::to_string(&tool.input_schema).expect("ser"),
            SCHEMA
        );
        assert_eq!(serde_json::to_string(&tool).expect("ser"), wire);
        let keys: Vec<&str> = tool
            .input_schema
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "$schema",
                "type",
                "properties",
                "required",
                "additionalProperties",
                "$defs",
                "allOf"
            ]
        );
        assert_eq!(tool.extra.get("x-vendor"), Some(&json!(7)));
    }

    #[test]
    fn display_name_precedence() {
        let schema = json!({"type": "object"});
        let bare = Tool::new("get_weather", schema.clone());
        assert_eq!(bare.display_name(), "get_weather");
        assert_eq!(bare.description(), "");
        let annotated = bare.with_annotations(ToolAnnotations::default().with_title("Weather (a)"));
        assert_eq!(annotated.display_name(), "Weather (a)");
        let titled = annotated
            .with_title("Weather")
            .with_description("Forecasts");
        assert_eq!(titled.display_name(), "Weather");
        assert_eq!(titled.description(), "Forecasts");
    }

    #[test]
    fn list_tools_result_round_trips() {
        let wire = json!({
            "tools": [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"msg": {"type": "string"}}}},
                {"name": "add", "description": "Adds", "inputSchema": {"type": "object"},
                 "icons": [{"src": "data:image/png;base64,AA==", "mimeType": "image/png"}]}
            ],
            "nextCursor": "page-2",
            "ttlMs": 60000
        });
        let list: ListToolsResult = round_trip(&wire);
        assert_eq!(list.tools.len(), 2);
        assert_eq!(list.next_cursor.as_deref(), Some("page-2"));
        assert_eq!(list.extra.get("ttlMs"), Some(&json!(60000)));
    }

    fn all_blocks() -> serde_json::Value {
        json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav",
                 "annotations": {"priority": 1}},
                {"type": "resource_link", "uri": "file:///report.pdf", "name": "report",
                 "mimeType": "application/pdf", "size": 52311},
                {"type": "resource", "resource": {"uri": "file:///notes.md", "text": "second"}},
                {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAE="}},
                {"type": "hologram", "x": 1},
                {"type": "text", "text": "third"}
            ],
            "structuredContent": {"temp": 21.5},
            "isError": false,
            "_meta": {"elapsedMs": 12},
            "resultType": "complete"
        })
    }

    #[test]
    fn call_tool_result_keeps_every_block() {
        let result: CallToolResult = round_trip(&all_blocks());
        let kinds: Vec<&str> = result.content.iter().map(Content::kind).collect();
        assert_eq!(
            kinds,
            [
                "text",
                "image",
                "audio",
                "resource_link",
                "resource",
                "resource",
                "hologram",
                "text"
            ]
        );
        assert!(matches!(result.content[3], Content::ResourceLink(ref l) if l.size == Some(52311)));
        assert_eq!(
            result.content[6],
            Content::Unknown(json!({"type": "hologram", "x": 1}))
        );
        assert_eq!(result.extra.get("resultType"), Some(&json!("complete")));
    }

    #[test]
    fn text_joins_text_blocks_and_embedded_text() {
        let result: CallToolResult = round_trip(&all_blocks());
        assert_eq!(result.text(), "first\nsecond\nthird");
        let built = CallToolResult::success(vec![
            Content::text("a"),
            EmbeddedResource::new(ResourceContents::Blob(BlobResourceContents::new(
                "u", "AA==",
            )))
            .into(),
            EmbeddedResource::new(ResourceContents::Text(TextResourceContents::new("u", "b")))
                .into(),
        ]);
        assert_eq!(built.text(), "a\nb");
        assert_eq!(CallToolResult::default().text(), "");
    }

    #[test]
    fn failed_reads_is_error() {
        let ok: CallToolResult = round_trip(&json!({"content": []}));
        assert!(!ok.failed());
        let explicit: CallToolResult = round_trip(&json!({"content": [], "isError": false}));
        assert!(!explicit.failed());
        let bad: CallToolResult = round_trip(
            &json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
        );
        assert!(bad.failed());
        assert!(CallToolResult::error(vec![Content::text("x")]).failed());
        assert!(!CallToolResult::success(vec![]).failed());
    }
}
