//! Tool search: the model is offered a `search_tools` tool and a few others instead of every
//! tool of the run, and the tools a search finds are offered from the next turn.
//!
//! ```text
//!   run start ── every tool of the run indexed: "name words + title + description" (the tool)
//!      │                                        "server name + description" (its context)
//!      │         found ← the tools the conversation already called
//!   each turn ── offered = search_tools + pinned + found (oldest dropped past max_found)
//!   search_tools {query, limit?} ── TF cosine (the Hub's discovery scoring), ranked
//!      └─> names + one-line descriptions; those tools join `found` (callable next turn)
//!   a call of a tool of the run that was not offered ── not run; it joins `found`, and the
//!      model is told to call it again now that its definition is offered
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::types::Message;
use crate::config::char_floor;
use crate::hub::{HubTool, Terms};
use crate::model::Tool;
use crate::sync::lock;
use crate::Hub;

/// The tool-search mode of an [`Agent`](super::Agent): instead of every tool of the run, the
/// model is offered a `search_tools` tool, the pinned tools and the tools it found or used,
/// so a request carries a few tool definitions however many tools the servers have.
///
/// `search_tools` takes `query` (a few words) and an optional `limit`, and answers the
/// best-matching tools' names and one-line descriptions, ranked by the TF cosine similarity
/// the Hub's [server discovery](crate::hub::ServerDiscovery) uses: against the tool's name
/// (split into words), title and description, plus a smaller weight for its server's name
/// and description, and a bonus when the query names the tool exactly. The tools found are
/// offered, with their full definitions, from the model's next turn. The tools the
/// conversation already called are offered from the start of a run.
///
/// A call of a tool of the run that was not offered yet is not run: the tool is added to the
/// offered ones and the model is told to call it again (so it sees the tool's schema first).
/// A search is not a tool call of a server: it sends [`AgentEvent::ToolsFound`](super::AgentEvent::ToolsFound)
/// (not `ToolCallStarted`/`ToolCallFinished`), and its [`ToolCallRecord`](super::ToolCallRecord)
/// has no server.
///
/// The search tool is called `search_tools`; when a tool of the run already has that name, it
/// is `search_tools_2` (or the next free number), so the server's tool keeps its name.
///
/// ```
/// use mcp_blocking::agent::{Agent, ToolSearch};
/// # struct M; impl mcp_blocking::agent::Model for M { fn complete(&self, _: &mcp_blocking::agent::ModelRequest) -> Result<mcp_blocking::agent::ModelResponse, mcp_blocking::agent::ModelError> { unimplemented!() } }
/// let hub = mcp_blocking::Hub::default();
/// let agent = Agent::new(&hub, M).tool_search(
///     ToolSearch::new()
///         .pin(["read_file"])
///         .max_results(5),
/// );
/// # drop(agent);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSearch {
    pinned: Vec<String>,
    max_results: usize,
    max_found: usize,
    max_query_bytes: usize,
}

impl Default for ToolSearch {
    fn default() -> Self {
        ToolSearch {
            pinned: Vec::new(),
            max_results: Self::DEFAULT_MAX_RESULTS,
            max_found: Self::DEFAULT_MAX_FOUND,
            max_query_bytes: Self::DEFAULT_MAX_QUERY_BYTES,
        }
    }
}

impl ToolSearch {
    /// The search tool's name (unless a tool of the run has it, see [`ToolSearch`]).
    pub const NAME: &'static str = "search_tools";
    /// The default of [`max_results`](Self::max_results): 8.
    pub const DEFAULT_MAX_RESULTS: usize = 8;
    /// The default of [`max_found`](Self::max_found): 32.
    pub const DEFAULT_MAX_FOUND: usize = 32;
    /// The default of [`max_query_bytes`](Self::max_query_bytes): 512.
    pub const DEFAULT_MAX_QUERY_BYTES: usize = 512;

    /// Tool search with the defaults and nothing pinned.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tools offered in every turn, by offered name or the server's own name (as an
    /// allow-list entry matches, see [`HubTool::matches`]); not counted in
    /// [`max_found`](Self::max_found).
    #[must_use]
    pub fn pin<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.pinned.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The most tools one search answers (the model's `limit` is capped by it; at least 1).
    #[must_use]
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.max(1);
        self
    }

    /// The most found or used tools offered at once; past it, the one found or used longest
    /// ago is no longer offered (until found again). At least 1.
    #[must_use]
    pub fn max_found(mut self, n: usize) -> Self {
        self.max_found = n.max(1);
        self
    }

    /// The longest query searched, in bytes; a longer one is cut (at a character boundary) and
    /// the answer says so.
    #[must_use]
    pub fn max_query_bytes(mut self, n: usize) -> Self {
        self.max_query_bytes = n;
        self
    }
}

/// How much a query matching the tool's server counts, next to matching the tool itself.
const SERVER_WEIGHT: f64 = 0.3;
/// Added when a word of the query is the tool's offered or own name.
const EXACT_BONUS: f64 = 1.0;
/// The longest description shown in a search's answer, in bytes.
const DESCRIPTION_BYTES: usize = 160;

/// What a call's name is, in a run with tool search.
#[derive(Debug, PartialEq)]
pub(crate) enum Routed {
    /// The search tool.
    Search,
    /// A tool offered in this turn: it runs.
    Offered,
    /// A tool of the run not offered in this turn: not run, told to call again.
    NotOffered(String),
    /// No tool of the run.
    Unknown(String),
}

/// One search's answer.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The query as searched (cut to the cap).
    pub(crate) query: String,
    /// The offered names found, best first.
    pub(crate) found: Vec<String>,
    /// The text for the model.
    pub(crate) text: String,
    /// Whether the call was refused (no query).
    pub(crate) is_error: bool,
}

/// The tool search of one run: the index of the run's tools and what is offered.
pub(crate) struct SearchRun {
    options: ToolSearch,
    /// The search tool's offered name.
    name: String,
    tools: Vec<HubTool>,
    index: Vec<(Terms, usize)>,
    servers: Vec<Terms>,
    by_name: HashMap<String, usize>,
    state: Mutex<Offer>,
}

#[derive(Default)]
struct Offer {
    /// Found or used tools, oldest first.
    found: VecDeque<usize>,
    /// What this turn offered.
    offered: Vec<bool>,
}

impl SearchRun {
    /// Indexes `tools` (the run's tools), with the descriptions of their servers from `hub`,
    /// and marks the tools `earlier` (the conversation so far) called as used.
    pub(crate) fn new(
        options: &ToolSearch,
        hub: &Hub,
        tools: &[HubTool],
        earlier: &[Message],
    ) -> Self {
        let name = super::free_name(ToolSearch::NAME, |n| tools.iter().any(|t| t.name == n));
        let mut server_names: Vec<&str> = Vec::new();
        let mut servers = Vec::new();
        let mut index = Vec::with_capacity(tools.len());
        for t in tools {
            let s = match server_names.iter().position(|s| *s == t.server) {
                Some(i) => i,
                None => {
                    let description = hub
                        .client(&t.server)
                        .map(|c| c.config().description().to_owned())
                        .unwrap_or_default();
                    servers.push(Terms::of(&format!("{} {description}", words(&t.server))));
                    server_names.push(&t.server);
                    servers.len() - 1
                }
            };
            let text = format!(
                "{} {} {} {}",
                words(&t.name),
                if t.tool.name == t.name {
                    String::new()
                } else {
                    words(&t.tool.name)
                },
                t.tool.title.as_deref().unwrap_or(""),
                t.description()
            );
            index.push((Terms::of(&text), s));
        }
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let run = SearchRun {
            options: options.clone(),
            name,
            tools: tools.to_vec(),
            index,
            servers,
            by_name,
            state: Mutex::new(Offer {
                found: VecDeque::new(),
                offered: vec![false; tools.len()],
            }),
        };
        for m in earlier {
            if let Message::Assistant(a) = m {
                for c in &a.tool_calls {
                    run.note(&c.name);
                }
            }
        }
        run
    }

    /// The search tool's offered name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The tools of this turn: the search tool, the pinned tools and the found ones.
    pub(crate) fn offer(&self) -> Vec<HubTool> {
        let mut st = lock(&self.state);
        let st = &mut *st;
        st.offered.iter_mut().for_each(|o| *o = false);
        let mut out = vec![self.search_tool()];
        let pinned = self
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| self.options.pinned.iter().any(|p| t.matches(p)))
            .map(|(i, _)| i);
        for i in pinned.chain(st.found.iter().copied()) {
            if !st.offered[i] {
                st.offered[i] = true;
                out.push(self.tools[i].clone());
            }
        }
        out
    }

    /// What the call `name` is; a tool of the run that runs, or that is to be called again,
    /// becomes the most recently found.
    pub(crate) fn route(&self, name: &str) -> Routed {
        if name == self.name {
            return Routed::Search;
        }
        let Some(&i) = self.by_name.get(name) else {
            return Routed::Unknown(format!(
                "Tool not found: `{name}`. Call `{}` with a few words about the task to find \
                 the tools that can do it.",
                self.name
            ));
        };
        let offered = lock(&self.state).offered[i];
        self.note(name);
        if offered {
            Routed::Offered
        } else {
            Routed::NotOffered(format!(
                "Not run: `{name}` was not loaded yet. Its definition is now loaded: call it \
                 again, with arguments that match its schema."
            ))
        }
    }

    /// Moves the tool `name` (when it is one of the run's) to the newest end of the found
    /// tools, dropping the oldest past the cap.
    fn note(&self, name: &str) {
        if let Some(&i) = self.by_name.get(name) {
            let mut st = lock(&self.state);
            st.found.retain(|&f| f != i);
            st.found.push_back(i);
            while st.found.len() > self.options.max_found {
                st.found.pop_front();
            }
        }
    }

    /// Runs a search for the call's `arguments` (its JSON text).
    pub(crate) fn search(&self, arguments: &str) -> Answer {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let raw = args.get("query").and_then(Value::as_str).unwrap_or("");
        let end = char_floor(raw, self.options.max_query_bytes);
        let query = raw[..end].trim().to_owned();
        let q = Terms::of(&query);
        if query.is_empty() || q.is_empty() {
            return Answer {
                query,
                found: Vec::new(),
                text: format!(
                    "`{}` needs a `query`: a few words about what a tool should do, such as \
                     \"create github issue\".",
                    self.name
                ),
                is_error: true,
            };
        }
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(self.options.max_results, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
            .clamp(1, self.options.max_results);
        let named: Vec<&str> = query.split_whitespace().collect();
        let mut scored: Vec<(f64, usize)> = self
            .index
            .iter()
            .enumerate()
            .map(|(i, (terms, s))| {
                let t = &self.tools[i];
                let exact = named.iter().any(|w| *w == t.name || *w == t.tool.name);
                let score = q.similarity(terms)
                    + SERVER_WEIGHT * q.similarity(&self.servers[*s])
                    + if exact { EXACT_BONUS } else { 0.0 };
                (score, i)
            })
            .filter(|(score, _)| *score > 0.0)
            .collect();
        // Best first; equal scores keep the run's order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(limit);
        let cut = if end < raw.trim_end().len() {
            format!(
                " (the query was cut to its first {} bytes)",
                self.options.max_query_bytes
            )
        } else {
            String::new()
        };
        if scored.is_empty() {
            return Answer {
                text: format!(
                    "No tool matches \"{query}\"{cut}. Try other words: tools are matched by \
                     the words of their names and descriptions."
                ),
                query,
                found: Vec::new(),
                is_error: false,
            };
        }
        let mut text = format!(
            "{} tool(s) for \"{query}\"{cut}, best first. They can be called from your next \
             message, by these names:",
            scored.len()
        );
        let mut found = Vec::with_capacity(scored.len());
        for (_, i) in &scored {
            let t = &self.tools[*i];
            text.push_str(&format!("\n- {}: {}", t.name, one_line(t.description())));
            found.push(t.name.clone());
        }
        // Noted best last, so the best stay longest when the cap drops the oldest.
        for name in found.iter().rev() {
            self.note(name);
        }
        Answer {
            query,
            found,
            text,
            is_error: false,
        }
    }

    /// The search tool's definition.
    fn search_tool(&self) -> HubTool {
        let mut tool = Tool::new(
            self.name.clone(),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string",
                        "description": "A few words about what the tool should do, e.g. \"create github issue\""},
                    "limit": {"type": "integer", "minimum": 1,
                        "maximum": self.options.max_results,
                        "description": format!("How many tools to return (default and most: {})",
                            self.options.max_results)}
                },
                "required": ["query"]
            }),
        );
        tool.description = Some(format!(
            "Searches the {} available tools by what they do. Only some tools are loaded at \
             first: when none of them fits the task, search here; the tools found can be \
             called from your next message.",
            self.tools.len()
        ));
        HubTool {
            name: self.name.clone(),
            server: String::new(),
            tool,
        }
    }
}

/// A name's words: `_`, `-`, `.` and lower-to-upper case changes become spaces
/// (`listPullRequests` and `list_pull_requests` are both "list pull requests").
fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c);
        } else {
            prev_lower = false;
            out.push(' ');
        }
    }
    out
}

/// The first line of `text`, control characters removed, cut to [`DESCRIPTION_BYTES`].
fn one_line(text: &str) -> String {
    let line: String = text
        .trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let end = char_floor(&line, DESCRIPTION_BYTES);
    if end < line.len() {
        format!("{}…", &line[..end])
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AssistantMessage, ToolCall};

    fn tool(server: &str, name: &str, description: &str) -> HubTool {
        let mut t = Tool::new(name, json!({"type": "object"}));
        t.description = Some(description.into());
        HubTool {
            name: name.into(),
            server: server.into(),
            tool: t,
        }
    }

    fn tools() -> Vec<HubTool> {
        vec![
            tool("fs", "read_file", "Read a file from disk."),
            tool("fs", "write_file", "Write text to a file."),
            tool("gh", "createIssue", "Open an issue in a repository."),
            tool(
                "gh",
                "search_tools",
                "Search the repository's tools directory.",
            ),
            tool("db", "run_query", "Run a SQL query on the database."),
        ]
    }

    fn names(v: &[HubTool]) -> Vec<&str> {
        v.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn words_split_names() {
        assert_eq!(words("listPullRequests").trim(), "list Pull Requests");
        assert_eq!(words("read_file-v2.x").trim(), "read file v2 x");
    }

    #[test]
    fn the_search_tool_never_takes_a_tool_name() {
        let hub = Hub::default();
        let run = SearchRun::new(&ToolSearch::new(), &hub, &tools(), &[]);
        assert_eq!(run.name(), "search_tools_2");
        assert_eq!(names(&run.offer()), ["search_tools_2"]);
        assert_eq!(run.route("search_tools_2"), Routed::Search);
        assert!(matches!(run.route("search_tools"), Routed::NotOffered(_)));
    }

    #[test]
    fn search_ranks_finds_and_offers_next_turn() {
        let hub = Hub::default();
        let run = SearchRun::new(&ToolSearch::new().pin(["run_query"]), &hub, &tools(), &[]);
        assert_eq!(names(&run.offer()), ["search_tools_2", "run_query"]);
        let a = run.search(r#"{"query": "open an issue", "limit": 1}"#);
        assert_eq!(a.found, ["createIssue"]);
        assert!(a
            .text
            .contains("- createIssue: Open an issue in a repository."));
        // Found in this turn: callable only once offered.
        assert!(matches!(run.route("createIssue"), Routed::NotOffered(_)));
        assert_eq!(
            names(&run.offer()),
            ["search_tools_2", "run_query", "createIssue"]
        );
        assert_eq!(run.route("createIssue"), Routed::Offered);
        assert!(matches!(run.route("nope"), Routed::Unknown(t) if t.contains("search_tools_2")));
        // The exact name wins over word matches.
        let a = run.search(r#"{"query": "write_file please"}"#);
        assert_eq!(a.found[0], "write_file");
    }

    #[test]
    fn blank_queries_are_refused_and_long_ones_cut() {
        let hub = Hub::default();
        let run = SearchRun::new(&ToolSearch::new().max_query_bytes(8), &hub, &tools(), &[]);
        assert!(run.search("{}").is_error);
        assert!(run.search(r#"{"query": "  "}"#).is_error);
        assert!(run.search("not json").is_error);
        let a = run.search(r#"{"query": "database zzzzzzzzzzzzzzzzzzzzzzzzz"}"#);
        assert_eq!(a.query, "database");
        assert_eq!(a.found, ["run_query"]);
        assert!(a.text.contains("cut to its first 8 bytes"), "{}", a.text);
        let none = run.search(r#"{"query": "weather"}"#);
        assert!(none.found.is_empty() && none.text.starts_with("No tool matches"));
    }

    #[test]
    fn the_found_set_is_capped_and_seeded_from_the_conversation() {
        let hub = Hub::default();
        let earlier = vec![Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("1", "read_file", "{}")],
        ))];
        let run = SearchRun::new(&ToolSearch::new().max_found(2), &hub, &tools(), &earlier);
        assert_eq!(names(&run.offer()), ["search_tools_2", "read_file"]);
        run.route("write_file");
        run.route("run_query");
        // read_file was the oldest: dropped.
        assert_eq!(
            names(&run.offer()),
            ["search_tools_2", "write_file", "run_query"]
        );
        // Results past the limit are not returned.
        let a = run.search(r#"{"query": "file", "limit": 50}"#);
        assert!(a.found.len() <= 8);
    }
}
