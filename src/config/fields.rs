//! Reading the fields of a config entry: typed getters that name the key path of what is wrong,
//! and which spelling rules apply. Shared by server entries (`entry.rs`), their `oauth` blocks
//! (`oauth_entry.rs`) and hosted-MCP lists (`hosted.rs`).

use serde_json::{Map, Value};

use super::ConfigError;

/// Which spelling rules apply.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dialect {
    /// RobotLab's `{name, description, transport: {type, ...}, timeout}`; `type` required and one
    /// of [`VALID_TRANSPORT_TYPES`].
    RobotLab,
    /// A host file's map entry: flat or nested, `type` inferred, `streamableHttp` accepted, and
    /// the keys of other hosts that mean nothing here accepted and reported as ignored.
    Host,
}

/// Which host wrote the file: where the same key means different things to different hosts
/// (Gemini CLI's `url` is legacy SSE, its `timeout` milliseconds), or a host has keys of its own.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[allow(dead_code, reason = "each host's file is read by its own loader")]
pub(crate) enum Flavor {
    /// Any host, or not known: the keys every host agrees on, and the common host keys.
    #[default]
    Generic,
    /// Claude Code (`.mcp.json`, `~/.claude.json`).
    ClaudeCode,
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// VS Code (`.vscode/mcp.json`, the user `mcp.json`).
    VsCode,
    /// Cursor (`.cursor/mcp.json`, `~/.cursor/mcp.json`).
    Cursor,
    /// Gemini CLI (`.gemini/settings.json`).
    Gemini,
    /// Codex (`~/.codex/config.toml`).
    Codex,
    /// Zed (`settings.json`, `context_servers`).
    Zed,
    /// Windsurf (`mcp_config.json`).
    Windsurf,
}

/// `prefix.key`, or `key` at the top.
pub(crate) fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The value of `key`, unless absent or `null`.
pub(crate) fn present<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).filter(|v| !v.is_null())
}

/// A string, when present.
pub(crate) fn get_str(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, ConfigError> {
    match present(map, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ConfigError::wrong_type(&join(path, key), "a string", other)),
    }
}

/// A boolean, when present.
pub(crate) fn get_bool(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<bool>, ConfigError> {
    match present(map, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ConfigError::wrong_type(
            &join(path, key),
            "a boolean",
            other,
        )),
    }
}

/// A list of strings (empty when absent).
pub(crate) fn get_list(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Vec<String>, ConfigError> {
    let path = join(path, key);
    match present(map, key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(ConfigError::wrong_type(
                    &format!("{path}[{i}]"),
                    "a string",
                    other,
                )),
            })
            .collect(),
        Some(other) => Err(ConfigError::wrong_type(&path, "a list of strings", other)),
    }
}

/// A mapping of strings to strings, in file order.
pub(crate) fn get_str_map(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let path = join(path, key);
    match present(map, key) {
        None => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(ConfigError::wrong_type(&join(&path, k), "a string", other)),
            })
            .collect(),
        Some(other) => Err(ConfigError::wrong_type(
            &path,
            "a mapping of strings",
            other,
        )),
    }
}
