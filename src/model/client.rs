//! Requests a server sends to the client: roots, sampling and elicitation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Map, Role};

/// A directory or file the client lets the server work in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Root {
    uri: "uri" required,
    name: "name" optional,
    meta: "_meta" optional,
});

impl Root {
    /// The root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(Root { with_name => name: String, with_meta => meta: Map });

/// The client's answer to `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ListRootsResult {
    roots: "roots" required,
    meta: "_meta" optional,
});

impl ListRootsResult {
    /// An answer listing `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        Self {
            roots,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(ListRootsResult { with_meta => meta: Map });

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// One content block or an array of them (text, image, audio, `tool_use`, `tool_result`).
    pub content: Value,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(SamplingMessage {
    role: "role" required,
    content: "content" required,
    meta: "_meta" optional,
});

impl SamplingMessage {
    /// A message from `role` holding `content` (one block or an array of blocks).
    pub fn new(role: Role, content: impl Into<Value>) -> Self {
        Self {
            role,
            content: content.into(),
            meta: None,
            extra: Map::new(),
        }
    }

    /// The message's content blocks, whether one block or an array was sent.
    pub fn blocks(&self) -> Vec<&Value> {
        match &self.content {
            Value::Array(blocks) => blocks.iter().collect(),
            block => vec![block],
        }
    }

    /// The text of every text block, joined with `"\n"`.
    pub fn text(&self) -> String {
        let texts = self
            .blocks()
            .into_iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str));
        texts.collect::<Vec<_>>().join("\n")
    }
}

/// The params of `sampling/createMessage`: the server asks the client's model for a reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: u64,
    /// A system prompt the server asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Hints for choosing a model (`hints`, `costPriority`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Value>,
    /// `"none"`, `"thisServer"` or `"allServers"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::number::serialize_opt"
    )]
    pub temperature: Option<f64>,
    /// Sequences that end generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// How the model may use `tools` (`{"mode": "auto" | "required" | "none"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(CreateMessageParams {
    messages: "messages" required,
    max_tokens: "maxTokens" required,
    system_prompt: "systemPrompt" optional,
    model_preferences: "modelPreferences" optional,
    include_context: "includeContext" optional,
    temperature: "temperature" optional,
    stop_sequences: "stopSequences" optional,
    metadata: "metadata" optional,
    tools: "tools" optional,
    tool_choice: "toolChoice" optional,
    meta: "_meta" optional,
});

impl CreateMessageParams {
    /// A request to continue `messages` with at most `max_tokens` tokens.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        Self {
            messages,
            max_tokens,
            system_prompt: None,
            model_preferences: None,
            include_context: None,
            temperature: None,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(CreateMessageParams {
    with_system_prompt => system_prompt: String,
    with_model_preferences => model_preferences: Value,
    with_include_context => include_context: String,
    with_temperature => temperature: f64,
    with_stop_sequences => stop_sequences: Vec<String>,
    with_metadata => metadata: Value,
    with_tools => tools: Vec<Value>,
    with_tool_choice => tool_choice: Value,
    with_meta => meta: Map,
});

/// The client's answer to `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// Who speaks (normally [`Role::Assistant`]).
    pub role: Role,
    /// One content block or an array of them.
    pub content: Value,
    /// The model that produced the reply.
    pub model: String,
    /// Why generation stopped: `"endTurn"`, `"stopSequence"`, `"maxTokens"`, `"toolUse"`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(CreateMessageResult {
    role: "role" required,
    content: "content" required,
    model: "model" required,
    stop_reason: "stopReason" optional,
    meta: "_meta" optional,
});

impl CreateMessageResult {
    /// A reply of one text block from `model`.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        let content = serde_json::json!({"type": "text", "text": text.into()});
        Self {
            role: Role::Assistant,
            content,
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(CreateMessageResult { with_stop_reason => stop_reason: String, with_meta => meta: Map });

/// The params of `elicitation/create`: the server asks the user for input.
///
/// Form mode (no `mode`, or `"form"`) carries `requestedSchema`; URL mode carries `url` and
/// `elicitationId`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitParams {
    /// `"form"`, `"url"`, or absent (form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to show the user.
    pub message: String,
    /// Form mode: a flat object schema of primitive properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: the page to send the user to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL mode: the id that `notifications/elicitation/complete` will name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ElicitParams {
    mode: "mode" optional,
    message: "message" required,
    requested_schema: "requestedSchema" optional,
    url: "url" optional,
    elicitation_id: "elicitationId" optional,
    meta: "_meta" optional,
});

impl ElicitParams {
    /// A form-mode request: show `message`, collect fields described by `requested_schema`.
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        Self {
            mode: None,
            message: message.into(),
            requested_schema: Some(requested_schema),
            url: None,
            elicitation_id: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// A URL-mode request: show `message` and offer to open `url`.
    pub fn url(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        Self {
            mode: Some("url".to_owned()),
            message: message.into(),
            requested_schema: None,
            url: Some(url.into()),
            elicitation_id: Some(elicitation_id.into()),
            meta: None,
            extra: Map::new(),
        }
    }

    /// Form mode: `mode` is absent or `"form"`.
    pub fn is_form_mode(&self) -> bool {
        matches!(self.mode.as_deref(), None | Some("form"))
    }

    /// URL mode: `mode` is `"url"`.
    pub fn is_url_mode(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

setters!(ElicitParams { with_meta => meta: Map });

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Submitted the form or agreed to open the URL.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// Form mode, accepted: the submitted values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ElicitResult {
    action: "action" required,
    content: "content" optional,
    meta: "_meta" optional,
});

impl ElicitResult {
    fn with_action(action: ElicitAction, content: Option<Map>) -> Self {
        Self {
            action,
            content,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The user accepted and submitted `content`.
    pub fn accept(content: Map) -> Self {
        Self::with_action(ElicitAction::Accept, Some(content))
    }

    /// The user declined.
    pub fn decline() -> Self {
        Self::with_action(ElicitAction::Decline, None)
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        Self::with_action(ElicitAction::Cancel, None)
    }

    /// For an accept result, fills fields the user left out with the defaults in
    /// `requested_schema`; other results are returned unchanged.
    #[must_use]
    pub fn with_defaults_from(mut self, requested_schema: &Value) -> Self {
        if self.action != ElicitAction::Accept {
            return self;
        }
        let mut content = self.content.take().unwrap_or_default();
        apply_schema_defaults(requested_schema, &mut content);
        // An accept without content (URL mode) stays without it unless a default was filled.
        if !content.is_empty() {
            self.content = Some(content);
        }
        self
    }
}

setters!(ElicitResult { with_meta => meta: Map });

/// Fills every property of `schema` that `content` lacks with the property's `default`, if it
/// has one (SEP-1034). Values already in `content` are never replaced.
///
/// `schema` is an elicitation's `requestedSchema`: `{"type": "object", "properties": {...}}`.
pub(crate) fn apply_schema_defaults(schema: &Value, content: &mut Map) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default") {
            if !content.contains_key(name) {
                content.insert(name.clone(), default.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    fn object(value: Value) -> Map {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn roots_round_trip() {
        let wire = json!({
            "roots": [
                {"uri": "file:///home/user/projects/frontend", "name": "Frontend Repository"},
                {"uri": "file:///tmp", "_meta": {"writable": true}}
            ]
        });
        let result: ListRootsResult = round_trip(&wire);
        let built = ListRootsResult::new(vec![
            Root::new("file:///home/user/projects/frontend").with_name("Frontend Repository"),
            Root::new("file:///tmp").with_meta(object(json!({"writable": true}))),
        ]);
        assert_eq!(result, built);
    }

    #[test]
    fn create_message_params_round_trip() {
        let wire = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": "France"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "Paris"}]}
                ]}
            ],
            "modelPreferences": {"hints": [{"name": "large-model"}], "intelligencePriority": 0.8},
            "systemPrompt": "You are a helpful geographer.",
            "includeContext": "none",
            "temperature": 0.7,
            "maxTokens": 100,
            "stopSequences": ["\n\n"],
            "metadata": {"provider": "x"},
            "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"},
            "task": {"ttl": 60000}
        });
        let params: CreateMessageParams = round_trip(&wire);
        assert_eq!(params.max_tokens, 100);
        assert_eq!(params.messages[0].text(), "What is the capital of France?");
        assert_eq!(params.messages[1].blocks().len(), 2);
        assert_eq!(params.messages[1].text(), "Let me check.");
        assert!(params.extra.contains_key("task"));
    }

    #[test]
    fn create_message_result_text_constructor() {
        let result = CreateMessageResult::text("test-model", "Paris").with_stop_reason("endTurn");
        let wire = json!({
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "test-model",
            "stopReason": "endTurn"
        });
        assert_eq!(serde_json::to_value(&result).expect("ser"), wire);
        assert_eq!(round_trip::<CreateMessageResult>(&wire), result);
    }

    #[test]
    fn elicit_params_round_trip_in_both_modes() {
        let form: ElicitParams = round_trip(&json!({
            "message": "Please provide your GitHub username",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                "required": ["name"]}
        }));
        assert!(form.is_form_mode() && !form.is_url_mode());
        let url: ElicitParams = round_trip(&json!({
            "mode": "url",
            "message": "Please authorize access",
            "url": "https://example.com/oauth?state=abc",
            "elicitationId": "550e8400-e29b-41d4-a716-446655440000"
        }));
        assert!(url.is_url_mode() && !url.is_form_mode());
        assert_eq!(
            url,
            ElicitParams::url(
                "Please authorize access",
                "https://example.com/oauth?state=abc",
                "550e8400-e29b-41d4-a716-446655440000"
            )
        );
    }

    #[test]
    fn elicit_results_serialise_as_specified() {
        let accept = ElicitResult::accept(object(json!({"name": "octocat"})));
        assert_eq!(
            serde_json::to_value(&accept).expect("ser"),
            json!({"action": "accept", "content": {"name": "octocat"}})
        );
        assert_eq!(
            serde_json::to_value(ElicitResult::decline()).expect("ser"),
            json!({"action": "decline"})
        );
        let cancel: ElicitResult =
            round_trip(&json!({"action": "cancel", "_meta": {"why": "closed"}}));
        assert_eq!(cancel.action, ElicitAction::Cancel);
    }

    /// The schema of conformance scenario `elicitation-sep1034-client-defaults`.
    fn schema_with_defaults() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }
        })
    }

    #[test]
    fn defaults_fill_only_missing_fields() {
        let mut content = object(json!({"name": "Ada", "verified": false}));
        apply_schema_defaults(&schema_with_defaults(), &mut content);
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "verified": false, "age": 30, "score": 95.5, "status": "active"})
        );
    }

    #[test]
    fn defaults_apply_to_accept_results_only() {
        let schema = schema_with_defaults();
        let accepted = ElicitResult::accept(Map::new()).with_defaults_from(&schema);
        let content = accepted.content.expect("content");
        assert_eq!(content.get("name"), Some(&json!("John Doe")));
        assert_eq!(content.get("verified"), Some(&json!(true)));
        assert!(!content.contains_key("nickname"));
        assert_eq!(
            ElicitResult::decline().with_defaults_from(&schema),
            ElicitResult::decline()
        );
        let bare = ElicitResult::accept(Map::new());
        let bare = ElicitResult {
            content: None,
            ..bare
        }
        .with_defaults_from(&json!({"type": "object"}));
        assert_eq!(bare.content, None);
        let mut untouched = Map::new();
        apply_schema_defaults(&json!({"type": "object"}), &mut untouched);
        assert!(untouched.is_empty());
    }
}
