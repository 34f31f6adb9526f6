//! Answering a server's `sampling/createMessage`: the server asks the client's model for a
//! completion.
//!
//! Opt-in: only with `--sampling-model-url URL` does mcpb declare the `sampling` capability,
//! so without it a server does not ask (and a request that comes anyway is refused by the
//! library, -32601). The model is reached the way `run` reaches it (OpenAI-compatible Chat
//! Completions, or Anthropic Messages when the URL says so; `--sampling-model`,
//! `--sampling-api-key-env`).
//!
//! | situation | what happens |
//! |---|---|
//! | every request | shown on stderr first: the server, the model, the system prompt and the messages (escaped, shortened) |
//! | `--sampling-yes` | sent |
//! | a terminal | `send it? [y/n]`; no: refused (-1, the user rejected it) |
//! | no terminal | refused (-1); a line on stderr says to add `--sampling-yes` |
//!
//! A request that offers the model tools is refused (-32602): mcpb does not declare
//! `sampling.tools`, and its model requests carry none.

use std::io::Write;

use mcp_blocking::agent::{AssistantMessage, Message, Model, ModelRequest, ModelSettings, Part};
use mcp_blocking::error::ErrorCode;
use mcp_blocking::handler::{close_signal, HandlerError};
use mcp_blocking::model::{CreateMessageParams, CreateMessageResult, Role, SamplingMessage};

use crate::elicit::{ask_choose, Choose};
use crate::terminal;
use crate::tty::Tty;

/// The most messages of a request shown (the rest are counted).
const SHOWN_MESSAGES: usize = 20;
/// The most characters of one message, or of the system prompt, shown.
const SHOWN_TEXT: usize = 400;

/// The sampling handler of a connection.
pub(crate) struct Sampler {
    model: Box<dyn Model>,
    model_name: String,
    /// Send without asking (`--sampling-yes`).
    yes: bool,
}

impl Sampler {
    pub(crate) fn new(model: Box<dyn Model>, model_name: String, yes: bool) -> Self {
        Sampler {
            model,
            model_name,
            yes,
        }
    }

    /// Answers one request (on the connection's request thread).
    pub(crate) fn create_message(
        &self,
        server: &str,
        params: &CreateMessageParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        crate::clear_progress();
        if params.tools.as_ref().is_some_and(|t| !t.is_empty()) || params.tool_choice.is_some() {
            return Err(HandlerError::new(
                ErrorCode::INVALID_PARAMS,
                "this client does not offer tools to the model in sampling (no sampling.tools \
                 capability)",
            ));
        }
        let mut err = std::io::stderr();
        let _ = err.write_all(self.describe(server, params).as_bytes());
        if !self.yes {
            match Tty::open(close_signal()) {
                Some(mut tty) => {
                    match ask_choose(&mut tty, &mut err, "  send it to the model? [y]es / [n]o: ") {
                        Choose::Yes => {}
                        Choose::No | Choose::Cancel => {
                            return Err(HandlerError::rejected(
                                "the user declined the sampling request",
                            ))
                        }
                    }
                }
                None => {
                    let _ = writeln!(
                        err,
                        "mcpb: there is no terminal to confirm the sampling request on: refused \
                         (add --sampling-yes to send sampling requests without asking)"
                    );
                    return Err(HandlerError::rejected(
                        "the sampling request needs the user's confirmation and there is no \
                         terminal to ask on",
                    ));
                }
            }
        }
        let request = request_of(params);
        let response = self.model.complete(&request).map_err(|e| {
            let _ = writeln!(
                err,
                "mcpb: sampling for server `{}` failed: {}",
                terminal::escaped(server),
                terminal::escaped(&e.to_string())
            );
            HandlerError::new(ErrorCode::INTERNAL_ERROR, format!("the model failed: {e}"))
        })?;
        let _ = writeln!(
            err,
            "mcpb: the model answered server `{}` ({} characters)",
            terminal::escaped(server),
            response.message.text.chars().count()
        );
        let mut result = CreateMessageResult::text(&self.model_name, response.message.text);
        if let Some(reason) = response.stop_reason.as_deref().map(stop_reason) {
            result = result.with_stop_reason(reason);
        }
        Ok(result)
    }

    /// The request as shown on stderr before it is sent.
    fn describe(&self, server: &str, params: &CreateMessageParams) -> String {
        let mut text = format!(
            "mcpb: server `{}` asks the model `{}` (sampling, at most {} tokens):\n",
            terminal::escaped(server),
            terminal::escaped(&self.model_name),
            params.max_tokens
        );
        if let Some(system) = &params.system_prompt {
            text.push_str(&format!("  system: {}\n", shortened(system)));
        }
        for m in params.messages.iter().take(SHOWN_MESSAGES) {
            let role = match m.role {
                Role::Assistant => "assistant",
                _ => "user",
            };
            text.push_str(&format!("  {role}: {}\n", shortened(&message_text(m))));
        }
        if params.messages.len() > SHOWN_MESSAGES {
            text.push_str(&format!(
                "  ... and {} more messages\n",
                params.messages.len() - SHOWN_MESSAGES
            ));
        }
        text
    }
}

/// A message's text, with a note for each block that is not text.
fn message_text(m: &SamplingMessage) -> String {
    m.blocks()
        .into_iter()
        .map(|b| match b.get("type").and_then(|t| t.as_str()) {
            Some("text") => b
                .get("text")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_owned(),
            Some(other) => format!("[{other}]"),
            None => "[?]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line: newlines as `\n`, escaped, cut at [`SHOWN_TEXT`] characters.
fn shortened(text: &str) -> String {
    let flat = text.replace('\n', "\\n");
    let cut: String = flat.chars().take(SHOWN_TEXT).collect();
    let more = if cut.len() < flat.len() { "..." } else { "" };
    format!("{}{more}", terminal::escaped(&cut))
}

/// The model request of a sampling request: its system prompt, messages (text and images),
/// token limit and temperature.
fn request_of(params: &CreateMessageParams) -> ModelRequest {
    let messages = params
        .messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant => Message::Assistant(AssistantMessage::text(m.text())),
            _ => Message::User(parts_of(m)),
        })
        .collect();
    let mut request = ModelRequest::new(messages);
    request.system.clone_from(&params.system_prompt);
    let mut settings = ModelSettings::default();
    settings.max_tokens = Some(params.max_tokens);
    settings.temperature = params.temperature;
    request.settings = settings;
    request
}

/// The text and image blocks of a user message.
fn parts_of(m: &SamplingMessage) -> Vec<Part> {
    m.blocks()
        .into_iter()
        .filter_map(|b| {
            let field = |k: &str| b.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            match b.get("type").and_then(|t| t.as_str()) {
                Some("text") => field("text").map(Part::Text),
                Some("image") => Some(Part::Image {
                    mime_type: field("mimeType")?,
                    data: field("data")?,
                }),
                _ => None,
            }
        })
        .collect()
}

/// A model API's stop reason in the protocol's words.
fn stop_reason(api: &str) -> String {
    match api {
        "stop" | "end_turn" => "endTurn",
        "length" | "max_tokens" => "maxTokens",
        "stop_sequence" => "stopSequence",
        "tool_calls" | "tool_use" => "toolUse",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_becomes_the_models_request() {
        let params = CreateMessageParams::new(
            vec![
                SamplingMessage::new(Role::User, json!({"type": "text", "text": "hi"})),
                SamplingMessage::new(Role::Assistant, json!({"type": "text", "text": "hello"})),
                SamplingMessage::new(
                    Role::User,
                    json!([{"type": "text", "text": "look"},
                           {"type": "image", "mimeType": "image/png", "data": "AAAA"}]),
                ),
            ],
            50,
        )
        .with_system_prompt("be brief")
        .with_temperature(0.5);
        let r = request_of(&params);
        assert_eq!(r.system.as_deref(), Some("be brief"));
        assert_eq!(r.settings.max_tokens, Some(50));
        assert_eq!(r.settings.temperature, Some(0.5));
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.messages[0], Message::user("hi"));
        assert_eq!(
            r.messages[1],
            Message::Assistant(AssistantMessage::text("hello"))
        );
        assert_eq!(
            r.messages[2],
            Message::User(vec![
                Part::Text("look".into()),
                Part::Image {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                }
            ])
        );
    }

    #[test]
    fn what_is_shown_is_escaped_and_shortened() {
        let long = "x".repeat(1000);
        let params = CreateMessageParams::new(
            vec![SamplingMessage::new(
                Role::User,
                json!({"type": "text", "text": format!("a\x1b[2J\nb{long}")}),
            )],
            10,
        );
        let sampler = Sampler::new(Box::new(NoModel), "m".into(), true);
        let shown = sampler.describe("srv\x07", &params);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07'),
            "{shown}"
        );
        assert!(shown.contains("a\\u{1b}[2J\\nb"), "{shown}");
        assert!(shown.contains("..."), "{shown}");
        assert!(shown.len() < 700, "{}", shown.len());
    }

    #[test]
    fn stop_reasons_are_the_protocols() {
        assert_eq!(stop_reason("stop"), "endTurn");
        assert_eq!(stop_reason("end_turn"), "endTurn");
        assert_eq!(stop_reason("length"), "maxTokens");
        assert_eq!(stop_reason("other"), "other");
    }

    struct NoModel;
    impl Model for NoModel {
        fn complete(
            &self,
            _: &ModelRequest,
        ) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> {
            unreachable!("not called")
        }
    }
}
