//! Anthropic Messages (`POST {base}/v1/messages`).

use serde_json::{json, Map, Value};

use super::http::{endpoint_builders, join, Endpoint};
use super::openai_chat::tool_set;
use super::stream::AnthropicStream;
use super::types::{
    AssistantMessage, Message, Model, ModelError, ModelRequest, ModelResponse, Part, RawMessage,
    ToolCall, Usage,
};

const FORMAT: &str = "anthropic";

/// A model behind Anthropic's Messages API.
///
/// ```
/// use mcp_blocking::agent::AnthropicMessages;
/// let claude = AnthropicMessages::new("claude-sonnet-4-5").api_key("sk-ant-secret");
/// assert!(!format!("{claude:?}").contains("secret"));
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    endpoint: Endpoint,
    model: String,
    max_tokens: u64,
}

endpoint_builders!(AnthropicMessages);

impl AnthropicMessages {
    /// Anthropic's base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";

    /// The API version header sent.
    pub const API_VERSION: &'static str = "2023-06-01";

    /// The model `model` at [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL), with no key, and a
    /// `max_tokens` of 4096 (the API requires one).
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicMessages {
            endpoint: Endpoint::new(join(Self::DEFAULT_BASE_URL, "v1/messages")),
            model: model.into(),
            max_tokens: 4096,
        }
    }

    /// Sets the base URL (the part before `/v1/messages`).
    #[must_use]
    pub fn base_url(mut self, url: &str) -> Self {
        self.endpoint.url = join(url, "v1/messages");
        self
    }

    /// Sets the default `max_tokens` (a request's settings override it).
    #[must_use]
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = n;
        self
    }

    pub(crate) fn body(&self, req: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert(
            "model".into(),
            json!(req.settings.model.as_deref().unwrap_or(&self.model)),
        );
        body.insert(
            "max_tokens".into(),
            json!(req.settings.max_tokens.unwrap_or(self.max_tokens)),
        );
        if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("system".into(), json!(system));
        }
        body.insert(
            "messages".into(),
            Value::Array(wire_messages(&req.messages)),
        );
        if !req.tools.is_empty() {
            body.insert("tools".into(), tool_set(req).to_anthropic());
        }
        if let Some(t) = req.settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        Value::Object(body)
    }
}

fn blocks(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"type": "text", "text": t}),
            Part::Image { mime_type, data } => json!({"type": "image",
                "source": {"type": "base64", "media_type": mime_type, "data": data}}),
        })
        .collect()
}

/// The conversation as alternating user and assistant messages: tool results go in the user
/// message that follows the assistant's `tool_use` blocks, and consecutive messages of one role
/// are merged.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, mut content: Vec<Value>| match out.last_mut() {
        Some((r, c)) if *r == role => c.append(&mut content),
        _ => out.push((role, content)),
    };
    for m in messages {
        match m {
            Message::User(parts) => push("user", blocks(parts)),
            Message::Assistant(a) => push("assistant", assistant_blocks(a)),
            Message::ToolResult(r) => push(
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": r.call_id,
                    "content": blocks(&r.content), "is_error": r.is_error})],
            ),
            Message::Approval { .. } => {}
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn assistant_blocks(a: &AssistantMessage) -> Vec<Value> {
    if let Some(Value::Array(raw)) = a
        .raw
        .as_ref()
        .filter(|r| r.format == FORMAT)
        .map(|r| &r.value)
    {
        return raw.clone();
    }
    let mut out = Vec::new();
    if !a.text.is_empty() {
        out.push(json!({"type": "text", "text": a.text}));
    }
    for c in &a.tool_calls {
        let input = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        out.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    if out.is_empty() {
        out.push(json!({"type": "text", "text": ""}));
    }
    out
}

pub(crate) fn parse(endpoint: &str, body: Value) -> Result<ModelResponse, ModelError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::BadResponse {
            endpoint: endpoint.to_owned(),
            detail: "no `content` array".into(),
        })?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let field = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall::new(field("id"), field("name"), input.to_string()));
            }
            _ => {}
        }
    }
    let usage = body.get("usage").map_or_else(Usage::default, |u| {
        Usage::new(
            u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
        )
    });
    let mut message = AssistantMessage::with_tool_calls(text, calls);
    message.raw = Some(RawMessage {
        format: FORMAT,
        value: Value::Array(content.clone()),
    });
    Ok(ModelResponse {
        message,
        usage,
        stop_reason: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        degraded_mcp_servers: Vec::new(),
    })
}

impl Model for AnthropicMessages {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut auth = vec![("anthropic-version", Self::API_VERSION.to_owned())];
        if let Some(k) = &self.endpoint.key {
            auth.push(("x-api-key", k.expose().to_owned()));
        }
        let mut body = self.body(request);
        if let Some(sink) = &request.on_delta {
            body["stream"] = json!(true);
            let mut reader = AnthropicStream::new(self.endpoint.shown(), sink.clone());
            return self
                .endpoint
                .post_stream(&auth, &body, request.cancel.as_ref(), &mut reader);
        }
        let answer = self.endpoint.post(&auth, &body, request.cancel.as_ref())?;
        parse(&self.endpoint.shown(), answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ToolResultMessage;

    #[test]
    fn tool_results_and_a_following_user_message_share_one_user_turn() {
        let msgs = vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "let me see",
                vec![ToolCall::new("t1", "echo", r#"{"text":"a"}"#)],
            )),
            Message::ToolResult(ToolResultMessage {
                call_id: "t1".into(),
                name: "echo".into(),
                content: vec![Part::text("a")],
                is_error: true,
            }),
            Message::user("and?"),
        ];
        let wire = wire_messages(&msgs);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"][1]["input"], json!({"text": "a"}));
        assert_eq!(wire[2]["content"][0]["type"], "tool_result");
        assert_eq!(wire[2]["content"][0]["is_error"], true);
        assert_eq!(wire[2]["content"][1]["text"], "and?");
    }

    #[test]
    fn answers_are_read() {
        let body = json!({"content":[{"type":"text","text":"ok "},
            {"type":"tool_use","id":"toolu_1","name":"echo","input":{"text":"x"}}],
            "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}});
        let r = parse("e", body).expect("parses");
        assert_eq!(r.message.text, "ok ");
        assert_eq!(
            r.message.tool_calls,
            [ToolCall::new("toolu_1", "echo", r#"{"text":"x"}"#)]
        );
        assert_eq!(
            (r.usage.total(), r.stop_reason.as_deref()),
            (11, Some("tool_use"))
        );
    }
}
