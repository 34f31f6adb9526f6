//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`): OpenAI, Ollama,
//! llama.cpp's `llama-server --jinja`, vLLM, LM Studio, OpenRouter.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::http::{endpoint_builders, join, Endpoint};
use super::stream::ChatStream;
use super::types::{
    joined_text, AssistantMessage, Message, Model, ModelError, ModelRequest, ModelResponse, Part,
    RawMessage, ToolCall, Usage,
};
use crate::hub::ToolSet;

const FORMAT: &str = "openai-chat";

/// A model behind an OpenAI-compatible Chat Completions endpoint (the default model).
///
/// ```
/// use mcp_blocking::agent::OpenAiChat;
/// // Ollama: the key is required by the API shape but ignored.
/// let local = OpenAiChat::new("llama3.2")
///     .base_url("http://localhost:11434/v1")
///     .api_key("ollama");
/// assert!(!format!("{local:?}").contains("ollama\""));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    endpoint: Endpoint,
    model: String,
}

endpoint_builders!(OpenAiChat);

impl OpenAiChat {
    /// OpenAI's base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// The model `model` at [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL), with no key.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiChat {
            endpoint: Endpoint::new(join(Self::DEFAULT_BASE_URL, "chat/completions")),
            model: model.into(),
        }
    }

    /// Sets the base URL (the part before `/chat/completions`, such as
    /// `http://localhost:11434/v1`).
    #[must_use]
    pub fn base_url(mut self, url: &str) -> Self {
        self.endpoint.url = join(url, "chat/completions");
        self
    }

    /// The request body for `req`.
    pub(crate) fn body(&self, req: &ModelRequest) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(wire_messages(&req.messages));
        let mut body = Map::new();
        body.insert(
            "model".into(),
            json!(req.settings.model.as_deref().unwrap_or(&self.model)),
        );
        body.insert("messages".into(), Value::Array(messages));
        if !req.tools.is_empty() {
            let set = tool_set(req);
            body.insert("tools".into(), set.to_openai_chat());
        }
        if let Some(t) = req.settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(m) = req.settings.max_tokens {
            body.insert("max_tokens".into(), json!(m));
        }
        Value::Object(body)
    }
}

pub(crate) fn tool_set(req: &ModelRequest) -> ToolSet {
    ToolSet {
        tools: req.tools.clone(),
        ..ToolSet::default()
    }
}

fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// The conversation as Chat Completions messages. Tool messages carry text only, so the images
/// of a turn's tool results follow all of that turn's tool messages in one user message.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending_images: Vec<Value> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::User(parts) => {
                out.push(json!({"role": "user", "content": user_content(parts)}))
            }
            Message::Assistant(a) => out.push(assistant(a)),
            Message::ToolResult(r) => {
                let mut text = r.text();
                for p in &r.content {
                    if let Part::Image { mime_type, data } = p {
                        text.push_str(&format!("\n[{mime_type} image: shown in the next message]"));
                        pending_images.push(json!({"type": "image_url",
                            "image_url": {"url": data_url(mime_type, data)}}));
                    }
                }
                out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": text}));
            }
            // Chat Completions has no hosted MCP servers.
            Message::Approval { .. } => {}
        }
        let next_is_tool = matches!(messages.get(i + 1), Some(Message::ToolResult(_)));
        if !next_is_tool && !pending_images.is_empty() {
            let mut content = vec![json!({"type": "text",
                "text": "The images returned by the tool calls above:"})];
            content.append(&mut pending_images);
            out.push(json!({"role": "user", "content": content}));
        }
    }
    out
}

fn user_content(parts: &[Part]) -> Value {
    if parts.iter().all(|p| matches!(p, Part::Text(_))) {
        return json!(joined_text(parts));
    }
    Value::Array(
        parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => json!({"type": "text", "text": t}),
                Part::Image { mime_type, data } => {
                    json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}})
                }
            })
            .collect(),
    )
}

fn assistant(a: &AssistantMessage) -> Value {
    if let Some(raw) = a.raw.as_ref().filter(|r| r.format == FORMAT) {
        return raw.value.clone();
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert(
        "content".into(),
        if a.text.is_empty() && !a.tool_calls.is_empty() {
            Value::Null
        } else {
            json!(a.text)
        },
    );
    if !a.tool_calls.is_empty() {
        let calls: Vec<Value> = a
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// Reads a Chat Completions answer. Missing or repeated call ids are made up (`call_N`) and object
/// arguments (some local servers) turned into JSON text, in the kept message too.
pub(crate) fn parse(endpoint: &str, body: Value) -> Result<ModelResponse, ModelError> {
    let bad = |detail: &str| ModelError::BadResponse {
        endpoint: endpoint.to_owned(),
        detail: detail.to_owned(),
    };
    let choice = body
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| bad("no `choices[0]`"))?;
    let mut message = choice
        .get("message")
        .filter(|m| m.is_object())
        .cloned()
        .ok_or_else(|| bad("no `choices[0].message`"))?;
    let stop_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let mut tool_calls = Vec::new();
    if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
        // The ids seen so far: a model may send any number of calls, so a repeat is found in
        // constant time, not by a scan of the calls before it.
        let mut ids: HashSet<String> = HashSet::with_capacity(calls.len());
        for (i, call) in calls.iter_mut().enumerate() {
            let Some(obj) = call.as_object_mut() else {
                return Err(bad("a tool call is not an object"));
            };
            let id = match obj.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() && !ids.contains(id) => id.to_owned(),
                // Missing, or repeated within the message (each id gets exactly one result):
                // a fresh id, unlike any other of the message.
                _ => {
                    let mut id = format!("call_{i}");
                    while ids.contains(&id) {
                        id.push('_');
                    }
                    obj.insert("id".into(), json!(id));
                    id
                }
            };
            ids.insert(id.clone());
            obj.entry("type").or_insert_with(|| json!("function"));
            let f = obj
                .get_mut("function")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| bad("a tool call has no `function`"))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a tool call has no `function.name`"))?
                .to_owned();
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            f.insert("arguments".into(), json!(arguments));
            tool_calls.push(ToolCall::new(id, name, arguments));
        }
    } else if let Some(m) = message.as_object_mut() {
        // `tool_calls: null` or `[]` is sent back as nothing.
        m.remove("tool_calls");
    }
    let usage = body.get("usage").map_or_else(Usage::default, |u| {
        Usage::new(
            u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            u.get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        )
    });
    let mut msg = AssistantMessage::with_tool_calls(text, tool_calls);
    msg.raw = Some(RawMessage {
        format: FORMAT,
        value: message,
    });
    Ok(ModelResponse {
        message: msg,
        usage,
        stop_reason,
        degraded_mcp_servers: Vec::new(),
    })
}

impl Model for OpenAiChat {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let auth = self.endpoint.bearer();
        let mut body = self.body(request);
        if let Some(sink) = &request.on_delta {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
            let mut reader = ChatStream::new(self.endpoint.shown(), sink.clone());
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
    fn images_of_tool_results_follow_the_tool_messages() {
        let msgs = vec![
            Message::user("look"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("c1", "shot", "{}"),
                    ToolCall::new("c2", "echo", "{}"),
                ],
            )),
            Message::ToolResult(ToolResultMessage {
                call_id: "c1".into(),
                name: "shot".into(),
                content: vec![Part::Image {
                    mime_type: "image/png".into(),
                    data: "AAAA".into(),
                }],
                is_error: false,
            }),
            Message::ToolResult(ToolResultMessage {
                call_id: "c2".into(),
                name: "echo".into(),
                content: vec![Part::text("hi")],
                is_error: false,
            }),
        ];
        let wire = wire_messages(&msgs);
        let roles: Vec<&str> = wire
            .iter()
            .map(|m| m["role"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(wire[1]["content"], Value::Null);
        assert_eq!(wire[1]["tool_calls"][0]["function"]["name"], "shot");
        assert_eq!(
            wire[4]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
    }

    #[test]
    fn every_call_id_of_a_large_answer_is_unique_and_found_in_linear_time() {
        // A generated id never takes one the model sent, before or after it.
        let body = json!({"choices":[{"message":{"role":"assistant","tool_calls":[
            {"id":"call_1","function":{"name":"a","arguments":"{}"}},
            {"function":{"name":"b","arguments":"{}"}},
            {"id":"call_1","function":{"name":"c","arguments":"{}"}},
            {"id":"call_2_","function":{"name":"d","arguments":"{}"}}]}}]});
        let r = parse("e", body).expect("parses");
        let ids: Vec<&str> = r.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_1", "call_1_", "call_2", "call_2_"]);
        // 120,000 calls, half of them repeating one id: each is kept once, in a bounded time
        // (a scan of the earlier calls for each took minutes).
        let calls: Vec<Value> = (0..120_000)
            .map(|i| {
                let id = if i % 2 == 0 {
                    "same".to_owned()
                } else {
                    format!("id-{i}")
                };
                json!({"id": id, "function": {"name": "echo", "arguments": "{}"}})
            })
            .collect();
        let body = json!({"choices":[{"message":{"role":"assistant","tool_calls": calls}}]});
        let started = std::time::Instant::now();
        let r = parse("e", body).expect("parses");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let ids: HashSet<&str> = r.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), 120_000);
    }

    #[test]
    fn answers_without_ids_or_with_object_arguments_are_normalised() {
        let body = json!({"choices":[{"finish_reason":"tool_calls","message":{"role":"assistant",
            "content":null,"tool_calls":[{"function":{"name":"echo","arguments":{"text":"x"}}}]}}],
            "usage":{"prompt_tokens":3,"completion_tokens":4}});
        let r = parse("e", body).expect("parses");
        assert_eq!(
            r.message.tool_calls,
            [ToolCall::new("call_0", "echo", r#"{"text":"x"}"#)]
        );
        assert_eq!(r.usage.total(), 7);
        let raw = &r.message.raw.as_ref().expect("raw").value;
        assert_eq!(raw["tool_calls"][0]["id"], "call_0");
        assert_eq!(
            raw["tool_calls"][0]["function"]["arguments"],
            r#"{"text":"x"}"#
        );
        assert!(parse("e", json!({"choices": []})).is_err());
        let twice = json!({"choices":[{"message":{"role":"assistant","tool_calls":[
            {"id":"x","function":{"name":"a","arguments":"{}"}},
            {"id":"x","function":{"name":"b","arguments":"{}"}}]}}]});
        let r = parse("e", twice).expect("parses");
        let ids: Vec<&str> = r.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["x", "call_1"]);
        assert_eq!(
            r.message.raw.expect("raw").value["tool_calls"][1]["id"],
            "call_1"
        );
    }
}
