//! Templates: a Markdown file whose YAML front matter holds `description`, `mcp:` (servers) and
//! `tools:` (an allow-list), and whose body is the system prompt.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::load::Walk;
use super::{yaml, ConfigError, ConfigErrorKind, ConfigLoader, LoadReport, ServerConfig};

/// A prompt template with YAML front matter.
///
/// ```
/// use mcp_blocking::config::Template;
/// let t = Template::parse(r#"---
/// description: GitHub assistant
/// mcp:
///   - name: github
///     transport: { type: stdio, command: npx, args: ["-y", "@modelcontextprotocol/server-github"] }
/// tools: [search_repositories]
/// ---
/// You are a helpful GitHub assistant.
/// "#)?;
/// assert_eq!(t.description.as_deref(), Some("GitHub assistant"));
/// assert_eq!(t.mcp[0].name(), "github");
/// assert_eq!(t.tools.as_deref(), Some(&["search_repositories".to_string()][..]));
/// assert_eq!(t.body, "You are a helpful GitHub assistant.\n");
/// // No explicit list: the front matter's servers are used.
/// assert_eq!(t.mcp_servers(None).len(), 1);
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Template {
    /// The front matter's `description`.
    pub description: Option<String>,
    /// The front matter's `mcp:` servers.
    pub mcp: Vec<ServerConfig>,
    /// The front matter's `tools:` allow-list, when given.
    pub tools: Option<Vec<String>>,
    /// The other front-matter keys, as written (e.g. `model`).
    pub metadata: Map<String, Value>,
    /// The text after the front matter: the system prompt.
    pub body: String,
}

impl Template {
    /// Reads and parses the template at `path`; variables come from the process environment.
    ///
    /// # Errors
    /// [`ConfigErrorKind::Io`] when it cannot be read, else as [`Template::parse`].
    pub fn load(path: impl AsRef<Path>) -> Result<Template, ConfigError> {
        ConfigLoader::new().load_template(path)
    }

    /// Parses template text; variables come from the process environment.
    ///
    /// # Errors
    /// [`ConfigErrorKind::FrontMatter`] when the front matter is not closed,
    /// [`ConfigErrorKind::Syntax`] when it is not YAML, [`ConfigErrorKind::TooLarge`] or
    /// [`ConfigErrorKind::TooDeep`] over an [`InputLimits`](super::InputLimits) limit (the
    /// defaults; see [`ConfigLoader::with_input_limits`]), and the first server's error otherwise
    /// (templates load strictly).
    pub fn parse(text: &str) -> Result<Template, ConfigError> {
        ConfigLoader::new().parse_template(text, None)
    }

    /// The servers to use: an explicit list overrides the front matter's; `None` falls back to it.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::Template;
    /// let t = Template::parse("---\nmcp: [{name: a, transport: {type: stdio, command: a}}]\n---\n")?;
    /// let explicit = [ServerConfig::stdio("b", "b")];
    /// assert_eq!(t.mcp_servers(Some(&explicit))[0].name(), "b");
    /// assert_eq!(t.mcp_servers(None)[0].name(), "a");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn mcp_servers<'a>(&'a self, explicit: Option<&'a [ServerConfig]>) -> &'a [ServerConfig] {
        explicit.unwrap_or(&self.mcp)
    }
}

/// Splits `---\n...\n---\n` front matter from the body; `None` when there is no front matter.
fn split(text: &str) -> Result<Option<(&str, &str)>, ConfigError> {
    let text = text.trim_start_matches('\u{feff}');
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(None);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed == "..." {
            return Ok(Some((&rest[..offset], &rest[offset + line.len()..])));
        }
        offset += line.len();
    }
    Err(ConfigError::new(
        ConfigErrorKind::FrontMatter,
        "front matter opened with `---` is never closed (add a `---` line after it)",
    ))
}

impl ConfigLoader {
    /// Reads and parses the template at `path` with this loader's variables; servers load strictly.
    ///
    /// # Errors
    /// As [`Template::load`], with the file set.
    pub fn load_template(&self, path: impl AsRef<Path>) -> Result<Template, ConfigError> {
        let path = path.as_ref();
        let text = self
            .limits
            .read(path, "file", ConfigErrorKind::Io)
            .map_err(|e| e.in_file(Some(path)))?;
        self.parse_template(&text, path.parent())
            .map_err(|e| e.in_file(Some(path)))
    }

    pub(crate) fn parse_template(
        &self,
        text: &str,
        base_dir: Option<&Path>,
    ) -> Result<Template, ConfigError> {
        self.limits.check_text(text)?;
        let Some((front, body)) = split(text)? else {
            return Ok(Template {
                body: text.to_owned(),
                ..Template::default()
            });
        };
        let doc = yaml::parse(front, &self.limits)?;
        let mut meta = match doc {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => return Err(ConfigError::wrong_type("front matter", "a mapping", &other)),
        };
        let description = match meta.shift_remove("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => return Err(ConfigError::wrong_type("description", "a string", &other)),
        };
        let tools = match meta.shift_remove("tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(ConfigError::wrong_type(
                            &format!("tools[{i}]"),
                            "a string",
                            other,
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    "tools",
                    "a list of tool names",
                    &other,
                ))
            }
        };
        let strict = ConfigLoader {
            strict: true,
            ..self.clone()
        };
        let vars = strict.vars(base_dir);
        let mut walk = Walk {
            loader: &strict,
            vars: &vars,
            base_dir,
            report: LoadReport::default(),
            names: HashMap::new(),
            flavor: super::entry::Flavor::Generic,
            idps: Default::default(),
        };
        match meta.shift_remove("mcp") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => walk.list(&items, "mcp")?,
            Some(other) => return Err(ConfigError::wrong_type("mcp", "a list of servers", &other)),
        }
        Ok(Template {
            description,
            mcp: walk.report.servers,
            tools,
            metadata: meta,
            body: body.to_owned(),
        })
    }
}
