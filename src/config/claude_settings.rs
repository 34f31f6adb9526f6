//! Claude Code's settings files: what they say about MCP servers and their tools, applied by
//! [discovery](super::discover) to the servers found in Claude Code's own files (`.mcp.json`,
//! `~/.claude.json`), since Claude Code limits those servers there and not in the files that
//! define them.
//!
//! | file | scope |
//! |---|---|
//! | `~/.claude/settings.json` | the user's |
//! | `.claude/settings.json`, `.claude/settings.local.json` (the current folder and its parents, up to the home directory) | the project's |
//! | `~/.claude.json`, its `projects[<cwd>]` | the user's, for this folder |
//!
//! | key | effect |
//! |---|---|
//! | `permissions.deny`: `mcp__S` or `mcp__S__*` | the server `S` is not started ([`Denied`](super::discover::Denied)) |
//! | `permissions.deny`: `mcp__S__T` | the tool `T` of `S` is excluded, refused naming the rule and its file |
//! | `permissions.ask`: `mcp__S`, `mcp__S__T` | every call of the server's tools (or of `T`) needs approval |
//! | `permissions.allow`: `mcp__S`, `mcp__S__T` (the user's files only) | the server's tools (or `T`) run without asking; the others of `S` then need approval, as in Claude Code |
//! | `disabledMcpjsonServers` | that `.mcp.json` server is not started |
//! | `disabledMcpServers` (what Claude Code's `/mcp` writes in `~/.claude.json`'s entry for the folder) | that server, of any of Claude Code's files, is not started |
//! | `enabledMcpjsonServers`, `enableAllProjectMcpServers` | Claude Code's own approval of a project's `.mcp.json`; not ours, which is of the file's contents ([`TrustStore`](super::TrustStore)): listed as ignored |
//!
//! `S` and `T` may hold `*` (any run of characters) and `?`. A server's name is matched as
//! Claude Code writes it in a rule: each character other than a letter, a digit, `_` or `-` as
//! `_`. Rules are applied deny, then ask, then allow, as Claude Code does: an `allow` never
//! widens what a deny, an exclusion or an `ask` refuses or asks about.
//!
//! Trust: a project's settings file came with the folder. It may narrow (deny, ask, disable),
//! never widen: its `allow` rules are listed as ignored, whether or not the project is
//! approved, since an approval is of the files that define servers, and would not cover a
//! settings file changed afterwards. Write approvals in `~/.claude/settings.json`.
//!
//! Fail closed: a settings file that cannot be read or holds a rule of the wrong type may deny
//! what it would have denied, so every server of Claude Code's files is held back (not started),
//! the file's error naming the place.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::discover::Scope;
use super::fields::join;
use super::{
    jsonc, Approval, ConfigError, ConfigErrorKind, IgnoredKey, InputLimits, RuleSource,
    ServerPolicy, ToolPattern, ToolRule,
};

/// What a permission rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Deny,
    Ask,
    Allow,
}

/// An MCP permission rule (`mcp__server`, `mcp__server__tool`), read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpRule {
    pub(crate) verdict: Verdict,
    /// The server's name, or a pattern of names.
    pub(crate) server: ToolPattern,
    /// The tool, or a pattern; `None` for the whole server.
    pub(crate) tool: Option<String>,
    /// The rule as written.
    pub(crate) written: String,
    /// Where.
    pub(crate) source: RuleSource,
}

/// What a permission rule's text names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed<'a> {
    /// Not a rule about MCP tools (`Bash(...)`, `Read`, ...).
    NotMcp,
    /// An MCP rule Claude Code does not apply: with a `(...)` specifier, or no server.
    Inert(&'static str),
    /// A server (or pattern), and a tool (or pattern) or the whole server.
    Mcp(&'a str, Option<&'a str>),
}

/// Reads one rule's text: `mcp__S` and `mcp__S__*` name the whole server, `mcp__S__T` one tool.
pub(crate) fn parse_rule(text: &str) -> Parsed<'_> {
    let Some(rest) = text.strip_prefix("mcp__") else {
        return Parsed::NotMcp;
    };
    if rest.contains('(') {
        return Parsed::Inert("Claude Code applies no `(...)` specifier to an MCP tool");
    }
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() {
        return Parsed::Inert("it names no server");
    }
    match tool {
        None | Some("") | Some("*") => Parsed::Mcp(server, None),
        Some(tool) => Parsed::Mcp(server, Some(tool)),
    }
}

/// A server's name as Claude Code writes it in a rule's `mcp__<server>`.
pub(crate) fn rule_name(server: &str) -> String {
    server
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect()
}

fn is_pattern(text: &str) -> bool {
    text.contains(['*', '?'])
}

/// One settings file (or `~/.claude.json`'s entry for this folder), read.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) file: PathBuf,
    pub(crate) scope: Scope,
    pub(crate) rules: Vec<McpRule>,
    /// `disabledMcpjsonServers`: names, each with where.
    pub(crate) disabled: Vec<(String, RuleSource)>,
    /// `disabledMcpServers`: names of servers of any scope, each with where.
    pub(crate) disabled_any: Vec<(String, RuleSource)>,
    pub(crate) ignored: Vec<IgnoredKey>,
}

impl Settings {
    fn new(file: &Path, scope: Scope) -> Self {
        Settings {
            file: file.to_path_buf(),
            scope,
            rules: Vec::new(),
            disabled: Vec::new(),
            disabled_any: Vec::new(),
            ignored: Vec::new(),
        }
    }

    fn source(&self, key: String) -> RuleSource {
        RuleSource {
            file: Some(self.file.clone()),
            key,
        }
    }

    fn ignore(&mut self, key: String, reason: impl Into<String>) {
        let mut k = IgnoredKey::new(None, key, reason);
        k.file = Some(self.file.clone());
        self.ignored.push(k);
    }
}

/// Reads the settings file at `path` of `scope`; `Ok(None)` when there is none.
///
/// # Errors
/// The file's own error: [`ConfigErrorKind::Io`], [`ConfigErrorKind::Syntax`],
/// [`ConfigErrorKind::TooLarge`], or [`ConfigErrorKind::WrongType`] at the key, with the file.
pub(crate) fn read(
    path: &Path,
    scope: Scope,
    limits: &InputLimits,
) -> Result<Option<Settings>, ConfigError> {
    if !path.is_file() {
        return Ok(None);
    }
    let with_file = |mut e: ConfigError| {
        e.file = Some(path.to_path_buf());
        e
    };
    let text = limits
        .read(path, "file", ConfigErrorKind::Io)
        .map_err(with_file)?;
    let doc = jsonc::parse(&text, limits).map_err(with_file)?;
    let Value::Object(m) = &doc else {
        return Err(with_file(ConfigError::wrong_type(
            "",
            "a mapping (Claude Code's settings)",
            &doc,
        )));
    };
    let mut s = Settings::new(path, scope);
    read_keys(&mut s, m, "").map_err(with_file)?;
    Ok(Some(s))
}

/// Reads the entry for the folder `dir` of `~/.claude.json` (at `path`, read as `doc`): its
/// `disabledMcpjsonServers` and the approvals Claude Code keeps there.
///
/// # Errors
/// The file's reading error; as [`read`]. A file without that entry is `Ok(None)`.
pub(crate) fn read_claude_json(
    path: &Path,
    doc: &Result<Value, ConfigError>,
    dir: &Path,
) -> Result<Option<Settings>, ConfigError> {
    let with_file = |mut e: ConfigError| {
        e.file = Some(path.to_path_buf());
        e
    };
    let doc = doc.as_ref().map_err(|e| with_file(e.clone()))?;
    // The folder's entry, matched as the file's own reading matches it.
    let Some((key, Value::Object(project))) = doc
        .get("projects")
        .and_then(Value::as_object)
        .and_then(|p| super::documents::project_entry(p, dir))
    else {
        return Ok(None);
    };
    let mut s = Settings::new(path, Scope::Local);
    let prefix = format!("projects.{key}");
    // Only the keys about `.mcp.json` servers: the rest of the entry is Claude Code's state.
    let mut keys = Map::new();
    for k in MCPJSON_KEYS {
        if let Some(v) = project.get(k) {
            keys.insert(k.to_owned(), v.clone());
        }
    }
    read_keys(&mut s, &keys, &prefix).map_err(with_file)?;
    Ok(Some(s))
}

/// The keys about a project's servers.
const MCPJSON_KEYS: [&str; 4] = [
    "disabledMcpServers",
    "disabledMcpjsonServers",
    "enabledMcpjsonServers",
    "enableAllProjectMcpServers",
];

/// The keys of a settings document `m` at `prefix` that concern MCP servers.
fn read_keys(s: &mut Settings, m: &Map<String, Value>, prefix: &str) -> Result<(), ConfigError> {
    if let Some(perms) = m.get("permissions") {
        let ppath = join(prefix, "permissions");
        let Value::Object(perms) = perms else {
            return Err(ConfigError::wrong_type(&ppath, "a mapping", perms));
        };
        for (key, verdict) in [
            ("deny", Verdict::Deny),
            ("ask", Verdict::Ask),
            ("allow", Verdict::Allow),
        ] {
            let lpath = join(&ppath, key);
            for (i, text) in strings(perms.get(key), &lpath)?.into_iter().enumerate() {
                let key = format!("{lpath}[{i}]");
                rule(s, verdict, &text, key);
            }
        }
    }
    let dpath = join(prefix, "disabledMcpjsonServers");
    for (i, name) in strings(m.get("disabledMcpjsonServers"), &dpath)?
        .into_iter()
        .enumerate()
    {
        let source = s.source(format!("{dpath}[{i}]"));
        s.disabled.push((name, source));
    }
    let npath = join(prefix, "disabledMcpServers");
    for (i, name) in strings(m.get("disabledMcpServers"), &npath)?
        .into_iter()
        .enumerate()
    {
        let source = s.source(format!("{npath}[{i}]"));
        s.disabled_any.push((name, source));
    }
    let epath = join(prefix, "enabledMcpjsonServers");
    if !strings(m.get("enabledMcpjsonServers"), &epath)?.is_empty() {
        s.ignore(
            epath,
            "Claude Code's own approval of the project's `.mcp.json` servers; here a project \
             file is approved with its contents (`mcpb trust`, a `TrustStore`)",
        );
    }
    let apath = join(prefix, "enableAllProjectMcpServers");
    match m.get("enableAllProjectMcpServers") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(_)) => s.ignore(
            apath,
            "Claude Code's own approval of the project's `.mcp.json` servers; here a project \
             file is approved with its contents (`mcpb trust`, a `TrustStore`)",
        ),
        Some(other) => return Err(ConfigError::wrong_type(&apath, "a boolean", other)),
    }
    Ok(())
}

/// One rule's text at `key`, into `s`.
fn rule(s: &mut Settings, verdict: Verdict, text: &str, key: String) {
    let (server, tool) = match parse_rule(text) {
        Parsed::NotMcp => return,
        Parsed::Inert(why) => {
            s.ignore(key, format!("Claude Code does not apply it either: {why}"));
            return;
        }
        Parsed::Mcp(server, tool) => (server, tool),
    };
    if verdict == Verdict::Allow && s.scope == Scope::Project {
        s.ignore(
            key,
            "a project's settings file came with the folder: it may deny, never approve; write \
             the approval in ~/.claude/settings.json",
        );
        return;
    }
    if verdict == Verdict::Allow && is_pattern(server) {
        s.ignore(
            key,
            "Claude Code skips an allow rule whose server is a pattern, and so does this library",
        );
        return;
    }
    let source = s.source(key);
    s.rules.push(McpRule {
        verdict,
        server: ToolPattern::new(server),
        tool: tool.map(str::to_owned),
        written: text.to_owned(),
        source,
    });
}

/// The strings at `path`: a list of strings, or nothing.
fn strings(v: Option<&Value>, path: &str) -> Result<Vec<String>, ConfigError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
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
        Some(other) => Err(ConfigError::wrong_type(path, "a list of strings", other)),
    }
}

/// Why a server is not started, and the rule that says so.
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    pub(crate) reason: String,
    pub(crate) source: RuleSource,
}

/// Applies `settings` to the server `name` of a Claude Code file (`mcpjson`: its `.mcp.json`)
/// with `policy`: the policy with the rules' exclusions and approvals, or why the server is
/// not started.
pub(crate) fn apply(
    settings: &[Settings],
    name: &str,
    mcpjson: bool,
    mut policy: ServerPolicy,
) -> Result<ServerPolicy, Refused> {
    let as_written = rule_name(name);
    let rules = || {
        settings
            .iter()
            .flat_map(|s| &s.rules)
            .filter(|r| r.server.matches(&as_written))
    };
    if mcpjson {
        if let Some((_, source)) = settings
            .iter()
            .flat_map(|s| &s.disabled)
            .find(|(n, _)| n == name)
        {
            return Err(Refused {
                reason: "disabled by `disabledMcpjsonServers`".into(),
                source: source.clone(),
            });
        }
    }
    if let Some((_, source)) = settings
        .iter()
        .flat_map(|s| &s.disabled_any)
        .find(|(n, _)| n == name)
    {
        return Err(Refused {
            reason: "disabled by `disabledMcpServers`".into(),
            source: source.clone(),
        });
    }
    if let Some(r) = rules().find(|r| r.verdict == Verdict::Deny && r.tool.is_none()) {
        return Err(Refused {
            reason: format!("denied by `{}`", r.written),
            source: r.source.clone(),
        });
    }
    for r in rules().filter(|r| r.verdict == Verdict::Deny) {
        if let Some(tool) = &r.tool {
            policy = policy.deny_tool(ToolRule::new(
                tool.as_str(),
                r.written.as_str(),
                r.source.clone(),
            ));
        }
    }
    // Allowed, then asked: an `ask` wins over an `allow`.
    for r in rules().filter(|r| r.verdict == Verdict::Allow) {
        let before = policy.approval().clone();
        let after = allow(&before, r.tool.as_deref());
        if after != before {
            let from_nothing = before == Approval::Unset;
            policy = policy.with_approval(after);
            if from_nothing {
                policy = policy.with_approval_source(r.source.clone());
            }
        }
    }
    for r in rules().filter(|r| r.verdict == Verdict::Ask) {
        let before = policy.approval().clone();
        let after = ask(&before, r.tool.as_deref().unwrap_or("*"));
        if after != before {
            let only_reason = matches!(before, Approval::Unset | Approval::All);
            policy = policy.with_approval(after);
            if only_reason {
                policy = policy.with_approval_source(r.source.clone());
            }
        }
    }
    Ok(policy)
}

/// `approval` with the tool `tool` (`None`: every tool of the server) approved by the user.
/// The tools the server's own file names as needing approval ([`Approval::AllExcept`]) stay
/// asked about: an `allow` widens what is unsaid, not what a file said.
fn allow(approval: &Approval, tool: Option<&str>) -> Approval {
    match (approval, tool) {
        (Approval::AllExcept(asked), _) => Approval::AllExcept(asked.clone()),
        (_, None) | (Approval::All, _) => Approval::All,
        (Approval::Tools(listed), Some(tool)) => {
            let mut listed = listed.clone();
            if !listed.iter().any(|t| t == tool) {
                listed.push(tool.to_owned());
            }
            Approval::Tools(listed)
        }
        (_, Some(tool)) => Approval::Tools(vec![tool.to_owned()]),
    }
}

/// `approval` with the tools of `pattern` needing approval. Never approves what it asks about:
/// from a list of approved tools it takes out every entry that may name one of them (a pattern
/// it cannot tell apart is taken out too, so that more is asked, never less).
fn ask(approval: &Approval, pattern: &str) -> Approval {
    match approval {
        Approval::AllExcept(asked) => {
            let mut asked = asked.clone();
            if !asked.iter().any(|a| a == pattern) {
                asked.push(pattern.to_owned());
            }
            Approval::AllExcept(asked)
        }
        Approval::Tools(listed) => {
            let asked = ToolPattern::new(pattern);
            let keep = |a: &&String| match is_pattern(pattern) {
                // A pattern asked about: only the plain names it does not match stay.
                true => !is_pattern(a) && !asked.matches(a),
                // A name asked about: the entries that do not match it stay.
                false => !ToolPattern::new(a.as_str()).matches(pattern),
            };
            Approval::Tools(listed.iter().filter(keep).cloned().collect())
        }
        _ => Approval::AllExcept(vec![pattern.to_owned()]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_name_a_server_a_tool_or_nothing_of_mcp() {
        assert_eq!(parse_rule("mcp__github"), Parsed::Mcp("github", None));
        assert_eq!(parse_rule("mcp__github__*"), Parsed::Mcp("github", None));
        assert_eq!(
            parse_rule("mcp__github__get_issue"),
            Parsed::Mcp("github", Some("get_issue"))
        );
        assert_eq!(
            parse_rule("mcp__github__get_*"),
            Parsed::Mcp("github", Some("get_*"))
        );
        assert_eq!(parse_rule("mcp__*"), Parsed::Mcp("*", None));
        // A tool's name may hold `__`: only the first one ends the server's.
        assert_eq!(parse_rule("mcp__s__a__b"), Parsed::Mcp("s", Some("a__b")));
        assert_eq!(parse_rule("Bash(npm run *)"), Parsed::NotMcp);
        assert_eq!(parse_rule("Read"), Parsed::NotMcp);
        assert!(matches!(parse_rule("mcp__s__t(x)"), Parsed::Inert(_)));
        assert!(matches!(parse_rule("mcp__"), Parsed::Inert(_)));
        assert_eq!(rule_name("my.server v2"), "my_server_v2");
        assert_eq!(rule_name("gh-1_x"), "gh-1_x");
    }

    fn settings(scope: Scope, doc: Value) -> Settings {
        let Value::Object(m) = doc else {
            panic!("not a mapping")
        };
        let mut s = Settings::new(Path::new("/h/.claude/settings.json"), scope);
        read_keys(&mut s, &m, "").unwrap();
        s
    }

    #[test]
    fn a_denied_server_is_refused_and_a_denied_tool_excluded_naming_the_rule() {
        let s = [settings(
            Scope::User,
            json!({"permissions": {"deny": ["Bash(rm *)", "mcp__fs__write_*", "mcp__gh"]}}),
        )];
        let refused = apply(&s, "gh", false, ServerPolicy::new()).unwrap_err();
        assert_eq!(refused.reason, "denied by `mcp__gh`");
        assert_eq!(refused.source.key, "permissions.deny[2]");
        let p = apply(&s, "fs", false, ServerPolicy::new()).unwrap();
        let e = p.check_tool("write_file").unwrap_err();
        assert_eq!(e.rule, "denied by `mcp__fs__write_*`");
        assert_eq!(e.source.key, "permissions.deny[1]");
        assert_eq!(
            e.source.file.as_deref(),
            Some(Path::new("/h/.claude/settings.json"))
        );
        assert!(p.allows_tool("read_file"));
        // Another server is untouched.
        assert!(apply(&s, "other", false, ServerPolicy::new())
            .unwrap()
            .is_unrestricted());
    }

    #[test]
    fn a_server_is_matched_as_claude_code_writes_its_name() {
        let s = [settings(
            Scope::User,
            json!({"permissions": {"deny": ["mcp__my_server", "mcp__git*"]}}),
        )];
        assert!(apply(&s, "my.server", false, ServerPolicy::new()).is_err());
        assert!(apply(&s, "github", false, ServerPolicy::new()).is_err());
        assert!(apply(&s, "gitlab", false, ServerPolicy::new()).is_err());
        assert!(apply(&s, "fs", false, ServerPolicy::new()).is_ok());
    }

    #[test]
    fn disabled_mcpjson_servers_are_only_those_of_mcp_json() {
        let s = [settings(
            Scope::Project,
            json!({"disabledMcpjsonServers": ["db"]}),
        )];
        let refused = apply(&s, "db", true, ServerPolicy::new()).unwrap_err();
        assert_eq!(refused.reason, "disabled by `disabledMcpjsonServers`");
        assert_eq!(refused.source.key, "disabledMcpjsonServers[0]");
        assert!(apply(&s, "db", false, ServerPolicy::new()).is_ok());
        // What `/mcp` writes turns off a server of any scope.
        let s = [settings(
            Scope::Local,
            json!({"disabledMcpServers": ["fs"]}),
        )];
        let refused = apply(&s, "fs", false, ServerPolicy::new()).unwrap_err();
        assert_eq!(refused.reason, "disabled by `disabledMcpServers`");
        assert_eq!(refused.source.key, "disabledMcpServers[0]");
    }

    #[test]
    fn the_user_s_allow_approves_and_never_widens_a_deny_or_an_ask() {
        let s = [settings(
            Scope::User,
            json!({"permissions": {
                "allow": ["mcp__gh__get_issue", "mcp__gh__delete_repo", "mcp__all"],
                "deny": ["mcp__gh__delete_repo"],
                "ask": ["mcp__all__push"]
            }}),
        )];
        let gh = apply(&s, "gh", false, ServerPolicy::new()).unwrap();
        assert!(!gh.needs_approval("get_issue") && gh.needs_approval("list_issues"));
        assert!(!gh.allows_tool("delete_repo"));
        assert_eq!(gh.approval_source().key, "permissions.allow[0]");
        let all = apply(&s, "all", false, ServerPolicy::new()).unwrap();
        assert_eq!(all.approval(), &Approval::AllExcept(vec!["push".into()]));
        assert_eq!(all.approval_source().key, "permissions.ask[0]");
        // The server's own file asks about `rm`: still asked when the user allows it.
        let own = ServerPolicy::new().with_approval(Approval::AllExcept(vec!["rm".into()]));
        let s = [settings(
            Scope::User,
            json!({"permissions": {"allow": ["mcp__x", "mcp__x__rm"]}}),
        )];
        let p = apply(&s, "x", false, own).unwrap();
        assert!(p.needs_approval("rm") && !p.needs_approval("ls"));
    }

    #[test]
    fn asking_takes_out_every_approval_that_may_name_the_tool() {
        let listed = Approval::Tools(vec!["read_*".into(), "ls".into(), "push".into()]);
        assert_eq!(
            ask(&listed, "push"),
            Approval::Tools(vec!["read_*".into(), "ls".into()])
        );
        assert_eq!(
            ask(&listed, "read_secret"),
            Approval::Tools(vec!["ls".into(), "push".into()])
        );
        // A pattern asked about: patterns approved cannot be told apart, and go.
        assert_eq!(
            ask(&listed, "*_secret"),
            Approval::Tools(vec!["ls".into(), "push".into()])
        );
        assert_eq!(ask(&listed, "*"), Approval::Tools(vec![]));
        assert_eq!(
            ask(&Approval::All, "push"),
            Approval::AllExcept(vec!["push".into()])
        );
        assert_eq!(
            ask(&Approval::Unset, "*"),
            Approval::AllExcept(vec!["*".into()])
        );
        assert!(ServerPolicy::new()
            .with_approval(ask(&Approval::Unset, "*"))
            .needs_approval("anything"));
    }

    #[test]
    fn a_project_file_may_narrow_never_approve() {
        let s = settings(
            Scope::Project,
            json!({"permissions": {"allow": ["mcp__gh"], "deny": ["mcp__gh__push"]},
                   "enabledMcpjsonServers": ["gh"], "enableAllProjectMcpServers": true}),
        );
        let p = apply(std::slice::from_ref(&s), "gh", true, ServerPolicy::new()).unwrap();
        assert_eq!(p.approval(), &Approval::Unset);
        assert!(!p.allows_tool("push"));
        let ignored: Vec<&str> = s.ignored.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(
            ignored,
            [
                "permissions.allow[0]",
                "enabledMcpjsonServers",
                "enableAllProjectMcpServers"
            ]
        );
        assert!(s.ignored.iter().all(|k| k.file.is_some()));
    }

    #[test]
    fn rules_claude_code_skips_are_listed_not_applied() {
        let s = settings(
            Scope::User,
            json!({"permissions": {"allow": ["mcp__*", "mcp__gh__x(y)"], "deny": ["mcp__"]}}),
        );
        assert!(s.rules.is_empty());
        assert_eq!(s.ignored.len(), 3);
    }

    #[test]
    fn wrong_types_are_errors_at_the_key() {
        for (doc, path) in [
            (json!({"permissions": []}), "permissions"),
            (
                json!({"permissions": {"deny": "mcp__x"}}),
                "permissions.deny",
            ),
            (
                json!({"permissions": {"deny": ["a", 1]}}),
                "permissions.deny[1]",
            ),
            (
                json!({"disabledMcpjsonServers": [true]}),
                "disabledMcpjsonServers[0]",
            ),
            (
                json!({"enableAllProjectMcpServers": "yes"}),
                "enableAllProjectMcpServers",
            ),
        ] {
            let Value::Object(m) = doc.clone() else {
                unreachable!()
            };
            let mut s = Settings::new(Path::new("/s.json"), Scope::User);
            let e = read_keys(&mut s, &m, "").unwrap_err();
            assert_eq!(
                (e.kind, e.path.as_str()),
                (ConfigErrorKind::WrongType, path),
                "{doc}"
            );
        }
    }
}
