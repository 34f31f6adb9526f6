//! The provider-neutral conversation, the [`Model`] trait and its errors.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::cancel::CancelHandle;
use crate::hub::HubTool;

/// A piece of message content.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text(String),
    /// An image, base64-encoded.
    Image {
        /// The MIME type, such as `image/png`.
        mime_type: String,
        /// The base64 data.
        data: String,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text(text.into())
    }
}

/// The text parts of `parts`, joined with `"\n"`.
pub(crate) fn joined_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call id (`tool_call_id`, `tool_use_id` or `call_id`); every call gets exactly one
    /// result with this id.
    pub id: String,
    /// The tool's offered name.
    pub name: String,
    /// The arguments as the model wrote them (a JSON text, not checked yet).
    pub arguments: String,
}

impl ToolCall {
    /// A call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A hosted MCP server's request for approval of one of its calls (OpenAI Responses
/// `mcp_approval_request`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The request id to answer.
    pub id: String,
    /// The hosted server's label.
    pub server_label: String,
    /// The tool's name on that server.
    pub name: String,
    /// The arguments, as a JSON text.
    pub arguments: String,
}

/// A model's message as its own API wrote it, re-sent verbatim to the same kind of model (so
/// provider-specific parts, such as reasoning items, survive).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RawMessage {
    /// Which wire format `value` is in (`"openai-chat"`, `"anthropic"`, `"openai-responses"`).
    pub format: &'static str,
    /// The message (or output items) as received.
    pub value: Value,
}

/// What the model said in one turn.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct AssistantMessage {
    /// The text (empty when there is none).
    pub text: String,
    /// The tool calls, in the model's order.
    pub tool_calls: Vec<ToolCall>,
    /// Approval requests of hosted MCP servers.
    pub approval_requests: Vec<ApprovalRequest>,
    /// The message as received, when a built-in model produced it.
    pub raw: Option<RawMessage>,
}

impl AssistantMessage {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        AssistantMessage {
            text: text.into(),
            ..Self::default()
        }
    }

    /// An answer with tool calls.
    pub fn with_tool_calls(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        AssistantMessage {
            text: text.into(),
            tool_calls,
            ..Self::default()
        }
    }
}

/// The result of one tool call, as sent back to the model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's offered name.
    pub name: String,
    /// The content: text and images.
    pub content: Vec<Part>,
    /// Whether the call failed (the content says how).
    pub is_error: bool,
}

impl ToolResultMessage {
    /// The text parts, joined with `"\n"`.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// The user's message.
    User(Vec<Part>),
    /// The model's message.
    Assistant(AssistantMessage),
    /// A tool call's result.
    ToolResult(ToolResultMessage),
    /// The answer to a hosted server's [`ApprovalRequest`].
    Approval {
        /// The [`ApprovalRequest::id`].
        request_id: String,
        /// Whether the call may go ahead.
        approve: bool,
    },
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Message {
        Message::User(vec![Part::Text(text.into())])
    }
}

/// Request settings; `None` leaves a setting to the model's own default.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ModelSettings {
    /// Overrides the model name the model was built with (e.g. from a template's `model:`).
    pub model: Option<String>,
    /// The sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: Option<u64>,
}

/// A piece of a model's answer as it streams in (see [`ModelRequest::on_delta`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelDelta {
    /// More of the answer's text.
    Text(String),
    /// More of one tool call: its id and name when they first arrive, and the next piece of its
    /// arguments' JSON text.
    ToolCall {
        /// The call's position in the answer, from 0.
        index: usize,
        /// The call id, in the first piece of this call.
        id: Option<String>,
        /// The tool's offered name, in the first piece of this call.
        name: Option<String>,
        /// The next piece of the arguments (may be empty).
        arguments: String,
    },
}

/// Where a streaming model sends each [`ModelDelta`] as it arrives, on the thread that called
/// [`Model::complete`].
#[derive(Clone)]
pub struct DeltaSink(Arc<dyn Fn(&ModelDelta) + Send + Sync>);

impl DeltaSink {
    /// A sink calling `f` for each delta.
    pub fn new(f: impl Fn(&ModelDelta) + Send + Sync + 'static) -> Self {
        DeltaSink(Arc::new(f))
    }

    /// Sends one delta.
    pub fn send(&self, delta: &ModelDelta) {
        (self.0)(delta);
    }
}

impl fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeltaSink")
    }
}

/// One request to a [`Model`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call, under their offered names.
    pub tools: Vec<HubTool>,
    /// Request settings.
    pub settings: ModelSettings,
    /// Cancellation: when it fires, a built-in model stops at once (its request's connection
    /// is closed; a wait between retries ends) and returns [`ModelError::Cancelled`].
    pub cancel: Option<CancelHandle>,
    /// When set, a model that can stream asks for a streamed answer and sends each piece here
    /// as it arrives; the [`ModelResponse`] is the same as without it.
    pub on_delta: Option<DeltaSink>,
}

impl ModelRequest {
    /// A request for these messages, with no tools.
    pub fn new(messages: Vec<Message>) -> Self {
        ModelRequest {
            messages,
            ..Self::default()
        }
    }
}

/// Tokens used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt (input) tokens.
    pub input_tokens: u64,
    /// Generated (output) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Usage of `input` and `output` tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
        }
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ModelResponse {
    /// What the model said.
    pub message: AssistantMessage,
    /// The tokens this request used.
    pub usage: Usage,
    /// Why the model stopped, as its API says (`stop`, `tool_calls`, `end_turn`, ...).
    pub stop_reason: Option<String>,
    /// The labels of the hosted MCP servers left out of this request because the requests
    /// carrying them kept failing (@robojs/ai's `degradedMcpServers`); empty when none was.
    pub degraded_mcp_servers: Vec<String>,
}

impl ModelResponse {
    /// A response carrying `message`, with no usage.
    pub fn new(message: AssistantMessage) -> Self {
        ModelResponse {
            message,
            ..Self::default()
        }
    }
}

/// A language model: one request in, one response out, blocking.
///
/// Implement it to plug in any API (or a scripted model in tests):
///
/// ```
/// use mcp_blocking::agent::{AssistantMessage, Model, ModelError, ModelRequest, ModelResponse};
/// struct Parrot;
/// impl Model for Parrot {
///     fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
///         Ok(ModelResponse::new(AssistantMessage::text(format!("{} messages", req.messages.len()))))
///     }
/// }
/// let hub = mcp_blocking::Hub::default();
/// let mut agent = mcp_blocking::agent::Agent::new(&hub, Parrot);
/// assert_eq!(agent.run("hi")?.text, "1 messages");
/// # Ok::<(), mcp_blocking::agent::AgentError>(())
/// ```
pub trait Model: Send + Sync {
    /// Sends one request and returns the model's answer.
    ///
    /// # Errors
    /// A [`ModelError`] when the API cannot be reached, refuses, or answers something unreadable.
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(request)
    }
}

impl<M: Model + ?Sized> Model for std::sync::Arc<M> {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(request)
    }
}

impl<M: Model + ?Sized> Model for &M {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        (**self).complete(request)
    }
}

/// Why a model request failed. Every variant names the endpoint (its URL without password or
/// query); no API key appears in any message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The API answered with an error status (after the retries for 429 and 5xx).
    #[error("model `{endpoint}`: HTTP {status}: {message}")]
    Status {
        /// The endpoint.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The API's error message (shortened).
        message: String,
    },
    /// The endpoint could not be reached or the exchange broke.
    #[error("model `{endpoint}`: {detail}")]
    Transport {
        /// The endpoint.
        endpoint: String,
        /// What went wrong.
        detail: String,
    },
    /// No answer within the request timeout.
    #[error("model `{endpoint}`: no answer within {:.1} s", after.as_secs_f64())]
    Timeout {
        /// The endpoint.
        endpoint: String,
        /// The timeout.
        after: Duration,
    },
    /// The answer is larger than the cap ([`HttpOptions::max_response_bytes`](super::HttpOptions)).
    #[error("model `{endpoint}`: the answer is larger than {limit} bytes")]
    TooLarge {
        /// The endpoint.
        endpoint: String,
        /// The cap.
        limit: usize,
    },
    /// The answer is not what the API's format says.
    #[error("model `{endpoint}`: unexpected answer: {detail}")]
    BadResponse {
        /// The endpoint.
        endpoint: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The model is not usable as configured (a missing API key, a bad URL).
    #[error("model: {0}")]
    Config(String),
    /// The request was cancelled.
    #[error("model `{endpoint}`: cancelled")]
    Cancelled {
        /// The endpoint.
        endpoint: String,
    },
}

/// A short, single-line excerpt of `text` for error messages.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    if one_line.len() <= max {
        return one_line.to_owned();
    }
    let cut = crate::config::char_floor(one_line, max);
    format!("{}...", &one_line[..cut])
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Text(t) => f.write_str(t),
            Part::Image { mime_type, data } => {
                write!(f, "[{mime_type} image, {} bytes of base64]", data.len())
            }
        }
    }
}
