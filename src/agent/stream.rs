//! Streamed answers: a model's `text/event-stream` answer read event by event, each piece sent
//! to the request's [`DeltaSink`] as it arrives, and the whole answer assembled into the same
//! [`ModelResponse`] the non-streamed path gives (each API's assembler builds the API's own
//! non-streamed document and hands it to that API's parser).
//!
//! ```text
//!   body ── Capped (max_response_bytes in all) ── SseReader (each event ≤ the same cap)
//!        ── Assembler::event(name, data) ── deltas ──> DeltaSink
//!                                       └── final event ──> ModelResponse
//!   end of stream ── Assembler::end() ── an answer, or "ended before its final event"
//! ```
//!
//! | API | deltas | final event |
//! |---|---|---|
//! | Chat Completions | `choices[0].delta.content`, `delta.tool_calls[i]` (by `index`) | `data: [DONE]` (or the end after a `finish_reason`) |
//! | Anthropic Messages | `content_block_delta`: `text_delta`, `input_json_delta` | `message_stop` |
//! | Responses | `response.output_text.delta`, `response.function_call_arguments.delta` | `response.completed` (or `.incomplete`) |
//!
//! A stream holds at most [`MAX_STREAMED_ITEMS`] tool calls (content blocks, output items): an
//! index is a key, never a position to allocate up to.

use std::collections::HashMap;
use std::io::{self, BufReader, Read};

use serde_json::{json, Map, Value};

use super::types::{DeltaSink, ModelDelta, ModelError, ModelResponse};
use crate::transport::sse_parser::{EventTooLarge, SseReader};

/// The most tool calls (Anthropic: content blocks; Responses: output items) one streamed
/// answer may hold.
pub(crate) const MAX_STREAMED_ITEMS: usize = 65_536;

/// The longest quote of a refused stream in its error, in bytes.
const MAX_FAULT_DETAIL: usize = 300;

/// Why an assembler refused a stream.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The stream is not what the API's format says.
    Bad(String),
    /// The API reported an error in the stream (its message, not yet scrubbed).
    Api(String),
}

/// Builds one API's answer from its stream's events.
pub(crate) trait Assembler {
    /// The finished answer.
    type Output;

    /// One event: `name` is its `event:` field, `data` its data. `Some` when it completes the
    /// answer.
    fn event(&mut self, name: Option<&str>, data: &str) -> Result<Option<Self::Output>, Fault>;

    /// The stream ended: the answer when what arrived is a whole one.
    fn end(&mut self) -> Result<Option<Self::Output>, Fault>;
}

/// The error a [`Capped`] reader fails with past its cap.
#[derive(Debug)]
struct OverCap;

impl std::fmt::Display for OverCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer is larger than its cap")
    }
}

impl std::error::Error for OverCap {}

/// A reader that fails once more than `limit` bytes came through it.
struct Capped<R> {
    inner: R,
    read: usize,
    limit: usize,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read = self.read.saturating_add(n);
        if self.read > self.limit {
            return Err(io::Error::other(OverCap));
        }
        Ok(n)
    }
}

fn over_cap(e: &io::Error) -> bool {
    EventTooLarge::find(e).is_some() || e.get_ref().is_some_and(|i| i.is::<OverCap>())
}

/// Reads the event stream `body` (at most `limit` bytes in all and in any one event) through
/// `assembler` until it yields the answer. `io_error` turns a failed read into the error to
/// return (a timeout, a broken connection); `scrub` hides secrets in the API's own messages.
pub(crate) fn read<T>(
    body: impl Read,
    limit: usize,
    endpoint: &str,
    assembler: &mut dyn Assembler<Output = T>,
    io_error: impl Fn(&io::Error) -> ModelError,
    scrub: impl Fn(&str) -> String,
) -> Result<T, ModelError> {
    let capped = Capped {
        inner: body,
        read: 0,
        limit,
    };
    // Small reads: each delta goes on as soon as its event is whole.
    let mut events = SseReader::new(BufReader::with_capacity(8 * 1024, capped), limit);
    // Both kinds quote what the API sent (a value, a message): scrubbed, then cut, so an
    // error stays a line whatever the stream held.
    let fault = |f: Fault| match f {
        Fault::Bad(detail) => ModelError::BadResponse {
            endpoint: endpoint.to_owned(),
            detail: super::types::excerpt(&scrub(&detail), MAX_FAULT_DETAIL),
        },
        Fault::Api(message) => ModelError::Transport {
            endpoint: endpoint.to_owned(),
            detail: format!(
                "the answer's stream reported an error: {}",
                super::types::excerpt(&scrub(&message), MAX_FAULT_DETAIL)
            ),
        },
    };
    loop {
        match events.next_event() {
            Ok(Some(ev)) => {
                if let Some(out) = assembler
                    .event(ev.event.as_deref(), &ev.data)
                    .map_err(fault)?
                {
                    return Ok(out);
                }
            }
            Ok(None) => {
                return assembler
                    .end()
                    .map_err(fault)?
                    .ok_or_else(|| ModelError::Transport {
                        endpoint: endpoint.to_owned(),
                        detail: "the answer's stream ended before its final event".into(),
                    })
            }
            Err(e) if over_cap(&e) => {
                return Err(ModelError::TooLarge {
                    endpoint: endpoint.to_owned(),
                    limit,
                })
            }
            Err(e) => return Err(io_error(&e)),
        }
    }
}

fn json_of(data: &str) -> Result<Value, Fault> {
    serde_json::from_str(data).map_err(|e| Fault::Bad(format!("an event is not JSON: {e}")))
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The error message of an API's error document (`{"error": {"message", "type"}}` or
/// `{"message"}`).
fn api_error(v: &Value) -> String {
    let e = v.get("error").unwrap_or(v);
    let message = str_at(e, "/message")
        .map(str::to_owned)
        .or_else(|| e.as_str().map(str::to_owned))
        .unwrap_or_else(|| e.to_string());
    match str_at(e, "/type").or_else(|| str_at(e, "/code")) {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    }
}

/// A new tool call's position, refused past [`MAX_STREAMED_ITEMS`].
fn next_position(len: usize) -> Result<usize, Fault> {
    if len >= MAX_STREAMED_ITEMS {
        return Err(Fault::Bad(format!(
            "the answer holds more than {MAX_STREAMED_ITEMS} tool calls"
        )));
    }
    Ok(len)
}

/// One tool call of a Chat Completions stream, as assembled.
#[derive(Default)]
struct ChatCall {
    id: String,
    name: String,
    arguments: String,
}

/// Chat Completions (`stream: true`, `stream_options.include_usage`).
pub(crate) struct ChatStream {
    endpoint: String,
    sink: DeltaSink,
    text: String,
    calls: Vec<ChatCall>,
    /// The wire `index` of each call, to its position in `calls`.
    by_index: HashMap<u64, usize>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

impl ChatStream {
    pub(crate) fn new(endpoint: String, sink: DeltaSink) -> Self {
        ChatStream {
            endpoint,
            sink,
            text: String::new(),
            calls: Vec::new(),
            by_index: HashMap::new(),
            finish_reason: None,
            usage: None,
        }
    }

    /// The call a `delta.tool_calls` piece belongs to: by its `index`; without one, a piece
    /// with a new id starts a call and any other continues the last (servers that leave the
    /// index out).
    fn position(&mut self, piece: &Value) -> Result<(usize, bool), Fault> {
        let id = str_at(piece, "/id").filter(|s| !s.is_empty());
        match piece.get("index") {
            Some(i) => {
                let i = i
                    .as_u64()
                    .ok_or_else(|| Fault::Bad(format!("a tool call's index is {i}")))?;
                if let Some(&p) = self.by_index.get(&i) {
                    return Ok((p, false));
                }
                let p = next_position(self.calls.len())?;
                self.by_index.insert(i, p);
                self.calls.push(ChatCall::default());
                Ok((p, true))
            }
            None => {
                let last = self.calls.len().checked_sub(1);
                let continues = last.is_some_and(|l| {
                    id.is_none()
                        || self.calls[l].id.is_empty()
                        || Some(self.calls[l].id.as_str()) == id
                });
                match (continues, last) {
                    (true, Some(l)) => Ok((l, false)),
                    _ => {
                        let p = next_position(self.calls.len())?;
                        self.calls.push(ChatCall::default());
                        Ok((p, true))
                    }
                }
            }
        }
    }

    fn finish(&mut self) -> Result<ModelResponse, Fault> {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let content = if self.text.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            json!(self.text)
        };
        message.insert("content".into(), content);
        if !self.calls.is_empty() {
            let calls: Vec<Value> = std::mem::take(&mut self.calls)
                .into_iter()
                .map(|c| {
                    let mut call = Map::new();
                    if !c.id.is_empty() {
                        call.insert("id".into(), json!(c.id));
                    }
                    call.insert("type".into(), json!("function"));
                    call.insert(
                        "function".into(),
                        json!({"name": c.name, "arguments": c.arguments}),
                    );
                    Value::Object(call)
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut body = json!({"choices": [{"index": 0, "message": message,
            "finish_reason": self.finish_reason}]});
        if let Some(u) = self.usage.take() {
            body["usage"] = u;
        }
        super::openai_chat::parse(&self.endpoint, body).map_err(|e| Fault::Bad(e.to_string()))
    }
}

impl Assembler for ChatStream {
    type Output = ModelResponse;

    fn event(&mut self, _name: Option<&str>, data: &str) -> Result<Option<ModelResponse>, Fault> {
        if data.trim() == "[DONE]" {
            return self.finish().map(Some);
        }
        let v = json_of(data)?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(Fault::Api(api_error(&v)));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(u.clone());
        }
        let Some(choice) = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(None);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(None);
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                self.sink.send(&ModelDelta::Text(text.to_owned()));
            }
        }
        for piece in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (p, new) = self.position(piece)?;
            let call = &mut self.calls[p];
            let id = str_at(piece, "/id").filter(|s| !s.is_empty() && call.id.is_empty());
            if let Some(id) = id {
                call.id = id.to_owned();
            }
            let name =
                str_at(piece, "/function/name").filter(|s| !s.is_empty() && call.name.is_empty());
            if let Some(name) = name {
                call.name = name.to_owned();
            }
            let arguments = match piece.pointer("/function/arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                // Some local servers send the arguments as an object.
                Some(other) => other.to_string(),
            };
            call.arguments.push_str(&arguments);
            if new || id.is_some() || name.is_some() || !arguments.is_empty() {
                self.sink.send(&ModelDelta::ToolCall {
                    index: p,
                    id: id.map(str::to_owned),
                    name: name.map(str::to_owned),
                    arguments,
                });
            }
        }
        Ok(None)
    }

    fn end(&mut self) -> Result<Option<ModelResponse>, Fault> {
        // A server that leaves `[DONE]` out still said it had finished.
        if self.finish_reason.is_some() {
            return self.finish().map(Some);
        }
        Ok(None)
    }
}

/// Anthropic Messages (`stream: true`).
pub(crate) struct AnthropicStream {
    endpoint: String,
    sink: DeltaSink,
    started: Option<Value>,
    /// The content blocks, in order, with the JSON text of a `tool_use` block's input so far.
    blocks: Vec<(Value, String)>,
    /// The wire `index` of each block, to its position in `blocks`.
    by_index: HashMap<u64, usize>,
    /// Each `tool_use` block's position among the tool calls.
    tool_position: HashMap<usize, usize>,
    stop_reason: Option<Value>,
    output_tokens: Option<u64>,
}

impl AnthropicStream {
    pub(crate) fn new(endpoint: String, sink: DeltaSink) -> Self {
        AnthropicStream {
            endpoint,
            sink,
            started: None,
            blocks: Vec::new(),
            by_index: HashMap::new(),
            tool_position: HashMap::new(),
            stop_reason: None,
            output_tokens: None,
        }
    }

    fn block(&self, v: &Value) -> Result<usize, Fault> {
        let i = v.get("index").and_then(Value::as_u64);
        i.and_then(|i| self.by_index.get(&i).copied())
            .ok_or_else(|| Fault::Bad(format!("an event names no started content block ({i:?})")))
    }

    fn finish(&mut self) -> Result<ModelResponse, Fault> {
        let content: Vec<Value> = std::mem::take(&mut self.blocks)
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        let started = self.started.take().unwrap_or_default();
        let input = started
            .pointer("/usage/input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let output = self.output_tokens.unwrap_or_else(|| {
            started
                .pointer("/usage/output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0)
        });
        let stop = self
            .stop_reason
            .take()
            .or_else(|| started.get("stop_reason").cloned())
            .unwrap_or(Value::Null);
        let body = json!({"content": content, "stop_reason": stop,
            "usage": {"input_tokens": input, "output_tokens": output}});
        super::anthropic::parse(&self.endpoint, body).map_err(|e| Fault::Bad(e.to_string()))
    }
}

impl Assembler for AnthropicStream {
    type Output = ModelResponse;

    fn event(&mut self, name: Option<&str>, data: &str) -> Result<Option<ModelResponse>, Fault> {
        let v = json_of(data)?;
        let kind = str_at(&v, "/type").or(name).unwrap_or("");
        match kind {
            "message_start" => self.started = v.get("message").cloned(),
            "content_block_start" => {
                let i = v
                    .get("index")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| Fault::Bad("a content block has no index".into()))?;
                let block = v
                    .get("content_block")
                    .filter(|b| b.is_object())
                    .cloned()
                    .ok_or_else(|| Fault::Bad("a content block start has no block".into()))?;
                let p = next_position(self.blocks.len())?;
                self.by_index.insert(i, p);
                match str_at(&block, "/type") {
                    Some("text") => {
                        let text = str_at(&block, "/text").unwrap_or("");
                        if !text.is_empty() {
                            self.sink.send(&ModelDelta::Text(text.to_owned()));
                        }
                    }
                    Some("tool_use") => {
                        let t = self.tool_position.len();
                        self.tool_position.insert(p, t);
                        self.sink.send(&ModelDelta::ToolCall {
                            index: t,
                            id: str_at(&block, "/id").map(str::to_owned),
                            name: str_at(&block, "/name").map(str::to_owned),
                            arguments: String::new(),
                        });
                    }
                    _ => {}
                }
                self.blocks.push((block, String::new()));
            }
            "content_block_delta" => {
                let p = self.block(&v)?;
                let delta = v.get("delta").cloned().unwrap_or_default();
                let (block, partial) = &mut self.blocks[p];
                // In place: copying the text so far for each delta would make a stream of
                // many small deltas cost the square of its length.
                let append = |block: &mut Value, key: &str, more: &str| match block.get_mut(key) {
                    Some(Value::String(now)) => now.push_str(more),
                    _ => block[key] = json!(more),
                };
                match str_at(&delta, "/type") {
                    Some("text_delta") => {
                        let text = str_at(&delta, "/text").unwrap_or("");
                        append(block, "text", text);
                        self.sink.send(&ModelDelta::Text(text.to_owned()));
                    }
                    Some("input_json_delta") => {
                        let piece = str_at(&delta, "/partial_json").unwrap_or("");
                        partial.push_str(piece);
                        let index = self.tool_position.get(&p).copied().ok_or_else(|| {
                            Fault::Bad("an input_json_delta for a block that is no tool_use".into())
                        })?;
                        self.sink.send(&ModelDelta::ToolCall {
                            index,
                            id: None,
                            name: None,
                            arguments: piece.to_owned(),
                        });
                    }
                    // Extended thinking: kept whole, it is sent back as it came.
                    Some("thinking_delta") => {
                        append(block, "thinking", str_at(&delta, "/thinking").unwrap_or(""));
                    }
                    Some("signature_delta") => {
                        block["signature"] = json!(str_at(&delta, "/signature").unwrap_or(""));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let p = self.block(&v)?;
                let (block, partial) = &mut self.blocks[p];
                if str_at(block, "/type") == Some("tool_use") && !partial.is_empty() {
                    let input: Value = serde_json::from_str(partial).map_err(|e| {
                        Fault::Bad(format!("a tool call's streamed input is not JSON: {e}"))
                    })?;
                    block["input"] = input;
                    partial.clear();
                }
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    self.stop_reason = Some(r.clone());
                }
                if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.output_tokens = Some(n);
                }
            }
            "message_stop" => return self.finish().map(Some),
            "error" => return Err(Fault::Api(api_error(&v))),
            _ => {}
        }
        Ok(None)
    }

    fn end(&mut self) -> Result<Option<ModelResponse>, Fault> {
        Ok(None)
    }
}

/// OpenAI Responses (`stream: true`): the deltas as they come, the answer from
/// `response.completed`, which carries the whole response (its output items are kept to be
/// sent back, as on the non-streamed path).
pub(crate) struct ResponsesStream {
    endpoint: String,
    sink: DeltaSink,
    /// The `output_index` of each function call, to its position among the calls.
    calls: HashMap<u64, usize>,
}

impl ResponsesStream {
    pub(crate) fn new(endpoint: String, sink: DeltaSink) -> Self {
        ResponsesStream {
            endpoint,
            sink,
            calls: HashMap::new(),
        }
    }
}

impl Assembler for ResponsesStream {
    type Output = ModelResponse;

    fn event(&mut self, name: Option<&str>, data: &str) -> Result<Option<ModelResponse>, Fault> {
        let v = json_of(data)?;
        let kind = str_at(&v, "/type").or(name).unwrap_or("");
        match kind {
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or_default();
                if str_at(&item, "/type") == Some("function_call") {
                    let at = v
                        .get("output_index")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| Fault::Bad("an output item has no output_index".into()))?;
                    let p = next_position(self.calls.len())?;
                    self.calls.insert(at, p);
                    self.sink.send(&ModelDelta::ToolCall {
                        index: p,
                        id: str_at(&item, "/call_id").map(str::to_owned),
                        name: str_at(&item, "/name").map(str::to_owned),
                        arguments: str_at(&item, "/arguments").unwrap_or("").to_owned(),
                    });
                }
            }
            "response.output_text.delta" => {
                let text = str_at(&v, "/delta").unwrap_or("");
                if !text.is_empty() {
                    self.sink.send(&ModelDelta::Text(text.to_owned()));
                }
            }
            "response.function_call_arguments.delta" => {
                let at = v.get("output_index").and_then(Value::as_u64);
                let p = at
                    .and_then(|i| self.calls.get(&i).copied())
                    .ok_or_else(|| {
                        Fault::Bad(format!("arguments for no started function call ({at:?})"))
                    })?;
                self.sink.send(&ModelDelta::ToolCall {
                    index: p,
                    id: None,
                    name: None,
                    arguments: str_at(&v, "/delta").unwrap_or("").to_owned(),
                });
            }
            "response.completed" | "response.incomplete" => {
                let response = v
                    .get("response")
                    .cloned()
                    .ok_or_else(|| Fault::Bad(format!("`{kind}` carries no response")))?;
                return super::openai_responses::parse(&self.endpoint, response)
                    .map(Some)
                    .map_err(|e| Fault::Bad(e.to_string()));
            }
            "response.failed" => {
                let e = v.pointer("/response/error").cloned().unwrap_or_default();
                return Err(Fault::Api(api_error(&json!({ "error": e }))));
            }
            "error" => return Err(Fault::Api(api_error(&v))),
            _ => {}
        }
        Ok(None)
    }

    fn end(&mut self) -> Result<Option<ModelResponse>, Fault> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn sink() -> (DeltaSink, Arc<Mutex<Vec<ModelDelta>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let sink = DeltaSink::new(move |d| kept.lock().expect("lock").push(d.clone()));
        (sink, seen)
    }

    fn sse(events: &[Value]) -> String {
        events.iter().map(|e| format!("data: {e}\n\n")).collect()
    }

    fn run<T>(
        body: &str,
        limit: usize,
        a: &mut dyn Assembler<Output = T>,
    ) -> Result<T, ModelError> {
        read(
            body.as_bytes(),
            limit,
            "e",
            a,
            |e| ModelError::Transport {
                endpoint: "e".into(),
                detail: e.to_string(),
            },
            |t| t.replace("sk-secret", "***"),
        )
    }

    #[test]
    fn chat_tool_calls_are_assembled_by_index() {
        let (s, seen) = sink();
        let body = sse(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"Let "}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"me"}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[
                {"index":0,"id":"c0","type":"function","function":{"name":"echo","arguments":""}},
                {"index":7,"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"text\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}},
                {"index":7,"function":{"arguments":":1}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}),
        ]) + "data: [DONE]\n\n";
        let r = run(&body, 1 << 20, &mut ChatStream::new("e".into(), s)).expect("assembled");
        assert_eq!(r.message.text, "Let me");
        let calls: Vec<(&str, &str, &str)> = r
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("c0", "echo", r#"{"text":"x"}"#),
                ("c1", "add", r#"{"a":1}"#)
            ]
        );
        assert_eq!(r.usage.total(), 7);
        assert_eq!(r.stop_reason.as_deref(), Some("tool_calls"));
        let seen = seen.lock().expect("lock");
        assert_eq!(seen[0], ModelDelta::Text("Let ".into()));
        assert!(seen.contains(&ModelDelta::ToolCall {
            index: 1,
            id: Some("c1".into()),
            name: Some("add".into()),
            arguments: "{\"a\"".into()
        }));
        assert_eq!(seen.len(), 7, "{seen:?}");
    }

    #[test]
    fn a_stream_without_its_final_event_is_an_error_not_a_partial_answer() {
        let body = sse(&[json!({"choices":[{"index":0,"delta":{"content":"half"}}]})]);
        let (s, _) = sink();
        let err = run(&body, 1 << 20, &mut ChatStream::new("e".into(), s)).unwrap_err();
        assert!(
            err.to_string().contains("ended before its final event"),
            "{err}"
        );
        let (s, _) = sink();
        let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n";
        let err = run(body, 1 << 20, &mut AnthropicStream::new("e".into(), s)).unwrap_err();
        assert!(matches!(err, ModelError::Transport { .. }), "{err}");
        let (s, _) = sink();
        let body = sse(&[json!({"type":"response.output_text.delta","delta":"x"})]);
        let err = run(&body, 1 << 20, &mut ResponsesStream::new("e".into(), s)).unwrap_err();
        assert!(matches!(err, ModelError::Transport { .. }), "{err}");
    }

    #[test]
    fn the_whole_stream_and_each_event_are_capped() {
        // Many small events past the cap.
        let one = json!({"choices":[{"index":0,"delta":{"content":"0123456789"}}]});
        let body = sse(&vec![one; 1000]);
        let (s, seen) = sink();
        let err = run(&body, 4096, &mut ChatStream::new("e".into(), s)).unwrap_err();
        assert_eq!(
            err,
            ModelError::TooLarge {
                endpoint: "e".into(),
                limit: 4096
            }
        );
        assert!(seen.lock().expect("lock").len() < 100, "stopped at the cap");
        // One event larger than the cap, never ended.
        let body = format!("data: {}", "x".repeat(10_000));
        let (s, _) = sink();
        let err = run(&body, 4096, &mut ChatStream::new("e".into(), s)).unwrap_err();
        assert!(matches!(err, ModelError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn huge_or_bad_indexes_and_too_many_calls_are_errors_not_allocations() {
        // An index far out of range is a key: one call, no allocation up to it.
        let (s, _) = sink();
        let body = sse(&[
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":u64::MAX,"id":"a","function":{"name":"n","arguments":"{}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ]) + "data: [DONE]\n\n";
        let r = run(&body, 1 << 20, &mut ChatStream::new("e".into(), s)).expect("one call");
        assert_eq!(r.message.tool_calls.len(), 1);
        let (s, _) = sink();
        let body = sse(&[json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1}]}}]})]);
        let err = run(&body, 1 << 20, &mut ChatStream::new("e".into(), s)).unwrap_err();
        assert!(matches!(err, ModelError::BadResponse { .. }), "{err}");
        // More calls than the cap.
        let pieces: Vec<Value> = (0..=MAX_STREAMED_ITEMS)
            .map(|i| json!({"index": i, "id": format!("c{i}"), "function": {"name": "n"}}))
            .collect();
        let body = sse(&[json!({"choices":[{"index":0,"delta":{"tool_calls": pieces}}]})]);
        let (s, _) = sink();
        let err = run(&body, 64 << 20, &mut ChatStream::new("e".into(), s)).unwrap_err();
        assert!(
            err.to_string().contains("more than 65536 tool calls"),
            "{err}"
        );
        // Anthropic: a delta for a block never started.
        let (s, _) = sink();
        let body = sse(&[
            json!({"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}),
        ]);
        let err = run(&body, 1 << 20, &mut AnthropicStream::new("e".into(), s)).unwrap_err();
        assert!(matches!(err, ModelError::BadResponse { .. }), "{err}");
    }

    #[test]
    fn a_refused_streams_error_quotes_at_most_a_line_of_it() {
        let index = format!("sk-secret {}", "x".repeat(100_000));
        let body =
            sse(&[json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":index}]}}]})]);
        let (s, _) = sink();
        let err = run(&body, 1 << 20, &mut ChatStream::new("e".into(), s)).unwrap_err();
        let ModelError::BadResponse { detail, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(
            detail.len() <= MAX_FAULT_DETAIL + 3,
            "{} bytes",
            detail.len()
        );
        assert!(detail.starts_with("a tool call's index is"), "{detail}");
        assert!(!detail.contains("sk-secret"), "{detail}");
    }

    #[test]
    fn error_events_are_errors_with_secrets_hidden() {
        let (s, _) = sink();
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy for sk-secret\"}}\n\n";
        let err = run(body, 1 << 20, &mut AnthropicStream::new("e".into(), s)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("overloaded_error: busy for ***"), "{text}");
        let (s, _) = sink();
        let body = sse(&[
            json!({"type":"response.failed","response":{"error":{"code":"server_error","message":"down"}}}),
        ]);
        let err = run(&body, 1 << 20, &mut ResponsesStream::new("e".into(), s)).unwrap_err();
        assert!(err.to_string().contains("server_error: down"), "{err}");
    }

    #[test]
    fn many_small_anthropic_deltas_are_appended_whole_and_in_order() {
        let mut events = vec![
            json!({"type":"message_start","message":{"usage":{"input_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        ];
        events.extend((0..2000).map(
            |i| json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":format!("{}", i % 10)}}),
        ));
        events.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}));
        events.push(json!({"type":"content_block_stop","index":0}));
        events.push(json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":"<"}}));
        events.extend((0..5000).map(
            |_| json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ab"}}),
        ));
        events.push(json!({"type":"content_block_stop","index":1}));
        events.push(json!({"type":"message_stop"}));
        let (s, _) = sink();
        let r = run(
            &sse(&events),
            16 << 20,
            &mut AnthropicStream::new("e".into(), s),
        )
        .expect("assembled");
        let thinking: String = (0..2000)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        let text = format!("<{}", "ab".repeat(5000));
        let whole = super::super::anthropic::parse(
            "e",
            json!({"content":[{"type":"thinking","thinking":thinking,"signature":"sig"},
                {"type":"text","text":text}],
                "stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}),
        )
        .expect("parses");
        assert_eq!(r.message.text, text);
        assert_eq!(r, whole);
    }

    #[test]
    fn anthropic_and_responses_streams_are_assembled() {
        let (s, seen) = sink();
        let body = sse(&[
            json!({"type":"message_start","message":{"id":"m","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok "}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"echo","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":\"x\"}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":6}}),
            json!({"type":"message_stop"}),
        ]);
        let r = run(&body, 1 << 20, &mut AnthropicStream::new("e".into(), s)).expect("assembled");
        let whole = super::super::anthropic::parse(
            "e",
            json!({"content":[{"type":"text","text":"ok "},
                {"type":"tool_use","id":"t1","name":"echo","input":{"text":"x"}}],
                "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}}),
        )
        .expect("parses");
        assert_eq!(r, whole);
        assert_eq!(seen.lock().expect("lock").len(), 4);

        let (s, seen) = sink();
        let done = json!({"status":"completed","output":[
            {"type":"function_call","call_id":"c1","name":"echo","arguments":"{}"}],
            "usage":{"input_tokens":1,"output_tokens":2}});
        let body = sse(&[
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"echo","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}),
            json!({"type":"response.completed","response": done.clone()}),
        ]);
        let r = run(&body, 1 << 20, &mut ResponsesStream::new("e".into(), s)).expect("assembled");
        assert_eq!(
            r,
            super::super::openai_responses::parse("e", done).expect("parses")
        );
        assert_eq!(seen.lock().expect("lock").len(), 2);
    }
}
