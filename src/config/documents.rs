//! The top level of each host's file: where its servers are, and what else there is.
//!
//! | host | servers under | also read |
//! |---|---|---|
//! | Claude Desktop, Claude Code's `.mcp.json`, Cursor, Windsurf | `mcpServers` | |
//! | VS Code | `servers` | |
//! | RobotLab, @robojs/ai | `mcp` (a list, or `{servers}`) | `mcp`'s options block: [`LoadReport::degradation`](super::LoadReport::degradation) |
//! | Claude Code's `~/.claude.json` | `mcpServers` (user scope), `projects[<dir>].mcpServers` (local scope, the project directory's) | |
//! | Gemini CLI's `settings.json` | `mcpServers` | Gemini's `mcp` block: `allowed`, `excluded` |
//! | Zed's `settings.json` | `context_servers` | |
//! | Codex's `config.toml` | `mcp_servers` | |
//!
//! A settings file (Gemini's, Zed's, Codex's, `~/.claude.json`) holds much else, and may hold
//! no server at all: that is not an error, unless a top-level key looks like a misspelt one.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::entry::{join, Flavor};
use super::fields::get_list;
use super::load::{Walk, TOP_LEVEL};
use super::suggest::nearest;
use super::{mcp_options, ConfigError, ConfigErrorKind, IgnoredKey};

/// The flavor a document's own keys tell, for a document whose file did not: Zed's
/// `context_servers`, Codex's `mcp_servers`.
pub(crate) fn flavor_of_doc(m: &Map<String, Value>) -> Option<Flavor> {
    if TOP_LEVEL.iter().any(|k| m.contains_key(*k)) {
        return None;
    }
    if m.contains_key("context_servers") {
        Some(Flavor::Zed)
    } else if m.contains_key("mcp_servers") {
        Some(Flavor::Codex)
    } else {
        None
    }
}

/// The flavor a file's place and name tell (`.gemini/settings.json` is Gemini CLI's).
pub(crate) fn flavor_of_path(path: &Path) -> Flavor {
    let lower = |s: Option<&std::ffi::OsStr>| {
        s.and_then(|s| s.to_str())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let name = lower(path.file_name());
    let parent = lower(path.parent().and_then(Path::file_name));
    let ext = lower(path.extension());
    match (name.as_str(), parent.as_str()) {
        _ if ext == "toml" => Flavor::Codex,
        ("settings.json", ".gemini") => Flavor::Gemini,
        ("settings.json", "zed") => Flavor::Zed,
        ("mcp_config.json", _) => Flavor::Windsurf,
        ("mcp.json", ".vscode") => Flavor::VsCode,
        ("mcp.json", ".cursor") => Flavor::Cursor,
        (".mcp.json" | ".claude.json", _) => Flavor::ClaudeCode,
        ("claude_desktop_config.json", _) => Flavor::ClaudeDesktop,
        _ => Flavor::Generic,
    }
}

/// Whether the file at `path`, of `flavor`, is a host's settings file, which may hold no server.
pub(crate) fn is_settings_file(path: &Path, flavor: Flavor) -> bool {
    matches!(flavor, Flavor::Gemini | Flavor::Zed | Flavor::Codex)
        || path.file_name().and_then(|n| n.to_str()) == Some(".claude.json")
}

/// `path` as `~/.claude.json` spells its project keys: `/` between components, no trailing
/// one, no `\\?\` prefix (which resolving a path adds on Windows); on Windows without regard
/// to case.
fn project_key(path: &str) -> String {
    let path = path.strip_prefix(r"\\?\").unwrap_or(path);
    let mut s = path.replace('\\', "/");
    while s.len() > 1 && s.ends_with('/') {
        s.pop();
    }
    if cfg!(windows) {
        s.make_ascii_lowercase();
    }
    s
}

/// The entry of `projects` (`~/.claude.json`'s map of project directories) for the folder
/// `dir`, as given or resolved, with its key as written.
pub(crate) fn project_entry<'a>(
    projects: &'a Map<String, Value>,
    dir: &Path,
) -> Option<(&'a String, &'a Value)> {
    let is_project = project_matcher(dir);
    projects.iter().find(|(k, _)| is_project(k))
}

/// Whether a key of `~/.claude.json`'s `projects` names the folder `dir`, as given or resolved.
pub(crate) fn project_matcher(dir: &Path) -> impl Fn(&str) -> bool {
    let wanted: Vec<String> = [Some(dir.to_path_buf()), std::fs::canonicalize(dir).ok()]
        .into_iter()
        .flatten()
        .filter_map(|d| d.to_str().map(project_key))
        .collect();
    move |key| wanted.contains(&project_key(key))
}

/// Whether `m` holds Gemini CLI's `mcp` block: a mapping with its keys and none of the
/// `mcp` options block's (see `mcp_options`).
fn has_gemini_block(m: &Map<String, Value>) -> bool {
    m.get("mcp")
        .and_then(Value::as_object)
        .is_some_and(|block| {
            block
                .keys()
                .any(|k| matches!(k.as_str(), "allowed" | "excluded" | "serverCommand"))
                && !block.keys().any(|k| {
                    matches!(
                        k.as_str(),
                        "servers"
                            | "gracefulDegradation"
                            | "extraRetries"
                            | "baseDelayMs"
                            | "maxDelayMs"
                    )
                })
        })
}

impl Walk<'_> {
    /// Walks a mapping document of this walk's flavor; `settings` for a host's settings file.
    pub(crate) fn document(
        &mut self,
        m: &Map<String, Value>,
        settings: bool,
    ) -> Result<(), ConfigError> {
        // Gemini CLI's own `mcp` block (`allowed`, `excluded`, `serverCommand`) says whose
        // file this is, wherever it lies: read as Gemini's, so that its server lists apply.
        if self.flavor == Flavor::Generic && has_gemini_block(m) {
            self.flavor = Flavor::Gemini;
        }
        let found = match self.flavor {
            Flavor::Codex => self.servers_under(m, "mcp_servers")?,
            Flavor::Zed => self.servers_under(m, "context_servers")?,
            Flavor::Gemini => self.gemini(m)?,
            Flavor::ClaudeCode if m.contains_key("projects") => self.claude_json(m)?,
            _ => self.generic(m)?,
        };
        if found {
            return Ok(());
        }
        let containers: &[&str] = match self.flavor {
            Flavor::Codex => &["mcp_servers"],
            Flavor::Zed => &["context_servers"],
            Flavor::Gemini => &["mcpServers"],
            _ => &TOP_LEVEL,
        };
        let suggestion = m
            .keys()
            .filter(|k| k.len() > 2)
            .find_map(|k| nearest(k, containers.iter().copied()));
        if settings && suggestion.is_none() {
            return Ok(());
        }
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let (message, expected) = if containers.len() == 1 {
            (
                format!(
                    "no MCP servers found: expected a top-level `{}` map",
                    containers[0]
                ),
                containers[0].to_owned(),
            )
        } else {
            (
                "no MCP servers found: expected a top-level `mcpServers` map, `servers` map or `mcp` list"
                    .to_owned(),
                "mcpServers, servers or mcp".to_owned(),
            )
        };
        Err(ConfigError::new(ConfigErrorKind::UnknownFormat, message)
            .found_expected(format!("keys: {}", keys.join(", ")), expected)
            .suggest(suggestion))
    }

    /// The servers of the map at `key`, when there is one.
    fn servers_under(&mut self, m: &Map<String, Value>, key: &str) -> Result<bool, ConfigError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Object(map)) => {
                self.map(map, key)?;
                Ok(true)
            }
            Some(other) => Err(ConfigError::wrong_type(key, "a mapping of servers", other)),
        }
    }

    /// `mcpServers`, `servers` and `mcp`, as every host but Gemini CLI means them.
    fn generic(&mut self, m: &Map<String, Value>) -> Result<bool, ConfigError> {
        let mut found = false;
        for key in TOP_LEVEL {
            let Some(v) = m.get(key) else { continue };
            match v {
                Value::Object(map) if key == "mcp" => {
                    self.report.degradation = mcp_options::parse(map, "mcp")?;
                    match map.get("servers") {
                        Some(Value::Object(s)) => {
                            found = true;
                            self.map(s, "mcp.servers")?;
                        }
                        Some(other) => {
                            return Err(ConfigError::wrong_type(
                                "mcp.servers",
                                "a mapping of servers",
                                other,
                            ))
                        }
                        // Only options: the servers are elsewhere, or the file has none.
                        None if self.report.degradation.is_some() => {}
                        None => return Err(ConfigError::wrong_type("mcp", "a list of servers", v)),
                    }
                }
                Value::Object(map) => {
                    found = true;
                    self.map(map, key)?;
                }
                Value::Array(items) => {
                    found = true;
                    self.list(items, key)?;
                }
                other => {
                    let expected = if key == "mcp" {
                        "a list of servers"
                    } else {
                        "a mapping of servers"
                    };
                    return Err(ConfigError::wrong_type(key, expected, other));
                }
            }
        }
        Ok(found)
    }

    /// Gemini CLI's `settings.json`: `mcpServers`, filtered by Gemini's own `mcp` block
    /// (`allowed`: only these names; `excluded`: never these, whatever `allowed` says).
    fn gemini(&mut self, m: &Map<String, Value>) -> Result<bool, ConfigError> {
        let mut allowed = None;
        let mut excluded = Vec::new();
        match m.get("mcp") {
            None | Some(Value::Null) => {}
            Some(Value::Object(block)) => {
                if block.contains_key("allowed") {
                    allowed = Some(get_list(block, "allowed", "mcp")?);
                }
                excluded = get_list(block, "excluded", "mcp")?;
                for key in block.keys() {
                    if key == "allowed" || key == "excluded" {
                        continue;
                    }
                    let reason = if key == "serverCommand" {
                        "Gemini CLI's command for a server of its own; not run"
                    } else {
                        "a Gemini CLI setting with no meaning here"
                    };
                    self.report
                        .ignored
                        .push(IgnoredKey::new(None, join("mcp", key), reason));
                }
            }
            Some(other) => return Err(ConfigError::wrong_type("mcp", "a mapping", other)),
        }
        let map = match m.get("mcpServers") {
            None | Some(Value::Null) => return Ok(false),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    "mcpServers",
                    "a mapping of servers",
                    other,
                ))
            }
        };
        for (name, v) in map {
            let path = join("mcpServers", name);
            let why = if excluded.contains(name) {
                Some("listed in Gemini CLI's `mcp.excluded`: not loaded")
            } else if allowed.as_ref().is_some_and(|a| !a.contains(name)) {
                Some("not listed in Gemini CLI's `mcp.allowed`: not loaded")
            } else {
                None
            };
            match why {
                Some(reason) => {
                    log::debug!("config: server `{name}` {reason}");
                    self.report.skipped_disabled.push(name.clone());
                    self.report
                        .ignored
                        .push(IgnoredKey::new(Some(name), path, reason));
                }
                None => self.host_entry(v, path, name)?,
            }
        }
        Ok(true)
    }

    /// Claude Code's `~/.claude.json`: the project directory's servers (`projects[<dir>]`,
    /// local scope) first, then the user's (`mcpServers`), where a project's server hides the
    /// user's of the same name.
    fn claude_json(&mut self, m: &Map<String, Value>) -> Result<bool, ConfigError> {
        let projects = match m.get("projects") {
            Some(Value::Object(p)) => p,
            Some(Value::Null) | None => &Map::new(),
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    "projects",
                    "a mapping of project directories",
                    other,
                ))
            }
        };
        let mut found = false;
        let mut local: Vec<(String, String)> = Vec::new();
        let project = match (self.loader.user_scope_only, self.loader.project_dir()) {
            (false, Some(dir)) => project_entry(projects, &dir),
            _ => None,
        };
        if let Some((key, project)) = project {
            let ppath = join("projects", key);
            let servers = match project {
                Value::Object(p) => p.get("mcpServers"),
                Value::Null => None,
                other => return Err(ConfigError::wrong_type(&ppath, "a mapping", other)),
            };
            match servers {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => {
                    found = true;
                    let prefix = join(&ppath, "mcpServers");
                    for (name, _) in map {
                        local.push((name.clone(), join(&prefix, name)));
                    }
                    self.map(map, &prefix)?;
                }
                Some(other) => {
                    return Err(ConfigError::wrong_type(
                        &join(&ppath, "mcpServers"),
                        "a mapping of servers",
                        other,
                    ))
                }
            }
        }
        match m.get("mcpServers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                found = true;
                for (name, v) in map {
                    let path = join("mcpServers", name);
                    match local.iter().find(|(n, _)| n == name) {
                        Some((_, at)) => self.report.ignored.push(IgnoredKey::new(
                            Some(name),
                            path,
                            format!(
                                "shadowed by the project's server of the same name at {at} \
                                 (local scope wins over user scope)"
                            ),
                        )),
                        None => self.host_entry(v, path, name)?,
                    }
                }
            }
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    "mcpServers",
                    "a mapping of servers",
                    other,
                ))
            }
        }
        Ok(found)
    }
}

impl super::ConfigLoader {
    /// The project directory whose `~/.claude.json` servers are read: the one set with
    /// [`with_project_dir`](super::ConfigLoader::with_project_dir), else the current one.
    pub(crate) fn project_dir(&self) -> Option<PathBuf> {
        self.project_dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_tells_its_host_by_place_and_name() {
        let cases = [
            ("/p/.gemini/settings.json", Flavor::Gemini),
            ("/h/.codex/config.toml", Flavor::Codex),
            ("/h/.config/zed/settings.json", Flavor::Zed),
            ("/h/.codeium/windsurf/mcp_config.json", Flavor::Windsurf),
            ("/p/.vscode/mcp.json", Flavor::VsCode),
            ("/p/.cursor/mcp.json", Flavor::Cursor),
            ("/p/.mcp.json", Flavor::ClaudeCode),
            ("/h/.claude.json", Flavor::ClaudeCode),
            (
                "/h/Claude/claude_desktop_config.json",
                Flavor::ClaudeDesktop,
            ),
            ("/p/settings.json", Flavor::Generic),
            ("/p/servers.yaml", Flavor::Generic),
        ];
        for (path, flavor) in cases {
            assert_eq!(flavor_of_path(Path::new(path)), flavor, "{path}");
        }
    }

    #[test]
    fn project_keys_compare_as_claude_code_writes_them() {
        assert_eq!(project_key("/home/u/app/"), "/home/u/app");
        assert_eq!(project_key("/"), "/");
        assert_eq!(
            project_key("C:\\Users\\u\\app"),
            project_key("C:/Users/u/app")
        );
        // A resolved path on Windows is verbatim; Claude Code writes the plain one.
        assert_eq!(
            project_key(r"\\?\C:\Users\u\app"),
            project_key("C:/Users/u/app")
        );
    }
}
