//! Prompts and argument completion.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Content, Map, Role};

/// An argument a prompt accepts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// The argument's name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The argument must be given (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(PromptArgument {
    name: "name" required,
    title: "title" optional,
    description: "description" optional,
    required: "required" optional,
});

impl PromptArgument {
    /// An argument called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            required: None,
            extra: Map::new(),
        }
    }
}

setters!(PromptArgument {
    with_title => title: String,
    with_description => description: String,
    with_required => required: bool,
});

/// A prompt template the server offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The name to get it by.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Prompt {
    name: "name" required,
    title: "title" optional,
    description: "description" optional,
    arguments: "arguments" optional,
    icons: "icons" optional,
    meta: "_meta" optional,
});

impl Prompt {
    /// A prompt called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(Prompt {
    with_title => title: String,
    with_description => description: String,
    with_arguments => arguments: Vec<PromptArgument>,
    with_icons => icons: Vec<Value>,
    with_meta => meta: Map,
});

/// The result of `prompts/list`: one page of prompts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

deserialize_struct!(ListPromptsResult {
    prompts: "prompts" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

impl ListPromptsResult {
    /// A page holding `prompts`.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        Self {
            prompts,
            ..Self::default()
        }
    }
}

setters!(ListPromptsResult { with_next_cursor => next_cursor: String, with_meta => meta: Map });

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(PromptMessage {
    role: "role" required,
    content: "content" required,
});

impl PromptMessage {
    /// A message from `role` holding `content`.
    pub fn new(role: Role, content: Content) -> Self {
        Self {
            role,
            content,
            extra: Map::new(),
        }
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, with arguments filled in.
    pub messages: Vec<PromptMessage>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(GetPromptResult {
    description: "description" optional,
    messages: "messages" required,
    meta: "_meta" optional,
});

impl GetPromptResult {
    /// A result holding `messages`.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

setters!(GetPromptResult { with_description => description: String, with_meta => meta: Map });

/// What `completion/complete` completes an argument of (`ref`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// `{"type": "ref/prompt", "name": ...}`: a prompt's argument.
    #[serde(rename = "ref/prompt")]
    #[non_exhaustive]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type": "ref/resource", "uri": ...}`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    #[non_exhaustive]
    Resource {
        /// The resource template's URI template.
        uri: String,
    },
}

impl CompletionReference {
    /// A reference to the prompt called `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionReference::Prompt { name: name.into() }
    }

    /// A reference to the resource template `uri`.
    pub fn resource(uri: impl Into<String>) -> Self {
        CompletionReference::Resource { uri: uri.into() }
    }
}

/// Completion values for an argument.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// Suggested values, at most 100.
    pub values: Vec<String>,
    /// How many values exist in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More values exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Completion {
    values: "values" required,
    total: "total" optional,
    has_more: "hasMore" optional,
});

impl Completion {
    /// Completion `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            values,
            ..Self::default()
        }
    }
}

setters!(Completion { with_total => total: u64, with_has_more => has_more: bool });

/// The result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompleteResult {
    /// The values.
    pub completion: Completion,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(CompleteResult {
    completion: "completion" required,
    meta: "_meta" optional,
});

impl CompleteResult {
    /// A result holding `completion`.
    pub fn new(completion: Completion) -> Self {
        Self {
            completion,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(CompleteResult { with_meta => meta: Map });

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn list_prompts_result_round_trips() {
        let wire = json!({
            "prompts": [{
                "name": "code_review", "title": "Request Code Review",
                "description": "Asks for a review of code",
                "arguments": [
                    {"name": "code", "description": "The code", "required": true},
                    {"name": "style", "title": "Style guide", "source": "team"}
                ],
                "icons": [{"src": "https://example.com/review.png"}]
            }],
            "nextCursor": "next"
        });
        let list: ListPromptsResult = round_trip(&wire);
        let arguments = list.prompts[0].arguments.as_ref().expect("arguments");
        assert_eq!(arguments[0].required, Some(true));
        assert_eq!(arguments[1].required, None);
        assert_eq!(arguments[1].extra.get("source"), Some(&json!("team")));
    }

    #[test]
    fn get_prompt_result_round_trips() {
        let wire = json!({
            "description": "Code review prompt",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Review this:\nfn main() {}"}},
                {"role": "assistant", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "resource",
                    "resource": {"uri": "file:///main.rs", "mimeType": "text/x-rust", "text": "fn main() {}"}}}
            ],
            "_meta": {"v": 2}
        });
        let result: GetPromptResult = round_trip(&wire);
        assert_eq!(result.messages[1].role, Role::Assistant);
        assert_eq!(
            result.messages[0].content.as_text(),
            Some("Review this:\nfn main() {}")
        );
    }

    #[test]
    fn completion_reference_and_result_round_trip() {
        let prompt = json!({"type": "ref/prompt", "name": "code_review"});
        let resource = json!({"type": "ref/resource", "uri": "file:///{path}"});
        assert_eq!(
            round_trip::<CompletionReference>(&prompt),
            CompletionReference::prompt("code_review")
        );
        assert_eq!(
            round_trip::<CompletionReference>(&resource),
            CompletionReference::resource("file:///{path}")
        );
        let wire =
            json!({"completion": {"values": ["python", "pytorch"], "total": 10, "hasMore": true}});
        let result: CompleteResult = round_trip(&wire);
        assert_eq!(result.completion.values, ["python", "pytorch"]);
        assert_eq!(result.completion.total, Some(10));
        assert_eq!(result.completion.has_more, Some(true));
    }
}
