//! The skills extension on [`Client`]: list a server's skills, load one (its `SKILL.md`,
//! verified against its entry), and read its other files one at a time, each verified before
//! any byte of it is returned.

use base64::Engine as _;
use serde_json::{json, Value};

use super::{CallOptions, Client};
use crate::config::InputLimits;
use crate::error::{Error, ProtocolErrorKind, SkillErrorKind};
use crate::model::{
    ListSkillsResult, Map, ResourceContents, SkillEntry, SkillFile, SkillResources,
    SKILLS_EXTENSION,
};

/// The caps on what a server's skills may make a client hold. The defaults follow the skills
/// extension's own limits (512 files and 16 MiB per skill).
///
/// ```
/// use mcp_blocking::SkillLimits;
/// let limits = SkillLimits { max_file_bytes: 1024 * 1024, ..SkillLimits::default() };
/// assert_eq!(limits.max_files, 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillLimits {
    /// The most skills `skills/list` may return over all its pages. Default: 4,096.
    pub max_entries: usize,
    /// The most files one skill may list, `SKILL.md` included. Default: 512.
    pub max_files: usize,
    /// The largest file, in bytes. Default: 16 MiB.
    pub max_file_bytes: u64,
    /// The largest skill, its files' sizes summed, in bytes. Default: 16 MiB.
    pub max_skill_bytes: u64,
}

impl Default for SkillLimits {
    fn default() -> Self {
        SkillLimits {
            max_entries: 4096,
            max_files: 512,
            max_file_bytes: 16 * 1024 * 1024,
            max_skill_bytes: 16 * 1024 * 1024,
        }
    }
}

/// A skill whose `SKILL.md` was read and found as its entry lists it: size, digest and
/// frontmatter. Its other files are not read until [`read_file`](Self::read_file) asks for one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The entry it was verified against.
    pub entry: SkillEntry,
    /// The frontmatter read from `SKILL.md` (equal to the entry's).
    pub frontmatter: Map,
    /// The instructions: `SKILL.md` after its frontmatter.
    pub instructions: String,
    /// Its other files, as listed (not read).
    pub files: Vec<SkillFile>,
    server: String,
    limits: SkillLimits,
}

impl LoadedSkill {
    /// The configured name of the server it was loaded from.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// A skill as if loaded from `server`, for the crate's own unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests(server: &str, entry: SkillEntry, instructions: &str) -> LoadedSkill {
        LoadedSkill {
            frontmatter: entry.frontmatter.clone(),
            entry,
            instructions: instructions.to_owned(),
            files: Vec::new(),
            server: server.to_owned(),
            limits: SkillLimits::default(),
        }
    }

    /// Reads one of the skill's files from `client` (the client it was loaded with) and
    /// returns its bytes once their size and digest are those listed.
    ///
    /// # Errors
    /// [`Error::Skill`] of kind [`Unlisted`](SkillErrorKind::Unlisted) when `uri` is not one of
    /// [`files`](Self::files) (nothing is sent), [`TooLarge`](SkillErrorKind::TooLarge) when its
    /// listed size is over [`SkillLimits::max_file_bytes`] (nothing is sent),
    /// [`SizeMismatch`](SkillErrorKind::SizeMismatch),
    /// [`DigestMismatch`](SkillErrorKind::DigestMismatch) or
    /// [`Unverifiable`](SkillErrorKind::Unverifiable); as [`Client::read_resource`].
    pub fn read_file(&self, client: &Client, uri: &str) -> Result<Vec<u8>, Error> {
        self.read_file_with(client, uri, &CallOptions::default())
    }

    /// As [`read_file`](Self::read_file), with `opts` for the `resources/read` (its timeout;
    /// an [`Agent`](crate::agent::Agent) run also passes its cancellation, so that cancelling
    /// the run ends a read that is waited for).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_blocking::{CallOptions, Client, ServerConfig};
    /// let client = Client::connect(ServerConfig::stdio("docs", "docs-server"))?;
    /// let skill = client.load_skill("pdf-processing")?;
    /// if let Some(file) = skill.files.first() {
    ///     let opts = CallOptions::new().timeout(Duration::from_secs(5));
    ///     let bytes = skill.read_file_with(&client, &file.uri, &opts)?;
    ///     # let _ = bytes;
    /// }
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`read_file`](Self::read_file); [`Error::Timeout`] past `opts`' timeout.
    pub fn read_file_with(
        &self,
        client: &Client,
        uri: &str,
        opts: &CallOptions,
    ) -> Result<Vec<u8>, Error> {
        let Some(file) = self.files.iter().find(|f| f.uri == uri) else {
            return Err(skill_error(
                client,
                SkillErrorKind::Unlisted,
                uri,
                "not a listed file of this skill; not read".to_owned(),
            ));
        };
        client.read_verified(file, &self.limits, opts)
    }
}

impl Client {
    /// Whether the server declares the skills extension (`io.modelcontextprotocol/skills`
    /// under `capabilities.extensions`).
    pub fn supports_skills(&self) -> bool {
        self.capabilities().is_some_and(|c| {
            c.extra
                .get("extensions")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key(SKILLS_EXTENSION))
        })
    }

    /// Every skill the server offers (`skills/list`, following `nextCursor` to the end). No
    /// skill file is read.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools); [`Error::Protocol`] of kind
    /// [`TooMany`](ProtocolErrorKind::TooMany) past [`SkillLimits::max_entries`].
    pub fn list_skills(&self) -> Result<Vec<SkillEntry>, Error> {
        self.list_skills_with(&SkillLimits::default())
    }

    /// [`list_skills`](Self::list_skills) within `limits`.
    ///
    /// # Errors
    /// As [`list_skills`](Self::list_skills).
    pub fn list_skills_with(&self, limits: &SkillLimits) -> Result<Vec<SkillEntry>, Error> {
        let mut listed = 0usize;
        self.collect_pages(|cursor| {
            let params = match cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page: ListSkillsResult =
                self.typed("skills/list", Some(params), &CallOptions::default())?;
            listed += page.skills.len();
            if listed > limits.max_entries {
                return Err(self.redacted(Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::TooMany,
                    detail: format!(
                        "`skills/list` returned more than {} skills; stopping",
                        limits.max_entries
                    ),
                }));
            }
            // An empty cursor ends the list, as no cursor does.
            Ok((page.skills, page.next_cursor.filter(|c| !c.is_empty())))
        })
    }

    /// Loads the skill named by `skill`: the URI of its `SKILL.md`, or its name. Finds its
    /// entry with `skills/list`, then reads `SKILL.md` and returns it only when it is as listed;
    /// see [`load_skill_entry`](Self::load_skill_entry).
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, ServerConfig};
    /// let client = Client::connect(ServerConfig::stdio("docs", "docs-server"))?;
    /// let skill = client.load_skill("pdf-processing")?;
    /// println!("{}", skill.instructions);
    /// if let Some(file) = skill.files.first() {
    ///     let bytes = skill.read_file(&client, &file.uri)?;
    ///     # let _ = bytes;
    /// }
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Skill`] of kind [`NotFound`](SkillErrorKind::NotFound) when no entry has this
    /// URI or name; as [`list_skills`](Self::list_skills) and
    /// [`load_skill_entry`](Self::load_skill_entry).
    pub fn load_skill(&self, skill: &str) -> Result<LoadedSkill, Error> {
        let entries = self.list_skills()?;
        let entry = entries
            .iter()
            .find(|e| e.uri == skill)
            .or_else(|| entries.iter().find(|e| e.name() == Some(skill)));
        match entry {
            Some(entry) => self.load_skill_entry(entry, &SkillLimits::default()),
            None => Err(skill_error(
                self,
                SkillErrorKind::NotFound,
                skill,
                "the server lists no such skill".to_owned(),
            )),
        }
    }

    /// Loads the skill of `entry`: reads its `SKILL.md` (and nothing else), checks its size
    /// and digest against the entry's file list, parses its YAML frontmatter and checks that
    /// it equals the entry's, field by field. Only then is it returned.
    ///
    /// # Errors
    /// [`Error::Skill`]: [`TooLarge`](SkillErrorKind::TooLarge) when the entry lists more
    /// files or bytes than `limits` allow (nothing is read);
    /// [`Unverifiable`](SkillErrorKind::Unverifiable) when its files are `"dynamic"` or do not
    /// include `SKILL.md`; [`SizeMismatch`](SkillErrorKind::SizeMismatch),
    /// [`DigestMismatch`](SkillErrorKind::DigestMismatch),
    /// [`FrontmatterMismatch`](SkillErrorKind::FrontmatterMismatch); as
    /// [`read_resource`](Self::read_resource).
    pub fn load_skill_entry(
        &self,
        entry: &SkillEntry,
        limits: &SkillLimits,
    ) -> Result<LoadedSkill, Error> {
        let fail = |kind, detail: String| skill_error(self, kind, &entry.uri, detail);
        let SkillResources::Listed(files) = &entry.resources else {
            return Err(fail(
                SkillErrorKind::Unverifiable,
                "the skill lists its files as \"dynamic\": no size or digest to verify".to_owned(),
            ));
        };
        if files.len() > limits.max_files {
            return Err(fail(
                SkillErrorKind::TooLarge,
                format!(
                    "the skill lists {} files, more than {}",
                    files.len(),
                    limits.max_files
                ),
            ));
        }
        let total = files.iter().fold(0u64, |t, f| t.saturating_add(f.size));
        if total > limits.max_skill_bytes {
            return Err(fail(
                SkillErrorKind::TooLarge,
                format!(
                    "the skill's files add up to {total} bytes, more than {}",
                    limits.max_skill_bytes
                ),
            ));
        }
        let Some(manifest) = files.iter().find(|f| f.uri == entry.uri) else {
            return Err(fail(
                SkillErrorKind::Unverifiable,
                "the skill's files do not list its SKILL.md".to_owned(),
            ));
        };
        let bytes = self.read_verified(manifest, limits, &CallOptions::default())?;
        let text = String::from_utf8(bytes).map_err(|_| {
            fail(
                SkillErrorKind::FrontmatterMismatch,
                "SKILL.md is not UTF-8 text".to_owned(),
            )
        })?;
        let (frontmatter, instructions) = split_frontmatter(&text, manifest.size)
            .map_err(|why| fail(SkillErrorKind::FrontmatterMismatch, why))?;
        if let Some(field) = first_difference(&frontmatter, &entry.frontmatter) {
            return Err(fail(
                SkillErrorKind::FrontmatterMismatch,
                format!("SKILL.md's frontmatter field `{field}` differs from the listed entry's"),
            ));
        }
        Ok(LoadedSkill {
            entry: entry.clone(),
            frontmatter,
            instructions: instructions.to_owned(),
            files: files
                .iter()
                .filter(|f| f.uri != entry.uri)
                .cloned()
                .collect(),
            server: self.server_name().to_owned(),
            limits: *limits,
        })
    }

    /// Reads `file` and returns its bytes when they are as listed.
    fn read_verified(
        &self,
        file: &SkillFile,
        limits: &SkillLimits,
        opts: &CallOptions,
    ) -> Result<Vec<u8>, Error> {
        let fail = |kind, detail: String| skill_error(self, kind, &file.uri, detail);
        if file.size > limits.max_file_bytes {
            return Err(fail(
                SkillErrorKind::TooLarge,
                format!(
                    "listed at {} bytes, more than {}",
                    file.size, limits.max_file_bytes
                ),
            ));
        }
        // Checked before the read, so that a file that could never pass is not fetched.
        let Some(expected) = parse_digest(&file.digest) else {
            return Err(fail(
                SkillErrorKind::Unverifiable,
                "its digest is not `sha256:` and 64 hex digits".to_owned(),
            ));
        };
        let result = self.read_resource_with(&file.uri, opts)?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.uri() == file.uri)
            .or(result.contents.first());
        let bytes = match contents {
            Some(ResourceContents::Text(t)) => t.text.as_bytes().to_vec(),
            Some(ResourceContents::Blob(b)) => {
                // Base64 holds 3 bytes in 4 characters: a longer blob cannot be the listed size.
                if (b.blob.len() as u64) > file.size.div_ceil(3).saturating_mul(4) + 4 {
                    return Err(fail(
                        SkillErrorKind::SizeMismatch,
                        format!(
                            "read a blob too long for the listed {} bytes; not decoded",
                            file.size
                        ),
                    ));
                }
                base64::engine::general_purpose::STANDARD
                    .decode(b.blob.as_bytes())
                    .map_err(|e| {
                        fail(
                            SkillErrorKind::Unverifiable,
                            format!("its blob is not base64: {e}"),
                        )
                    })?
            }
            None => {
                return Err(fail(
                    SkillErrorKind::Unverifiable,
                    "the read returned no contents".to_owned(),
                ))
            }
        };
        if bytes.len() as u64 != file.size {
            return Err(fail(
                SkillErrorKind::SizeMismatch,
                format!("read {} bytes, listed as {}", bytes.len(), file.size),
            ));
        }
        let actual = ring::digest::digest(&ring::digest::SHA256, &bytes);
        if actual.as_ref() != expected {
            return Err(fail(
                SkillErrorKind::DigestMismatch,
                "its SHA-256 digest is not the listed one".to_owned(),
            ));
        }
        Ok(bytes)
    }
}

fn skill_error(client: &Client, kind: SkillErrorKind, uri: &str, detail: String) -> Error {
    client.redacted(Error::Skill {
        server: client.server_name().to_owned(),
        kind,
        uri: uri.to_owned(),
        detail,
    })
}

/// The 32 bytes of a `sha256:<64 hex digits>` digest.
fn parse_digest(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix("sha256:")?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

/// The frontmatter (a YAML mapping between `---` lines at the very start) and the text after
/// it. `size` bounds the YAML parser's work: the text was already checked to be that long.
fn split_frontmatter(text: &str, size: u64) -> Result<(Map, &str), String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = body
        .strip_prefix("---\n")
        .or_else(|| body.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not begin with a `---` frontmatter block")?;
    let mut offset = 0;
    let (yaml, after) = loop {
        let line_end = rest[offset..].find('\n').map(|i| offset + i + 1);
        let line = &rest[offset..line_end.unwrap_or(rest.len())];
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            break (&rest[..offset], &rest[line_end.unwrap_or(rest.len())..]);
        }
        match line_end {
            Some(end) => offset = end,
            None => return Err("SKILL.md's frontmatter block is not closed by `---`".to_owned()),
        }
    };
    let limits = InputLimits {
        max_file_bytes: usize::try_from(size).unwrap_or(usize::MAX),
        ..InputLimits::default()
    };
    match crate::config::yaml::parse(yaml, &limits) {
        Ok(Value::Object(map)) => Ok((map, after)),
        Ok(_) => Err("SKILL.md's frontmatter is not a mapping".to_owned()),
        Err(e) => Err(format!("SKILL.md's frontmatter does not parse: {e}")),
    }
}

/// The first field whose value differs between the two frontmatters, a missing field counting
/// as `null`.
fn first_difference(file: &Map, entry: &Map) -> Option<String> {
    file.keys()
        .chain(entry.keys())
        .find(|k| {
            let a = file.get(*k).unwrap_or(&Value::Null);
            let b = entry.get(*k).unwrap_or(&Value::Null);
            !same(a, b)
        })
        .cloned()
}

/// JSON equality, except that numbers compare by value (YAML `1.0` and JSON `1` agree).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => first_difference(x, y).is_none(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_parse_only_in_their_one_form() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_digest(&format!("sha256:{hex}")), Some([0xab; 32]));
        assert_eq!(
            parse_digest(&format!("sha256:{}", "AB".repeat(32))),
            Some([0xab; 32])
        );
        assert_eq!(parse_digest(&format!("sha512:{hex}")), None);
        assert_eq!(parse_digest(&format!("sha256:{}", &hex[2..])), None);
        assert_eq!(parse_digest(&format!("sha256:{}zz", &hex[2..])), None);
        assert_eq!(
            parse_digest("sha256:ééééééééééééééééééééééééééééééééé"),
            None
        );
    }

    #[test]
    fn frontmatter_is_split_from_the_instructions() {
        let text = "---\nname: a\ndescription: b\n---\n\nBody.\n";
        let (fm, body) = split_frontmatter(text, text.len() as u64).unwrap();
        assert_eq!(fm["name"], "a");
        assert_eq!(fm["description"], "b");
        assert_eq!(body, "\nBody.\n");
        assert!(split_frontmatter("no frontmatter", 14).is_err());
        assert!(split_frontmatter("---\nname: a\n", 12).is_err());
        assert!(split_frontmatter("---\n- a\n---\n", 12).is_err());
    }

    #[test]
    fn frontmatters_compare_field_by_field_with_missing_as_null() {
        let m = |v: Value| v.as_object().unwrap().clone();
        let a = m(json!({"name": "x", "n": 1, "meta": {"k": [1.0]}}));
        assert_eq!(
            first_difference(&a, &m(json!({"name": "x", "n": 1.0, "meta": {"k": [1]}}))),
            None
        );
        assert_eq!(
            first_difference(&a, &m(json!({"name": "y", "n": 1, "meta": {"k": [1]}}))).as_deref(),
            Some("name")
        );
        assert_eq!(
            first_difference(&m(json!({"a": null})), &m(json!({}))),
            None
        );
        assert_eq!(
            first_difference(&m(json!({})), &m(json!({"extra": "x"}))).as_deref(),
            Some("extra")
        );
    }
}
