//! The model structs as `#[derive(Deserialize)]` with `#[serde(flatten)]` read them, before
//! they were read member by member: the reference the tests in `de_tests.rs` compare against.

#![allow(dead_code)]

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::model::{ElicitAction, LoggingLevel, ProgressToken, Role, TaskStatus};

type Map = serde_json::Map<String, Value>;
type ResourceLink = Resource;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) open_world_hint: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    pub(super) input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<ToolAnnotations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) icons: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) execution: Option<Value>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListToolsResult {
    pub(super) tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) next_cursor: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CallToolResult {
    pub(super) content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) is_error: Option<bool>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) audience: Option<Vec<Role>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::model::number::serialize_opt"
    )]
    pub(super) priority: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) last_modified: Option<String>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TextContent {
    pub(super) text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ImageContent {
    pub(super) data: String,
    pub(super) mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AudioContent {
    pub(super) data: String,
    pub(super) mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EmbeddedResource {
    pub(super) resource: ResourceContents,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TextResourceContents {
    pub(super) uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mime_type: Option<String>,
    pub(super) text: String,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlobResourceContents {
    pub(super) uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mime_type: Option<String>,
    pub(super) blob: String,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Resource {
    pub(super) uri: String,
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) icons: Option<Vec<Value>>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListResourcesResult {
    pub(super) resources: Vec<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) next_cursor: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceTemplate {
    pub(super) uri_template: String,
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<Annotations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) icons: Option<Vec<Value>>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListResourceTemplatesResult {
    pub(super) resource_templates: Vec<ResourceTemplate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) next_cursor: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReadResourceResult {
    pub(super) contents: Vec<ResourceContents>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Implementation {
    pub(super) name: String,
    pub(super) version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) website_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) icons: Option<Vec<Value>>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListChangedCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) list_changed: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourcesCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) subscribe: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) list_changed: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ServerCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<ListChangedCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) resources: Option<ResourcesCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) prompts: Option<ListChangedCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) logging: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) completions: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) experimental: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeResult {
    pub(super) protocol_version: String,
    pub(super) capabilities: ServerCapabilities,
    pub(super) server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) instructions: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptArgument {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) required: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Prompt {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) arguments: Option<Vec<PromptArgument>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) icons: Option<Vec<Value>>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListPromptsResult {
    pub(super) prompts: Vec<Prompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) next_cursor: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptMessage {
    pub(super) role: Role,
    pub(super) content: Content,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GetPromptResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    pub(super) messages: Vec<PromptMessage>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Content {
    Text(TextContent),
    Image(ImageContent),
    Audio(AudioContent),
    ResourceLink(ResourceLink),
    Resource(EmbeddedResource),
    Unknown(Value),
}

#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(c) => Tagged {
                kind: "text",
                inner: c,
            }
            .serialize(s),
            Content::Image(c) => Tagged {
                kind: "image",
                inner: c,
            }
            .serialize(s),
            Content::Audio(c) => Tagged {
                kind: "audio",
                inner: c,
            }
            .serialize(s),
            Content::ResourceLink(c) => Tagged {
                kind: "resource_link",
                inner: c,
            }
            .serialize(s),
            Content::Resource(c) => Tagged {
                kind: "resource",
                inner: c,
            }
            .serialize(s),
            Content::Unknown(v) => v.serialize(s),
        }
    }
}

fn block<T: DeserializeOwned>(mut map: Map, kind: &str) -> Result<T, String> {
    map.shift_remove("type");
    serde_json::from_value(Value::Object(map))
        .map_err(|e| format!("invalid `{kind}` content block: {e}"))
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let Value::Object(map) = value else {
            return Ok(Content::Unknown(value));
        };
        let kind = map
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let content = match kind.as_str() {
            "text" => block(map, &kind).map(Content::Text),
            "image" => block(map, &kind).map(Content::Image),
            "audio" => block(map, &kind).map(Content::Audio),
            "resource_link" => block(map, &kind).map(Content::ResourceLink),
            "resource" => block(map, &kind).map(Content::Resource),
            _ => Ok(Content::Unknown(Value::Object(map))),
        };
        content.map_err(D::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum ResourceContents {
    Text(TextResourceContents),
    Blob(BlobResourceContents),
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let has = |key| value.get(key).is_some();
        let contents = if has("text") {
            serde_json::from_value(value).map(ResourceContents::Text)
        } else if has("blob") {
            serde_json::from_value(value).map(ResourceContents::Blob)
        } else {
            return Err(D::Error::custom(
                "resource contents carry neither `text` nor `blob`",
            ));
        };
        contents.map_err(|e| D::Error::custom(format!("invalid resource contents: {e}")))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LoggingMessage {
    pub(super) level: LoggingLevel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) logger: Option<String>,
    pub(super) data: Value,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Progress {
    pub(super) progress_token: ProgressToken,
    #[serde(serialize_with = "crate::model::number::serialize")]
    pub(super) progress: f64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::model::number::serialize_opt"
    )]
    pub(super) total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<String>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceUpdated {
    pub(super) uri: String,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Cancelled {
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub(super) request_id: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<String>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Completion {
    pub(super) values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) has_more: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CompleteResult {
    pub(super) completion: Completion,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DiscoverResult {
    pub(super) supported_versions: Vec<String>,
    pub(super) capabilities: ServerCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ttl_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cache_scope: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Root {
    pub(super) uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListRootsResult {
    pub(super) roots: Vec<Root>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SamplingMessage {
    pub(super) role: Role,
    pub(super) content: Value,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateMessageParams {
    pub(super) messages: Vec<SamplingMessage>,
    pub(super) max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) model_preferences: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) include_context: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::model::number::serialize_opt"
    )]
    pub(super) temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) stop_sequences: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<Value>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateMessageResult {
    pub(super) role: Role,
    pub(super) content: Value,
    pub(super) model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) stop_reason: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ElicitParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) mode: Option<String>,
    pub(super) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) requested_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) elicitation_id: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ElicitResult {
    pub(super) action: ElicitAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) content: Option<Map>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RootsCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) list_changed: Option<bool>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClientCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) roots: Option<RootsCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sampling: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) elicitation: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) experimental: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateTaskResult {
    pub(super) task: Task,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ttl: Option<u64>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListTasksResult {
    pub(super) tasks: Vec<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) next_cursor: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TasksCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) list: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cancel: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) requests: Option<Value>,
    #[serde(flatten)]
    pub(super) extra: Map,
}

/// Reads a JSON number of milliseconds (any non-negative number, rounded) or `null`.
fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n.round().min(u64::MAX as f64) as u64)),
        Some(n) => Err(serde::de::Error::custom(format!(
            "expected a non-negative number of milliseconds, got {n}"
        ))),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Task {
    pub(super) task_id: String,
    pub(super) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) status_message: Option<String>,
    #[serde(default)]
    pub(super) created_at: String,
    #[serde(default)]
    pub(super) last_updated_at: String,
    #[serde(default, deserialize_with = "millis")]
    pub(super) ttl: Option<u64>,
    #[serde(
        default,
        deserialize_with = "millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) poll_interval: Option<u64>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(super) meta: Option<Map>,
    #[serde(flatten)]
    pub(super) extra: Map,
}
