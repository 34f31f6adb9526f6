//! Host config files: [`ConfigLoader`] reads the `mcpServers` map (Claude Desktop, Claude Code's
//! `.mcp.json` and `~/.claude.json`, Cursor, Windsurf, Gemini CLI), VS Code's `servers` map, Zed's
//! `context_servers`, Codex's `mcp_servers`, an `mcp:` list of nested entries and a bare list, in
//! JSON (comments and trailing commas allowed), YAML or TOML, into a [`LoadReport`]. Which host
//! wrote a file is told by its place and name (`documents.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::documents::{flavor_of_doc, flavor_of_path, is_settings_file};
use super::entry::{join, parse_entry, Ctx, Dialect, Entry, Flavor};
use super::interpolate::Vars;
use super::{jsonc, toml_doc, yaml, ConfigError, ConfigErrorKind, InputLimits, ServerConfig};

/// The top-level keys a host config file may hold its servers under.
pub(crate) const TOP_LEVEL: [&str; 3] = ["mcpServers", "servers", "mcp"];

/// Reads MCP server configurations from host config files.
///
/// By default variables come from the process environment, `${input:id}` has no values, and the
/// loader is lenient: a bad server is reported in [`LoadReport::errors`] and the rest still load.
/// A server's `timeout` follows the host-config rule (`5000` is 5 s): see
/// [timeouts](ServerConfig#timeouts).
/// A server's `protocol` (`auto`, the default, `legacy` or `modern`) picks its protocol era:
/// see [`ProtocolMode`](crate::config::ProtocolMode).
///
/// A config file is data from wherever it came from: what it can make the loader read and build
/// is bounded by [`InputLimits`] (see [`with_input_limits`](ConfigLoader::with_input_limits)),
/// and every value is checked as it is read, with its key path: urls parse and have a host,
/// header names and values are valid HTTP, and what reaches the operating system (command,
/// arguments, working directory, environment) holds no NUL byte, with environment variable
/// names non-empty and without `=`.
///
/// ```
/// use std::collections::BTreeMap;
/// use mcp_blocking::ConfigLoader;
/// let text = r#"{"mcpServers": {
///     "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-/data}"]},
///     "api": {"type": "http", "url": "https://api.example.com/mcp",
///             "headers": {"Authorization": "Bearer ${API_KEY}"}},
///     "bad": {"comand": "x"}
/// }}"#;
/// let report = ConfigLoader::new()
///     .with_env(BTreeMap::from([("API_KEY".to_string(), "s3cret-key".to_string())]))
///     .load_str(text)?;
/// assert_eq!(report.servers.len(), 2);
/// assert_eq!(report.servers[1].transport_type(), "streamable-http");
/// assert_eq!(report.errors[0].to_string(),
///     "server `bad`: mcpServers.bad.comand: unknown key `comand` (did you mean `command`?)");
/// assert!(!format!("{:?}", report.servers[1]).contains("s3cret-key"));
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
///
/// # Policy keys
///
/// The keys that limit what a server may do are read, in each host's spelling, into the
/// server's [`ServerPolicy`](crate::config::ServerPolicy) (at an entry's top level, in a host's
/// map and in this library's own `mcp:` entries alike). Nothing that limits a server is dropped
/// silently: a key this library cannot enforce fails the server with
/// [`ConfigErrorKind::Unenforceable`] naming it, unless the program
/// [accepts the risk](ConfigLoader::accept_unenforced).
///
/// | key (host) | effect |
/// |---|---|
/// | `includeTools` (Gemini CLI), `enabled_tools` (Codex) | only the matching tools are listed and callable |
/// | `excludeTools` (Gemini CLI), `disabled_tools` (Codex), `disabledTools` (Roo Code, Windsurf) | the matching tools are neither listed nor callable; an exclusion wins over an inclusion |
/// | `alwaysAllow` (Roo Code), `autoApprove` (Cline) | these tools run without asking; the server's other tools need approval ([`Approval::Tools`](crate::config::Approval::Tools)) |
/// | `trust: true` (Gemini CLI) | every tool runs without asking ([`Approval::All`](crate::config::Approval::All)); `false` says nothing |
/// | `default_tools_approval_mode`, `tools.<tool>.approval_mode` (Codex; `auto`, `prompt`, `writes` or `approve`) | a tool's own mode wins over the server's default. Default `prompt` or `writes`: only the tools whose own mode is `approve` or `auto` run without asking ([`Approval::Tools`](crate::config::Approval::Tools)); otherwise the tools whose own mode is `prompt` or `writes` need approval and the others do not ([`Approval::AllExcept`](crate::config::Approval::AllExcept)); `approve` alone is [`Approval::All`](crate::config::Approval::All); `auto` says nothing, as Codex leaves it to the program. `writes` asks about every call, since an approval here is by the tool's name |
/// | `enabled: false` (Codex) | the server is skipped, as with `disabled: true` |
/// | `sandboxEnabled: true` with `sandbox` (VS Code) | a stdio server is spawned in that sandbox ([`ServerConfig::sandbox`](crate::ServerConfig::sandbox); a rule Landlock cannot express is [`ConfigErrorKind::Unenforceable`] at its key as the file is read, and a system that cannot apply it fails the connect the same way); a remote server fails to load (no process of ours runs it) unless accepted, then loads unconfined and the key is listed in [`LoadReport::ignored`] |
/// | `sandbox` without `sandboxEnabled: true` (VS Code) | inert, as in VS Code; listed in [`LoadReport::ignored`] |
/// | `headersHelper` (Claude Code; remote servers) | run only when [allowed](ConfigLoader::allow_header_commands): its JSON object of headers overrides same-named `headers`; otherwise listed in [`LoadReport::ignored`] |
/// | `supports_parallel_tool_calls`, `scopes`, `oauth_resource`, `auth`, `name`, `environment_id = "local"`, `oauth.callback_url` (Codex, its files only) | no meaning here: listed in [`LoadReport::ignored`] with why (`oauth.callback_port` is read as `oauth.redirect_port`) |
/// | `environment_id` (or `experimental_environment`) other than `local`, a non-empty `omit_tools_from` (Codex, its files only) | Codex runs the server elsewhere, or keeps its tools from the model; neither happens here: the server fails to load ([`ConfigErrorKind::Unenforceable`]) unless [accepted](ConfigLoader::accept_unenforced), then listed in [`LoadReport::ignored`] |
/// | `dev`, `gallery`, `version`, `watchPaths`, `authProviderType`, `targetAudience`, `targetServiceAccount` (host files only) | no meaning here: listed in [`LoadReport::ignored`] with why |
/// | `oauth.authorizationUrl`, `oauth.tokenUrl`, `oauth.redirectUri`, `oauth.audiences`, `oauth.tokenParamName`, `oauth.registrationUrl` (Gemini CLI) | not used (the endpoints come from the server's metadata): listed in [`LoadReport::ignored`] |
///
/// Tool names are exact, or patterns where `*` stands for any run of characters and `?` for one
/// ([`ToolPattern`](crate::config::ToolPattern)). Two spellings of one rule in one entry (say
/// `excludeTools` and `disabledTools`) are an error, as is a value of the wrong type, each at
/// its key path.
///
/// ```
/// use mcp_blocking::ConfigLoader;
/// let report = ConfigLoader::new().load_str(r#"{"mcpServers": {
///     "gem": {"command": "node", "args": ["s.js"], "excludeTools": ["crash"], "gallery": "x"}
/// }}"#)?;
/// assert!(!report.servers[0].policy().allows_tool("crash"));
/// assert_eq!(report.ignored[0].key, "mcpServers.gem.gallery");
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConfigLoader {
    pub(crate) env: Option<BTreeMap<String, String>>,
    pub(crate) inputs: BTreeMap<String, String>,
    pub(crate) strict: bool,
    pub(crate) limits: InputLimits,
    pub(crate) allow_header_commands: bool,
    /// The program allows header commands, but not for this file: a project file not approved
    /// yet (discovery reads it with commands off, and says why in the ignored keys).
    pub(crate) header_commands_held: bool,
    pub(crate) accept_unenforced: bool,
    pub(crate) project_dir: Option<PathBuf>,
    /// Reads only the user's servers of a `~/.claude.json`, not a project's (discovery reads
    /// those itself, as their own scope).
    pub(crate) user_scope_only: bool,
}

/// What a lenient load found: the servers that are valid, an error for each one that is not, and
/// the names of those marked `disabled`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LoadReport {
    /// The valid servers, in file order.
    pub servers: Vec<ServerConfig>,
    /// One error per server that could not be loaded, in file order.
    pub errors: Vec<ConfigError>,
    /// The names of servers skipped because of `disabled: true`.
    pub skipped_disabled: Vec<String>,
    /// Every key that was read and not acted on, with why: another host's key with no meaning
    /// here (`gallery`), a `headersHelper` not run, or (with
    /// [`accept_unenforced`](ConfigLoader::accept_unenforced)) a limit not enforced.
    pub ignored: Vec<IgnoredKey>,
    /// The file's `mcp` options block (@robojs/ai's `gracefulDegradation`, `extraRetries` (at
    /// most 10), `baseDelayMs`, `maxDelayMs`), when it has one: how a [`Hub`](crate::Hub) loaded
    /// from it degrades. The block may sit beside `mcpServers`, or hold the servers itself
    /// (`mcp: {servers: {...}, extraRetries: 2}`); its keys are checked as a server's are.
    pub degradation: Option<crate::hub::Degradation>,
}

/// A key a loader read and did not act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IgnoredKey {
    /// The server it belongs to, when it belongs to one.
    pub server: Option<String>,
    /// Its key path, e.g. `mcpServers.github.gallery`.
    pub key: String,
    /// Why it was not acted on.
    pub reason: String,
    /// The file, when loaded from one.
    pub file: Option<PathBuf>,
}

impl IgnoredKey {
    /// A key of `server` at `key`, not acted on because of `reason`.
    pub fn new(server: Option<&str>, key: impl Into<String>, reason: impl Into<String>) -> Self {
        IgnoredKey {
            server: server.map(str::to_owned),
            key: key.into(),
            reason: reason.into(),
            file: None,
        }
    }
}

impl std::fmt::Display for IgnoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(server) = &self.server {
            write!(f, "server `{server}`: ")?;
        }
        write!(f, "{}: ignored: {}", self.key, self.reason)
    }
}

impl LoadReport {
    /// The server called `name`.
    ///
    /// ```
    /// use mcp_blocking::ConfigLoader;
    /// let r = ConfigLoader::new().load_str(r#"[{"name": "a", "transport": {"type": "ws", "url": "ws://h"}}]"#)?;
    /// assert_eq!(r.server("a").and_then(|s| s.url()), Some("ws://h"));
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// Whether every server loaded.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Names the file `path` in every error, ignored key and policy rule of the report.
    pub(crate) fn stamp_file(&mut self, path: &Path) {
        for e in &mut self.errors {
            e.file = Some(path.to_path_buf());
        }
        for k in &mut self.ignored {
            k.file = Some(path.to_path_buf());
        }
        // A server without a policy has no rule to name the file in: it stays equal to the
        // same server loaded from anywhere else.
        for s in self
            .servers
            .iter_mut()
            .filter(|s| s.policy != Default::default())
        {
            s.policy = std::mem::take(&mut s.policy).with_file(path);
        }
    }
}

impl ConfigLoader {
    /// A lenient loader reading variables from the process environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes variables from `env` instead of the process environment.
    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Some(env);
        self
    }

    /// Supplies values for `${input:id}` (VS Code's `inputs`), which are never prompted for.
    pub fn with_inputs(mut self, inputs: BTreeMap<String, String>) -> Self {
        self.inputs = inputs;
        self
    }

    /// Lets a `headersHelper` (Claude Code: a command whose output supplies a remote server's
    /// headers) run. Off by default: a config file is data, and running its commands is the
    /// program's decision; a helper not run is listed in [`LoadReport::ignored`].
    ///
    /// Allowed, the helper runs as the file is loaded, through `sh -c` (`cmd /C` on Windows),
    /// in the file's directory (the current one for [`load_str`](ConfigLoader::load_str)),
    /// with `CLAUDE_CODE_MCP_SERVER_NAME` and `CLAUDE_CODE_MCP_SERVER_URL` set and no standard
    /// input. It must print one JSON object of header names and string values within 10 s and
    /// 16 KiB, and exit with success; otherwise the server fails to load with an error at its
    /// `headersHelper` key (on Unix the helper's whole process group is killed at the deadline).
    /// Its headers are checked as `headers` are, replace static headers of the same name, and
    /// are secrets: no `Debug` or error shows their values.
    pub fn allow_header_commands(mut self, allow: bool) -> Self {
        self.allow_header_commands = allow;
        self
    }

    /// Accepts the risk of keys that limit a server but are not enforced by this library (VS
    /// Code's `sandboxEnabled: true` on a remote server, say): such a server loads without that limit, and the key
    /// is listed in [`LoadReport::ignored`]. Off by default: the server fails to load with
    /// [`ConfigErrorKind::Unenforceable`] naming the key, so that nothing that limits a server
    /// is ever dropped silently.
    pub fn accept_unenforced(mut self, accept: bool) -> Self {
        self.accept_unenforced = accept;
        self
    }

    /// The project directory whose servers Claude Code's `~/.claude.json` holds
    /// (`projects["/home/u/app"].mcpServers`, its local scope; default: the current
    /// directory). The directory must be the project's key exactly, as Claude Code keys a
    /// project by the directory it was started in; its servers come first and hide the user's
    /// servers (`mcpServers`) of the same name, each listed in [`LoadReport::ignored`].
    ///
    /// ```
    /// use mcp_blocking::ConfigLoader;
    /// let text = r#"{"mcpServers": {"docs": {"command": "user-docs"}},
    ///     "projects": {"/home/u/app": {"mcpServers": {"docs": {"command": "app-docs"}}}}}"#;
    /// let loader = ConfigLoader::new().with_project_dir("/home/u/app");
    /// let dir = std::env::temp_dir().join(format!("claude-json-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join(".claude.json"), text).unwrap();
    /// let report = loader.load(dir.join(".claude.json"))?;
    /// assert_eq!(report.servers.len(), 1);
    /// assert_eq!(report.server("docs").and_then(|s| s.command()), Some("app-docs"));
    /// assert_eq!(report.ignored[0].key, "mcpServers.docs");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// Fails on the first bad server instead of reporting it and going on.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Bounds what a config file can make the loader read and build (default:
    /// [`InputLimits::default`]).
    ///
    /// ```
    /// use mcp_blocking::config::{ConfigErrorKind, InputLimits};
    /// use mcp_blocking::ConfigLoader;
    /// let loader = ConfigLoader::new().with_input_limits(InputLimits::default().with_max_depth(2));
    /// let err = loader.load_str(r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::TooDeep);
    /// assert_eq!(loader.input_limits().max_depth, 2);
    /// ```
    pub fn with_input_limits(mut self, limits: InputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits in force (see [`with_input_limits`](ConfigLoader::with_input_limits)).
    pub fn input_limits(&self) -> InputLimits {
        self.limits
    }

    pub(crate) fn vars(&self, base_dir: Option<&Path>) -> Vars<'_> {
        let workspace = base_dir.map(|d| {
            let hidden = d
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == ".vscode" || n == ".cursor");
            match (hidden, d.parent()) {
                (true, Some(p)) => p.to_path_buf(),
                _ => d.to_path_buf(),
            }
        });
        Vars::new(
            self.env.as_ref(),
            &self.inputs,
            workspace,
            self.limits.max_file_bytes,
        )
    }

    /// Loads the servers of the file at `path` (JSON, YAML for `.yaml`/`.yml`, TOML for
    /// `.toml`; other names are sniffed). Relative `envFile` paths are read from the file's
    /// directory.
    ///
    /// Which host wrote the file is told by its place and name, and its keys are read as that
    /// host means them:
    ///
    /// | file | host | read |
    /// |---|---|---|
    /// | `.gemini/settings.json` | Gemini CLI | `mcpServers`; `httpUrl` Streamable HTTP, `url` legacy SSE, `timeout` in ms, `$VAR` in `env`; `mcp.allowed` / `mcp.excluded` filter the servers |
    /// | `*.toml` (`~/.codex/config.toml`) | Codex | `[mcp_servers.NAME]`: `command`, `args`, `env`, `env_vars`, `cwd`, `url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`, `startup_timeout_sec` / `_ms`, `tool_timeout_sec` (our one timeout: the longest) |
    /// | `zed/settings.json`, or any file with `context_servers` | Zed | `context_servers`: `command` flat or `{path, args, env}`, `url`, `headers`; an extension's server is an error |
    /// | `mcp_config.json` | Windsurf | `mcpServers`; `serverUrl` as `url` |
    /// | `.claude.json` | Claude Code | `mcpServers`, and `projects[<dir>].mcpServers` (see [`with_project_dir`](ConfigLoader::with_project_dir)) |
    /// | `.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`, `claude_desktop_config.json`, others | | `mcpServers`, `servers`, `mcp` |
    ///
    /// A host's settings file (Gemini's, Zed's, Codex's, `~/.claude.json`) without servers
    /// loads none, without an error. Other top-level keys of a host's file are the host's, not
    /// errors.
    ///
    /// ```no_run
    /// use mcp_blocking::ConfigLoader;
    /// let report = ConfigLoader::new().load(".mcp.json")?;
    /// for s in &report.servers {
    ///     println!("{}: {} {}", s.name(), s.transport_type(), s.url().or(s.command()).unwrap_or(""));
    /// }
    /// for e in &report.errors {
    ///     eprintln!("{e}");
    /// }
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigErrorKind::Io`], [`ConfigErrorKind::Syntax`] or [`ConfigErrorKind::UnknownFormat`]
    /// for the file as a whole, and [`ConfigErrorKind::TooLarge`] or
    /// [`ConfigErrorKind::TooDeep`] for a file over an [`InputLimits`] limit; in strict mode also
    /// the first server's error.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<LoadReport, ConfigError> {
        let path = path.as_ref();
        self.load_file(path, flavor_of_path(path))
    }

    /// Loads the file at `path`, written by the host of `flavor` whatever its name (for callers
    /// that know where they found it).
    ///
    /// # Errors
    /// As [`ConfigLoader::load`].
    #[allow(dead_code, reason = "for discovery, which knows each file's host")]
    pub(crate) fn load_flavored(
        &self,
        path: impl AsRef<Path>,
        flavor: Flavor,
    ) -> Result<LoadReport, ConfigError> {
        self.load_file(path.as_ref(), flavor)
    }

    fn load_file(&self, path: &Path, flavor: Flavor) -> Result<LoadReport, ConfigError> {
        let file = Some(path);
        if flavor == Flavor::ClaudeCode && super::claude_json::is_large(path, &self.limits) {
            let dir = self.project_dir();
            let doc = super::claude_json::read(path, dir.as_deref(), &self.limits)
                .map_err(|e| e.in_file(file))?;
            return self.load_parsed(path, &doc, flavor);
        }
        let text = self
            .limits
            .read(path, "file", ConfigErrorKind::Io)
            .map_err(|e| e.in_file(file))?;
        self.load_text(path, &text, flavor)
    }

    /// Loads `text`, read from the file at `path` (whose name tells JSON from YAML).
    pub(crate) fn load_text(
        &self,
        path: &Path,
        text: &str,
        flavor: Flavor,
    ) -> Result<LoadReport, ConfigError> {
        let file = Some(path);
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let doc = match ext.as_str() {
            _ if flavor == Flavor::Codex => toml_doc::parse(text, &self.limits),
            "yaml" | "yml" => yaml::parse(text, &self.limits),
            "json" | "jsonc" => jsonc::parse(text, &self.limits),
            _ => parse_any(text, &self.limits),
        }
        .map_err(|e| e.in_file(file))?;
        self.load_parsed(path, &doc, flavor)
    }

    /// Loads the document `doc` read from the file at `path`.
    pub(crate) fn load_parsed(
        &self,
        path: &Path,
        doc: &Value,
        flavor: Flavor,
    ) -> Result<LoadReport, ConfigError> {
        let file = Some(path);
        let settings = is_settings_file(path, flavor);
        let base_dir = path.parent().map(|p| {
            if p.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                p.to_path_buf()
            }
        });
        self.load_doc(doc, base_dir.as_deref(), flavor, settings)
            .map_err(|e| e.in_file(file))
            .map(|mut r| {
                r.stamp_file(path);
                r
            })
    }

    /// Loads servers from JSON or YAML text (sniffed: JSON when it starts with `{` or `[`).
    ///
    /// # Errors
    /// As [`ConfigLoader::load`], without the file.
    pub fn load_str(&self, text: &str) -> Result<LoadReport, ConfigError> {
        self.limits.check_text(text)?;
        self.load_doc(
            &parse_any(text, &self.limits)?,
            None,
            Flavor::Generic,
            false,
        )
    }

    /// Loads servers from an already parsed document. It is already built, so its size and depth
    /// are not checked; its values are, as a file's are (and `envFile` reads and `${...}`
    /// expansion stay within the [`InputLimits`]).
    ///
    /// # Errors
    /// As [`ConfigLoader::load`], without the file.
    pub fn load_value(&self, doc: &Value) -> Result<LoadReport, ConfigError> {
        self.load_doc(doc, None, Flavor::Generic, false)
    }

    /// Walks `doc`, written by the host of `flavor` (told by its keys when `Generic`);
    /// `settings` for a host's settings file, which may hold no server.
    pub(crate) fn load_doc(
        &self,
        doc: &Value,
        base_dir: Option<&Path>,
        flavor: Flavor,
        settings: bool,
    ) -> Result<LoadReport, ConfigError> {
        let vars = self.vars(base_dir);
        let mut walk = Walk {
            loader: self,
            vars: &vars,
            base_dir,
            report: LoadReport::default(),
            names: HashMap::new(),
            flavor,
            idps: Default::default(),
        };
        match doc {
            Value::Array(items) => walk.list(items, "")?,
            Value::Object(m) => {
                if walk.flavor == Flavor::Generic {
                    walk.flavor = flavor_of_doc(m).unwrap_or(Flavor::Generic);
                }
                walk.document(m, settings)?;
            }
            other => {
                return Err(ConfigError::new(
                    ConfigErrorKind::UnknownFormat,
                    format!(
                        "no MCP servers found: expected a mapping with `mcpServers`, `servers` or `mcp`, or a list; found {}",
                        super::error::json_type_name(other)
                    ),
                ))
            }
        }
        Ok(walk.report)
    }
}

impl ServerConfig {
    /// Every server of a host config file, strictly: the first problem is an error.
    /// Variables come from the process environment. See [`ConfigLoader`] for a lenient load.
    ///
    /// ```no_run
    /// let servers = mcp_blocking::ServerConfig::load_all(".mcp.json")?;
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// The first [`ConfigError`] found.
    pub fn load_all(path: impl AsRef<Path>) -> Result<Vec<ServerConfig>, ConfigError> {
        Ok(ConfigLoader::new().strict(true).load(path)?.servers)
    }
}

/// One pass over a document's entries.
pub(crate) struct Walk<'a> {
    pub(crate) loader: &'a ConfigLoader,
    pub(crate) vars: &'a Vars<'a>,
    pub(crate) base_dir: Option<&'a Path>,
    pub(crate) report: LoadReport,
    /// Each name seen and where.
    pub(crate) names: HashMap<String, String>,
    /// Which host wrote the document.
    pub(crate) flavor: Flavor,
    /// The enterprise identity providers the entries' `oauth` blocks named so far: a block
    /// naming one the same way shares its sign-in.
    pub(crate) idps: std::cell::RefCell<Vec<super::oauth::EnterpriseIdp>>,
}

impl Walk<'_> {
    pub(crate) fn map(
        &mut self,
        map: &serde_json::Map<String, Value>,
        prefix: &str,
    ) -> Result<(), ConfigError> {
        for (name, v) in map {
            self.entry(v, join(prefix, name), Some(name), Dialect::Host)?;
        }
        Ok(())
    }

    /// Parses the host map entry `name` at `path`; `Err` only in strict mode.
    pub(crate) fn host_entry(
        &mut self,
        v: &Value,
        path: String,
        name: &str,
    ) -> Result<(), ConfigError> {
        self.entry(v, path, Some(name), Dialect::Host)
    }

    pub(crate) fn list(&mut self, items: &[Value], prefix: &str) -> Result<(), ConfigError> {
        for (i, v) in items.iter().enumerate() {
            self.entry(v, format!("{prefix}[{i}]"), None, Dialect::RobotLab)?;
        }
        Ok(())
    }

    /// Parses one entry; `Err` only in strict mode.
    fn entry(
        &mut self,
        v: &Value,
        path: String,
        key_name: Option<&str>,
        dialect: Dialect,
    ) -> Result<(), ConfigError> {
        let ctx = Ctx {
            path: path.clone(),
            key_name,
            dialect,
            vars: Some(self.vars),
            base_dir: self.base_dir,
            limits: self.loader.limits,
            flavor: self.flavor,
            allow_header_commands: self.loader.allow_header_commands,
            header_commands_held: self.loader.header_commands_held,
            accept_unenforced: self.loader.accept_unenforced,
            idps: Some(&self.idps),
        };
        let result = parse_entry(v, &ctx).and_then(|e| match e {
            Entry::Server(s, ignored) => match self.names.get(&s.name) {
                Some(first) => Err(ConfigError::new(
                    ConfigErrorKind::DuplicateName,
                    format!(
                        "duplicate server name `{}` (first defined at {first})",
                        s.name
                    ),
                )
                .at(join(&path, "name"))
                .for_server(Some(&s.name))),
                None => Ok(Entry::Server(s, ignored)),
            },
            disabled => Ok(disabled),
        });
        match result {
            Ok(Entry::Server(s, ignored)) => {
                self.names.insert(s.name.clone(), path);
                self.report.servers.push(*s);
                self.report.ignored.extend(ignored);
            }
            Ok(Entry::Disabled(name)) => {
                log::debug!("config: server `{name}` is disabled, skipped");
                self.report.skipped_disabled.push(name);
            }
            Err(e) if self.loader.strict => return Err(e),
            Err(e) => {
                log::warn!("{e}");
                self.report.errors.push(e);
            }
        }
        Ok(())
    }
}

/// JSON or YAML, by the first character.
pub(crate) fn parse_any(text: &str, limits: &InputLimits) -> Result<Value, ConfigError> {
    match text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .next()
    {
        Some('{') | Some('[') => jsonc::parse(text, limits),
        _ => yaml::parse(text, limits),
    }
}
