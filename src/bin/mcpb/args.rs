//! The command line, declared with clap: the global options, one enum variant per command.
//!
//! To add a command: one variant in [`Command`] (its arguments as a struct deriving `Args`, or
//! inline fields), one module with a function taking plain parameters, and one arm in
//! `main::run_command` (or `main::run` when it does not talk to one connected server).
//! Completions, the man page and `mcpb help COMMAND` follow from the declaration.

use std::time::Duration;

use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use mcp_blocking::config::MAX_TIMEOUT;
use serde_json::{Map, Value};

/// The exit codes, shown at the end of `mcpb --help`.
pub(crate) const EXIT_CODES: &str = "\
Exit status:
  0 ok
  1 the tool returned isError
  2 usage or config error, a command the server's capabilities do not offer, or a
    tool the server's config excludes (excludeTools, disabled_tools, ...)
  3 could not connect (a handshake that times out included)
  4 timed out
  5 the server answered with a JSON-RPC error (or a malformed result; or a task was
    cancelled, or tasks are not supported)
  6 connection closed mid-request
  7 the server refused the credentials (HTTP 401 or 403) after connecting (while
    connecting it is 3), or it needs an OAuth sign-in: run `mcpb login` first
  8 run, chat: the turn limit (--max-turns) was reached before the model answered
  9 run, chat: the model API failed (unreachable, refused, timed out, unreadable answer)
  130 interrupted (Ctrl-C): the request in flight was cancelled

Examples:
  mcpb --stdio \"npx -y @modelcontextprotocol/server-everything\" call echo message=3
  mcpb --url http://localhost:3001/mcp --json tools
  mcpb --config .mcp.json servers --check
  mcpb --config .mcp.json tools                  (every server, in parallel)
  mcpb --config .mcp.json call fs/read_file path=/tmp/notes.txt
  mcpb servers                                   (the config files found from here)
  mcpb trust                                     (approve this project's config files)
  mcpb help json                                 (the --json output of each command)";

/// mcpb: talk to Model Context Protocol servers from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "mcpb",
    version,
    about = "mcpb: talk to Model Context Protocol servers from the command line",
    after_help = EXIT_CODES,
    disable_help_subcommand = true,
    max_term_width = 100
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The options every command takes (they may come before or after the command).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct Global {
    /// Start CMD (split like a shell would, quotes honoured, no shell run) and speak MCP over
    /// its stdin/stdout
    #[arg(long, value_name = "CMD ARGS", global = true, help_heading = "Server")]
    pub(crate) stdio: Option<String>,
    /// A remote server: Streamable HTTP falling back to legacy SSE; ws:// and wss:// URLs are
    /// WebSocket
    #[arg(long, value_name = "URL", global = true, help_heading = "Server")]
    pub(crate) url: Option<String>,
    /// The transport of --url, when its scheme does not say
    #[arg(long, value_enum, global = true, help_heading = "Server")]
    pub(crate) transport: Option<UrlTransport>,
    /// A host config file (.mcp.json, Claude Desktop, VS Code, YAML list), trusted as named;
    /// without --server, tools, resources, templates, prompts and `servers --check` cover
    /// every server in it. Without --stdio, --url and --config: the files the hosts read,
    /// found from the current folder (`mcpb servers` lists them; `mcpb trust` approves a
    /// project's)
    #[arg(long, value_name = "FILE", global = true, help_heading = "Server")]
    pub(crate) config: Option<String>,
    /// The server of --config to use (run and chat: repeatable, all the file's servers when
    /// left out)
    #[arg(
        long = "server",
        value_name = "NAME",
        global = true,
        help_heading = "Server"
    )]
    pub(crate) servers: Vec<String>,
    /// A value for `${input:ID}` in a VS Code config, and for the field ID of a form a server
    /// asks the user to fill in (elicitation), answering it without a terminal (repeatable);
    /// a missing `${input:ID}` is asked for when stdin is a terminal
    #[arg(long = "input", value_name = "ID=VALUE", global = true, value_parser = key_value,
          help_heading = "Server")]
    pub(crate) inputs: Vec<(String, String)>,
    /// Let a config's `headersHelper` run: a command whose output supplies a remote server's
    /// headers (otherwise it is reported by `servers`, not run)
    #[arg(long, global = true, help_heading = "Server")]
    pub(crate) allow_header_commands: bool,
    /// Load a server whose config asks for a limit mcpb cannot enforce (VS Code's
    /// `sandboxEnabled` on a remote server), without that limit; otherwise the server does not
    /// load
    #[arg(long, global = true, help_heading = "Server")]
    pub(crate) accept_unenforced: bool,

    /// Start each stdio server (of --stdio or of the config) confined (Linux: Landlock and
    /// resource limits): it may read its working folder, its command's folder and the
    /// system's folders, write nowhere and reach no network, plus what the options below
    /// grant. A server whose file asked for a sandbox (VS Code's `sandboxEnabled`) keeps that
    /// one, with the options below applied to it. Remote servers are not affected (they run
    /// in no process of mcpb's); with --url it is an error. A sandbox that cannot be applied
    /// in full (an older kernel, another system) stops the server: see --best-effort-sandbox
    #[arg(long, global = true, help_heading = "Sandbox (stdio servers)")]
    pub(crate) sandbox: bool,
    /// With --sandbox: the server may also read DIR (a folder and all it holds, or a file;
    /// repeatable)
    #[arg(
        long = "allow-read",
        value_name = "DIR",
        global = true,
        requires = "sandbox",
        value_parser = sandbox_path,
        help_heading = "Sandbox (stdio servers)"
    )]
    pub(crate) allow_read: Vec<String>,
    /// With --sandbox: the server may read, write, create and remove files in DIR
    /// (repeatable)
    #[arg(
        long = "allow-write",
        value_name = "DIR",
        global = true,
        requires = "sandbox",
        value_parser = sandbox_path,
        help_heading = "Sandbox (stdio servers)"
    )]
    pub(crate) allow_write: Vec<String>,
    /// With --sandbox: the server may reach HOST (or `*.DOMAIN`) on PORT, by default 80 and
    /// 443, through a proxy on loopback that mcpb runs for it (HTTP_PROXY and HTTPS_PROXY
    /// point at it; repeatable)
    #[arg(long = "allow-net", value_name = "HOST[:PORT]", global = true, requires = "sandbox",
          conflicts_with = "no_net", value_parser = domain_rule,
          help_heading = "Sandbox (stdio servers)")]
    pub(crate) allow_net: Vec<String>,
    /// With --sandbox: no network at all, also none a server's file allowed
    #[arg(
        long,
        global = true,
        requires = "sandbox",
        help_heading = "Sandbox (stdio servers)"
    )]
    pub(crate) no_net: bool,
    /// With --sandbox: start the server with what this system can apply of the sandbox,
    /// saying on stderr what was not applied, instead of not starting it
    #[arg(
        long,
        global = true,
        requires = "sandbox",
        help_heading = "Sandbox (stdio servers)"
    )]
    pub(crate) best_effort_sandbox: bool,

    /// Per-request timeout in seconds, handshake included (`run`, `chat`: the model's requests
    /// too, which otherwise get 120); more than 0, at most 86400 [default: the config's, else 15]
    #[arg(long, value_name = "SECS", global = true, value_parser = seconds)]
    pub(crate) timeout: Option<f64>,
    /// The longest a tool call may run while progress keeps extending its timeout
    /// [default: 600, and never less than --timeout]; `login`: how long to wait for the
    /// browser [default: 300]
    #[arg(long, value_name = "SECS", global = true, value_parser = seconds)]
    pub(crate) max_time: Option<f64>,
    /// Add an HTTP header (repeatable; remote servers only)
    #[arg(long = "header", short = 'H', value_name = "K: V", global = true,
          value_parser = header)]
    pub(crate) headers: Vec<(String, String)>,
    /// Add an environment variable for a stdio server (repeatable); the server otherwise sees
    /// only HOME, LOGNAME, PATH, SHELL, TERM and USER
    #[arg(long = "env", short = 'e', value_name = "K=V", global = true, value_parser = key_value)]
    pub(crate) env: Vec<(String, String)>,
    /// Ask the server for its log messages from LEVEL up (logging/setLevel) and print them on
    /// stderr
    #[arg(long, value_enum, value_name = "LEVEL", global = true)]
    pub(crate) log_level: Option<LogLevel>,
    /// Print exactly one JSON document on stdout, errors included (see `mcpb help json`)
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// OAuth client id: with `login`, a pre-registered client; with --client-secret on any
    /// other command, the client-credentials grant (machine to machine)
    #[arg(
        long,
        value_name = "ID",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) client_id: Option<String>,
    /// OAuth client secret (needs --client-id). A secret on the command line shows in the
    /// process list: a config file's `oauth` block taking it from a variable (`${VAR}`) keeps
    /// it out
    #[arg(
        long,
        value_name = "SECRET",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) client_secret: Option<String>,
    /// OAuth scopes to ask for (space-separated; repeatable)
    #[arg(
        long,
        value_name = "SCOPES",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) scope: Vec<String>,
    /// Sender-constrained tokens (DPoP): bind the tokens to a key kept with them in the token
    /// file [default: only when the authorization server requires it]
    #[arg(long, global = true, help_heading = "OAuth (http and sse servers)")]
    pub(crate) dpop: bool,
    /// Never DPoP (a server that accepts only DPoP-bound tokens is then refused)
    #[arg(long, global = true, help_heading = "OAuth (http and sse servers)")]
    pub(crate) no_dpop: bool,
    /// Workload identity: the JWT the platform issued this job or workload (a CI job's OIDC
    /// token, a Kubernetes projected token) is in FILE, read afresh for each token
    /// (--client-id when the authorization server expects one)
    #[arg(
        long,
        value_name = "FILE",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) assertion_file: Option<String>,
    /// Workload identity, the JWT in the variable VAR
    #[arg(
        long,
        value_name = "VAR",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) assertion_env: Option<String>,
    /// Enterprise-managed authorization: the issuer URL of the enterprise's identity provider,
    /// where the person's ID token is exchanged for an assertion the MCP server's
    /// authorization server accepts (needs --idp-client-id; --client-id and --client-secret
    /// are the client at the MCP server's authorization server)
    #[arg(
        long,
        value_name = "URL",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) idp_issuer: Option<String>,
    /// The identity provider's token endpoint [default: from its OpenID metadata]
    #[arg(
        long,
        value_name = "URL",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) idp_token_endpoint: Option<String>,
    /// This client's id at the identity provider
    #[arg(
        long,
        value_name = "ID",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) idp_client_id: Option<String>,
    /// This client's secret at the identity provider. A secret on the command line shows in
    /// the process list: a config file's `idp` block taking it from a variable (`${VAR}`)
    /// keeps it out
    #[arg(
        long,
        value_name = "SECRET",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) idp_client_secret: Option<String>,
    /// The person's ID token from the identity provider is in FILE (without --id-token-file or
    /// --id-token-env, `login` signs the person in at the provider in the browser)
    #[arg(
        long,
        value_name = "FILE",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) id_token_file: Option<String>,
    /// The person's ID token is in the variable VAR
    #[arg(
        long,
        value_name = "VAR",
        global = true,
        help_heading = "OAuth (http and sse servers)"
    )]
    pub(crate) id_token_env: Option<String>,
    /// Offer DIR to the server as a root (a file:// URI; repeatable); without it no roots
    /// are offered (`mcpb shell`: `roots add DIR` offers more)
    #[arg(
        long = "root",
        value_name = "DIR",
        global = true,
        help_heading = "What the server may ask for"
    )]
    pub(crate) roots: Vec<String>,
    /// Answer the server's sampling requests with the model API at URL (as `run`'s
    /// --model-url: OpenAI-compatible, or Anthropic when the URL says so); each request is
    /// shown and confirmed on the terminal first. Without it sampling is not offered
    #[arg(
        long,
        value_name = "URL",
        global = true,
        help_heading = "What the server may ask for"
    )]
    pub(crate) sampling_model_url: Option<String>,
    /// The model of --sampling-model-url (default: gpt-4o-mini, or claude-sonnet-4-5 for
    /// Anthropic)
    #[arg(
        long,
        value_name = "M",
        global = true,
        help_heading = "What the server may ask for"
    )]
    pub(crate) sampling_model: Option<String>,
    /// The variable holding the API key of --sampling-model-url (default OPENAI_API_KEY, or
    /// ANTHROPIC_API_KEY for Anthropic; a loopback URL needs none)
    #[arg(
        long,
        value_name = "VAR",
        global = true,
        help_heading = "What the server may ask for"
    )]
    pub(crate) sampling_api_key_env: Option<String>,
    /// Send the server's sampling requests to the model without asking (needed without a
    /// terminal; they are still shown on stderr)
    #[arg(long, global = true, help_heading = "What the server may ask for")]
    pub(crate) sampling_yes: bool,
    /// Offer roots even without --root (`mcpb shell`, whose `roots add` may add some).
    #[arg(skip)]
    pub(crate) offer_roots: bool,

    /// Log at info (-v: server stderr, progress) or debug (-vv) level on stderr
    #[arg(short, long, action = ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
}

/// The transports `--transport` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UrlTransport {
    /// Streamable HTTP
    #[value(alias = "streamable-http")]
    Http,
    /// Legacy HTTP+SSE
    Sse,
    /// WebSocket
    #[value(alias = "websocket")]
    Ws,
}

/// The levels of `--log-level` (the protocol's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Subcommand)]
pub(crate) enum Command {
    /// Server name, version, protocol, capabilities
    Info,
    /// List tools (every server of --config without --server)
    Tools,
    /// Call a tool; k=v values are converted by the tool's input schema
    #[command(disable_help_flag = true)]
    Call(CallArgs),
    /// List resources (every server of --config without --server)
    Resources,
    /// List resource templates (every server of --config without --server)
    Templates,
    /// Read a resource
    Read {
        /// The resource's URI
        uri: String,
        /// Save the contents to FILE (blobs base64-decoded); a directory takes one file per
        /// content, named after its URI
        #[arg(short, long, value_name = "FILE")]
        output: Option<String>,
    },
    /// List the server's skills (the skills extension); reads no skill file
    Skills,
    /// Load a skill and print its instructions, or print one of its files; each is checked
    /// against the size and digest the server lists before it is shown
    Skill {
        /// The skill's name or the URI of its SKILL.md
        name: String,
        /// A file of the skill: its path within the skill (`references/FORMS.md`) or its URI
        file: Option<String>,
    },
    /// List prompts (every server of --config without --server)
    Prompts,
    /// Get a prompt (arguments are strings)
    Prompt {
        /// The prompt's name
        name: String,
        /// One JSON object, or k=v pairs
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Ask for completions of a prompt's or resource template's argument
    Complete(CompleteArgs),
    /// Subscribe to a resource and print its updates until Ctrl-C
    Subscribe {
        /// The resource's URI
        uri: String,
    },
    /// List the server's tasks (a tool that requires a task runs as one by itself; -v shows
    /// its status)
    Tasks,
    /// Cancel a task
    TaskCancel {
        /// The task's id
        id: String,
    },
    /// Ping the server
    Ping,
    /// Every server of --config, or of the files found from here (with its origin, the
    /// servers it shadows, whether it waits for `trust`), its transport, ignored keys and any
    /// error
    Servers {
        /// Connect to each server (in parallel) and show its status, version, tool count and
        /// latency, or its error
        #[arg(long)]
        check: bool,
    },
    /// Show the commands of this folder's project config files (.mcp.json, .vscode/mcp.json,
    /// .cursor/mcp.json, .gemini/settings.json, .codex/config.toml, here and in the parent
    /// folders) and approve them, so that their servers start; a file that changes needs
    /// approval again
    Trust {
        /// Approve without asking (needed when stdin is not a terminal)
        #[arg(long)]
        yes: bool,
    },
    /// One session, commands typed line by line (history: `history`, `!N`; `exit` to leave)
    Shell,
    /// Print a shell completion script
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print the man page (roff)
    Man,
    /// With --config: a model calls the servers' tools until it answers; prints the answer
    /// (--server may be repeated; all the file's servers when left out)
    Run(RunArgs),
    /// Like run, one conversation: a message per line of stdin, each answer on stdout (ends at
    /// EOF or /exit)
    Chat(ChatArgs),
    /// With --url (or --config and --server naming an http or sse server): sign in (OAuth) in
    /// the browser; later commands on that server use the stored token (--client-id,
    /// --client-secret, --scope choose the client and the scopes)
    ///
    /// The OAuth options choose how: by default a person signs in in the browser (the
    /// authorization code); with --assertion-file or --assertion-env a CI job or a workload
    /// signs in with the JWT its platform issued it, no secret and no person (workload
    /// identity); with --idp-issuer, --idp-client-id and --client-id through the enterprise's
    /// identity provider, exchanging the person's ID token (--id-token-file, --id-token-env;
    /// without them the person signs in at the provider in the browser) for access to the
    /// server (enterprise-managed authorization). --dpop binds the token to a key kept with it
    /// in the token file, so that a copy of the token alone is of no use. A config entry's
    /// `oauth` block may choose all of these itself (`grant`, `assertion`, `idp`, `dpop`).
    Login {
        /// Headless: print the address to open and read the one the browser ends on from stdin
        #[arg(long)]
        paste: bool,
    },
    /// With --url (or --config and --server): forget the stored sign-in
    Logout,
    /// With --url (or --config and --server): the stored sign-in
    Auth {
        /// `status`: show the stored sign-in (never the tokens)
        #[arg(value_enum)]
        action: AuthAction,
    },
    /// Help on mcpb, a command, or `json` (the --json output of each command)
    Help {
        /// A command, or `json`
        topic: Option<String>,
    },
}

/// The model options of `run` and `chat` (their servers come from the global `--config`, with
/// `--server` repeatable, and from `--template`).
#[derive(Debug, Clone, PartialEq, Args)]
pub(crate) struct ModelArgs {
    /// The model (default: gpt-4o-mini, or claude-sonnet-4-5 for Anthropic)
    #[arg(long, value_name = "M")]
    pub(crate) model: Option<String>,
    /// The model API: default $OPENAI_BASE_URL, else OpenAI's; a URL with "anthropic" in it
    /// speaks Anthropic Messages; a loopback URL needs no key
    #[arg(long, value_name = "URL")]
    pub(crate) model_url: Option<String>,
    /// The variable holding the API key (default OPENAI_API_KEY, or ANTHROPIC_API_KEY for
    /// Anthropic)
    #[arg(long, value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
    /// Model turns before giving up (exit 8); 1 to 1000 [default: 10]
    #[arg(long, value_name = "N", value_parser = turns)]
    pub(crate) max_turns: Option<usize>,
    /// A template file: the system prompt (its body) and settings (its front matter)
    #[arg(long, value_name = "FILE")]
    pub(crate) template: Option<String>,
    /// Approve every tool call without asking, also those the config does not auto-approve
    /// (a tool left out of alwaysAllow or autoApprove is otherwise asked about on the
    /// terminal, and refused without one)
    #[arg(long)]
    pub(crate) yes: bool,
    /// Offer the model a search_tools tool (and the tools it found or used) instead of every
    /// tool: for servers with many tools
    #[arg(long)]
    pub(crate) tool_search: bool,
    /// The most bytes of one tool result's text the model reads; longer ones are cut, with a
    /// notice [default: 100000]
    #[arg(long, value_name = "N")]
    pub(crate) max_result_bytes: Option<usize>,
    /// Add each server's instructions (from its initialisation) to the system prompt, labelled
    /// with the server's name
    #[arg(long)]
    pub(crate) server_instructions: bool,
    /// Load this skill (skills extension), verified, and add its instructions to the system
    /// prompt, labelled with its server (repeatable; SERVER/NAME when several servers list it)
    #[arg(long, value_name = "[SERVER/]NAME")]
    pub(crate) skill: Vec<String>,
}

/// `run [OPTIONS] MESSAGE`.
#[derive(Debug, Clone, PartialEq, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The user's message (one argument: quote it)
    pub(crate) message: String,
}

/// `chat [OPTIONS]`.
#[derive(Debug, Clone, PartialEq, Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
}

/// What `auth` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AuthAction {
    /// Show the stored sign-in
    Status,
}

/// The shells `completions` writes for (every shell clap_complete knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    /// PowerShell (Windows PowerShell 5 and PowerShell 7)
    Powershell,
    Elvish,
}

/// `call TOOL [ARGS] [-o DIR] [--help]`.
#[derive(Debug, Clone, PartialEq, Args)]
pub(crate) struct CallArgs {
    /// The tool: its name, or SERVER/TOOL with --config
    pub(crate) tool: Option<String>,
    /// One JSON object, or k=v pairs (values converted by the tool's input schema)
    #[arg(value_name = "ARGS")]
    pub(crate) args: Vec<String>,
    /// Save images, audio and blobs of the result in DIR (base64-decoded)
    #[arg(short, long, value_name = "DIR")]
    pub(crate) output: Option<String>,
    /// Show the tool's description and arguments (without TOOL: this help)
    #[arg(short, long)]
    pub(crate) help: bool,
}

/// `complete (--prompt NAME | --template URI) ARG [VALUE] [--context k=v]...`.
#[derive(Debug, Clone, PartialEq, Args)]
#[command(group = clap::ArgGroup::new("reference").required(true).args(["prompt", "template"]))]
pub(crate) struct CompleteArgs {
    /// The prompt whose argument to complete
    #[arg(long, value_name = "NAME")]
    pub(crate) prompt: Option<String>,
    /// The resource template (its URI template) whose variable to complete
    #[arg(long, value_name = "URI_TEMPLATE")]
    pub(crate) template: Option<String>,
    /// The argument's name
    pub(crate) argument: String,
    /// What is typed so far
    #[arg(default_value = "")]
    pub(crate) value: String,
    /// Values of other arguments already chosen (repeatable)
    #[arg(long, value_name = "K=V", value_parser = key_value)]
    pub(crate) context: Vec<(String, String)>,
}

impl Command {
    /// The command's name as typed.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Info => "info",
            Command::Tools => "tools",
            Command::Call(_) => "call",
            Command::Resources => "resources",
            Command::Templates => "templates",
            Command::Read { .. } => "read",
            Command::Skills => "skills",
            Command::Skill { .. } => "skill",
            Command::Prompts => "prompts",
            Command::Prompt { .. } => "prompt",
            Command::Complete(_) => "complete",
            Command::Subscribe { .. } => "subscribe",
            Command::Tasks => "tasks",
            Command::TaskCancel { .. } => "task-cancel",
            Command::Ping => "ping",
            Command::Servers { .. } => "servers",
            Command::Trust { .. } => "trust",
            Command::Shell => "shell",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
            Command::Run(_) => "run",
            Command::Login { .. } => "login",
            Command::Logout => "logout",
            Command::Auth { .. } => "auth",
            Command::Chat(_) => "chat",
            Command::Help { .. } => "help",
        }
    }
}

/// How to reach the server, once the options are checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// `--stdio "CMD ARGS"`, already split.
    Stdio(Vec<String>),
    /// `--url URL [--transport T]`; `None` means detect (Streamable HTTP, else legacy SSE).
    Url(String, Option<UrlTransport>),
    /// `--config FILE [--server NAME]` (one server at most: only `run` and `chat` take more).
    Config(String, Option<String>),
}

/// A usage error: what was wrong with the command line, as one sentence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UsageError(pub(crate) String);

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Whether `--json` appears before any `--` (so even a usage error can answer in JSON).
pub(crate) fn wants_json(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Run(Box<Cli>),
    /// Help or version text, already formatted, for stdout.
    Text(String),
}

/// Parses the arguments after the program name.
pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let argv = std::iter::once("mcpb".to_owned()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(cli) => Ok(Parsed::Run(Box::new(cli))),
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                Ok(Parsed::Text(e.render().to_string()))
            }
            clap::error::ErrorKind::MissingRequiredArgument => {
                Err(without_sandbox(args).unwrap_or_else(|| clap_usage(&e)))
            }
            _ => Err(clap_usage(&e)),
        },
    }
}

/// The options that shape the sandbox of `--sandbox`, which they require.
const SANDBOX_OPTIONS: [&str; 5] = [
    "--allow-read",
    "--allow-write",
    "--allow-net",
    "--no-net",
    "--best-effort-sandbox",
];

/// The error for a sandbox option given without `--sandbox`, naming it (clap names only the
/// missing `--sandbox`).
fn without_sandbox(args: &[String]) -> Option<UsageError> {
    let given: Vec<&str> = args
        .iter()
        .take_while(|a| *a != "--")
        .map(String::as_str)
        .collect();
    if given.contains(&"--sandbox") {
        return None;
    }
    let option = given.iter().find_map(|a| {
        let name = a.split('=').next().unwrap_or(a);
        SANDBOX_OPTIONS.iter().find(|o| **o == name)
    })?;
    Some(UsageError(format!(
        "{option} shapes the sandbox of --sandbox: add --sandbox (mcpb confines a stdio server \
         only when asked)"
    )))
}

/// A clap error as one sentence: its first line without `error: `, with its tip.
pub(crate) fn clap_usage(e: &clap::Error) -> UsageError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::ValueValidation {
        // "--timeout must be ..., not `soon`": the option, the rule, the value.
        let context = |kind| match e.get(kind) {
            Some(ContextValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        if let (Some(arg), Some(value), Some(source)) = (
            context(ContextKind::InvalidArg),
            context(ContextKind::InvalidValue),
            std::error::Error::source(e),
        ) {
            let flag = arg.split_whitespace().next().unwrap_or(&arg).to_owned();
            return UsageError(format!("{flag} {source}, not `{value}`"));
        }
    }
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid command line");
    let mut message = first
        .strip_prefix("error: ")
        .unwrap_or(first)
        .trim()
        .to_owned();
    // "the following required arguments were not provided:" lists them on the next lines.
    if message.ends_with(':') {
        let listed: Vec<&str> = lines
            .by_ref()
            .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        message.push(' ');
        message.push_str(&listed.join(", "));
    }
    let tip = lines
        .map(str::trim)
        .find_map(|l| l.strip_prefix("tip: "))
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    UsageError(format!("{message}{tip}"))
}

impl Global {
    /// Whether no server is named (no --stdio, --url nor --config): the config files found
    /// from the current folder are used.
    pub(crate) fn discovers(&self) -> bool {
        self.stdio.is_none() && self.url.is_none() && self.config.is_none()
    }

    /// The server the options name, checked: exactly one of --stdio, --url, --config, and
    /// the options that go with it.
    pub(crate) fn target(&self) -> Result<Target, UsageError> {
        let target = match (&self.stdio, &self.url, &self.config) {
            (Some(line), None, None) => Target::Stdio(split_command_line(line)?),
            (None, Some(u), None) => Target::Url(u.clone(), self.transport),
            (None, None, Some(file)) => {
                if self.servers.len() > 1 {
                    return usage("--server names one server here (only run and chat take more)");
                }
                Target::Config(file.clone(), self.servers.first().cloned())
            }
            (None, None, None) => {
                return usage("say which server: --stdio \"CMD ARGS\", --url URL or --config FILE")
            }
            _ => return usage("give only one of --stdio, --url and --config"),
        };
        if self.transport.is_some() && !matches!(target, Target::Url(..)) {
            return usage("--transport applies only to --url");
        }
        if !self.servers.is_empty() && !matches!(target, Target::Config(..)) {
            return usage("--server applies only to --config");
        }
        if matches!(target, Target::Stdio(_)) && !self.headers.is_empty() {
            return usage("--header applies only to --url (a stdio server takes --env)");
        }
        if matches!(target, Target::Url(..)) && self.sandbox {
            return usage(
                "--sandbox confines the stdio servers mcpb starts; a --url server runs in no \
                 process of mcpb's",
            );
        }
        if matches!(target, Target::Url(..)) && !self.env.is_empty() {
            return usage(
                "--env applies only to --stdio and --config (a URL server takes --header)",
            );
        }
        Ok(target)
    }

    /// Refuses the options of `not_taken` (long names, as typed) that were given: `command`
    /// does not take them; `hint` says what it takes instead.
    pub(crate) fn refuse(
        &self,
        command: &str,
        not_taken: &[&str],
        hint: &str,
    ) -> Result<(), UsageError> {
        let given = [
            ("--stdio", self.stdio.is_some()),
            ("--url", self.url.is_some()),
            ("--transport", self.transport.is_some()),
            ("--config", self.config.is_some()),
            ("--server", !self.servers.is_empty()),
            ("--input", !self.inputs.is_empty()),
            ("--max-time", self.max_time.is_some()),
            ("--header", !self.headers.is_empty()),
            ("--env", !self.env.is_empty()),
            ("--log-level", self.log_level.is_some()),
            ("--client-id", self.client_id.is_some()),
            ("--client-secret", self.client_secret.is_some()),
            ("--scope", !self.scope.is_empty()),
            ("--dpop", self.dpop),
            ("--no-dpop", self.no_dpop),
            ("--assertion-file", self.assertion_file.is_some()),
            ("--assertion-env", self.assertion_env.is_some()),
            ("--idp-issuer", self.idp_issuer.is_some()),
            ("--idp-token-endpoint", self.idp_token_endpoint.is_some()),
            ("--idp-client-id", self.idp_client_id.is_some()),
            ("--idp-client-secret", self.idp_client_secret.is_some()),
            ("--id-token-file", self.id_token_file.is_some()),
            ("--id-token-env", self.id_token_env.is_some()),
            ("--root", !self.roots.is_empty()),
            ("--sampling-model-url", self.sampling_model_url.is_some()),
            ("--sampling-model", self.sampling_model.is_some()),
            (
                "--sampling-api-key-env",
                self.sampling_api_key_env.is_some(),
            ),
            ("--sampling-yes", self.sampling_yes),
        ];
        match given
            .iter()
            .find(|(name, on)| *on && not_taken.contains(name))
        {
            Some((name, _)) => usage(format!("`{command}` does not take {name} ({hint})")),
            None => Ok(()),
        }
    }

    /// The scopes of `--scope` (each value space-separated).
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(str::to_owned)
            .collect()
    }

    /// `--max-time`, never less than `--timeout`.
    pub(crate) fn max_time(&self, timeout: Duration) -> Duration {
        let max = self
            .max_time
            .map_or(DEFAULT_MAX_TIME, Duration::from_secs_f64);
        max.max(timeout)
    }
}

/// The default of `--max-time`.
pub(crate) const DEFAULT_MAX_TIME: Duration = Duration::from_secs(600);

fn seconds(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(s) if timeout_in_range(s) => Ok(s),
        _ => Err(format!(
            "must be a number of seconds more than 0 and at most {} (24 h)",
            MAX_TIMEOUT.as_secs()
        )),
    }
}

/// Whether `secs` is a timeout the library takes: more than zero (after rounding to
/// nanoseconds) and at most [`MAX_TIMEOUT`]. NaN, infinities and negatives are not.
fn timeout_in_range(secs: f64) -> bool {
    Duration::try_from_secs_f64(secs).is_ok_and(|d| !d.is_zero() && d <= MAX_TIMEOUT)
}

/// A value of `--allow-read` or `--allow-write`: a path, not an empty word (which would
/// silently name the working folder).
fn sandbox_path(raw: &str) -> Result<String, String> {
    if raw.trim().is_empty() || raw.contains('\0') {
        return Err("must be a path".into());
    }
    Ok(raw.to_owned())
}

/// A value of `--allow-net`, checked as the sandbox will read it.
fn domain_rule(raw: &str) -> Result<String, String> {
    match mcp_blocking::config::DomainRule::parse(raw) {
        Ok(_) => Ok(raw.trim().to_owned()),
        Err(_) => Err(
            "must be a host name, `*.` and a domain, or an IP address ([::1] for \
                       IPv6), with an optional :PORT from 1 to 65535"
                .into(),
        ),
    }
}

fn turns(raw: &str) -> Result<usize, String> {
    match raw.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err("must be 1 to 1000".into()),
    }
}

fn header(raw: &str) -> Result<(String, String), String> {
    match raw.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.trim().to_owned(), v.trim().to_owned()))
        }
        _ => Err("must look like 'Name: value'".into()),
    }
}

fn key_value(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err("must look like KEY=VALUE".into()),
    }
}

/// Tool or prompt arguments as typed: nothing, one JSON object, or `k=v` pairs (values kept
/// as typed, converted later by the tool's schema).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawArgs {
    Object(Map<String, Value>),
    Pairs(Vec<(String, String)>),
}

impl RawArgs {
    /// Whether there is no argument at all.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            RawArgs::Object(m) => m.is_empty(),
            RawArgs::Pairs(p) => p.is_empty(),
        }
    }
}

/// Reads tool or prompt arguments: one JSON object, or `k=v` pairs (checked for syntax and
/// repeated keys; their values are converted later, once the schema is known).
pub(crate) fn raw_arguments(args: &[String]) -> Result<RawArgs, UsageError> {
    if let [one] = args {
        if one.trim_start().starts_with('{') {
            return match serde_json::from_str::<Value>(one) {
                Ok(Value::Object(m)) => Ok(RawArgs::Object(m)),
                Ok(_) => usage("the arguments must be one JSON object"),
                Err(e) => usage(format!("the arguments are not valid JSON: {e}")),
            };
        }
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for arg in args {
        let Some((k, v)) = arg.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            if arg.trim_start().starts_with(['[', '"']) || arg.parse::<f64>().is_ok() {
                return usage(format!(
                    "the arguments must be one JSON object or k=v pairs, not `{arg}`"
                ));
            }
            return usage(format!("expected k=v or one JSON object, got `{arg}`"));
        };
        if pairs.iter().any(|(seen, _)| seen == k) {
            return usage(format!("argument `{k}` given twice"));
        }
        pairs.push((k.to_owned(), v.to_owned()));
    }
    Ok(RawArgs::Pairs(pairs))
}

/// Splits a command line as a POSIX shell would split words, without running a shell or
/// expanding anything (`shell-words`).
pub(crate) fn split_command_line(line: &str) -> Result<Vec<String>, UsageError> {
    match shell_words::split(line) {
        Ok(words) if words.is_empty() => usage("--stdio needs a command"),
        Ok(words) => Ok(words),
        Err(_) => usage(format!("--stdio `{line}` has an unterminated quote")),
    }
}

/// The clap command, for help, completions and the man page.
pub(crate) fn command() -> clap::Command {
    Cli::command()
}

/// The names of the commands (for "did you mean").
pub(crate) fn command_names() -> Vec<String> {
    command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn run(v: &[&str]) -> Cli {
        match parse(&strings(v)) {
            Ok(Parsed::Run(cli)) => *cli,
            other => panic!("{v:?} gave {other:?}"),
        }
    }

    #[test]
    fn the_clap_declaration_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn splits_like_a_shell_without_expanding() {
        assert_eq!(
            split_command_line(r#"node "my dir/x.js" --name 'a b' c\ d "q\"t" '$HOME'"#).unwrap(),
            strings(&[
                "node",
                "my dir/x.js",
                "--name",
                "a b",
                "c d",
                "q\"t",
                "$HOME"
            ])
        );
        assert!(split_command_line("a 'b").is_err());
        assert!(split_command_line("   ").is_err());
    }

    #[test]
    fn arguments_are_pairs_or_one_object() {
        assert_eq!(
            raw_arguments(&strings(&["n=3", "s=hello world", "e="])).unwrap(),
            RawArgs::Pairs(vec![
                ("n".into(), "3".into()),
                ("s".into(), "hello world".into()),
                ("e".into(), "".into())
            ])
        );
        let RawArgs::Object(o) = raw_arguments(&strings(&[r#"{"a": [1, 2]}"#])).unwrap() else {
            panic!("an object")
        };
        assert_eq!(Value::Object(o), json!({"a": [1, 2]}));
        assert!(raw_arguments(&strings(&["{bad"])).is_err());
        assert!(raw_arguments(&strings(&["noequals"])).is_err());
        assert!(raw_arguments(&strings(&["a=1", "a=2"])).is_err());
    }

    #[test]
    fn options_may_follow_the_command() {
        let cli = run(&[
            "--stdio",
            "srv -x",
            "call",
            "slow",
            "ms=5",
            "--timeout",
            "1",
            "-vv",
            "--json",
        ]);
        assert_eq!(
            cli.global.target().unwrap(),
            Target::Stdio(strings(&["srv", "-x"]))
        );
        let Some(Command::Call(call)) = cli.command else {
            panic!("call")
        };
        assert_eq!(call.tool.as_deref(), Some("slow"));
        assert_eq!(call.args, strings(&["ms=5"]));
        assert_eq!(cli.global.timeout, Some(1.0));
        assert_eq!(cli.global.verbose, 2);
        assert!(cli.global.json);
    }

    #[test]
    fn url_with_transport_headers_and_inline_values() {
        let cli = run(&[
            "--url=http://h/mcp",
            "--transport",
            "ws",
            "-H",
            "X-A: b: c",
            "ping",
        ]);
        assert_eq!(
            cli.global.target().unwrap(),
            Target::Url("http://h/mcp".into(), Some(UrlTransport::Ws))
        );
        assert_eq!(
            cli.global.headers,
            vec![("X-A".to_string(), "b: c".to_string())]
        );
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        let err = |v: &[&str]| match parse(&strings(v)) {
            Err(UsageError(m)) => m,
            Ok(Parsed::Run(cli)) => match cli.global.target() {
                Err(UsageError(m)) => m,
                Ok(_) => panic!("{v:?} parsed"),
            },
            other => panic!("{v:?} gave {other:?}"),
        };
        assert!(err(&["tools"]).contains("say which server"));
        assert!(err(&["--stdio", "a", "--url", "u", "tools"]).contains("only one"));
        assert!(
            err(&["--stdio", "a", "dance"]).contains("dance"),
            "{}",
            err(&["--stdio", "a", "dance"])
        );
        assert!(err(&["--stdio", "a", "--timeout", "0", "ping"]).contains("more than 0"));
        assert!(err(&["--stdio", "a", "--header", "X: y", "ping"]).contains("--header"));
        assert!(err(&["--stdio", "a", "--transport", "ws", "ping"]).contains("--transport"));
        assert!(err(&["--stdio", "a", "--bogus", "ping"]).contains("--bogus"));
        assert!(err(&["--stdio", "a", "read"]).contains("URI"));
        let tip = err(&["--stdio", "a", "tols"]);
        assert!(tip.contains("tools"), "did you mean: {tip}");
        assert!(!tip.contains("error:"), "{tip}");
    }

    #[test]
    fn run_takes_several_servers_and_its_options_anywhere() {
        let cli = run(&[
            "--config",
            "f.json",
            "run",
            "--server",
            "a",
            "--server",
            "b",
            "--model",
            "m",
            "--max-turns",
            "3",
            "--json",
            "-v",
            "hello there",
        ]);
        assert_eq!(cli.global.servers, strings(&["a", "b"]));
        assert!(cli.global.json);
        assert_eq!(cli.global.verbose, 1);
        let Some(Command::Run(r)) = cli.command else {
            panic!("run")
        };
        assert_eq!(
            (r.model.max_turns, r.message.as_str()),
            (Some(3), "hello there")
        );
        let err = |v: &[&str]| match parse(&strings(v)) {
            Err(UsageError(m)) => m,
            other => panic!("{v:?} gave {other:?}"),
        };
        assert!(err(&["--config", "f", "run"]).contains("MESSAGE"));
        assert!(err(&["--config", "f", "run", "a", "b"]).contains("'b'"));
        assert_eq!(
            err(&["--config", "f", "run", "--max-turns", "0", "hi"]),
            "--max-turns must be 1 to 1000, not `0`"
        );
        // Other commands name one server.
        let cli = run(&["--config", "f", "--server", "a", "--server", "b", "tools"]);
        assert!(cli
            .global
            .target()
            .unwrap_err()
            .0
            .contains("only run and chat"));
    }

    #[test]
    fn auth_commands_and_client_options_are_parsed() {
        let cli = run(&[
            "--url",
            "http://h/mcp",
            "login",
            "--paste",
            "--scope",
            "a b",
            "--scope",
            "c",
        ]);
        assert_eq!(cli.command, Some(Command::Login { paste: true }));
        assert_eq!(cli.global.scopes(), strings(&["a", "b", "c"]));
        let cli = run(&["auth", "status", "--url", "http://h/mcp"]);
        assert!(matches!(
            cli.command,
            Some(Command::Auth {
                action: AuthAction::Status
            })
        ));
        let cli = run(&[
            "--url",
            "u",
            "--client-id",
            "i",
            "--client-secret",
            "s",
            "tools",
        ]);
        assert_eq!(
            (
                cli.global.client_id.as_deref(),
                cli.global.client_secret.as_deref()
            ),
            (Some("i"), Some("s"))
        );
        let cli = run(&["--url", "u", "--client-id", "i", "tools"]);
        let e = cli.global.refuse("logout", &["--client-id"], "no");
        assert_eq!(e.unwrap_err().0, "`logout` does not take --client-id (no)");
    }

    #[test]
    fn double_dash_ends_options() {
        let cli = run(&["--stdio", "a", "call", "t", "--", "--x=1"]);
        let Some(Command::Call(call)) = cli.command else {
            panic!("call")
        };
        assert_eq!(call.args, strings(&["--x=1"]));
    }
}
