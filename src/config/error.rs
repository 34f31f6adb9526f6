use std::fmt;
use std::path::PathBuf;

/// The class of a [`ConfigError`], for callers and tests that match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file could not be read.
    Io,
    /// The file is not valid JSON or YAML.
    Syntax,
    /// The document holds no recognised list or map of servers.
    UnknownFormat,
    /// A key that is not known at that place (typos are reported with the nearest known key).
    UnknownKey,
    /// A value of the wrong JSON type, e.g. `args` that is not a list of strings.
    WrongType,
    /// A required field is missing or empty: a name, a command, a url, a transport type.
    MissingField,
    /// A transport `type` that is not one of the known names.
    UnknownTransport,
    /// `transport: stdio` written flat, with sibling `command:`, instead of a nested mapping.
    FlatTransport,
    /// A url with the wrong scheme for its transport.
    InvalidUrl,
    /// A key that does not apply to the server's transport, e.g. `headers` on a stdio server.
    NotApplicable,
    /// Both `command` and `url` were given.
    CommandAndUrl,
    /// Two servers share a name (or two hosted servers a `server_label`).
    DuplicateName,
    /// A `${VAR}` whose variable is not set and that has no default.
    UndefinedVariable,
    /// A `${input:id}` whose value the caller did not supply.
    MissingInput,
    /// A malformed `${...}` expression.
    BadInterpolation,
    /// An `envFile` that cannot be read or has a malformed line.
    EnvFile,
    /// A value of the right type but not an allowed one, e.g. `require_approval: "sometimes"`.
    InvalidValue,
    /// A template whose front matter is not closed.
    FrontMatter,
    /// Input over a size limit of [`InputLimits`](super::InputLimits): a file or text longer
    /// than `max_file_bytes`, a document with more than `max_nodes` nodes once YAML aliases are
    /// expanded, or values that grow past `max_file_bytes` once aliases or `${...}` variables
    /// are expanded. The message names the limit.
    TooLarge,
    /// A document nested deeper than [`InputLimits::max_depth`](super::InputLimits::max_depth).
    TooDeep,
    /// A limit on what a server may do that cannot be enforced here (e.g. VS Code's
    /// `sandboxEnabled: true` on a remote server, a sandbox on a kernel without Landlock, a
    /// `denyRead` inside a granted folder): the server does not load, or does not start,
    /// rather than run with less confinement than asked for. The message names the key, or
    /// what is missing.
    Unenforceable,
    /// A server of a project file (found by
    /// [`ConfigLoader::discover`](crate::ConfigLoader::discover) in the current folder or a
    /// parent) that does not start because the user has not approved that file with its
    /// current contents (see [`TrustStore`](super::TrustStore)).
    NotTrusted,
    /// A server found by [`ConfigLoader::discover`](crate::ConfigLoader::discover) that does
    /// not start because the user's host settings say so: Claude Code's `permissions.deny` of
    /// the whole server (`mcp__NAME`), its `disabledMcpjsonServers` or `disabledMcpServers`. The
    /// message names the rule, and the error's file is the settings file.
    Denied,
}

/// A configuration problem, with where it was found and what was meant.
///
/// Its `Display` is one line: `file: server `name`: key.path: message (did you mean `x`?)`, each part
/// present when known.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::ConfigErrorKind;
/// let err = ServerConfig::from_value(&serde_json::json!({
///     "name": "fs", "transport": {"type": "stdio", "comand": "mcp-fs"}
/// })).unwrap_err();
/// assert_eq!(err.kind, ConfigErrorKind::UnknownKey);
/// assert_eq!(err.to_string(), "server `fs`: transport.comand: unknown key `comand` (did you mean `command`?)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file, when the configuration came from one.
    pub file: Option<PathBuf>,
    /// The server the problem concerns, when known.
    pub server: Option<String>,
    /// The key path, e.g. `mcpServers.github.transport.type`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// The nearest valid alternative, when there is one.
    pub suggestion: Option<String>,
    /// What was found, when it can be shown (never a secret value; a JSON type name instead).
    pub found: Option<String>,
    /// What was expected, when it can be said.
    pub expected: Option<String>,
    /// The class of the problem.
    pub kind: ConfigErrorKind,
}

impl ConfigError {
    /// A new error of `kind` with `message` and no location.
    ///
    /// ```
    /// use mcp_blocking::config::{ConfigError, ConfigErrorKind};
    /// let e = ConfigError::new(ConfigErrorKind::InvalidValue, "bad");
    /// assert_eq!(e.to_string(), "bad");
    /// ```
    pub fn new(kind: ConfigErrorKind, message: impl Into<String>) -> Self {
        ConfigError {
            file: None,
            server: None,
            path: String::new(),
            message: message.into(),
            suggestion: None,
            found: None,
            expected: None,
            kind,
        }
    }

    /// Sets the key path.
    pub(crate) fn at(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the server name unless one is already set.
    pub(crate) fn for_server(mut self, server: Option<&str>) -> Self {
        if self.server.is_none() {
            self.server = server.map(str::to_owned);
        }
        self
    }

    /// Sets the file unless one is already set.
    pub(crate) fn in_file(mut self, file: Option<&std::path::Path>) -> Self {
        if self.file.is_none() {
            self.file = file.map(std::path::Path::to_path_buf);
        }
        self
    }

    /// Sets the suggestion.
    pub(crate) fn suggest(mut self, s: Option<String>) -> Self {
        self.suggestion = s;
        self
    }

    /// Sets what was found and what was expected.
    pub(crate) fn found_expected(
        mut self,
        found: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        self.found = Some(found.into());
        self.expected = Some(expected.into());
        self
    }

    /// An error for a value of the wrong JSON type at `path`.
    pub(crate) fn wrong_type(path: &str, expected: &str, found: &serde_json::Value) -> Self {
        let found = json_type_name(found);
        ConfigError::new(
            ConfigErrorKind::WrongType,
            format!("expected {expected}, found {found}"),
        )
        .at(path)
        .found_expected(found, expected)
    }
}

/// The JSON type of `v` with an article, for messages ("a number", "a list").
pub(crate) fn json_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(server) = &self.server {
            write!(f, "server `{server}`: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}
