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
use crate::config::{HostedMcpServer, HostedReport};
use crate::hub::Degradation;

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
    degradation: Degradation,
}

endpoint_builders!(OpenAiResponses);

impl OpenAiResponses {
    /// The model `model` at OpenAI's base URL, with no key and no hosted server.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiResponses {
            endpoint: Endpoint::new(join(super::OpenAiChat::DEFAULT_BASE_URL, "responses")),
            model: model.into(),
            hosted: Vec::new(),
            degradation: Degradation::default(),
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

    /// Adds the valid servers of a hosted list read from a file
    /// ([`HostedMcpServer::load_list`]) and, when the file has an `mcp` options block
    /// (`gracefulDegradation`, `extraRetries`, `baseDelayMs`, `maxDelayMs`), takes it as the
    /// [`degradation`](Self::degradation) policy.
    ///
    /// ```
    /// use mcp_blocking::agent::OpenAiResponses;
    /// use mcp_blocking::config::HostedMcpServer;
    /// let list = HostedMcpServer::parse_list(&serde_json::json!({
    ///     "mcpServers": [{"type": "mcp", "server_label": "context7",
    ///                     "server_url": "https://mcp.context7.com/mcp"}],
    ///     "mcp": {"gracefulDegradation": true, "extraRetries": 2, "baseDelayMs": 250}
    /// }))?;
    /// let model = OpenAiResponses::new("gpt-4.1").hosted_list(&list);
    /// assert_eq!(model.hosted_servers()[0].server_label, "context7");
    /// assert_eq!(model.degradation_policy().extra_retries, 2);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    #[must_use]
    pub fn hosted_list(mut self, list: &HostedReport) -> Self {
        self.hosted.extend(list.servers.iter().cloned());
        if let Some(d) = &list.degradation {
            self.degradation = d.clone();
        }
        self
    }

    /// The hosted servers every request carries (@robojs/ai's `AI.getMCPServers()`).
    pub fn hosted_servers(&self) -> &[HostedMcpServer] {
        &self.hosted
    }

    /// How a request degrades when its hosted servers make it fail (default
    /// [`Degradation::default`]: one extra retry after 500 ms, then the request is sent without
    /// the failing servers). As @robojs/ai does it:
    ///
    /// 1. a request that fails because of hosted servers (an HTTP 424, or an error naming a
    ///    server's label or host, or mentioning MCP) is sent again up to
    ///    [`extra_retries`](Degradation::extra_retries) times, after
    ///    [`base_delay`](Degradation::base_delay) doubled each time, at most
    ///    [`max_delay`](Degradation::max_delay);
    /// 2. if it still fails and [`graceful`](Degradation::graceful) is on, the servers the error
    ///    names (all of them when it names none) are removed from the request, which is sent
    ///    again without them;
    /// 3. a status note appended to that request's system prompt tells the model which
    ///    external tools were unavailable;
    /// 4. their labels are reported in
    ///    [`ModelResponse::degraded_mcp_servers`](super::ModelResponse::degraded_mcp_servers),
    ///    and by the [`Agent`](super::Agent) in
    ///    [`RunOutput::degraded_mcp_servers`](super::RunOutput::degraded_mcp_servers) and
    ///    [`AgentEvent::HostedServersDegraded`](super::AgentEvent::HostedServersDegraded).
    ///
    /// Other failures (a bad key, the model's own rate limit, which the HTTP retries of
    /// [`HttpOptions`](super::HttpOptions) already cover) are returned as they are. The removal
    /// and the note hold for that request only: the next carries every hosted server again.
    /// [`retry_tools`](Degradation::retry_tools) does not apply here. A delay longer than
    /// [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT) is cut to it, and the
    /// [`Agent`](super::Agent)'s cancel handle ends any wait at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_blocking::agent::OpenAiResponses;
    /// use mcp_blocking::hub::Degradation;
    /// let model = OpenAiResponses::new("gpt-4.1").degradation(
    ///     Degradation::default().extra_retries(2).max_delay(Duration::from_secs(1)),
    /// );
    /// assert!(model.degradation_policy().graceful);
    /// ```
    #[must_use]
    pub fn degradation(mut self, degradation: Degradation) -> Self {
        self.degradation = degradation;
        self
    }

    /// The [`degradation`](Self::degradation) policy.
    pub fn degradation_policy(&self) -> &Degradation {
        &self.degradation
    }

    /// The endpoint as errors show it.
    pub(crate) fn endpoint_shown(&self) -> String {
        self.endpoint.shown()
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
        super::hosted::complete(self, request)
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
