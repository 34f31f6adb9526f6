//! OpenAI Responses (`POST {base}/responses`), with hosted MCP servers: MCP servers OpenAI
//! calls itself, sent as `{"type": "mcp", ...}` tools with their approval policy.

use serde_json::{json, Map, Value};

use super::http::{endpoint_builders, join, Endpoint};
use super::openai_chat::tool_set;
use super::stream::ResponsesStream;
use super::types::{
    ApprovalRequest, AssistantMessage, Message, Model, ModelError, ModelRequest, ModelResponse,
    Part, RawMessage, ToolCall, Usage,
};
use crate::config::HostedMcpServer;

const FORMAT: &str = "openai-responses";

/// A model behind OpenAI's Responses API, optionally with hosted MCP servers.
///
/// A hosted server with `require_approval: always` makes the model ask before each of its
/// calls; the [`Agent`](super::Agent)'s approval hook answers (no hook: declined).
///
/// ```
/// use mcp_blocking::agent::OpenAiResponses;
/// use mcp_blocking::config::HostedMcpServer;
/// let docs = HostedMcpServer::new("docs", "https://example.com/mcp");
/// let model = OpenAiResponses::new("gpt-4.1").hosted([docs]).api_key("sk-secret");
/// assert!(!format!("{model:?}").contains("secret"));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    endpoint: Endpoint,
    model: String,
    hosted: Vec<HostedMcpServer>,
}

endpoint_builders!(OpenAiResponses);

impl OpenAiResponses {
    /// The model `model` at OpenAI's base URL, with no key and no hosted server.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiResponses {
            endpoint: Endpoint::new(join(super::OpenAiChat::DEFAULT_BASE_URL, "responses")),
            model: model.into(),
            hosted: Vec::new(),
        }
    }

    /// Sets the base URL (the part before `/responses`).
    #[must_use]
    pub fn base_url(mut self, url: &str) -> Self {
        self.endpoint.url = join(url, "responses");
        self
    }

    /// Adds hosted MCP servers (validated [`HostedMcpServer`] entries, with their
    /// `require_approval` policy), sent after the Hub's tools.
    #[must_use]
    pub fn hosted(mut self, servers: impl IntoIterator<Item = HostedMcpServer>) -> Self {
        self.hosted.extend(servers);
        self
    }

    #[cfg(test)]
    pub(crate) fn body(&self, req: &ModelRequest) -> Value {
        self.body_with(req, &self.hosted)
    }

    /// The request body carrying `hosted` (a subset of the configured hosted servers) and
    /// `req.system` as its instructions.
    pub(crate) fn body_with(&self, req: &ModelRequest, hosted: &[HostedMcpServer]) -> Value {
        let mut body = Map::new();
        body.insert(
            "model".into(),
            json!(req.settings.model.as_deref().unwrap_or(&self.model)),
        );
        if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("instructions".into(), json!(system));
        }
        body.insert("input".into(), Value::Array(wire_items(&req.messages)));
        if !req.tools.is_empty() || !hosted.is_empty() {
            body.insert("tools".into(), tool_set(req).to_openai_responses(hosted));
        }
        if let Some(t) = req.settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(m) = req.settings.max_tokens {
            body.insert("max_output_tokens".into(), json!(m));
        }
        Value::Object(body)
    }
}

fn input_parts(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"type": "input_text", "text": t}),
            Part::Image { mime_type, data } => json!({"type": "input_image",
                "image_url": format!("data:{mime_type};base64,{data}")}),
        })
        .collect()
}

fn wire_items(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::User(parts) => {
                out.push(json!({"role": "user", "content": input_parts(parts)}))
            }
            Message::Assistant(a) => match a.raw.as_ref().filter(|r| r.format == FORMAT) {
                Some(RawMessage {
                    value: Value::Array(items),
                    ..
                }) => out.extend(items.iter().cloned()),
                _ => {
                    if !a.text.is_empty() {
                        out.push(json!({"role": "assistant", "content": a.text}));
                    }
                    for c in &a.tool_calls {
                        out.push(json!({"type": "function_call", "call_id": c.id,
                            "name": c.name, "arguments": c.arguments}));
                    }
                }
            },
            Message::ToolResult(r) => {
                let output = if r.content.iter().all(|p| matches!(p, Part::Text(_))) {
                    json!(r.text())
                } else {
                    Value::Array(input_parts(&r.content))
                };
                out.push(json!({"type": "function_call_output", "call_id": r.call_id,
                    "output": output}));
            }
            Message::Approval {
                request_id,
                approve,
            } => out.push(json!({"type": "mcp_approval_response",
                "approval_request_id": request_id, "approve": approve})),
        }
    }
    out
}

pub(crate) fn parse(endpoint: &str, body: Value) -> Result<ModelResponse, ModelError> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::BadResponse {
            endpoint: endpoint.to_owned(),
            detail: "no `output` array".into(),
        })?;
    let mut message = AssistantMessage::default();
    for item in output {
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text") {
                        message
                            .text
                            .push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
            }
            Some("function_call") => message.tool_calls.push(ToolCall::new(
                field("call_id"),
                field("name"),
                field("arguments"),
            )),
            Some("mcp_approval_request") => message.approval_requests.push(ApprovalRequest {
                id: field("id"),
                server_label: field("server_label"),
                name: field("name"),
                arguments: field("arguments"),
            }),
            _ => {}
        }
    }
    message.raw = Some(RawMessage {
        format: FORMAT,
        value: Value::Array(output.clone()),
    });
    let usage = body.get("usage").map_or_else(Usage::default, |u| {
        Usage::new(
            u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
        )
    });
    Ok(ModelResponse {
        message,
        usage,
        stop_reason: body
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned),
        degraded_mcp_servers: Vec::new(),
    })
}

impl OpenAiResponses {
    /// One request (its retries on 429 and 5xx included) carrying `hosted`; streamed when
    /// the request has a [`DeltaSink`](super::DeltaSink) (the answer is then the one
    /// `response.completed` carries).
    pub(crate) fn send(
        &self,
        request: &ModelRequest,
        hosted: &[HostedMcpServer],
    ) -> Result<ModelResponse, ModelError> {
        let auth = self.endpoint.bearer();
        let mut body = self.body_with(request, hosted);
        if let Some(sink) = &request.on_delta {
            body["stream"] = json!(true);
            let mut reader = ResponsesStream::new(self.endpoint.shown(), sink.clone());
            return self
                .endpoint
                .post_stream(&auth, &body, request.cancel.as_ref(), &mut reader);
        }
        let answer = self.endpoint.post(&auth, &body, request.cancel.as_ref())?;
        parse(&self.endpoint.shown(), answer)
    }
}

impl Model for OpenAiResponses {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.send(request, &self.hosted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RequireApproval;

    #[test]
    fn hosted_entries_follow_the_tools_with_their_approval_policy() {
        let mut docs = HostedMcpServer::new("docs", "https://example.com/mcp");
        docs.require_approval = Some(RequireApproval::Always);
        let model = OpenAiResponses::new("m").hosted([docs]);
        let body = model.body(&ModelRequest::new(vec![Message::user("hi")]));
        assert_eq!(body["tools"][0]["server_label"], "docs");
        assert_eq!(body["tools"][0]["require_approval"], "always");
        assert_eq!(body["input"][0]["content"][0]["text"], "hi");
    }

    #[test]
    fn output_items_are_read_and_kept_for_the_next_request() {
        let body = json!({"status":"completed","output":[
            {"type":"mcp_approval_request","id":"apr_1","server_label":"docs","name":"search","arguments":"{}"},
            {"type":"function_call","call_id":"c1","name":"echo","arguments":"{\"text\":\"x\"}"},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],
            "usage":{"input_tokens":1,"output_tokens":2}});
        let r = parse("e", body).expect("parses");
        assert_eq!(r.message.text, "hi");
        assert_eq!(r.message.approval_requests[0].server_label, "docs");
        let items = wire_items(&[
            Message::Assistant(r.message.clone()),
            Message::Approval {
                request_id: "apr_1".into(),
                approve: false,
            },
        ]);
        assert_eq!(items.len(), 4);
        assert_eq!(items[3]["type"], "mcp_approval_response");
    }
}
