//! Hosted MCP tools: the OpenAI Responses API's `{"type": "mcp", server_label, server_url, ...}`
//! entries, validated before they are sent to the model API.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{get_str_map, join};
use super::load::parse_any;
use super::suggest::nearest;
use super::{check_url, ConfigError, ConfigErrorKind, InputLimits, ServerConfig, REDACTED};

const KEYS: [&str; 8] = [
    "type",
    "server_label",
    "server_url",
    "server_description",
    "headers",
    "allowed_tools",
    "require_approval",
    "authorization",
];

/// When the hosted server's tool calls need approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequireApproval {
    /// `"never"`.
    Never,
    /// `"always"`.
    Always,
}

impl RequireApproval {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            RequireApproval::Never => "never",
            RequireApproval::Always => "always",
        }
    }
}

/// One hosted MCP tool entry. `Debug` hides header values and the authorization token.
///
/// ```
/// use mcp_blocking::config::HostedMcpServer;
/// use serde_json::json;
/// let entry = json!({"type": "mcp", "server_label": "context7",
///     "server_url": "https://mcp.context7.com/mcp",
///     "headers": {"CONTEXT7_API_KEY": "k-123"},
///     "allowed_tools": ["resolve-library-id"], "require_approval": "never"});
/// let s = HostedMcpServer::from_value(&entry)?;
/// assert_eq!(s.to_json(), entry);
/// let c = s.to_server_config();
/// assert_eq!((c.name(), c.transport_type()), ("context7", "streamable-http"));
/// assert!(!format!("{s:?}").contains("k-123"));
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct HostedMcpServer {
    /// The unique label.
    pub server_label: String,
    /// The server's url (`http://` or `https://`).
    pub server_url: String,
    /// What the server does, when given.
    pub server_description: Option<String>,
    /// Headers the host sends to the server, in order.
    pub headers: Vec<(String, String)>,
    /// The tools the model may use, when limited.
    pub allowed_tools: Option<Vec<String>>,
    /// Whether calls need approval, when given.
    pub require_approval: Option<RequireApproval>,
    /// An OAuth access token the host sends as `Authorization: Bearer`, when given.
    pub authorization: Option<String>,
}

impl fmt::Debug for HostedMcpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), REDACTED))
            .collect();
        f.debug_struct("HostedMcpServer")
            .field("server_label", &self.server_label)
            .field("server_url", &super::redact_url(&self.server_url))
            .field("server_description", &self.server_description)
            .field("headers", &headers)
            .field("allowed_tools", &self.allowed_tools)
            .field("require_approval", &self.require_approval)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| REDACTED),
            )
            .finish()
    }
}

/// The valid hosted servers of a list and an error for each invalid entry (which was skipped).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HostedReport {
    /// The valid entries, in order.
    pub servers: Vec<HostedMcpServer>,
    /// One error per skipped entry.
    pub errors: Vec<ConfigError>,
    /// The degradation policy of the list's `mcp` options block (@robojs/ai's
    /// `gracefulDegradation`, `extraRetries`, `baseDelayMs`, `maxDelayMs`), when the list is an
    /// object that has one.
    pub degradation: Option<crate::hub::Degradation>,
}

impl HostedReport {
    /// The valid entries as the Responses API's `tools` array.
    pub fn to_json(&self) -> Value {
        Value::Array(self.servers.iter().map(HostedMcpServer::to_json).collect())
    }
}

impl HostedMcpServer {
    /// A hosted server with a label and url.
    pub fn new(server_label: impl Into<String>, server_url: impl Into<String>) -> Self {
        HostedMcpServer {
            server_label: server_label.into(),
            server_url: server_url.into(),
            server_description: None,
            headers: Vec::new(),
            allowed_tools: None,
            require_approval: None,
            authorization: None,
        }
    }

    /// One entry, validated.
    ///
    /// # Errors
    /// [`ConfigErrorKind::MissingField`] for a missing `type`, `server_label` or `server_url`,
    /// [`ConfigErrorKind::InvalidValue`] for a `type` other than `"mcp"` or an unknown
    /// `require_approval`, [`ConfigErrorKind::WrongType`] for `headers` that are not an object of
    /// strings, [`ConfigErrorKind::UnknownKey`] and [`ConfigErrorKind::InvalidUrl`].
    pub fn from_value(value: &Value) -> Result<Self, ConfigError> {
        parse(value, "")
    }

    /// A list of entries: a JSON array, or an object with an `mcpServers` array (and, as in
    /// @robojs/ai's plugin options, an optional `mcp` options block read into
    /// [`HostedReport::degradation`]). Invalid entries and repeated `server_label`s are skipped
    /// with a `log::warn!` and reported.
    ///
    /// ```
    /// use mcp_blocking::config::HostedMcpServer;
    /// use serde_json::json;
    /// let r = HostedMcpServer::parse_list(&json!([
    ///     {"type": "mcp", "server_label": "a", "server_url": "https://a/mcp"},
    ///     {"type": "mcp", "server_label": "a", "server_url": "https://b/mcp"},
    ///     {"type": "mcp", "server_url": "https://c/mcp"}
    /// ]))?;
    /// assert_eq!(r.servers.len(), 1);
    /// assert_eq!(r.errors[0].to_string(), "server `a`: [1].server_label: duplicate server_label `a`");
    /// assert_eq!(r.errors[1].to_string(), "[2].server_label: missing `server_label`");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigErrorKind::UnknownFormat`] when `value` is neither form; an error at `mcp.KEY`
    /// for an options block with an unknown key or a value of the wrong type or out of range.
    pub fn parse_list(value: &Value) -> Result<HostedReport, ConfigError> {
        let (items, prefix) = match value {
            Value::Array(items) => (items, ""),
            Value::Object(m) => match m.get("mcpServers") {
                Some(Value::Array(items)) => (items, "mcpServers"),
                _ => return Err(ConfigError::new(
                    ConfigErrorKind::UnknownFormat,
                    "expected a list of hosted MCP entries or an object with an `mcpServers` list",
                )),
            },
            other => {
                return Err(
                    ConfigError::wrong_type("", "a list of hosted MCP entries", other)
                        .at("")
                        .in_file(None),
                )
            }
        };
        let mut report = HostedReport::default();
        if let Some(block) = value.get("mcp") {
            let Value::Object(map) = block else {
                return Err(ConfigError::wrong_type(
                    "mcp",
                    "an object of options",
                    block,
                ));
            };
            report.degradation = super::mcp_options::parse(map, "mcp")?;
        }
        let mut labels = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("{prefix}[{i}]");
            let result = parse(item, &path).and_then(|s| {
                if labels.insert(s.server_label.clone()) {
                    Ok(s)
                } else {
                    Err(ConfigError::new(
                        ConfigErrorKind::DuplicateName,
                        format!("duplicate server_label `{}`", s.server_label),
                    )
                    .at(join(&path, "server_label"))
                    .for_server(Some(&s.server_label)))
                }
            });
            match result {
                Ok(s) => report.servers.push(s),
                Err(e) => {
                    log::warn!("skipping hosted MCP entry: {e}");
                    report.errors.push(e);
                }
            }
        }
        Ok(report)
    }

    /// Reads a hosted list from a JSON or YAML file (see [`HostedMcpServer::parse_list`]).
    ///
    /// # Errors
    /// [`ConfigErrorKind::Io`], [`ConfigErrorKind::Syntax`] or [`ConfigErrorKind::UnknownFormat`],
    /// and [`ConfigErrorKind::TooLarge`] or [`ConfigErrorKind::TooDeep`] for a file over the
    /// default [`InputLimits`].
    pub fn load_list(path: impl AsRef<Path>) -> Result<HostedReport, ConfigError> {
        let path = path.as_ref();
        let file = Some(path);
        let limits = InputLimits::default();
        let text = limits
            .read(path, "file", ConfigErrorKind::Io)
            .map_err(|e| e.in_file(file))?;
        let doc = parse_any(&text, &limits).map_err(|e| e.in_file(file))?;
        let mut r = Self::parse_list(&doc).map_err(|e| e.in_file(file))?;
        for e in &mut r.errors {
            e.file = Some(path.to_path_buf());
        }
        Ok(r)
    }

    /// The exact JSON the Responses API takes; optional fields appear only when set.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), "mcp".into());
        m.insert("server_label".into(), self.server_label.clone().into());
        m.insert("server_url".into(), self.server_url.clone().into());
        if let Some(d) = &self.server_description {
            m.insert("server_description".into(), d.clone().into());
        }
        if !self.headers.is_empty() {
            let h: Map<String, Value> = self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            m.insert("headers".into(), Value::Object(h));
        }
        if let Some(t) = &self.allowed_tools {
            m.insert("allowed_tools".into(), t.clone().into());
        }
        if let Some(a) = self.require_approval {
            m.insert("require_approval".into(), a.as_str().into());
        }
        if let Some(a) = &self.authorization {
            m.insert("authorization".into(), a.clone().into());
        }
        Value::Object(m)
    }

    /// The same server for this library to call itself: streamable HTTP with these headers (and
    /// the authorization as a bearer token).
    pub fn to_server_config(&self) -> ServerConfig {
        let mut c = ServerConfig::http(&self.server_label, &self.server_url)
            .with_description(self.server_description.clone().unwrap_or_default());
        for (k, v) in &self.headers {
            c = c.with_header(k, v);
        }
        if let Some(a) = &self.authorization {
            c = c.with_bearer_token(a);
        }
        c
    }
}

fn parse(value: &Value, path: &str) -> Result<HostedMcpServer, ConfigError> {
    let label = value
        .get("server_label")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    parse_inner(value, path).map_err(|e| e.for_server(label))
}

fn required(m: &Map<String, Value>, key: &str, path: &str) -> Result<String, ConfigError> {
    match m.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => Err(ConfigError::new(
            ConfigErrorKind::MissingField,
            format!("missing `{key}`"),
        )
        .at(join(path, key))),
        Some(other) => Err(ConfigError::wrong_type(&join(path, key), "a string", other)),
    }
}

fn parse_inner(value: &Value, path: &str) -> Result<HostedMcpServer, ConfigError> {
    let Value::Object(m) = value else {
        return Err(ConfigError::wrong_type(
            path,
            "a mapping (one hosted MCP entry)",
            value,
        ));
    };
    if let Some(key) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(
            ConfigError::new(ConfigErrorKind::UnknownKey, format!("unknown key `{key}`"))
                .at(join(path, key))
                .suggest(nearest(key, KEYS)),
        );
    }
    let kind = required(m, "type", path)?;
    if kind != "mcp" {
        return Err(ConfigError::new(
            ConfigErrorKind::InvalidValue,
            format!("`type` must be \"mcp\", found `{kind}`"),
        )
        .at(join(path, "type"))
        .found_expected(kind, "mcp"));
    }
    let server_label = required(m, "server_label", path)?;
    let server_url = required(m, "server_url", path)?;
    check_url("server_url", &server_url).map_err(|e| e.at(join(path, "server_url")))?;
    let opt_str = |key: &str| match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ConfigError::wrong_type(&join(path, key), "a string", other)),
    };
    let allowed_tools = match m.get("allowed_tools") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(ConfigError::wrong_type(
                        &format!("{}[{i}]", join(path, "allowed_tools")),
                        "a string",
                        other,
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(other) => {
            return Err(ConfigError::wrong_type(
                &join(path, "allowed_tools"),
                "a list of tool names",
                other,
            ))
        }
    };
    let require_approval = match opt_str("require_approval")?.as_deref() {
        None => None,
        Some("never") => Some(RequireApproval::Never),
        Some("always") => Some(RequireApproval::Always),
        Some(other) => {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("`require_approval` must be \"never\" or \"always\", found `{other}`"),
            )
            .at(join(path, "require_approval"))
            .found_expected(other, "never or always")
            .suggest(nearest(other, ["never", "always"])))
        }
    };
    Ok(HostedMcpServer {
        server_label,
        server_url,
        server_description: opt_str("server_description")?,
        headers: get_str_map(m, "headers", path)?,
        allowed_tools,
        require_approval,
        authorization: opt_str("authorization")?,
    })
}
