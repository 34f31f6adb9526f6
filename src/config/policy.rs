//! What a server may do, as the file it came from says: which of its tools are offered and
//! callable, which run without asking the user, and whether it asked for a sandbox.
//!
//! Every host spells these differently (Gemini CLI's `includeTools` / `excludeTools` / `trust`,
//! Codex's `enabled_tools` / `disabled_tools`, Cline's and Roo's `alwaysAllow` / `autoApprove`,
//! VS Code's `sandboxEnabled` / `sandbox`); the loader maps each spelling onto one
//! [`ServerPolicy`], kept on the [`ServerConfig`](super::ServerConfig). The
//! [`Client`](crate::Client) enforces the tool filter itself: an excluded tool is left out of
//! [`list_tools`](crate::Client::list_tools) and refused by every call path with
//! [`Error::ToolNotAllowed`](crate::Error::ToolNotAllowed), naming the rule and its file.
//!
//! ```
//! use mcp_blocking::config::{Approval, ServerPolicy};
//! use mcp_blocking::ServerConfig;
//!
//! let policy = ServerPolicy::new()
//!     .exclude_tools(["delete_*", "crash"])
//!     .with_approval(Approval::Tools(vec!["read_file".into()]));
//! assert!(policy.check_tool("read_file").is_ok());
//! assert!(policy.check_tool("delete_repo").is_err());
//! assert!(!policy.needs_approval("read_file"));
//! assert!(policy.needs_approval("write_file"));
//!
//! let server = ServerConfig::stdio("fs", "mcp-fs").with_policy(policy);
//! assert!(!server.policy().allows_tool("crash"));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// A tool name or a pattern of names: `*` stands for any run of characters, `?` for one.
/// Anything else matches itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPattern(String);

impl ToolPattern {
    /// The pattern as written.
    pub fn new(pattern: impl Into<String>) -> Self {
        ToolPattern(pattern.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches, whole.
    ///
    /// ```
    /// use mcp_blocking::config::ToolPattern;
    /// assert!(ToolPattern::new("get_*").matches("get_issue"));
    /// assert!(ToolPattern::new("run?").matches("run2"));
    /// assert!(!ToolPattern::new("get").matches("get_issue"));
    /// ```
    pub fn matches(&self, name: &str) -> bool {
        // By character, not byte: `?` is one character, whatever its length in UTF-8.
        let pattern: Vec<char> = self.0.chars().collect();
        let name: Vec<char> = name.chars().collect();
        glob(&pattern, &name)
    }
}

/// `*` and `?` matching without recursion: linear backtracking to the last `*`.
fn glob(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Where a rule was written: the file (when it came from one) and the key path in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleSource {
    /// The file, when the rule was read from one.
    pub file: Option<PathBuf>,
    /// The key path, e.g. `mcpServers.github.excludeTools`; empty for a rule set in code.
    pub key: String,
}

impl RuleSource {
    /// A rule read from `key` (a key path), in no file yet.
    pub fn key(key: impl Into<String>) -> Self {
        RuleSource {
            file: None,
            key: key.into(),
        }
    }
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.key.is_empty(), &self.file) {
            (true, None) => f.write_str("the program's policy"),
            (true, Some(file)) => write!(f, "{}", file.display()),
            (false, None) => write!(f, "`{}`", self.key),
            (false, Some(file)) => write!(f, "`{}` in {}", self.key, file.display()),
        }
    }
}

/// Which tools need the user's approval before they run (read by the
/// [agent](crate::agent::Agent) and `mcpb run` / `mcpb chat`; a plain [`Client`](crate::Client)
/// call is the program's own decision and is not asked about).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Approval {
    /// The file says nothing about approvals: the program decides, as without a policy.
    #[default]
    Unset,
    /// Every tool runs without asking (Gemini CLI's `trust: true`).
    All,
    /// These tools run without asking; every other tool of the server needs approval (Cline's
    /// and Roo's `alwaysAllow`, `autoApprove`).
    Tools(Vec<String>),
    /// Every tool runs without asking except these, which need approval (Codex's
    /// `approval_mode = "prompt"` on a tool of a server whose default is not `prompt`).
    AllExcept(Vec<String>),
}

/// The sandbox a file asked for (VS Code's `sandboxEnabled` and `sandbox`), as written.
///
/// A stdio server's file sandbox becomes its [`Sandbox`](super::Sandbox) (see
/// [`Sandbox::from_settings`](super::Sandbox::from_settings)), applied when it is spawned; a
/// remote server that asks for one does not start, since no process of ours runs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SandboxSettings {
    /// Where `sandboxEnabled` (or its equivalent) was read.
    pub source: RuleSource,
    /// Paths the server may read besides the defaults (`sandbox.filesystem.allowRead`).
    pub allow_read: Vec<String>,
    /// Paths the server may write (`sandbox.filesystem.allowWrite`).
    pub allow_write: Vec<String>,
    /// Paths the server may not read (`sandbox.filesystem.denyRead`).
    pub deny_read: Vec<String>,
    /// Paths the server may not write (`sandbox.filesystem.denyWrite`).
    pub deny_write: Vec<String>,
    /// Host names the server may reach (`sandbox.network.allowedDomains`).
    pub allowed_domains: Vec<String>,
    /// Host names the server may not reach (`sandbox.network.deniedDomains`).
    pub denied_domains: Vec<String>,
    /// Resource limits (`sandbox.limits`: `addressSpace`, `openFiles`, `processes`,
    /// `cpuSeconds`).
    pub limits: super::SandboxLimits,
    /// Start the server with what can be applied (`sandbox.bestEffort`).
    pub best_effort: bool,
}

impl SandboxSettings {
    /// A sandbox asked for at `source`, with no paths or domains listed yet.
    pub fn new(source: RuleSource) -> Self {
        SandboxSettings {
            source,
            ..Self::default()
        }
    }
}

/// A rule about a server's tools written apart from its entry (Claude Code's `permissions` in
/// its settings files): the tools it names, the rule as written, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolRule {
    /// The tools it names, by name or pattern.
    pub pattern: ToolPattern,
    /// The rule as its file wrote it, e.g. `mcp__github__delete_repo`.
    pub written: String,
    /// Where it was written.
    pub source: RuleSource,
}

impl ToolRule {
    /// A rule naming the tools of `pattern`, written as `written` at `source`.
    pub fn new(pattern: impl Into<String>, written: impl Into<String>, source: RuleSource) -> Self {
        ToolRule {
            pattern: ToolPattern::new(pattern),
            written: written.into(),
            source,
        }
    }
}

/// Why a tool is refused: the rule and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRefusal {
    /// The tool asked for.
    pub tool: String,
    /// The rule, in words: "excluded by `excludeTools`" or "not in `includeTools`".
    pub rule: String,
    /// Where the rule was written.
    pub source: RuleSource,
}

impl fmt::Display for ToolRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool `{}` is {}", self.tool, self.rule)?;
        if !self.source.key.is_empty() || self.source.file.is_some() {
            write!(f, " ({})", self.source)?;
        }
        Ok(())
    }
}

/// What a server may do: its tool filter, its approvals and the sandbox it asked for. The
/// default allows everything and says nothing about approvals, as for a server with no policy.
///
/// Two policies are equal when their rules are: where each rule was written (its
/// [`RuleSource`]) is for messages, so a policy saved and reloaded, or read from a copy of its
/// file, equals the one it came from.
#[derive(Debug, Clone, Default)]
pub struct ServerPolicy {
    include: Option<Vec<ToolPattern>>,
    include_source: RuleSource,
    exclude: Vec<ToolPattern>,
    exclude_source: RuleSource,
    approval: Approval,
    approval_source: RuleSource,
    sandbox: Option<SandboxSettings>,
    /// Exclusions written apart from the entry, each naming its own rule and file.
    denied: Vec<ToolRule>,
}

impl PartialEq for ServerPolicy {
    fn eq(&self, other: &Self) -> bool {
        let sandbox_rules = |s: &SandboxSettings| {
            (
                s.allow_read.clone(),
                s.allow_write.clone(),
                s.deny_read.clone(),
                s.deny_write.clone(),
                s.allowed_domains.clone(),
                s.denied_domains.clone(),
                s.limits,
                s.best_effort,
            )
        };
        // An exclusion is one whether the entry or another file wrote it (`to_json` writes
        // them all as the entry's).
        let excluded = |p: &Self| {
            p.exclude
                .iter()
                .chain(p.denied.iter().map(|r| &r.pattern))
                .cloned()
                .collect::<Vec<_>>()
        };
        self.include == other.include
            && excluded(self) == excluded(other)
            && self.approval == other.approval
            && self.sandbox.as_ref().map(sandbox_rules) == other.sandbox.as_ref().map(sandbox_rules)
    }
}

impl Eq for ServerPolicy {}

impl ServerPolicy {
    /// A policy that allows every tool and says nothing about approvals.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers only the tools matching one of `patterns` (all of them when never called). Called
    /// again, the lists add up.
    pub fn include_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.include
            .get_or_insert_with(Vec::new)
            .extend(patterns.into_iter().map(|p| ToolPattern::new(p)));
        self
    }

    /// Never offers or calls the tools matching one of `patterns`; an exclusion wins over an
    /// inclusion.
    pub fn exclude_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.exclude
            .extend(patterns.into_iter().map(|p| ToolPattern::new(p)));
        self
    }

    /// Never offers or calls the tools of `rule`, refused naming the rule as written and its
    /// own file: an exclusion written apart from the server's entry, such as a `deny` of
    /// Claude Code's settings. It adds to the entry's exclusions.
    pub fn deny_tool(mut self, rule: ToolRule) -> Self {
        self.denied.push(rule);
        self
    }

    /// Records where the inclusion list was written (for messages).
    pub fn with_include_source(mut self, source: RuleSource) -> Self {
        self.include_source = source;
        self
    }

    /// Records where the exclusion list was written (for messages).
    pub fn with_exclude_source(mut self, source: RuleSource) -> Self {
        self.exclude_source = source;
        self
    }

    /// Which tools run without asking.
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }

    /// Records where the approval keys were written.
    pub fn with_approval_source(mut self, source: RuleSource) -> Self {
        self.approval_source = source;
        self
    }

    /// The sandbox the server asked for.
    pub fn with_sandbox(mut self, sandbox: SandboxSettings) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The policy without its sandbox.
    pub(crate) fn without_sandbox(mut self) -> Self {
        self.sandbox = None;
        self
    }

    /// Sets the file every rule's [`RuleSource`] names.
    pub fn with_file(mut self, file: &Path) -> Self {
        for s in [
            &mut self.include_source,
            &mut self.exclude_source,
            &mut self.approval_source,
        ] {
            s.file = Some(file.to_path_buf());
        }
        if let Some(sb) = &mut self.sandbox {
            sb.source.file = Some(file.to_path_buf());
        }
        self
    }

    /// The inclusion list, when there is one.
    pub fn included(&self) -> Option<&[ToolPattern]> {
        self.include.as_deref()
    }

    /// Where the inclusion list was written.
    pub fn include_source(&self) -> &RuleSource {
        &self.include_source
    }

    /// Where the exclusion list was written.
    pub fn exclude_source(&self) -> &RuleSource {
        &self.exclude_source
    }

    /// The exclusion list of the entry.
    pub fn excluded(&self) -> &[ToolPattern] {
        &self.exclude
    }

    /// The exclusions written apart from the entry ([`deny_tool`](Self::deny_tool)).
    pub fn denied(&self) -> &[ToolRule] {
        &self.denied
    }

    /// Which tools run without asking.
    pub fn approval(&self) -> &Approval {
        &self.approval
    }

    /// Where the approval keys were written.
    pub fn approval_source(&self) -> &RuleSource {
        &self.approval_source
    }

    /// The sandbox the server's file asked for. For a stdio server it is applied as
    /// [`ServerConfig::sandbox`](crate::ServerConfig::sandbox) (unless the program set its own);
    /// a remote server carrying one does not start ([`Error::Config`](crate::Error::Config)
    /// naming the key).
    pub fn sandbox(&self) -> Option<&SandboxSettings> {
        self.sandbox.as_ref()
    }

    /// Whether the policy limits anything: a filter, approvals or a sandbox.
    pub fn is_unrestricted(&self) -> bool {
        self.include.is_none()
            && self.exclude.is_empty()
            && self.approval == Approval::Unset
            && self.sandbox.is_none()
            && self.denied.is_empty()
    }

    /// Whether the tool `name` may be offered and called.
    pub fn allows_tool(&self, name: &str) -> bool {
        self.check_tool(name).is_ok()
    }

    /// Whether the tool `name` may be offered and called, and if not, why.
    ///
    /// # Errors
    /// A [`ToolRefusal`] naming the rule that refuses it.
    pub fn check_tool(&self, name: &str) -> Result<(), ToolRefusal> {
        if let Some(p) = self.exclude.iter().find(|p| p.matches(name)) {
            let rule = match p.as_str() == name {
                true => format!(
                    "excluded by {}",
                    key_name(&self.exclude_source, "the exclusion list")
                ),
                false => format!(
                    "excluded by `{}` in {}",
                    p.as_str(),
                    key_name(&self.exclude_source, "the exclusion list")
                ),
            };
            return Err(ToolRefusal {
                tool: name.to_owned(),
                rule,
                source: self.exclude_source.clone(),
            });
        }
        if let Some(r) = self.denied.iter().find(|r| r.pattern.matches(name)) {
            return Err(ToolRefusal {
                tool: name.to_owned(),
                rule: format!("denied by `{}`", r.written),
                source: r.source.clone(),
            });
        }
        if let Some(include) = &self.include {
            if !include.iter().any(|p| p.matches(name)) {
                return Err(ToolRefusal {
                    tool: name.to_owned(),
                    rule: format!(
                        "not in {}",
                        key_name(&self.include_source, "the inclusion list")
                    ),
                    source: self.include_source.clone(),
                });
            }
        }
        Ok(())
    }

    /// Whether calling `name` needs the user's approval: `false` when the file says nothing
    /// about approvals ([`Approval::Unset`]) or auto-approves the tool; `true` when it lists the
    /// tool among those that need it ([`Approval::AllExcept`]) or leaves it out of those that do
    /// not ([`Approval::Tools`]).
    pub fn needs_approval(&self, name: &str) -> bool {
        match &self.approval {
            Approval::Unset | Approval::All => false,
            Approval::Tools(tools) => !any_matches(tools, name),
            Approval::AllExcept(tools) => any_matches(tools, name),
        }
    }
}

/// Whether one of `patterns` matches `name`.
fn any_matches(patterns: &[String], name: &str) -> bool {
    patterns
        .iter()
        .any(|t| ToolPattern::new(t.as_str()).matches(name))
}

/// The last part of a rule's key path (`excludeTools`), quoted, or `fallback`.
fn key_name(source: &RuleSource, fallback: &str) -> String {
    match source.key.rsplit('.').next().filter(|k| !k.is_empty()) {
        Some(k) => format!("`{k}`"),
        None => fallback.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        for (p, n, m) in [
            ("crash", "crash", true),
            ("crash", "crash2", false),
            ("*", "", true),
            ("*", "anything", true),
            ("get_*", "get_", true),
            ("get_*", "got_x", false),
            ("*_file", "read_file", true),
            ("*_file", "read_files", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?", "", false),
            ("r?n", "run", true),
            ("**x", "abx", true),
            // `?` is one character, however many bytes it takes.
            ("r?n", "rün", true),
            ("?", "é", true),
            ("??", "é", false),
            ("gr*n", "grün", true),
        ] {
            assert_eq!(ToolPattern::new(p).matches(n), m, "{p} vs {n}");
        }
    }

    #[test]
    fn exclusion_wins_and_names_its_rule_and_file() {
        let p = ServerPolicy::new()
            .include_tools(["*"])
            .exclude_tools(["crash"])
            .with_include_source(RuleSource::key("mcpServers.g.includeTools"))
            .with_exclude_source(RuleSource::key("mcpServers.g.excludeTools"))
            .with_file(Path::new("/p/settings.json"));
        let e = p.check_tool("crash").unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool `crash` is excluded by `excludeTools` (`mcpServers.g.excludeTools` in /p/settings.json)"
        );
        assert!(p.allows_tool("echo"));
    }

    #[test]
    fn a_rule_denied_apart_from_the_entry_names_itself_and_its_file() {
        let mut source = RuleSource::key("permissions.deny[1]");
        source.file = Some(PathBuf::from("/h/.claude/settings.json"));
        let p = ServerPolicy::new()
            .exclude_tools(["crash"])
            .deny_tool(ToolRule::new("delete_*", "mcp__gh__delete_*", source))
            .with_file(Path::new("/p/.mcp.json"));
        assert!(p.allows_tool("get_issue") && !p.allows_tool("crash"));
        let e = p.check_tool("delete_repo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool `delete_repo` is denied by `mcp__gh__delete_*` (`permissions.deny[1]` in \
             /h/.claude/settings.json)"
        );
        assert!(!p.is_unrestricted());
        // As an exclusion it is one, wherever it was written.
        assert_eq!(p, ServerPolicy::new().exclude_tools(["crash", "delete_*"]));
    }

    #[test]
    fn an_inclusion_list_refuses_the_rest() {
        let p = ServerPolicy::new()
            .include_tools(["echo"])
            .with_include_source(RuleSource::key("mcp_servers.x.enabled_tools"));
        assert!(p.allows_tool("echo"));
        let e = p.check_tool("add").unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool `add` is not in `enabled_tools` (`mcp_servers.x.enabled_tools`)"
        );
        // An empty inclusion list offers nothing.
        assert!(!ServerPolicy::new()
            .include_tools(Vec::<String>::new())
            .allows_tool("echo"));
    }

    #[test]
    fn equal_rules_are_equal_wherever_they_were_written() {
        let here = ServerPolicy::new()
            .exclude_tools(["crash"])
            .with_exclude_source(RuleSource::key("mcpServers.g.excludeTools"))
            .with_file(Path::new("/a/settings.json"));
        let there = ServerPolicy::new().exclude_tools(["crash"]);
        assert_eq!(here, there);
        assert_ne!(here, ServerPolicy::new().exclude_tools(["crash2"]));
        let boxed = |w: &str| {
            let mut s = SandboxSettings::new(RuleSource::key(w));
            s.allow_write.push("/w".into());
            ServerPolicy::new().with_sandbox(s)
        };
        assert_eq!(boxed("a.sandboxEnabled"), boxed("b.sandboxEnabled"));
        assert_ne!(boxed("a"), ServerPolicy::new());
    }

    #[test]
    fn approvals() {
        let unset = ServerPolicy::new();
        assert!(!unset.needs_approval("x"));
        let all = ServerPolicy::new().with_approval(Approval::All);
        assert!(!all.needs_approval("x"));
        let some = ServerPolicy::new().with_approval(Approval::Tools(vec!["read_*".into()]));
        assert!(!some.needs_approval("read_file"));
        assert!(some.needs_approval("write_file"));
        assert!(!some.is_unrestricted());
        assert!(unset.is_unrestricted());
        let but = ServerPolicy::new().with_approval(Approval::AllExcept(vec!["write_*".into()]));
        assert!(!but.needs_approval("read_file"));
        assert!(but.needs_approval("write_file"));
        assert!(!but.is_unrestricted());
    }
}
