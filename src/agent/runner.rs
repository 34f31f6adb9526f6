//! [`Agent`]: the run loop over a [`Hub`].

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::approval::{self, ApprovalDecision, ToolApproval};
use super::budget;
use super::cancel::CancelHandle;
use super::search::{Routed, SearchRun, ToolSearch};
use super::skills;
use super::types::{
    joined_text, ApprovalRequest, DeltaSink, Message, Model, ModelError, ModelRequest,
    ModelSettings, Part, ToolCall, ToolResultMessage, Usage,
};
use crate::client::CallOptions;
use crate::config::{Limits, Template};
use crate::error::Error;
use crate::hub::{HubTool, Run, Setting};
use crate::Hub;

/// Progress of a run, for a UI. Sent on the thread where it happens (tool calls: the turn's
/// tool-call threads).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The model said something (a turn's whole text).
    ModelText {
        /// The turn, from 1.
        turn: usize,
        /// The text.
        text: String,
    },
    /// A piece of the model's answer as it streams in (with [`Agent::stream`], from a model
    /// that streams; see [`ModelRequest::on_delta`]), sent on the run's thread as it arrives.
    ModelDelta {
        /// The turn, from 1.
        turn: usize,
        /// The piece.
        delta: super::types::ModelDelta,
    },
    /// Hosted MCP servers were left out of a model request because the requests carrying them
    /// kept failing: the model answered without their tools, told so in its system prompt.
    HostedServersDegraded {
        /// The turn, from 1.
        turn: usize,
        /// The servers' labels.
        servers: Vec<String>,
    },
    /// A [tool search](super::ToolSearch) ran: the tools it found are offered from the next
    /// turn. (A search sends no `ToolCallStarted`/`ToolCallFinished`.)
    ToolsFound {
        /// The turn, from 1.
        turn: usize,
        /// The call id.
        id: String,
        /// The query, as searched.
        query: String,
        /// The offered names of the tools found, best first.
        tools: Vec<String>,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// The turn, from 1.
        turn: usize,
        /// The call id.
        id: String,
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments.
        arguments: Value,
    },
    /// A tool call ended (or could not run: unknown tool, bad arguments, declined).
    ToolCallFinished {
        /// The turn, from 1.
        turn: usize,
        /// The call id.
        id: String,
        /// The server (empty for an unknown tool).
        server: String,
        /// The tool's name on the server (the model's name for an unknown tool).
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// The result's text.
        output: String,
        /// How long it took.
        elapsed: Duration,
    },
}

/// One tool call of a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The turn, from 1.
    pub turn: usize,
    /// The call id.
    pub id: String,
    /// The name the model called (the offered name).
    pub name: String,
    /// The server (`None` for an unknown tool).
    pub server: Option<String>,
    /// The tool's name on the server (the model's name for an unknown tool).
    pub tool: String,
    /// The arguments (`null` when they were not JSON).
    pub arguments: Value,
    /// Whether it failed.
    pub is_error: bool,
    /// The result's text, as sent to the model.
    pub output: String,
}

impl ToolCallRecord {
    /// `{server, tool, arguments, is_error}`.
    pub fn to_json(&self) -> Value {
        json!({"server": self.server, "tool": self.tool, "arguments": self.arguments,
            "is_error": self.is_error})
    }
}

/// What a successful run returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOutput {
    /// The model's final answer.
    pub text: String,
    /// Model requests made.
    pub turns: usize,
    /// Every tool call, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Tokens used by this run.
    pub usage: Usage,
    /// The messages this run added to the conversation (the user's message first).
    pub messages: Vec<Message>,
    /// The labels of the hosted MCP servers some request of this run had to leave out (see
    /// [`ModelResponse::degraded_mcp_servers`](super::ModelResponse::degraded_mcp_servers)),
    /// each once, in the order they were first left out.
    pub degraded_mcp_servers: Vec<String>,
}

impl RunOutput {
    /// `{text, turns, tool_calls: [{server, tool, arguments, is_error}], usage: {input_tokens,
    /// output_tokens}}`, and `degraded_mcp_servers` when a hosted server was left out.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"text": self.text, "turns": self.turns,
            "tool_calls": self.tool_calls.iter().map(ToolCallRecord::to_json).collect::<Vec<_>>(),
            "usage": usage_json(&self.usage)});
        if !self.degraded_mcp_servers.is_empty() {
            v["degraded_mcp_servers"] = json!(self.degraded_mcp_servers);
        }
        v
    }
}

pub(crate) fn usage_json(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens})
}

/// Why a run failed. Each carries the run's transcript (the messages it produced); the
/// conversation itself is left as it was before the run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The turn limit was reached while the model still asked for tools.
    #[error("the turn limit ({turns}) was reached before the model gave an answer")]
    TurnLimit {
        /// The limit.
        turns: usize,
        /// The run's messages.
        transcript: Vec<Message>,
        /// The tool calls made.
        tool_calls: Vec<ToolCallRecord>,
        /// Tokens used.
        usage: Usage,
    },
    /// The model request failed.
    #[error("turn {turn}: {source}")]
    Model {
        /// The turn, from 1.
        turn: usize,
        /// The error.
        #[source]
        source: ModelError,
        /// The run's messages.
        transcript: Vec<Message>,
    },
    /// The run was cancelled (see [`CancelHandle`]).
    #[error("the run was cancelled")]
    Cancelled {
        /// The run's messages.
        transcript: Vec<Message>,
    },
}

impl AgentError {
    /// The messages of the failed run.
    pub fn transcript(&self) -> &[Message] {
        match self {
            AgentError::TurnLimit { transcript, .. }
            | AgentError::Model { transcript, .. }
            | AgentError::Cancelled { transcript } => transcript,
        }
    }
}

type ApproveFn = Arc<dyn Fn(&ToolApproval) -> ApprovalDecision + Send + Sync>;
type EventFn = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// A model and a Hub's tools in one blocking loop, with a conversation kept across runs.
///
/// An `Agent` borrows its [`Hub`] rather than living in it: the Hub stays a model-free
/// multi-server client that many agents (each with its own conversation, model and allow-list)
/// can share, and the Hub's connections outlive any one conversation.
///
/// ```no_run
/// use mcp_blocking::{Hub, ServerConfig};
/// use mcp_blocking::agent::{Agent, AgentEvent, OpenAiChat};
/// let hub = Hub::new([ServerConfig::stdio("fs", "mcp-server-filesystem").with_args(["/data"])]);
/// let model = OpenAiChat::new("llama3.2").base_url("http://localhost:11434/v1");
/// let mut agent = Agent::new(&hub, model)
///     .system_prompt("You help with files.")
///     .allow_tools(["read_file", "list_directory"])
///     .max_turns(5)
///     .on_event(|e| if let AgentEvent::ToolCallStarted { tool, .. } = e { eprintln!("-> {tool}") });
/// let first = agent.run("What is in /data?")?;
/// let second = agent.run("And the biggest file?")?; // the conversation goes on
/// println!("{}\n{}", first.text, second.text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Agent<'h> {
    hub: &'h Hub,
    model: Box<dyn Model + 'h>,
    system: Option<String>,
    settings: ModelSettings,
    tools: Setting<String>,
    max_turns: usize,
    tool_timeout: Option<Duration>,
    limits: Limits,
    approve: Option<ApproveFn>,
    on_event: Option<EventFn>,
    stream: bool,
    cancel: CancelHandle,
    messages: Vec<Message>,
    search: Option<ToolSearch>,
    /// The tool search of the current run (`search` on).
    search_run: Option<SearchRun>,
    server_instructions: bool,
    skills: super::skills::Offers,
    /// Whether the model may read an offered skill's files (`offer_skill_files`).
    skill_files: bool,
    /// The current run's name for the skill file tool, when it is offered.
    file_tool: Option<String>,
}

impl fmt::Debug for Agent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("hub", self.hub)
            .field("settings", &self.settings)
            .field("tools", &self.tools)
            .field("max_turns", &self.max_turns)
            .field("tool_timeout", &self.tool_timeout)
            .field(
                "max_tool_calls_per_turn",
                &self.limits.max_tool_calls_per_turn,
            )
            .field(
                "max_parallel_tool_calls",
                &self.limits.max_parallel_tool_calls,
            )
            .field("max_tool_result_bytes", &self.limits.max_tool_result_bytes)
            .field("tool_search", &self.search)
            .field("server_instructions", &self.server_instructions)
            .field("skills", &self.skills.len())
            .field("skill_files", &self.skill_files)
            .field("messages", &self.messages.len())
            .finish()
    }
}

impl<'h> Agent<'h> {
    /// The default turn limit.
    pub const DEFAULT_MAX_TURNS: usize = 10;

    /// The most bytes one skill may add to the system prompt (see
    /// [`add_skill`](Self::add_skill)): 64 KiB.
    pub const MAX_SKILL_PROMPT_BYTES: usize = 64 * 1024;

    /// The most bytes all the skills offered may add to the system prompt together (see
    /// [`add_skill`](Self::add_skill)): 256 KiB.
    pub const MAX_SKILLS_PROMPT_BYTES: usize = 256 * 1024;

    /// An agent with an empty conversation, no system prompt, the Hub's tools and at most
    /// [`DEFAULT_MAX_TURNS`](Self::DEFAULT_MAX_TURNS) model requests per run.
    pub fn new(hub: &'h Hub, model: impl Model + 'h) -> Self {
        Agent {
            hub,
            model: Box::new(model),
            system: None,
            settings: ModelSettings::default(),
            tools: Setting::Inherit,
            max_turns: Self::DEFAULT_MAX_TURNS,
            tool_timeout: None,
            limits: Limits::default(),
            approve: None,
            on_event: None,
            stream: false,
            cancel: CancelHandle::new(),
            messages: Vec::new(),
            search: None,
            search_run: None,
            server_instructions: false,
            skills: super::skills::Offers::default(),
            skill_files: true,
            file_tool: None,
        }
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Takes the system prompt from a template's body and, from its front matter, `model`,
    /// `temperature`, `max_tokens` and the `tools:` allow-list (as this agent's run-level list).
    /// Its `mcp:` servers belong to the Hub: see
    /// [`HubBuilder::template`](crate::hub::HubBuilder::template).
    ///
    /// ```
    /// use mcp_blocking::config::Template;
    /// let t = Template::parse("---\nmodel: gpt-4o\ntemperature: 0.2\n---\nBe brief.\n")?;
    /// let hub = mcp_blocking::Hub::default();
    /// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
    /// let agent = mcp_blocking::agent::Agent::new(&hub, M).template(&t);
    /// assert_eq!(agent.system().as_deref(), Some("Be brief."));
    /// assert_eq!(agent.settings().model.as_deref(), Some("gpt-4o"));
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    #[must_use]
    pub fn template(mut self, template: &Template) -> Self {
        let body = template.body.trim();
        if !body.is_empty() {
            self.system = Some(body.to_owned());
        }
        let meta = &template.metadata;
        if let Some(m) = meta.get("model").and_then(Value::as_str) {
            self.settings.model = Some(m.to_owned());
        }
        if let Some(t) = meta.get("temperature").and_then(Value::as_f64) {
            self.settings.temperature = Some(t);
        }
        if let Some(n) = meta.get("max_tokens").and_then(Value::as_u64) {
            self.settings.max_tokens = Some(n);
        }
        if let Some(tools) = &template.tools {
            self.tools = Setting::List(tools.clone());
        }
        self
    }

    /// Sets the request settings (model override, temperature, max tokens).
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The run-level tool allow-list: only these tools (offered or server names) reach the model.
    #[must_use]
    pub fn allow_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = Setting::list(tools);
        self
    }

    /// The run level of the tool setting (see [`Setting`]); [`Setting::None`] sends no tools.
    #[must_use]
    pub fn tools(mut self, tools: Setting<String>) -> Self {
        self.tools = tools;
        self
    }

    /// The most model requests per run (default 10; at least 1).
    #[must_use]
    pub fn max_turns(mut self, n: usize) -> Self {
        self.max_turns = n.max(1);
        self
    }

    /// The timeout of each tool call (default: each server's own request timeout).
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets the caps on the tool calls of one turn: how many run
    /// ([`Limits::max_tool_calls_per_turn`]; the others are answered with an error result the
    /// model reads) and how many run at the same time ([`Limits::max_parallel_tool_calls`]).
    /// [`Limits::max_tool_result_bytes`] cuts each tool result's text that reaches the model.
    /// The other fields of `limits` belong to servers and are not used here.
    ///
    /// ```
    /// use mcp_blocking::config::Limits;
    /// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
    /// let hub = mcp_blocking::Hub::default();
    /// let limits = Limits::default()
    ///     .with_max_tool_calls_per_turn(16)
    ///     .with_max_parallel_tool_calls(4);
    /// let agent = mcp_blocking::agent::Agent::new(&hub, M).limits(limits);
    /// ```
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Turns on tool search (see [`ToolSearch`]): each request offers a `search_tools` tool,
    /// the pinned tools and the tools found or used so far, instead of every tool of the run.
    #[must_use]
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.search = Some(search);
        self
    }

    /// Adds the `instructions` each server gave at initialisation to the system prompt (off by
    /// default), for the servers whose tools the run may use: each in its own
    /// `<server-instructions server="NAME">` element, after a line saying they come from the
    /// servers. A server's text is cut to 4 KiB, and servers past 16 KiB in all are left out;
    /// a server cannot close its element early (the tags are neutralised in its text).
    #[must_use]
    pub fn server_instructions(mut self, on: bool) -> Self {
        self.server_instructions = on;
        self
    }

    /// Offers a loaded skill to the model: from the next run on, the system prompt holds the
    /// skill's name and description (from its frontmatter) and its instructions (its verified
    /// `SKILL.md` after the frontmatter), in a `<skill server="NAME" name="SKILL">` element
    /// after a line saying that skills come from the servers named, not from the user. No skill
    /// is offered unless the program adds it. Adding the same skill (server and URI) again
    /// replaces it; [`clear_skills`](Self::clear_skills) forgets them all.
    ///
    /// A skill is the server's text, and the model reads it as instructions: offer only the
    /// skills of servers you trust as much as your own system prompt. Its verification (see
    /// [`Client::load_skill`](crate::Client::load_skill)) proves only that the text is what the
    /// server listed. A skill cannot close its element early (the element's tags are
    /// neutralised in its text), but what it says inside it is up to the server.
    ///
    /// The skill's other files are listed in its element (URI and size) and not read: while a
    /// skill that lists files is offered, the model is offered a `read_skill_file` tool (with
    /// `uri`, and `server` when two servers list the same URI), which reads one of them with
    /// [`LoadedSkill::read_file`](crate::LoadedSkill::read_file) on the Hub's client of the
    /// skill's server: its size and digest are checked against the listing before the model
    /// sees a byte, a file that is not UTF-8 text is refused, and the text is cut to
    /// [`Limits::max_tool_result_bytes`](crate::config::Limits::max_tool_result_bytes). Only
    /// the files of offered skills can be read; such a read is not a tool call of the server
    /// (it is a `resources/read`), so it is not put to the approval hook. It sends
    /// `ToolCallStarted` and `ToolCallFinished` with the skill's server and the tool's name.
    /// [`offer_skill_files(false)`](Self::offer_skill_files) offers the instructions alone.
    ///
    /// ```no_run
    /// use mcp_blocking::{Hub, ServerConfig};
    /// use mcp_blocking::agent::{Agent, OpenAiChat};
    /// let hub = Hub::new([ServerConfig::stdio("docs", "docs-server")]);
    /// hub.connect_all();
    /// let skill = hub.load_skill(Some("docs"), "pdf-processing")?;
    /// let mut agent = Agent::new(&hub, OpenAiChat::new("gpt-4o-mini"));
    /// agent.add_skill(&skill)?;
    /// let reply = agent.run("Fill in form.pdf with my address.")?;
    /// # let _ = reply;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Skill`] of kind [`TooLarge`](crate::error::SkillErrorKind::TooLarge) when the
    /// skill's element would be longer than [`MAX_SKILL_PROMPT_BYTES`](Self::MAX_SKILL_PROMPT_BYTES),
    /// or all the skills' elements, with it, longer than
    /// [`MAX_SKILLS_PROMPT_BYTES`](Self::MAX_SKILLS_PROMPT_BYTES): the skill is not offered
    /// (it is refused whole rather than cut, since instructions cut short could mislead), and
    /// the skills already offered stay.
    pub fn add_skill(&mut self, skill: &crate::LoadedSkill) -> Result<(), Error> {
        self.skills.add(
            skill,
            Self::MAX_SKILL_PROMPT_BYTES,
            Self::MAX_SKILLS_PROMPT_BYTES,
        )
    }

    /// Stops offering the skills added with [`add_skill`](Self::add_skill).
    pub fn clear_skills(&mut self) {
        self.skills.clear();
    }

    /// Whether the model may read the files of the skills offered (see
    /// [`add_skill`](Self::add_skill)); on by default. Off, the skills' elements hold their
    /// instructions alone and no file tool is offered.
    ///
    /// ```
    /// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
    /// let hub = mcp_blocking::Hub::default();
    /// let agent = mcp_blocking::agent::Agent::new(&hub, M).offer_skill_files(false);
    /// # drop(agent);
    /// ```
    #[must_use]
    pub fn offer_skill_files(mut self, on: bool) -> Self {
        self.skill_files = on;
        self
    }

    /// Asks `approve` before each local tool call and each hosted call that needs approval;
    /// `false` (or [`ApprovalDecision::Decline`]) declines the call and the model is told the
    /// user declined it; [`ApprovalDecision::DeclineWith`] tells the model its text instead.
    /// [`ToolApproval::required`] says whether the server's
    /// [policy](crate::config::ServerPolicy) asks for the user's approval of this call (its
    /// file lists the tools that run without asking, as Roo Code's `alwaysAllow`, and this one is
    /// not listed), and [`ToolApproval::rule`] where that was written. Called from the
    /// tool-call threads, so it may be called for several calls at once (at most
    /// [`Limits::max_parallel_tool_calls`]).
    ///
    /// Without a hook, a local call runs unless its server's policy requires approval for it:
    /// then it is refused (fail closed) and the model gets an error result saying the tool
    /// needs the user's approval ([`ToolApproval::unapproved_text`]); hosted approval requests
    /// are declined. So a file's auto-approve list is never bypassed by a program that does
    /// not ask.
    ///
    /// ```
    /// use mcp_blocking::agent::{Agent, ApprovalDecision};
    /// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
    /// let hub = mcp_blocking::Hub::default();
    /// // Approve what the configuration lets run without asking; refuse the rest, saying why.
    /// let agent = Agent::new(&hub, M).approve(|ask| match ask.required {
    ///     false => ApprovalDecision::Approve,
    ///     true => ApprovalDecision::DeclineWith(format!("`{}` needs approval", ask.tool)),
    /// });
    /// ```
    #[must_use]
    pub fn approve<D>(
        mut self,
        approve: impl Fn(&ToolApproval) -> D + Send + Sync + 'static,
    ) -> Self
    where
        D: Into<ApprovalDecision>,
    {
        self.approve = Some(Arc::new(move |ask: &ToolApproval| approve(ask).into()));
        self
    }

    /// Calls `f` for each [`AgentEvent`].
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(f));
        self
    }

    /// Asks the model for streamed answers (default: off): each piece of the answer, text and
    /// tool calls alike, reaches [`on_event`](Self::on_event) as an [`AgentEvent::ModelDelta`]
    /// as it arrives, on the run's thread. The turn's result is the same as without streaming
    /// ([`AgentEvent::ModelText`] still follows with the whole text). Off by default because
    /// it changes what is asked of the API (`"stream": true`), which some OpenAI-compatible
    /// servers support only without tools; a model of the program's own streams only if it
    /// reads [`ModelRequest::on_delta`].
    ///
    /// ```
    /// use mcp_blocking::agent::{Agent, AgentEvent, ModelDelta};
    /// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
    /// let hub = mcp_blocking::Hub::default();
    /// let agent = Agent::new(&hub, M).stream(true).on_event(|e| {
    ///     if let AgentEvent::ModelDelta { delta: ModelDelta::Text(t), .. } = e {
    ///         print!("{t}");
    ///     }
    /// });
    /// ```
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// A handle that cancels the current (or next) run from another thread: the model request
    /// in flight is interrupted (its connection closed) and each tool call in flight is
    /// cancelled (`notifications/cancelled`); the run returns [`AgentError::Cancelled`].
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// The system prompt.
    pub fn system(&self) -> Option<String> {
        self.system.clone()
    }

    /// The request settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Forgets the conversation.
    pub fn clear(&mut self) {
        self.messages.clear();
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(f) = &self.on_event {
            f(&event);
        }
    }

    /// Sends `message` and runs the loop until the model answers without calling a tool.
    ///
    /// The Hub is resolved with `message` as the query (discovery applies on the Hub's first
    /// run) and this agent's allow-list. Each turn sends the conversation and the tools; the
    /// tool calls of a turn run in parallel on a pool of at most
    /// [`Limits::max_parallel_tool_calls`] threads, joined before the turn ends, and every call
    /// gets exactly one result, in the model's order. Calls past
    /// [`Limits::max_tool_calls_per_turn`] are not run: each is answered with an error result
    /// saying so (no event is sent for them; one warning is logged per turn). On success the
    /// run's messages stay in the conversation; on failure the conversation is left as it was,
    /// and the error carries the run's messages.
    ///
    /// # Errors
    /// [`AgentError::TurnLimit`] after `max_turns` model requests that all asked for tools,
    /// [`AgentError::Model`] when a request fails, [`AgentError::Cancelled`] when the
    /// [`CancelHandle`] fired.
    pub fn run(&mut self, message: &str) -> Result<RunOutput, AgentError> {
        let start = self.messages.len();
        self.messages.push(Message::user(message));
        let set = self
            .hub
            .resolve(&Run::new().query(message).tools(self.tools.clone()));
        let instructions = self
            .server_instructions
            .then(|| budget::server_instructions(self.hub, &set.tools))
            .flatten();
        // A run with no tools offers none, not a search over nothing.
        self.search_run = self
            .search
            .as_ref()
            .filter(|_| !set.tools.is_empty())
            .map(|o| SearchRun::new(o, self.hub, &set.tools, &self.messages[..start]));
        self.file_tool = (self.skill_files && self.skills.have_files()).then(|| {
            skills::file_tool_name(&set.tools, self.search_run.as_ref().map(SearchRun::name))
        });
        let file_tool = self.file_tool.as_ref().map(|n| skills::file_tool(n));
        let system = [
            self.system.clone(),
            instructions,
            self.skills.prompt(self.file_tool.as_deref()),
            set.status_note(),
        ]
        .into_iter()
        .flatten()
        .reduce(|a, b| format!("{a}\n\n{b}"));
        let by_name: HashMap<&str, &HubTool> =
            set.tools.iter().map(|t| (t.name.as_str(), t)).collect();
        let mut usage = Usage::default();
        let mut records: Vec<ToolCallRecord> = Vec::new();
        let mut degraded: Vec<String> = Vec::new();
        for turn in 1..=self.max_turns {
            if self.cancel.is_cancelled() {
                return Err(AgentError::Cancelled {
                    transcript: self.messages.split_off(start),
                });
            }
            let mut request = ModelRequest::new(self.messages.clone());
            request.system = system.clone();
            request.tools = match &self.search_run {
                Some(search) => search.offer(),
                None => set.tools.clone(),
            };
            request.tools.extend(file_tool.clone());
            request.settings = self.settings.clone();
            request.cancel = Some(self.cancel.clone());
            if let (true, Some(f)) = (self.stream, &self.on_event) {
                let f = Arc::clone(f);
                request.on_delta = Some(DeltaSink::new(move |delta| {
                    f(&AgentEvent::ModelDelta {
                        turn,
                        delta: delta.clone(),
                    });
                }));
            }
            let response = match self.model.complete(&request) {
                Ok(r) => r,
                Err(ModelError::Cancelled { .. }) => {
                    return Err(AgentError::Cancelled {
                        transcript: self.messages.split_off(start),
                    })
                }
                Err(source) => {
                    return Err(AgentError::Model {
                        turn,
                        source,
                        transcript: self.messages.split_off(start),
                    })
                }
            };
            usage += response.usage;
            if !response.degraded_mcp_servers.is_empty() {
                for label in &response.degraded_mcp_servers {
                    if !degraded.contains(label) {
                        degraded.push(label.clone());
                    }
                }
                self.emit(AgentEvent::HostedServersDegraded {
                    turn,
                    servers: response.degraded_mcp_servers.clone(),
                });
            }
            let answer = response.message;
            if !answer.text.is_empty() {
                self.emit(AgentEvent::ModelText {
                    turn,
                    text: answer.text.clone(),
                });
            }
            let calls = answer.tool_calls.clone();
            let approvals = answer.approval_requests.clone();
            let text = answer.text.clone();
            self.messages.push(Message::Assistant(answer));
            if calls.is_empty() && approvals.is_empty() {
                return Ok(RunOutput {
                    text,
                    turns: turn,
                    tool_calls: records,
                    usage,
                    messages: self.messages[start..].to_vec(),
                    degraded_mcp_servers: degraded,
                });
            }
            for a in &approvals {
                let approve = self.approve_hosted(a);
                self.messages.push(Message::Approval {
                    request_id: a.id.clone(),
                    approve,
                });
            }
            let results = self.execute(turn, &calls, &by_name);
            for (result, record) in results {
                self.messages.push(Message::ToolResult(result));
                records.push(record);
            }
            // Cancelled while the calls ran: they were cancelled too, and the run ends now.
            if self.cancel.is_cancelled() {
                return Err(AgentError::Cancelled {
                    transcript: self.messages.split_off(start),
                });
            }
        }
        Err(AgentError::TurnLimit {
            turns: self.max_turns,
            transcript: self.messages.split_off(start),
            tool_calls: records,
            usage,
        })
    }

    fn approve_hosted(&self, a: &ApprovalRequest) -> bool {
        let arguments = serde_json::from_str(&a.arguments).unwrap_or(Value::Null);
        let ask = ToolApproval::hosted(&a.server_label, &a.name, arguments);
        match &self.approve {
            Some(f) => f(&ask).is_approved(),
            None => {
                log::info!(
                    "hosted server `{}`: call of `{}` declined (no approval hook)",
                    a.server_label,
                    a.name
                );
                false
            }
        }
    }

    /// Runs the calls of one turn, up to the cap, in parallel when there are several; the
    /// results are in the calls' order, one per call (an error result for each call past the
    /// cap).
    fn execute(
        &self,
        turn: usize,
        calls: &[ToolCall],
        tools: &HashMap<&str, &HubTool>,
    ) -> Vec<(ToolResultMessage, ToolCallRecord)> {
        let cap = self.limits.max_tool_calls_per_turn;
        let (run, over) = calls.split_at(calls.len().min(cap));
        let mut results = self.run_calls(turn, run, tools);
        if !over.is_empty() {
            log::warn!(
                "turn {turn}: the model asked for {} tool calls; the first {cap} run, the other \
                 {} are answered with an error (Limits::max_tool_calls_per_turn)",
                calls.len(),
                over.len()
            );
            let text = format!(
                "Not run: this turn asked for {} tool calls and at most {cap} run per turn. \
                 Call again the tools you still need, at most {cap} at a time.",
                calls.len()
            );
            results.extend(
                over.iter()
                    .map(|call| failed(turn, call, None, &call.name, text.clone())),
            );
        }
        results
    }

    /// Runs `calls` on a pool of at most [`Limits::max_parallel_tool_calls`] named threads, each
    /// taking the next call not yet taken, all joined before this returns. A call whose thread
    /// panicked, or that no thread could take, is answered with an error.
    fn run_calls(
        &self,
        turn: usize,
        calls: &[ToolCall],
        tools: &HashMap<&str, &HubTool>,
    ) -> Vec<(ToolResultMessage, ToolCallRecord)> {
        if calls.len() <= 1 {
            return calls
                .iter()
                .map(|call| self.execute_one(turn, call, tools))
                .collect();
        }
        let workers = self.limits.max_parallel_tool_calls.clamp(1, calls.len());
        let next = AtomicUsize::new(0);
        let done: Vec<OnceLock<(ToolResultMessage, ToolCallRecord)>> =
            calls.iter().map(|_| OnceLock::new()).collect();
        // A call that panics (a hook of the program's) loses its own result only: its thread
        // goes on to the next call, as if each call had a thread of its own.
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(call) = calls.get(i) else { break };
            let run = AssertUnwindSafe(|| self.execute_one(turn, call, tools));
            if let Ok(out) = std::panic::catch_unwind(run) {
                let _ = done[i].set(out);
            }
        };
        // With one thread started, every call is taken; with none, no call is.
        let mut none_started = false;
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .filter_map(|w| {
                    std::thread::Builder::new()
                        .name(format!("mcp-agent-call-{w}"))
                        .spawn_scoped(s, work)
                        .ok()
                })
                .collect();
            none_started = handles.is_empty();
            for h in handles {
                // A call that panicked keeps no result; it is answered below.
                let _ = h.join();
            }
        });
        calls
            .iter()
            .zip(done)
            .map(|(call, slot)| {
                slot.into_inner().unwrap_or_else(|| {
                    let why = if none_started {
                        "no thread could be started for the call"
                    } else {
                        "the tool call panicked"
                    };
                    failed(turn, call, None, &call.name, why.into())
                })
            })
            .collect()
    }

    fn execute_one(
        &self,
        turn: usize,
        call: &ToolCall,
        tools: &HashMap<&str, &HubTool>,
    ) -> (ToolResultMessage, ToolCallRecord) {
        let started = Instant::now();
        if self.file_tool.as_deref() == Some(call.name.as_str()) {
            return self.read_skill_file(turn, call, started);
        }
        if let Some(search) = &self.search_run {
            let refused = match search.route(&call.name) {
                Routed::Offered => None,
                Routed::Search => return self.search(turn, call, search),
                Routed::NotOffered(text) => tools
                    .get(call.name.as_str())
                    .map(|t| (Some(t.server.clone()), t.tool.name.clone(), text)),
                Routed::Unknown(text) => Some((None, call.name.clone(), text)),
            };
            if let Some((server, tool, text)) = refused {
                let out = failed(turn, call, server, &tool, text);
                self.finished(&out.1, started);
                return out;
            }
        }
        let Some(tool) = tools.get(call.name.as_str()) else {
            let mut names: Vec<&str> = tools.keys().copied().collect();
            names.sort_unstable();
            let shown = if names.len() > 40 {
                format!("{}, ...", names[..40].join(", "))
            } else {
                names.join(", ")
            };
            let text = format!(
                "Tool not found: `{}`. The available tools are: {shown}.",
                call.name
            );
            let out = failed(turn, call, None, &call.name, text);
            self.finished(&out.1, started);
            return out;
        };
        let server = tool.server.clone();
        let own = tool.tool.name.clone();
        let arguments = match parse_arguments(&call.arguments) {
            Ok(a) => a,
            Err(why) => {
                let text = format!(
                    "The arguments of `{}` are not valid: {why}. Send one JSON object.",
                    call.name
                );
                let out = failed(turn, call, Some(server), &own, text);
                self.finished(&out.1, started);
                return out;
            }
        };
        let policy = self.hub.server_policy(&server);
        let ask = ToolApproval::new(&server, &own, arguments.clone(), policy.as_ref());
        let decision = match &self.approve {
            Some(approve) => approve(&ask),
            None => approval::without_hook(&ask),
        };
        let declined = match decision {
            ApprovalDecision::Approve => None,
            ApprovalDecision::DeclineWith(text) => Some(text),
            ApprovalDecision::Decline => {
                Some(format!("The user declined the call of `{}`.", call.name))
            }
        };
        if let Some(text) = declined {
            if ask.required {
                log::info!(
                    "server `{server}`: call of `{own}` not run: it needs the user's approval"
                );
            }
            let mut out = failed(turn, call, Some(server), &own, text);
            out.1.arguments = arguments;
            self.finished(&out.1, started);
            return out;
        }
        self.emit(AgentEvent::ToolCallStarted {
            turn,
            id: call.id.clone(),
            server: server.clone(),
            tool: own.clone(),
            arguments: arguments.clone(),
        });
        let opts = self.call_options();
        let (content, is_error) =
            match self
                .hub
                .call_tool_with(&call.name, arguments.clone(), &opts)
            {
                Ok(result) => (
                    budget::parts(&result, self.limits.max_tool_result_bytes),
                    result.is_error == Some(true),
                ),
                Err(e) => (
                    budget::text(
                        error_text(&call.name, &e),
                        self.limits.max_tool_result_bytes,
                    ),
                    true,
                ),
            };
        let out = answered(turn, call, Some(server), own, arguments, content, is_error);
        self.finished(&out.1, started);
        out
    }

    /// The options of a tool call or skill file read: the run's tool timeout, and its
    /// cancellation, which cancels the request (`notifications/cancelled`) and ends its wait.
    fn call_options(&self) -> CallOptions {
        let mut opts = CallOptions::new();
        if let Some(t) = self.tool_timeout {
            opts = opts.timeout(t);
        }
        opts.cancel = Some(self.cancel.clone());
        opts
    }

    /// Answers a call of the skill file tool: the file read from the offered skill that lists
    /// it, verified, as text cut to the tool-result budget; or what went wrong.
    fn read_skill_file(
        &self,
        turn: usize,
        call: &ToolCall,
        started: Instant,
    ) -> (ToolResultMessage, ToolCallRecord) {
        let arguments = parse_arguments(&call.arguments).unwrap_or(Value::Null);
        let found = skills::file_arguments(&arguments).and_then(|(uri, server)| {
            let skill = self.skills.skill_with_file(&uri, server.as_deref())?;
            Ok((uri, skill))
        });
        let (uri, skill) = match found {
            Ok(f) => f,
            Err(text) => {
                let text = format!("`{}` was not run: {text}", call.name);
                let mut out = failed(turn, call, None, &call.name, text);
                out.1.arguments = arguments;
                self.finished(&out.1, started);
                return out;
            }
        };
        let server = skill.server().to_owned();
        self.emit(AgentEvent::ToolCallStarted {
            turn,
            id: call.id.clone(),
            server: server.clone(),
            tool: call.name.clone(),
            arguments: arguments.clone(),
        });
        let read = match self.hub.client(&server) {
            Some(client) => skill.read_file_with(&client, &uri, &self.call_options()),
            None => Err(Error::NotConnected {
                server: server.clone(),
            }),
        };
        let max = self.limits.max_tool_result_bytes;
        let (content, is_error) = match read {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => (budget::text(text, max), false),
                Err(e) => (
                    budget::text(
                        format!(
                            "The skill file `{uri}` is not text ({} bytes): it cannot be shown.",
                            e.as_bytes().len()
                        ),
                        max,
                    ),
                    true,
                ),
            },
            Err(e) => (budget::text(error_text(&call.name, &e), max), true),
        };
        let tool = call.name.clone();
        let out = answered(turn, call, Some(server), tool, arguments, content, is_error);
        self.finished(&out.1, started);
        out
    }

    /// Answers a call of the search tool.
    fn search(
        &self,
        turn: usize,
        call: &ToolCall,
        search: &SearchRun,
    ) -> (ToolResultMessage, ToolCallRecord) {
        let answer = search.search(&call.arguments);
        self.emit(AgentEvent::ToolsFound {
            turn,
            id: call.id.clone(),
            query: answer.query,
            tools: answer.found,
        });
        let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let tool = search.name().to_owned();
        let content = vec![Part::Text(answer.text)];
        answered(turn, call, None, tool, arguments, content, answer.is_error)
    }

    fn finished(&self, r: &ToolCallRecord, started: Instant) {
        self.emit(AgentEvent::ToolCallFinished {
            turn: r.turn,
            id: r.id.clone(),
            server: r.server.clone().unwrap_or_default(),
            tool: r.tool.clone(),
            is_error: r.is_error,
            output: r.output.clone(),
            elapsed: started.elapsed(),
        });
    }
}

/// The arguments as a JSON object: blank means `{}`.
fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(Value::Null) => Ok(json!({})),
        Ok(_) => Err("they are not a JSON object".into()),
        Err(e) => Err(format!("they are not JSON ({e})")),
    }
}

/// What the model is told about a call that failed with `e`.
fn error_text(name: &str, e: &Error) -> String {
    match e {
        Error::Timeout { after, .. } => format!(
            "The tool `{name}` did not answer within {:.1} s and was cancelled.",
            after.as_secs_f64()
        ),
        other => format!("An error occurred while running the tool `{name}`: {other}"),
    }
}

fn failed(
    turn: usize,
    call: &ToolCall,
    server: Option<String>,
    tool: &str,
    text: String,
) -> (ToolResultMessage, ToolCallRecord) {
    let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let content = vec![Part::Text(text)];
    answered(
        turn,
        call,
        server,
        tool.to_owned(),
        arguments,
        content,
        true,
    )
}

/// The answer to `call` that the model gets (`content`), and its record.
fn answered(
    turn: usize,
    call: &ToolCall,
    server: Option<String>,
    tool: String,
    arguments: Value,
    content: Vec<Part>,
    is_error: bool,
) -> (ToolResultMessage, ToolCallRecord) {
    let record = ToolCallRecord {
        turn,
        id: call.id.clone(),
        name: call.name.clone(),
        server,
        tool,
        arguments,
        is_error,
        output: joined_text(&content),
    };
    let result = ToolResultMessage {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    };
    (result, record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AssistantMessage, ModelResponse};
    use std::sync::Mutex;

    /// Answers from a list, recording the requests.
    struct Script {
        answers: Mutex<Vec<AssistantMessage>>,
        seen: Mutex<Vec<usize>>,
    }

    impl Model for Script {
        fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
            self.seen.lock().expect("lock").push(req.messages.len());
            let mut a = self.answers.lock().expect("lock");
            if a.is_empty() {
                return Err(ModelError::Config("script ended".into()));
            }
            Ok(ModelResponse::new(a.remove(0)))
        }
    }

    fn script(answers: Vec<AssistantMessage>) -> Script {
        Script {
            answers: Mutex::new(answers),
            seen: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn unknown_tools_and_bad_arguments_are_answered_in_order() {
        let hub = Hub::default();
        let model = script(vec![
            AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("a", "nope", "{}"),
                    ToolCall::new("b", "also_nope", "[1"),
                ],
            ),
            AssistantMessage::text("done"),
        ]);
        let mut agent = Agent::new(&hub, &model);
        let out = agent.run("go").expect("runs");
        assert_eq!((out.text.as_str(), out.turns), ("done", 2));
        let ids: Vec<&str> = out
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(out
            .tool_calls
            .iter()
            .all(|c| c.is_error && c.server.is_none()));
        assert!(out.tool_calls[0]
            .output
            .starts_with("Tool not found: `nope`"));
        // The conversation is kept: the next run sends the earlier messages too.
        let model2 = script(vec![AssistantMessage::text("again")]);
        let mut agent2 = Agent::new(&hub, &model2);
        assert_eq!(agent2.run("one").expect("runs").text, "again");
        assert!(matches!(
            agent2.run("two"),
            Err(AgentError::Model { turn: 1, .. })
        ));
        // The second request carried the first run's messages; the failed run left none.
        assert_eq!(*model2.seen.lock().expect("lock"), [1, 3]);
        assert_eq!(agent2.messages().len(), 2, "a failed run leaves nothing");
        assert_eq!(agent.messages().len(), 5);
    }

    #[test]
    fn a_call_that_panics_loses_only_its_own_result() {
        let hub = Hub::default();
        let calls = vec![
            ToolCall::new("a", "nope", "{}"),
            ToolCall::new("b", "also_nope", "{}"),
            ToolCall::new("c", "still_nope", "{}"),
        ];
        let model = script(vec![
            AssistantMessage::with_tool_calls("", calls),
            AssistantMessage::text("done"),
        ]);
        // One thread for the three calls, and a hook that panics on the first call's event.
        let mut agent = Agent::new(&hub, &model)
            .limits(Limits::default().with_max_parallel_tool_calls(1))
            .on_event(|e| {
                if matches!(e, AgentEvent::ToolCallFinished { id, .. } if id == "a") {
                    panic!("the program's hook failed");
                }
            });
        let out = agent.run("go").expect("runs");
        let outputs: Vec<&str> = out.tool_calls.iter().map(|c| c.output.as_str()).collect();
        assert_eq!(outputs[0], "the tool call panicked");
        assert!(
            outputs[1].starts_with("Tool not found: `also_nope`"),
            "{outputs:?}"
        );
        assert!(
            outputs[2].starts_with("Tool not found: `still_nope`"),
            "{outputs:?}"
        );
    }

    #[test]
    fn the_turn_limit_carries_the_transcript_and_leaves_the_conversation() {
        let hub = Hub::default();
        let call = || AssistantMessage::with_tool_calls("", vec![ToolCall::new("x", "nope", "{}")]);
        let model = script(vec![call(), call(), call()]);
        let mut agent = Agent::new(&hub, &model).max_turns(2);
        match agent.run("loop") {
            Err(AgentError::TurnLimit {
                turns,
                transcript,
                tool_calls,
                ..
            }) => {
                assert_eq!(turns, 2);
                assert_eq!(transcript.len(), 5);
                assert_eq!(tool_calls.len(), 2);
            }
            other => panic!("expected the turn limit, got {other:?}"),
        }
        assert!(agent.messages().is_empty());
    }

    #[test]
    fn a_cancelled_run_stops_before_the_model_is_asked() {
        let hub = Hub::default();
        let model = script(vec![AssistantMessage::text("never")]);
        let mut agent = Agent::new(&hub, &model);
        agent.cancel_handle().cancel();
        assert!(matches!(agent.run("hi"), Err(AgentError::Cancelled { .. })));
        assert!(model.seen.lock().expect("lock").is_empty());
    }

    #[test]
    fn tool_search_over_no_tools_offers_none() {
        struct Count(Mutex<Vec<usize>>);
        impl Model for Count {
            fn complete(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
                self.0.lock().expect("lock").push(req.tools.len());
                Ok(ModelResponse::new(AssistantMessage::text("ok")))
            }
        }
        let hub = Hub::default();
        let model = Count(Mutex::new(Vec::new()));
        let mut agent = Agent::new(&hub, &model).tool_search(ToolSearch::new());
        agent.run("hi").expect("runs");
        assert_eq!(*model.0.lock().expect("lock"), [0]);
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(parse_arguments(""), Ok(json!({})));
        assert_eq!(parse_arguments("null"), Ok(json!({})));
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{").is_err());
    }
}
