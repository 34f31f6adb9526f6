//! The keys of a server entry that limit what the server may do, in every host's spelling, into
//! its [`ServerPolicy`]; and the keys other hosts write that mean nothing here, each reported as
//! an [`IgnoredKey`] with why, so that no key is dropped without a trace.
//!
//! | key (host) | effect |
//! |---|---|
//! | `includeTools` (Gemini CLI), `enabled_tools` (Codex) | only these tools are offered |
//! | `excludeTools` (Gemini CLI), `disabled_tools` (Codex), `disabledTools` (Roo Code, Windsurf) | these tools are never offered or called |
//! | `alwaysAllow` (Roo Code), `autoApprove` (Cline) | these tools run without asking; the others need approval |
//! | `trust: true` (Gemini CLI) | every tool runs without asking |
//! | `default_tools_approval_mode`, `tools.<tool>.approval_mode` (Codex) | `approve`: runs without asking; `prompt` and `writes`: needs approval; `auto`: as unsaid. A tool's own mode wins over the server's default |
//! | `enabled: false` (Codex) | the server is skipped, as `disabled: true` |
//! | `sandboxEnabled: true`, `sandbox` (VS Code) | the server does not load: no sandbox is available |
//!
//! A rule may be written in one spelling per entry: two spellings of the same rule (say
//! `excludeTools` and `disabledTools`) are an error, since a refusal names the key it came from.

use serde_json::{Map, Value};

use super::fields::{get_bool, join, present, Dialect};
use super::suggest::nearest;
use super::{
    Approval, ConfigError, ConfigErrorKind, IgnoredKey, RuleSource, SandboxSettings, ServerPolicy,
};

/// The spellings of an inclusion list.
const INCLUDE_KEYS: [&str; 2] = ["includeTools", "enabled_tools"];
/// The spellings of an exclusion list.
const EXCLUDE_KEYS: [&str; 3] = ["excludeTools", "disabled_tools", "disabledTools"];
/// The spellings of an auto-approval list.
const APPROVE_KEYS: [&str; 2] = ["alwaysAllow", "autoApprove"];

/// Codex's spellings of approvals: a server's default mode and a table of tools' own modes.
const CODEX_APPROVAL_KEYS: [&str; 2] = ["default_tools_approval_mode", "tools"];

/// Every key this file reads, accepted at an entry's top level in both dialects.
pub(crate) const POLICY_KEYS: [&str; 13] = [
    "includeTools",
    "enabled_tools",
    "excludeTools",
    "disabled_tools",
    "disabledTools",
    "alwaysAllow",
    "autoApprove",
    "trust",
    "default_tools_approval_mode",
    "tools",
    "enabled",
    "sandboxEnabled",
    "sandbox",
];

/// Keys other hosts write that mean nothing to this library, with why; accepted in host
/// entries and reported in [`LoadReport::ignored`](super::LoadReport::ignored).
pub(crate) const INERT_KEYS: [(&str, &str); 7] = [
    (
        "dev",
        "a development-mode setting of another host (restarts on file changes), with no meaning here",
    ),
    ("gallery", "where another host's server gallery installed the server from; not used to run it"),
    ("version", "the version another host's server gallery installed; not used to run it"),
    (
        "watchPaths",
        "Roo Code restarts the server when these paths change; this library does not watch files",
    ),
    (
        "authProviderType",
        "a Gemini CLI Google authentication provider; not supported here (use `headers` or `oauth`)",
    ),
    (
        "targetAudience",
        "Gemini CLI's Google ID-token audience; not supported here (use `headers` or `oauth`)",
    ),
    (
        "targetServiceAccount",
        "Gemini CLI's Google service account to impersonate; not supported here (use `headers` or `oauth`)",
    ),
];

/// The names of [`INERT_KEYS`].
pub(crate) fn inert_keys() -> impl Iterator<Item = &'static str> {
    INERT_KEYS.iter().map(|(k, _)| *k)
}

/// The sub-keys of VS Code's `sandbox`.
/// `limits` and `bestEffort` are this library's own (VS Code has no such keys).
const SANDBOX_KEYS: [&str; 4] = ["filesystem", "network", "limits", "bestEffort"];
/// `allowRead` is Claude Code's and this library's (VS Code reads everything but `denyRead`).
const FILESYSTEM_KEYS: [&str; 4] = ["allowRead", "allowWrite", "denyRead", "denyWrite"];
const LIMIT_KEYS: [&str; 4] = ["addressSpace", "openFiles", "processes", "cpuSeconds"];
const NETWORK_KEYS: [&str; 2] = ["allowedDomains", "deniedDomains"];

/// What the policy keys of one entry say.
#[derive(Debug, Default)]
pub(crate) struct PolicyKeys {
    pub(crate) policy: ServerPolicy,
    pub(crate) ignored: Vec<IgnoredKey>,
}

/// Whether the entry at `prefix` turns its server off (`enabled: false`, Codex's spelling of
/// `disabled: true`).
///
/// # Errors
/// [`ConfigErrorKind::WrongType`] when `enabled` is not a boolean.
pub(crate) fn disabled_by_enabled(
    obj: &Map<String, Value>,
    prefix: &str,
) -> Result<bool, ConfigError> {
    Ok(get_bool(obj, "enabled", prefix)? == Some(false))
}

/// Reads the policy keys and the inert keys of the entry `obj` at `prefix`, for `server`.
///
/// # Errors
/// [`ConfigErrorKind::WrongType`] for a value of the wrong type,
/// [`ConfigErrorKind::InvalidValue`] for an empty tool name or two spellings of one rule,
/// and [`ConfigErrorKind::UnknownKey`] for an unknown key inside `sandbox`; each at the key's
/// path.
pub(crate) fn parse(
    obj: &Map<String, Value>,
    prefix: &str,
    server: &str,
    dialect: Dialect,
) -> Result<PolicyKeys, ConfigError> {
    let mut out = PolicyKeys::default();
    let mut policy = ServerPolicy::new();

    if let Some((key, patterns)) = one_list(obj, prefix, &INCLUDE_KEYS)? {
        policy = policy
            .include_tools(patterns)
            .with_include_source(RuleSource::key(join(prefix, key)));
    }
    if let Some((key, patterns)) = one_list(obj, prefix, &EXCLUDE_KEYS)? {
        policy = policy
            .exclude_tools(patterns)
            .with_exclude_source(RuleSource::key(join(prefix, key)));
    }
    let approved = one_list(obj, prefix, &APPROVE_KEYS)?;
    let trust = get_bool(obj, "trust", prefix)? == Some(true);
    let codex = codex_approval(obj, prefix)?;
    let first = match (&approved, trust) {
        (Some((key, _)), _) => Some(*key),
        (None, true) => Some("trust"),
        (None, false) => None,
    };
    if let (Some(first), Some(codex_key)) = (
        first,
        CODEX_APPROVAL_KEYS
            .iter()
            .find(|k| present(obj, k).is_some()),
    ) {
        return Err(ConfigError::new(
            ConfigErrorKind::InvalidValue,
            format!("both `{first}` and `{codex_key}` given; they are one rule, write one"),
        )
        .at(join(prefix, codex_key)));
    }
    if let Some((approval, source)) = codex {
        policy = policy.with_approval(approval).with_approval_source(source);
    }
    match (trust, approved) {
        (true, Some((key, _))) => {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!(
                    "both `trust: true` (every tool runs without asking) and `{key}` (only \
                     these tools do) given; write one"
                ),
            )
            .at(join(prefix, key)))
        }
        (true, None) => {
            policy = policy
                .with_approval(Approval::All)
                .with_approval_source(RuleSource::key(join(prefix, "trust")));
        }
        (false, Some((key, tools))) => {
            policy = policy
                .with_approval(Approval::Tools(tools))
                .with_approval_source(RuleSource::key(join(prefix, key)));
        }
        (false, None) => {}
    }

    let enabled = get_bool(obj, "sandboxEnabled", prefix)? == Some(true);
    let sandbox = match present(obj, "sandbox") {
        Some(v) => Some(parse_sandbox(v, &join(prefix, "sandbox"))?),
        None => None,
    };
    let sandbox_key = join(prefix, "sandboxEnabled");
    match (enabled, sandbox) {
        // Kept for the spawn to apply (a stdio server), or for the entry to refuse (a remote
        // one: see `entry.rs`). The block was read first, so that a typo in it is reported
        // either way.
        (true, block) => {
            policy = policy.with_sandbox(
                block.unwrap_or_else(|| SandboxSettings::new(RuleSource::key(sandbox_key))),
            );
        }
        (false, Some(_)) => out.ignored.push(IgnoredKey::new(
            Some(server),
            join(prefix, "sandbox"),
            "inert without `sandboxEnabled: true`, as in VS Code",
        )),
        (false, None) => {}
    }

    if dialect == Dialect::Host {
        for (key, reason) in INERT_KEYS {
            if obj.contains_key(key) {
                out.ignored
                    .push(IgnoredKey::new(Some(server), join(prefix, key), reason));
            }
        }
    }
    out.policy = policy;
    Ok(out)
}

/// A Codex approval mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Codex decides from the tool's annotations: here, as a file that says nothing.
    Auto,
    /// The user is asked; also Codex's `writes` (asked unless the tool says it only reads),
    /// since an approval here is by the tool's name, and asking about a tool that only reads
    /// is the side that never runs a write unasked.
    Prompt,
    /// Runs without asking.
    Approve,
}

/// The approval mode at `path`.
fn mode(v: &Value, path: &str) -> Result<Mode, ConfigError> {
    let Value::String(s) = v else {
        return Err(ConfigError::wrong_type(
            path,
            "a string (auto, prompt or approve)",
            v,
        ));
    };
    match s.as_str() {
        "auto" => Ok(Mode::Auto),
        "prompt" | "writes" => Ok(Mode::Prompt),
        "approve" => Ok(Mode::Approve),
        other => {
            let shown = super::echo(other, 64);
            Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!(
                    "an approval mode must be `auto`, `prompt`, `writes` or `approve`, found \
                     `{shown}`"
                ),
            )
            .at(path)
            .found_expected(shown.into_owned(), "auto, prompt, writes or approve"))
        }
    }
}

/// Codex's `default_tools_approval_mode` and `[tools.<tool>] approval_mode`, as one approval
/// rule and where it was written; `None` when they say nothing. A tool's own mode wins over the
/// server's default, and `auto` (also the default's default) is what a file without approval
/// keys means here: the program decides, and a tool runs without asking.
///
/// # Errors
/// [`ConfigErrorKind::WrongType`], [`ConfigErrorKind::InvalidValue`] (a mode other than
/// `auto`, `prompt`, `approve`; an empty tool name) or [`ConfigErrorKind::UnknownKey`] (a key
/// of a tool's table other than `approval_mode`), at its path.
fn codex_approval(
    obj: &Map<String, Value>,
    prefix: &str,
) -> Result<Option<(Approval, RuleSource)>, ConfigError> {
    let default_key = join(prefix, "default_tools_approval_mode");
    let default = match present(obj, "default_tools_approval_mode") {
        Some(v) => Some(mode(v, &default_key)?),
        None => None,
    };
    let tools_key = join(prefix, "tools");
    let mut own: Vec<(String, Mode)> = Vec::new();
    if let Some(v) = present(obj, "tools") {
        for (tool, table) in mapping(v, &tools_key)? {
            let path = join(&tools_key, tool);
            if tool.trim().is_empty() {
                return Err(ConfigError::new(
                    ConfigErrorKind::InvalidValue,
                    "a tool name is empty",
                )
                .at(path));
            }
            let table = mapping(table, &path)?;
            check_known(table, &["approval_mode"], &path)?;
            if let Some(v) = present(table, "approval_mode") {
                own.push((tool.clone(), mode(v, &join(&path, "approval_mode"))?));
            }
        }
    }
    Ok(match default {
        // Only the tools approved by their own mode (or left to `auto`) run without asking.
        Some(Mode::Prompt) => {
            let unasked = own.into_iter().filter(|(_, m)| *m != Mode::Prompt);
            Some((
                Approval::Tools(unasked.map(|(t, _)| t).collect()),
                RuleSource::key(default_key),
            ))
        }
        default => {
            let asked: Vec<String> = own
                .into_iter()
                .filter(|(_, m)| *m == Mode::Prompt)
                .map(|(t, _)| t)
                .collect();
            match (asked.is_empty(), default) {
                (false, _) => Some((Approval::AllExcept(asked), RuleSource::key(tools_key))),
                (true, Some(Mode::Approve)) => Some((Approval::All, RuleSource::key(default_key))),
                (true, _) => None,
            }
        }
    })
}

/// The one spelling of a list rule present in `obj` (of `keys`), with its tool names.
fn one_list<'k>(
    obj: &Map<String, Value>,
    prefix: &str,
    keys: &[&'k str],
) -> Result<Option<(&'k str, Vec<String>)>, ConfigError> {
    let mut found: Option<&'k str> = None;
    for key in keys.iter().copied() {
        if present(obj, key).is_none() {
            continue;
        }
        if let Some(first) = found {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("both `{first}` and `{key}` given; they are one rule, write one"),
            )
            .at(join(prefix, key)));
        }
        found = Some(key);
    }
    let Some(key) = found else { return Ok(None) };
    Ok(Some((key, tool_names(obj, prefix, key)?)))
}

/// A list of tool names or patterns at `prefix.key`: strings, none empty.
fn tool_names(
    obj: &Map<String, Value>,
    prefix: &str,
    key: &str,
) -> Result<Vec<String>, ConfigError> {
    let path = join(prefix, key);
    let Some(Value::Array(items)) = present(obj, key) else {
        let found = present(obj, key).unwrap_or(&Value::Null);
        return Err(ConfigError::wrong_type(
            &path,
            "a list of tool names",
            found,
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
            Value::String(_) => Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                "a tool name is empty",
            )
            .at(format!("{path}[{i}]"))),
            other => Err(ConfigError::wrong_type(
                &format!("{path}[{i}]"),
                "a tool name (a string)",
                other,
            )),
        })
        .collect()
}

/// VS Code's `sandbox` block at `path`, every key checked.
fn parse_sandbox(v: &Value, path: &str) -> Result<SandboxSettings, ConfigError> {
    let obj = mapping(v, path)?;
    check_known(obj, &SANDBOX_KEYS, path)?;
    let source = path.strip_suffix("sandbox").unwrap_or(path);
    let mut s = SandboxSettings::new(RuleSource::key(format!("{source}sandboxEnabled")));
    if let Some(fs) = present(obj, "filesystem") {
        let fpath = join(path, "filesystem");
        let fs = mapping(fs, &fpath)?;
        check_known(fs, &FILESYSTEM_KEYS, &fpath)?;
        s.allow_read = strings(fs, "allowRead", &fpath)?;
        s.allow_write = strings(fs, "allowWrite", &fpath)?;
        s.deny_read = strings(fs, "denyRead", &fpath)?;
        s.deny_write = strings(fs, "denyWrite", &fpath)?;
    }
    if let Some(net) = present(obj, "network") {
        let npath = join(path, "network");
        let net = mapping(net, &npath)?;
        check_known(net, &NETWORK_KEYS, &npath)?;
        s.allowed_domains = strings(net, "allowedDomains", &npath)?;
        s.denied_domains = strings(net, "deniedDomains", &npath)?;
    }
    if let Some(limits) = present(obj, "limits") {
        let lpath = join(path, "limits");
        let l = mapping(limits, &lpath)?;
        check_known(l, &LIMIT_KEYS, &lpath)?;
        let n = |key: &str| -> Result<Option<u64>, ConfigError> {
            match present(l, key) {
                None => Ok(None),
                Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                    ConfigError::wrong_type(&join(&lpath, key), "a whole number above 0", v)
                }),
            }
        };
        s.limits.address_space = n("addressSpace")?;
        s.limits.open_files = n("openFiles")?;
        s.limits.processes = n("processes")?;
        s.limits.cpu_time = n("cpuSeconds")?.map(std::time::Duration::from_secs);
    }
    s.best_effort = get_bool(obj, "bestEffort", path)? == Some(true);
    Ok(s)
}

fn mapping<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, ConfigError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ConfigError::wrong_type(path, "a mapping", other)),
    }
}

/// Rejects a key not in `known`, suggesting the nearest.
fn check_known(obj: &Map<String, Value>, known: &[&str], path: &str) -> Result<(), ConfigError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(ConfigError::new(
            ConfigErrorKind::UnknownKey,
            format!("unknown key `{key}`"),
        )
        .at(join(path, key))
        .found_expected(key.clone(), format!("one of: {}", known.join(", ")))
        .suggest(nearest(key, known.iter().copied()))),
    }
}

/// A list of strings at `path.key` (empty when absent).
fn strings(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Vec<String>, ConfigError> {
    super::fields::get_list(obj, key, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_at(v: Value) -> Result<PolicyKeys, ConfigError> {
        let Value::Object(obj) = v else {
            panic!("not a mapping")
        };
        parse(&obj, "mcpServers.s", "s", Dialect::Host)
    }

    fn err(v: Value) -> ConfigError {
        parse_at(v).unwrap_err()
    }

    #[test]
    fn each_spelling_of_an_inclusion_list() {
        for key in INCLUDE_KEYS {
            let p = parse_at(json!({ key: ["echo", "get_*"] })).unwrap().policy;
            assert!(p.allows_tool("echo") && p.allows_tool("get_x"), "{key}");
            let refusal = p.check_tool("crash").unwrap_err();
            assert_eq!(refusal.source.key, format!("mcpServers.s.{key}"));
        }
    }

    #[test]
    fn each_spelling_of_an_exclusion_list() {
        for key in EXCLUDE_KEYS {
            let p = parse_at(json!({ key: ["crash", "delete_*"] }))
                .unwrap()
                .policy;
            assert!(p.allows_tool("echo"), "{key}");
            assert!(
                !p.allows_tool("crash") && !p.allows_tool("delete_repo"),
                "{key}"
            );
            let refusal = p.check_tool("crash").unwrap_err();
            assert_eq!(refusal.source.key, format!("mcpServers.s.{key}"));
            assert_eq!(refusal.rule, format!("excluded by `{key}`"));
        }
    }

    #[test]
    fn each_spelling_of_an_approval_list() {
        for key in APPROVE_KEYS {
            let p = parse_at(json!({ key: ["read_file"] })).unwrap().policy;
            assert_eq!(p.approval(), &Approval::Tools(vec!["read_file".into()]));
            assert_eq!(p.approval_source().key, format!("mcpServers.s.{key}"));
            assert!(p.needs_approval("write_file") && !p.needs_approval("read_file"));
        }
    }

    #[test]
    fn trust_true_approves_all_and_false_says_nothing() {
        let p = parse_at(json!({"trust": true})).unwrap().policy;
        assert_eq!(p.approval(), &Approval::All);
        assert_eq!(p.approval_source().key, "mcpServers.s.trust");
        let p = parse_at(json!({"trust": false})).unwrap().policy;
        assert_eq!(p.approval(), &Approval::Unset);
        assert!(p.is_unrestricted());
    }

    #[test]
    fn no_policy_keys_no_policy() {
        let k = parse_at(json!({"command": "x"})).unwrap();
        assert!(k.policy.is_unrestricted());
        assert!(k.ignored.is_empty());
    }

    #[test]
    fn type_errors_name_the_key_path() {
        for (v, path, kind) in [
            (
                json!({"excludeTools": "crash"}),
                "mcpServers.s.excludeTools",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"includeTools": [1]}),
                "mcpServers.s.includeTools[0]",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"disabled_tools": ["a", ""]}),
                "mcpServers.s.disabled_tools[1]",
                ConfigErrorKind::InvalidValue,
            ),
            (
                json!({"alwaysAllow": {"a": 1}}),
                "mcpServers.s.alwaysAllow",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"trust": "yes"}),
                "mcpServers.s.trust",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"sandboxEnabled": 1}),
                "mcpServers.s.sandboxEnabled",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"sandbox": []}),
                "mcpServers.s.sandbox",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"sandbox": {"filesystem": {"allowWrite": "/tmp"}}}),
                "mcpServers.s.sandbox.filesystem.allowWrite",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"sandbox": {"network": {"allowedDomain": []}}}),
                "mcpServers.s.sandbox.network.allowedDomain",
                ConfigErrorKind::UnknownKey,
            ),
            (
                json!({"sandbox": {"fs": {}}}),
                "mcpServers.s.sandbox.fs",
                ConfigErrorKind::UnknownKey,
            ),
        ] {
            let e = err(v.clone());
            assert_eq!((e.path.as_str(), e.kind), (path, kind), "{v}: {e}");
        }
        let e = err(json!({"sandbox": {"network": {"allowedDomain": []}}}));
        assert_eq!(e.suggestion.as_deref(), Some("allowedDomains"));
    }

    #[test]
    fn two_spellings_of_one_rule_are_an_error() {
        let e = err(json!({"excludeTools": ["a"], "disabledTools": ["b"]}));
        assert_eq!(e.path, "mcpServers.s.disabledTools");
        assert!(e.message.contains("`excludeTools`"), "{e}");
        let e = err(json!({"alwaysAllow": ["a"], "autoApprove": ["b"]}));
        assert_eq!(e.path, "mcpServers.s.autoApprove");
        let e = err(json!({"trust": true, "alwaysAllow": ["a"]}));
        assert_eq!(e.path, "mcpServers.s.alwaysAllow");
        // `trust: false` says nothing, so a list beside it is the rule.
        let p = parse_at(json!({"trust": false, "autoApprove": ["a"]}))
            .unwrap()
            .policy;
        assert_eq!(p.approval(), &Approval::Tools(vec!["a".into()]));
    }

    #[test]
    fn an_enabled_sandbox_is_kept_with_its_block_and_limits() {
        let k = parse_at(json!({"sandboxEnabled": true, "sandbox": {
            "filesystem": {"allowRead": ["/r"], "allowWrite": ["/w"]},
            "network": {"allowedDomains": ["x.dev"]},
            "limits": {"processes": 8, "cpuSeconds": 30},
            "bestEffort": true,
        }}))
        .unwrap();
        assert!(k.ignored.is_empty());
        let sb = k.policy.sandbox().expect("kept");
        assert_eq!(sb.source.key, "mcpServers.s.sandboxEnabled");
        assert_eq!(
            (sb.allow_read.clone(), sb.allow_write.clone()),
            (vec!["/r".to_owned()], vec!["/w".to_owned()])
        );
        assert_eq!(sb.limits.processes, Some(8));
        assert_eq!(sb.limits.cpu_time, Some(std::time::Duration::from_secs(30)));
        assert!(sb.best_effort);
        // Without the block: the default sandbox.
        let k = parse_at(json!({"sandboxEnabled": true})).unwrap();
        assert_eq!(
            k.policy.sandbox().unwrap().allow_write,
            Vec::<String>::new()
        );
        // A bad limit, at its key.
        let e = err(json!({"sandboxEnabled": true, "sandbox": {"limits": {"processes": 0}}}));
        assert_eq!(e.path, "mcpServers.s.sandbox.limits.processes");
        let e = err(json!({"sandboxEnabled": true, "sandbox": {"limits": {"cpu": 1}}}));
        assert_eq!(e.path, "mcpServers.s.sandbox.limits.cpu");
    }

    #[test]
    fn a_sandbox_block_without_sandbox_enabled_is_inert_and_reported() {
        for v in [
            json!({"sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}}}),
            json!({"sandboxEnabled": false, "sandbox": {}}),
        ] {
            let k = parse_at(v).unwrap();
            assert!(k.policy.sandbox().is_none());
            assert_eq!(k.ignored.len(), 1);
            assert_eq!(k.ignored[0].key, "mcpServers.s.sandbox");
        }
    }

    #[test]
    fn the_sandbox_block_is_read_whole() {
        let s = parse_sandbox(
            &json!({
                "filesystem": {"allowWrite": ["/w"], "denyRead": ["/r"], "denyWrite": ["/d"]},
                "network": {"allowedDomains": ["a.dev"], "deniedDomains": ["b.dev"]}
            }),
            "servers.s.sandbox",
        )
        .unwrap();
        assert_eq!(s.source.key, "servers.s.sandboxEnabled");
        assert_eq!(
            (
                s.allow_write,
                s.deny_read,
                s.deny_write,
                s.allowed_domains,
                s.denied_domains
            ),
            (
                vec!["/w".to_owned()],
                vec!["/r".to_owned()],
                vec!["/d".to_owned()],
                vec!["a.dev".to_owned()],
                vec!["b.dev".to_owned()]
            )
        );
    }

    #[test]
    fn inert_keys_of_host_entries_are_reported_with_why() {
        let k = parse_at(
            json!({"gallery": "x", "version": "1", "watchPaths": ["a"], "dev": {}, "authProviderType": "google_credentials"}),
        )
        .unwrap();
        let keys: Vec<&str> = k.ignored.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "mcpServers.s.dev",
                "mcpServers.s.gallery",
                "mcpServers.s.version",
                "mcpServers.s.watchPaths",
                "mcpServers.s.authProviderType"
            ]
        );
        assert!(k
            .ignored
            .iter()
            .all(|i| !i.reason.is_empty() && i.server.as_deref() == Some("s")));
    }

    #[test]
    fn codex_approval_modes_a_tool_s_own_first_then_the_server_s_default() {
        let approval = |v: Value| {
            let k = parse_at(v).unwrap();
            (
                k.policy.approval().clone(),
                k.policy.approval_source().key.clone(),
            )
        };
        let tools = |t: &[&str]| t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Asked about by default: only the tools approved on their own (or left to `auto`)
        // run without asking.
        assert_eq!(
            approval(json!({"default_tools_approval_mode": "prompt",
                "tools": {"search": {"approval_mode": "approve"},
                          "fetch": {"approval_mode": "auto"},
                          "push": {"approval_mode": "prompt"}}})),
            (
                Approval::Tools(tools(&["search", "fetch"])),
                "mcpServers.s.default_tools_approval_mode".into()
            )
        );
        // Approved (or left to `auto`) by default: all but the tools asked about.
        for default in [json!("approve"), json!("auto"), Value::Null] {
            let mut v = json!({"tools": {"push": {"approval_mode": "prompt"},
                                         "search": {"approval_mode": "approve"}}});
            if !default.is_null() {
                v["default_tools_approval_mode"] = default.clone();
            }
            assert_eq!(
                approval(v),
                (
                    Approval::AllExcept(tools(&["push"])),
                    "mcpServers.s.tools".into()
                ),
                "{default}"
            );
        }
        // `writes` asks about every tool: the approval is by name, not by what a tool says
        // it does.
        assert_eq!(
            approval(json!({"tools": {"read": {"approval_mode": "writes"}}})).0,
            Approval::AllExcept(tools(&["read"]))
        );
        assert_eq!(
            approval(json!({"default_tools_approval_mode": "writes"})).0,
            Approval::Tools(Vec::new())
        );
        assert_eq!(
            approval(json!({"default_tools_approval_mode": "approve"})),
            (
                Approval::All,
                "mcpServers.s.default_tools_approval_mode".into()
            )
        );
        // `auto` everywhere says what a file without approval keys says.
        for v in [
            json!({"default_tools_approval_mode": "auto"}),
            json!({"tools": {"search": {"approval_mode": "approve"}}}),
            json!({"tools": {"search": {}}}),
        ] {
            assert_eq!(approval(v.clone()).0, Approval::Unset, "{v}");
        }
        let p = parse_at(json!({"tools": {"push": {"approval_mode": "prompt"}}}))
            .unwrap()
            .policy;
        assert!(p.needs_approval("push") && !p.needs_approval("search"));
    }

    #[test]
    fn codex_approval_modes_are_checked_at_their_key() {
        for (v, path, kind) in [
            (
                json!({"default_tools_approval_mode": "ask"}),
                "mcpServers.s.default_tools_approval_mode",
                ConfigErrorKind::InvalidValue,
            ),
            (
                json!({"default_tools_approval_mode": true}),
                "mcpServers.s.default_tools_approval_mode",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"tools": ["search"]}),
                "mcpServers.s.tools",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"tools": {"search": "approve"}}),
                "mcpServers.s.tools.search",
                ConfigErrorKind::WrongType,
            ),
            (
                json!({"tools": {"search": {"approval": "approve"}}}),
                "mcpServers.s.tools.search.approval",
                ConfigErrorKind::UnknownKey,
            ),
            (
                json!({"tools": {"search": {"approval_mode": "never"}}}),
                "mcpServers.s.tools.search.approval_mode",
                ConfigErrorKind::InvalidValue,
            ),
            (
                json!({"tools": {" ": {"approval_mode": "prompt"}}}),
                "mcpServers.s.tools. ",
                ConfigErrorKind::InvalidValue,
            ),
            (
                json!({"alwaysAllow": ["a"], "default_tools_approval_mode": "prompt"}),
                "mcpServers.s.default_tools_approval_mode",
                ConfigErrorKind::InvalidValue,
            ),
            (
                json!({"trust": true, "tools": {"a": {"approval_mode": "prompt"}}}),
                "mcpServers.s.tools",
                ConfigErrorKind::InvalidValue,
            ),
        ] {
            let e = err(v.clone());
            assert_eq!((e.path.as_str(), e.kind), (path, kind), "{v}: {e}");
        }
        let e = err(json!({"tools": {"search": {"aproval_mode": "approve"}}}));
        assert_eq!(e.suggestion.as_deref(), Some("approval_mode"));
    }

    #[test]
    fn enabled_false_disables() {
        let Value::Object(obj) = json!({"enabled": false}) else {
            unreachable!()
        };
        assert!(disabled_by_enabled(&obj, "p").unwrap());
        let Value::Object(obj) = json!({"enabled": true}) else {
            unreachable!()
        };
        assert!(!disabled_by_enabled(&obj, "p").unwrap());
        let Value::Object(obj) = json!({"enabled": "no"}) else {
            unreachable!()
        };
        assert_eq!(
            disabled_by_enabled(&obj, "p").unwrap_err().path,
            "p.enabled"
        );
    }
}
