//! Claude Code's `~/.claude.json` when it is larger than
//! [`InputLimits::max_file_bytes`](super::InputLimits::max_file_bytes): the file is also Claude
//! Code's store of every project's history, and grows to tens of megabytes. It is parsed in one
//! pass that builds only what MCP needs — the top-level `mcpServers`, and of `projects` the
//! entry of the folder asked for, with only its MCP keys — and skips the rest without building
//! it. What is kept is then bounded by the usual limits (nodes, depth, bytes), and loaded as any
//! host file is. The file's bytes are read whole first (at most [`MAX_BYTES`], freed once
//! parsed): parsing from memory is several times faster than from a stream, at the cost of
//! holding the file while it is parsed (a discovery with a 50 MB file: 0.04 s, 54 MiB at the
//! peak; streamed, 0.26 s a reading). Discovery reads it once for its three uses.
//!
//! ```text
//!   file ──read, at most MAX_BYTES──> serde_json, skipping
//!     { "mcpServers": kept,
//!       "projects": { "<this folder>": { "mcpServers", "enabledMcpjsonServers", ... kept },
//!                     "<any other>": skipped },
//!       "<anything else>": skipped }
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{ConfigError, ConfigErrorKind, InputLimits};

/// The largest `~/.claude.json` read this way (256 MiB): past it the file is refused as too
/// large. Its bytes are held while it is parsed; afterwards only the MCP keys kept.
pub(crate) const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The keys of a project entry kept: its servers, and Claude Code's choices about them.
const PROJECT_KEYS: [&str; 5] = [
    "mcpServers",
    "disabledMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "enableAllProjectMcpServers",
];

/// The `~/.claude.json` at `path` as a document: the whole file when it is within
/// `limits.max_file_bytes`, else only its MCP keys, those of the folder `dir` (see the module).
///
/// # Errors
/// As [`read_kept`], or the whole file's reading.
pub(crate) fn read(
    path: &Path,
    dir: Option<&Path>,
    limits: &InputLimits,
) -> Result<Value, ConfigError> {
    if is_large(path, limits) {
        let is_project = dir.map(super::documents::project_matcher);
        let is_project = |key: &str| is_project.as_ref().is_some_and(|m| m(key));
        read_kept(path, &is_project, limits)
    } else {
        let text = limits.read(path, "file", ConfigErrorKind::Io)?;
        super::jsonc::parse(&text, limits)
    }
}

/// Whether the file at `path` is a `~/.claude.json` too large for the whole-file reading.
pub(crate) fn is_large(path: &Path, limits: &InputLimits) -> bool {
    path.file_name().and_then(|n| n.to_str()) == Some(".claude.json")
        && std::fs::metadata(path)
            .is_ok_and(|m| m.len() > u64::try_from(limits.max_file_bytes).unwrap_or(u64::MAX))
}

/// Reads the MCP keys of the `~/.claude.json` at `path`: `mcpServers`, and the entry of
/// `projects` whose key `is_project` accepts (the first, as Claude Code writes one per folder),
/// with only its MCP keys.
///
/// # Errors
/// [`ConfigErrorKind::Io`] when it cannot be read; [`ConfigErrorKind::TooLarge`] past
/// [`MAX_BYTES`], or when what is kept is over `limits`; [`ConfigErrorKind::TooDeep`];
/// [`ConfigErrorKind::Syntax`] with the line and column.
pub(crate) fn read_kept(
    path: &Path,
    is_project: &dyn Fn(&str) -> bool,
    limits: &InputLimits,
) -> Result<Value, ConfigError> {
    let file = std::fs::File::open(path)
        .map_err(|e| ConfigError::new(ConfigErrorKind::Io, format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::new(ConfigErrorKind::Io, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ConfigError::new(
            ConfigErrorKind::TooLarge,
            format!("the file is larger than {} MiB", MAX_BYTES / (1024 * 1024)),
        ));
    }
    let kept = {
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let kept = Top { is_project }.deserialize(&mut de);
        kept.and_then(|v| de.end().map(|()| v))
    };
    let kept = kept.map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Io => ConfigErrorKind::Io,
            _ => ConfigErrorKind::Syntax,
        };
        ConfigError::new(
            kind,
            format!("invalid JSON at line {} column {}", e.line(), e.column()),
        )
    })?;
    check(&kept, limits)?;
    Ok(kept)
}

/// What was kept, within `limits`: nodes, depth, and the bytes of its strings.
fn check(kept: &Value, limits: &InputLimits) -> Result<(), ConfigError> {
    let (mut nodes, mut bytes) = (0usize, 0usize);
    let mut stack = vec![(kept, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        nodes += 1;
        if nodes > limits.max_nodes {
            return Err(ConfigError::new(
                ConfigErrorKind::TooLarge,
                format!(
                    "its MCP keys hold more than the `max_nodes` input limit ({} nodes)",
                    limits.max_nodes
                ),
            ));
        }
        let nested = matches!(v, Value::Array(_) | Value::Object(_));
        if nested && depth > limits.max_depth {
            return Err(ConfigError::new(
                ConfigErrorKind::TooDeep,
                format!(
                    "nested deeper than the `max_depth` input limit ({})",
                    limits.max_depth
                ),
            ));
        }
        match v {
            Value::String(s) => bytes += s.len(),
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(m) => {
                for (k, i) in m {
                    bytes += k.len();
                    stack.push((i, depth + 1));
                }
            }
            _ => {}
        }
        if bytes > limits.max_file_bytes {
            return Err(ConfigError::new(
                ConfigErrorKind::TooLarge,
                format!(
                    "its MCP keys are larger than the `max_file_bytes` input limit ({} bytes)",
                    limits.max_file_bytes
                ),
            ));
        }
    }
    Ok(())
}

/// The top-level mapping: `mcpServers` kept, `projects` filtered, the rest skipped.
struct Top<'a> {
    is_project: &'a dyn Fn(&str) -> bool,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "mcpServers" => {
                    out.insert(key, map.next_value::<Value>()?);
                }
                "projects" => {
                    let projects = map.next_value_seed(Filtered::Projects(self.is_project))?;
                    out.insert(key, projects);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A mapping read with only some of its entries kept: `projects` (the entry of the folder,
/// with its MCP keys) or one project's entry (its MCP keys; the rest, its history, skipped).
/// A value that is not a mapping is kept small (a string cut, a list emptied), for the
/// loader's type error at its place.
enum Filtered<'a> {
    /// `projects`: the first entry whose key names the folder.
    Projects(&'a dyn Fn(&str) -> bool),
    /// One project's entry: its keys of [`PROJECT_KEYS`].
    ProjectKeys,
}

impl<'de> DeserializeSeed<'de> for Filtered<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Filtered<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match &self {
                Filtered::Projects(is_project) if out.is_empty() && is_project(&key) => {
                    let entry = map.next_value_seed(Filtered::ProjectKeys)?;
                    out.insert(key, entry);
                }
                Filtered::ProjectKeys if PROJECT_KEYS.contains(&key.as_str()) => {
                    out.insert(key, map.next_value::<Value>()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.chars().take(64).collect()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(Vec::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, text: &str) -> std::path::PathBuf {
        let path = dir.join(".claude.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcp-claude-json-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn keeps_the_mcp_keys_of_the_folder_and_skips_the_rest() {
        let dir = temp("keep");
        let history: Vec<Value> = (0..2000)
            .map(|i| json!({"display": "x".repeat(100), "n": i}))
            .collect();
        let doc = json!({
            "numStartups": 3,
            "mcpServers": {"user": {"command": "u"}},
            "projects": {
                "/other": {"history": history, "mcpServers": {"no": {"command": "n"}}},
                "/home/u/app": {
                    "history": history,
                    "mcpServers": {"local": {"command": "l"}},
                    "disabledMcpjsonServers": ["gone"],
                    "allowedTools": []
                }
            },
            "cachedStuff": {"big": history}
        });
        let path = write(&dir, &doc.to_string());
        let kept = read_kept(&path, &|k| k == "/home/u/app", &InputLimits::default()).unwrap();
        assert_eq!(
            kept,
            json!({
                "mcpServers": {"user": {"command": "u"}},
                "projects": {"/home/u/app": {
                    "mcpServers": {"local": {"command": "l"}},
                    "disabledMcpjsonServers": ["gone"]
                }}
            })
        );
        // A folder with no entry keeps an empty map.
        let kept = read_kept(&path, &|k| k == "/nowhere", &InputLimits::default()).unwrap();
        assert_eq!(kept["projects"], json!({}));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn what_is_kept_stays_within_the_limits() {
        let dir = temp("limits");
        let servers: Map<String, Value> = (0..50)
            .map(|i| (format!("s{i}"), json!({"command": "c", "args": ["a", "b"]})))
            .collect();
        let path = write(&dir, &json!({ "mcpServers": servers }).to_string());
        let tight = InputLimits::default().with_max_nodes(100);
        let e = read_kept(&path, &|_| false, &tight).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooLarge);
        assert!(e.message.contains("max_nodes"), "{e}");
        let shallow = InputLimits::default().with_max_depth(2);
        let e = read_kept(&path, &|_| false, &shallow).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep);
        assert!(read_kept(&path, &|_| false, &InputLimits::default()).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_file_is_a_syntax_error_with_its_place_and_no_text() {
        let dir = temp("broken");
        let path = write(
            &dir,
            "{\"mcpServers\": {\"a\": {\"command\": \"s3cret\"}},\n  \"projects\": [1, }",
        );
        let e = read_kept(&path, &|_| true, &InputLimits::default()).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Syntax);
        assert!(e.message.contains("line 2"), "{e}");
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let path = write(&dir, "{} trailing");
        let e = read_kept(&path, &|_| true, &InputLimits::default()).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Syntax);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_a_large_claude_json_is_read_this_way() {
        let dir = temp("large");
        let path = write(&dir, &format!("{{\"pad\": \"{}\"}}", "x".repeat(200)));
        assert!(!is_large(&path, &InputLimits::default()));
        assert!(is_large(
            &path,
            &InputLimits::default().with_max_file_bytes(100)
        ));
        let other = dir.join("mcp.json");
        std::fs::write(&other, "x".repeat(200)).unwrap();
        assert!(!is_large(
            &other,
            &InputLimits::default().with_max_file_bytes(100)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
