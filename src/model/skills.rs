//! The skills extension (`io.modelcontextprotocol/skills`): what `skills/list` answers.
//!
//! A server that declares the extension under `capabilities.extensions` offers agent skills:
//! each one a `SKILL.md` file (YAML frontmatter, then instructions) and the files next to it,
//! all readable with `resources/read`. An entry carries the frontmatter and, for each file, its
//! size and SHA-256 digest, so that a client can check what it later reads. See
//! [`Client::load_skill`](crate::Client::load_skill).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::Map;

/// The extension's identifier, the key a server declares it under in
/// `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// One skill as `skills/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`, such as `skill://pdf-processing/SKILL.md`.
    pub uri: String,
    /// The frontmatter of its `SKILL.md` (at least `name` and `description`).
    pub frontmatter: Map,
    /// Its files.
    pub resources: SkillResources,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

impl SkillEntry {
    /// An entry for `uri` with this frontmatter and these files.
    pub fn new(uri: impl Into<String>, frontmatter: Map, resources: SkillResources) -> Self {
        SkillEntry {
            uri: uri.into(),
            frontmatter,
            resources,
            extra: Map::new(),
        }
    }

    /// The skill's name: the path segment before `SKILL.md` in its URI (which the frontmatter's
    /// `name` must equal), or the frontmatter's `name` when the URI does not end so.
    ///
    /// ```
    /// use mcp_blocking::model::{SkillEntry, SkillResources};
    /// let entry = SkillEntry::new("skill://acme/pdf-processing/SKILL.md", Default::default(),
    ///     SkillResources::Dynamic);
    /// assert_eq!(entry.name(), Some("pdf-processing"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        let path = self.uri.split_once("://").map_or(&*self.uri, |(_, p)| p);
        let mut segments = path.rsplit('/').filter(|s| !s.is_empty());
        if segments.next() == Some("SKILL.md") {
            if let Some(name) = segments.next() {
                return Some(name);
            }
        }
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }
}

/// The files of a skill: listed with their sizes and digests, or left for the client to
/// discover by reading the skill's directory (`"dynamic"`), in which case nothing can be
/// verified.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included.
    Listed(Vec<SkillFile>),
    /// The server lists no files (`"dynamic"`).
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Listed(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "dynamic" => Ok(SkillResources::Dynamic),
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(SkillResources::Listed)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "`resources` must be an array of files or \"dynamic\"",
            )),
        }
    }
}

/// A file of a skill: where to read it and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// Its URI, read with `resources/read`.
    pub uri: String,
    /// Its digest: `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

impl SkillFile {
    /// A file at `uri` of `size` bytes whose digest is `digest`.
    pub fn new(uri: impl Into<String>, digest: impl Into<String>, size: u64) -> Self {
        SkillFile {
            uri: uri.into(),
            digest: digest.into(),
            size,
            extra: Map::new(),
        }
    }
}

/// One page of `skills/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListSkillsResult {
    /// The skills on this page.
    pub skills: Vec<SkillEntry>,
    /// The cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_parse_listed_and_dynamic_files() {
        let page: ListSkillsResult = serde_json::from_value(json!({"skills": [
            {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
             "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 3}]},
            {"uri": "skill://b/SKILL.md", "frontmatter": {"name": "b"}, "resources": "dynamic"}
        ], "nextCursor": "2"}))
        .unwrap();
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
        assert_eq!(page.skills[0].name(), Some("a"));
        assert_eq!(page.skills[0].description(), Some("d"));
        assert_eq!(
            page.skills[0].resources,
            SkillResources::Listed(vec![SkillFile::new("skill://a/SKILL.md", "sha256:00", 3)])
        );
        assert_eq!(page.skills[1].resources, SkillResources::Dynamic);
    }

    #[test]
    fn other_resources_values_and_negative_sizes_are_refused() {
        let bad = [
            json!({"uri": "u", "frontmatter": {}, "resources": "all"}),
            json!({"uri": "u", "frontmatter": {}, "resources": {}}),
            json!({"uri": "u", "frontmatter": {},
                   "resources": [{"uri": "f", "digest": "sha256:00", "size": -1}]}),
            json!({"uri": "u", "frontmatter": [], "resources": []}),
        ];
        for entry in bad {
            assert!(
                serde_json::from_value::<SkillEntry>(entry.clone()).is_err(),
                "{entry}"
            );
        }
    }
}
