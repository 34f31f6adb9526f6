//! One server entry, in RobotLab's nested shape or a host file's flat shape, into a
//! [`ServerConfig`]: key checks, type checks, interpolation, type inference and validation.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{get_bool, get_list, get_str, get_str_map, present};
pub(crate) use super::fields::{join, Dialect, Flavor};
use super::interpolate::Vars;
use super::policy_entry;
use super::suggest::nearest;
use super::{
    check_env, check_session_id, check_stdio, check_url, non_finite_timeout, normalize_timeout,
    under, ConfigError, ConfigErrorKind, HttpConfig, InputLimits, ServerConfig, SseConfig,
    StdioConfig, TransportConfig, WebSocketConfig, VALID_TRANSPORT_TYPES,
};

/// Where an entry sits and how to read it.
#[allow(
    dead_code,
    reason = "the host flavor is read by the loaders of each host's file"
)]
pub(crate) struct Ctx<'a> {
    /// The key path of the entry, e.g. `mcpServers.github` or `mcp[0]` (empty at the top).
    pub(crate) path: String,
    /// The server's name when it is the entry's map key.
    pub(crate) key_name: Option<&'a str>,
    pub(crate) dialect: Dialect,
    /// Variables for `${...}`; `None` leaves strings as written.
    pub(crate) vars: Option<&'a Vars<'a>>,
    /// The directory relative paths (`envFile`) are read from.
    pub(crate) base_dir: Option<&'a Path>,
    /// What an `envFile` may make the loader read.
    pub(crate) limits: InputLimits,
    /// Which host wrote the file.
    pub(crate) flavor: Flavor,
    /// Whether a `headersHelper` command may be run (see `ConfigLoader::allow_header_commands`).
    pub(crate) allow_header_commands: bool,
    /// Whether header commands are allowed by the program but held back for this file, a
    /// project file not approved yet.
    pub(crate) header_commands_held: bool,
    /// Whether a key that limits a server but is not enforced is ignored (and reported) rather
    /// than an error (see `ConfigLoader::accept_unenforced`).
    pub(crate) accept_unenforced: bool,
    /// The enterprise identity providers named so far in this load (see `Walk::idps`).
    pub(crate) idps: Option<&'a std::cell::RefCell<Vec<super::oauth::EnterpriseIdp>>>,
}

/// Why a `headersHelper` of a project file not approved yet was not run, though the program
/// allows header commands: it runs once the file is approved.
pub(crate) const HELPER_HELD: &str =
    "not run yet: it is a command of a project file not approved (it runs once the file is \
     approved, `mcpb trust`)";

/// A parsed entry.
pub(crate) enum Entry {
    /// Boxed: a `ServerConfig` is large next to a name. With the keys it ignored.
    Server(Box<ServerConfig>, Vec<super::IgnoredKey>),
    Disabled(String),
}

const TOP_KEYS: [&str; 6] = [
    "name",
    "description",
    "transport",
    "timeout",
    "disabled",
    "protocol",
];
const TRANSPORT_KEYS: [&str; 14] = [
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "inherit_env",
    "max_message_bytes",
    "url",
    "headers",
    "session_id",
    "detect_legacy_sse",
    "oauth",
    "headersHelper",
];
const STDIO_ONLY: [&str; 7] = [
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "inherit_env",
    "max_message_bytes",
];
const HTTP_ONLY: [&str; 2] = ["session_id", "detect_legacy_sse"];

/// Rejects keys not in `allowed`, suggesting the nearest.
fn check_keys(
    map: &Map<String, Value>,
    allowed: &[&str],
    path: &str,
    elsewhere: Option<(&[&str], &str)>,
) -> Result<(), ConfigError> {
    for key in map.keys() {
        if allowed.contains(&key.as_str()) {
            continue;
        }
        let mut message = format!("unknown key `{key}`");
        if let Some((keys, place)) = elsewhere {
            if keys.contains(&key.as_str()) {
                message = format!("unknown key `{key}` here: it belongs inside `{place}`");
            }
        }
        return Err(ConfigError::new(ConfigErrorKind::UnknownKey, message)
            .at(join(path, key))
            .found_expected(key.clone(), format!("one of: {}", allowed.join(", ")))
            .suggest(nearest(key, allowed.iter().copied())));
    }
    Ok(())
}

/// The kind of transport a type name (or inference) selects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Sse,
    WebSocket,
    Http { detect_legacy_sse: bool },
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Sse => "sse",
            Kind::WebSocket => "websocket",
            Kind::Http { .. } => "streamable-http",
        }
    }
}

fn parse_type(raw: &str, dialect: Dialect, path: &str) -> Result<Kind, ConfigError> {
    let lower = raw.to_ascii_lowercase();
    match lower.as_str() {
        "stdio" => Ok(Kind::Stdio),
        "sse" => Ok(Kind::Sse),
        "ws" | "websocket" => Ok(Kind::WebSocket),
        "streamable-http" | "http" => Ok(Kind::Http {
            detect_legacy_sse: false,
        }),
        "streamablehttp" if dialect == Dialect::Host => Ok(Kind::Http {
            detect_legacy_sse: false,
        }),
        _ => {
            let expected = format!("one of: {}", VALID_TRANSPORT_TYPES.join(", "));
            Err(ConfigError::new(
                ConfigErrorKind::UnknownTransport,
                format!("unknown transport type `{raw}`, expected {expected}"),
            )
            .at(join(path, "type"))
            .found_expected(raw, expected)
            .suggest(nearest(&lower, VALID_TRANSPORT_TYPES)))
        }
    }
}

/// The nested form a flat `transport: <string>` entry should have been written in.
fn nested_hint(kind: &str, obj: &Map<String, Value>) -> String {
    let mut s = format!("transport: {{ type: {kind}");
    for key in ["command", "url"] {
        if let Some(Value::String(v)) = obj.get(key) {
            s.push_str(&format!(", {key}: {v}"));
        }
    }
    s.push_str(" }");
    s
}

/// Reads `KEY=VALUE` lines (blank lines, `#` comments and `export ` allowed; quotes stripped),
/// at most `limits.max_file_bytes` of them.
pub(crate) fn read_env_file(
    path: &Path,
    shown: &str,
    limits: &InputLimits,
) -> Result<Vec<(String, String)>, ConfigError> {
    let text = limits.read(
        path,
        &format!("env file `{shown}`"),
        ConfigErrorKind::EnvFile,
    )?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(ConfigError::new(
                ConfigErrorKind::EnvFile,
                format!("env file `{shown}` line {}: expected KEY=VALUE", i + 1),
            ));
        };
        let v = v.trim();
        let v = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(a, b)| v.strip_prefix(*a).and_then(|x| x.strip_suffix(*b)))
            .unwrap_or(v);
        let k = k.trim();
        check_env(k, v).map_err(|e| {
            let message = format!("env file `{shown}` line {}: {}", i + 1, e.message);
            ConfigError::new(ConfigErrorKind::EnvFile, message)
        })?;
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok(out)
}

/// Parses one entry; errors carry the key path and, when known, the server's name.
pub(crate) fn parse_entry(v: &Value, ctx: &Ctx<'_>) -> Result<Entry, ConfigError> {
    let server = ctx.key_name.map(str::to_owned).or_else(|| {
        v.get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    });
    let mut secrets = Vec::new();
    parse_inner(v, ctx, &mut secrets)
        .map_err(|e| hide_secrets(e, &secrets).for_server(server.as_deref()))
}

/// `e` with every value taken from a variable replaced by `<redacted>` (a url that does not
/// parse is shown in its error, and may hold one).
fn hide_secrets(mut e: ConfigError, secrets: &[String]) -> ConfigError {
    let hide = |text: &mut String| {
        for s in secrets.iter().filter(|s| !s.is_empty()) {
            if text.contains(s.as_str()) {
                *text = text.replace(s.as_str(), super::REDACTED);
            }
        }
    };
    hide(&mut e.message);
    for text in [&mut e.found, &mut e.expected, &mut e.suggestion]
        .into_iter()
        .flatten()
    {
        hide(text);
    }
    e
}

/// Parses one entry; `secrets` collects the values taken from variables.
fn parse_inner(v: &Value, ctx: &Ctx<'_>, secrets: &mut Vec<String>) -> Result<Entry, ConfigError> {
    // A host's own spellings (`httpUrl`, `serverUrl`, Zed's and Codex's keys) are read as ours.
    if let Some(host) = super::host_keys::normalize(v, ctx)? {
        return host.parse(|v| parse_inner(v, ctx, secrets));
    }
    let prefix = ctx.path.as_str();
    let Value::Object(obj) = v else {
        return Err(ConfigError::wrong_type(prefix, "a mapping (one server)", v));
    };

    // Keys first, so that a typo is reported before what it leaves missing. A policy key sits at
    // the entry's top level in either dialect; another host's key with no meaning here is
    // accepted (and reported) in a host's file only.
    let inert: &[&str] = &match ctx.dialect {
        Dialect::Host => policy_entry::inert_keys().collect::<Vec<_>>(),
        Dialect::RobotLab => Vec::new(),
    };
    let top_keys: Vec<&str> = TOP_KEYS
        .iter()
        .copied()
        .filter(|k| ctx.key_name.is_none() || *k != "name")
        .chain(policy_entry::POLICY_KEYS)
        .chain(inert.iter().copied())
        .collect();
    let (tobj, tpath) = match obj.get("transport") {
        Some(Value::Object(t)) => {
            check_keys(obj, &top_keys, prefix, Some((&TRANSPORT_KEYS, "transport")))?;
            let tpath = join(prefix, "transport");
            check_keys(t, &TRANSPORT_KEYS, &tpath, None)?;
            (t, tpath)
        }
        Some(Value::String(s)) => {
            return Err(ConfigError::new(
                ConfigErrorKind::FlatTransport,
                format!(
                    "`transport` must be a mapping, not the string `{s}`; write `{}`",
                    nested_hint(s, obj)
                ),
            )
            .at(join(prefix, "transport"))
            .found_expected("a string", "a mapping"));
        }
        Some(other) => {
            return Err(ConfigError::wrong_type(
                &join(prefix, "transport"),
                "a mapping",
                other,
            ))
        }
        None if ctx.dialect == Dialect::RobotLab => {
            check_keys(obj, &top_keys, prefix, Some((&TRANSPORT_KEYS, "transport")))?;
            return Err(ConfigError::new(
                ConfigErrorKind::MissingField,
                "missing `transport` (e.g. `transport: { type: stdio, command: x }`)",
            )
            .at(join(prefix, "transport")));
        }
        None => {
            let flat: Vec<&str> = TRANSPORT_KEYS
                .iter()
                .chain(TOP_KEYS[1..].iter().filter(|k| **k != "transport"))
                .copied()
                .chain(policy_entry::POLICY_KEYS)
                .chain(inert.iter().copied())
                .collect();
            check_keys(obj, &flat, prefix, None)?;
            (obj, prefix.to_owned())
        }
    };

    let name = match ctx.key_name {
        Some(k) => k.to_owned(),
        None => get_str(obj, "name", prefix)?.ok_or_else(|| {
            ConfigError::new(ConfigErrorKind::MissingField, "missing `name`")
                .at(join(prefix, "name"))
        })?,
    };
    if name.trim().is_empty() {
        return Err(
            ConfigError::new(ConfigErrorKind::MissingField, "server name is empty")
                .at(join(prefix, "name")),
        );
    }
    if get_bool(obj, "disabled", prefix)? == Some(true)
        || policy_entry::disabled_by_enabled(obj, prefix)?
    {
        return Ok(Entry::Disabled(name));
    }
    let policy_entry::PolicyKeys {
        policy,
        mut ignored,
    } = policy_entry::parse(obj, prefix, &name, ctx.dialect)?;
    let description = get_str(obj, "description", prefix)?.unwrap_or_default();
    // The host-config timeout rule: see `ServerConfig`'s "Timeouts".
    let tkey = join(prefix, "timeout");
    let timeout = match present(obj, "timeout") {
        None => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => {
            // `.nan`, `.inf` and the like are numbers, but not finite ones.
            let not_finite = match other {
                Value::String(s) => non_finite_timeout(s),
                _ => None,
            };
            return Err(not_finite
                .unwrap_or_else(|| ConfigError::wrong_type(&tkey, "a number of seconds", other))
                .at(tkey));
        }
    };
    let timeout = normalize_timeout(timeout).map_err(|e| e.at(tkey))?;
    let pkey = join(prefix, "protocol");
    let protocol = match present(obj, "protocol") {
        None => super::ProtocolMode::default(),
        Some(Value::String(s)) => super::ProtocolMode::parse(s).ok_or_else(|| {
            ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!(
                    "`protocol` must be `auto`, `legacy` or `modern`, found `{}`",
                    super::echo(s, 64)
                ),
            )
            .at(pkey.clone())
            .found_expected(super::echo(s, 64).into_owned(), "auto, legacy or modern")
        })?,
        Some(other) => {
            return Err(ConfigError::wrong_type(
                &pkey,
                "a string (auto, legacy or modern)",
                other,
            ))
        }
    };

    let tp = tpath.as_str();
    // The values a headers helper printed: secrets, like values taken from variables.
    let mut helper_secrets = Vec::new();
    let mut expand = |s: String, path: String| -> Result<String, ConfigError> {
        match ctx.vars {
            Some(vars) => vars.expand(&s, secrets).map_err(|e| e.at(path)),
            None => Ok(s),
        }
    };
    let type_raw = get_str(tobj, "type", tp)?;
    let command = get_str(tobj, "command", tp)?;
    let url = get_str(tobj, "url", tp)?;
    if command.is_some() && url.is_some() {
        return Err(ConfigError::new(
            ConfigErrorKind::CommandAndUrl,
            "both `command` and `url` given; a server has one or the other",
        )
        .at(tp));
    }
    let kind = match (&type_raw, ctx.dialect) {
        (Some(t), _) => parse_type(t, ctx.dialect, tp)?,
        (None, Dialect::RobotLab) => {
            return Err(ConfigError::new(
                ConfigErrorKind::MissingField,
                format!(
                    "transport needs a `type`, one of: {}",
                    VALID_TRANSPORT_TYPES.join(", ")
                ),
            )
            .at(join(tp, "type")))
        }
        (None, Dialect::Host) => match (&command, &url) {
            (Some(_), _) => Kind::Stdio,
            (None, Some(u)) if u.to_ascii_lowercase().starts_with("ws") => Kind::WebSocket,
            (None, Some(_)) => Kind::Http {
                detect_legacy_sse: true,
            },
            (None, None) => {
                return Err(ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "neither `command` nor `url` given; a server needs one",
                )
                .at(tp))
            }
        },
    };

    let not_for: &[&str] = match kind {
        Kind::Stdio => &[
            "url",
            "headers",
            "headersHelper",
            "session_id",
            "detect_legacy_sse",
            "oauth",
        ],
        Kind::Http { .. } => &STDIO_ONLY,
        Kind::Sse => &[],
        Kind::WebSocket => &["oauth"],
    };
    let mut bad: Vec<&str> = not_for.to_vec();
    if matches!(kind, Kind::Sse | Kind::WebSocket) {
        bad.extend(STDIO_ONLY.iter().chain(HTTP_ONLY.iter()));
    }
    if let Some(key) = bad.iter().find(|k| present(tobj, k).is_some()) {
        let message = format!("`{key}` does not apply to a {} server", kind.name());
        return Err(ConfigError::new(ConfigErrorKind::NotApplicable, message).at(join(tp, key)));
    }

    let mut max_message = None;
    let transport = match kind {
        Kind::Stdio => {
            let command = command.unwrap_or_default();
            if command.trim().is_empty() {
                return Err(ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "stdio transport needs a `command`",
                )
                .at(join(tp, "command")));
            }
            let command = expand(command, join(tp, "command"))?;
            let mut args = Vec::new();
            for (i, a) in get_list(tobj, "args", tp)?.into_iter().enumerate() {
                args.push(expand(a, format!("{}[{i}]", join(tp, "args")))?);
            }
            let mut env = BTreeMap::new();
            if let Some(file) = get_str(tobj, "envFile", tp)? {
                let fpath = join(tp, "envFile");
                let file = expand(file, fpath.clone())?;
                let full = match ctx.base_dir {
                    Some(dir) => dir.join(&file),
                    None => Path::new(&file).to_path_buf(),
                };
                env.extend(read_env_file(&full, &file, &ctx.limits).map_err(|e| e.at(fpath))?);
            }
            for (k, val) in get_str_map(tobj, "env", tp)? {
                let p = join(&join(tp, "env"), &k);
                env.insert(k, expand(val, p)?);
            }
            let cwd = match get_str(tobj, "cwd", tp)? {
                Some(c) => Some(expand(c, join(tp, "cwd"))?.into()),
                None => None,
            };
            let max_message_bytes = match present(tobj, "max_message_bytes") {
                None => None,
                Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                    n.as_u64().and_then(|n| usize::try_from(n).ok())
                }
                Some(other) => {
                    return Err(ConfigError::wrong_type(
                        &join(tp, "max_message_bytes"),
                        "a positive whole number",
                        other,
                    ))
                }
            };
            max_message = max_message_bytes;
            let stdio = StdioConfig {
                command,
                args,
                env,
                cwd,
                inherit_env: get_bool(tobj, "inherit_env", tp)?.unwrap_or(false),
            };
            check_stdio(&stdio).map_err(|e| under(tp, e))?;
            TransportConfig::Stdio(stdio)
        }
        _ => {
            let upath = join(tp, "url");
            let url = expand(url.unwrap_or_default(), upath.clone())?;
            // The url shown may hold a value that came from a variable: `parse_entry` hides
            // those in every error.
            check_url(kind.name(), &url).map_err(|e| e.at(upath))?;
            let mut headers = Vec::new();
            for (k, val) in get_str_map(tobj, "headers", tp)? {
                let p = join(&join(tp, "headers"), &k);
                let val = expand(val, p.clone())?;
                super::remote::header_pair(&k, &val).map_err(|e| e.at(p))?;
                headers.push((k, val));
            }
            if let Some(command) = get_str(tobj, "headersHelper", tp)? {
                let hpath = join(tp, "headersHelper");
                if ctx.allow_header_commands {
                    let found = run_headers_helper(
                        &command,
                        &name,
                        &url,
                        &hpath,
                        ctx.base_dir,
                        &mut helper_secrets,
                    )?;
                    // The helper's headers win over static ones of the same name, as in Claude Code.
                    headers.retain(|(k, _)| !found.iter().any(|(f, _)| f.eq_ignore_ascii_case(k)));
                    headers.extend(found);
                } else {
                    let reason = if ctx.header_commands_held {
                        HELPER_HELD
                    } else {
                        "not run: running a command from a config file is the program's \
                         decision (allow it with `ConfigLoader::allow_header_commands(true)` or \
                         `mcpb --allow-header-commands`)"
                    };
                    ignored.push(super::IgnoredKey::new(Some(&name), hpath, reason));
                }
            }
            match kind {
                Kind::Sse => {
                    let mut sse = SseConfig::new(url);
                    sse.headers = headers;
                    TransportConfig::Sse(sse)
                }
                Kind::WebSocket => {
                    let mut ws = WebSocketConfig::new(url);
                    ws.headers = headers;
                    TransportConfig::WebSocket(ws)
                }
                _ => {
                    let mut http = HttpConfig::new(url);
                    http.headers = headers;
                    http.session_id = get_str(tobj, "session_id", tp)?;
                    if let Some(id) = &http.session_id {
                        check_session_id(id).map_err(|e| under(tp, e))?;
                    }
                    http.detect_legacy_sse = matches!(
                        kind,
                        Kind::Http {
                            detect_legacy_sse: true
                        }
                    ) || get_bool(tobj, "detect_legacy_sse", tp)?
                        .unwrap_or(false);
                    TransportConfig::StreamableHttp(http)
                }
            }
        }
    };
    let mut foreign = Vec::new();
    let oauth = match present(tobj, "oauth") {
        Some(v) => super::oauth_entry::parse(
            v,
            &join(tp, "oauth"),
            ctx.dialect,
            &mut expand,
            &mut foreign,
            ctx.idps,
        )?,
        None => None,
    };
    ignored.extend(foreign.into_iter().map(|key| {
        super::IgnoredKey::new(
            Some(&name),
            key,
            "another host's OAuth setting: this library finds the authorization server's \
             endpoints and audience in the server's own metadata",
        )
    }));
    secrets.extend(helper_secrets);
    secrets.sort();
    secrets.dedup();
    let secrets = secrets.clone();
    // A sandbox confines a process this client starts: a remote server's file asking for one
    // asks for what cannot happen here.
    let mut policy = policy;
    if let (Some(sb), false) = (
        policy.sandbox(),
        matches!(transport, TransportConfig::Stdio(_)),
    ) {
        let key = sb.source.key.clone();
        if !ctx.accept_unenforced {
            return Err(ConfigError::new(
                ConfigErrorKind::Unenforceable,
                "`sandboxEnabled` asks for a sandbox, and a remote server runs in no process of \
                 this client's to confine: it is not reached unconfined (a program may accept \
                 the risk with `ConfigLoader::accept_unenforced(true)` or `mcpb \
                 --accept-unenforced`)",
            )
            .at(key));
        }
        ignored.push(super::IgnoredKey::new(
            Some(&name),
            key,
            "the sandbox was not applied: a remote server runs in no process of this client's, \
             and the program accepted reaching it without one",
        ));
        policy = policy.without_sandbox();
    }
    let mut server = ServerConfig::with_transport(name, transport).with_policy(policy);
    if let Some(oauth) = oauth {
        server = server.with_oauth(oauth);
    }
    server.description = description;
    server.timeout = timeout;
    server.protocol = protocol;
    if let Some(bytes) = max_message {
        server.limits.max_message_bytes = bytes;
    }
    server.secrets = secrets;
    // A sandbox's rules are checked as they are read: one Landlock cannot express fails the
    // server here, at its key, rather than at its first connect.
    if let (Some(sb), TransportConfig::Stdio(s)) = (server.sandbox(), server.transport()) {
        sb.check(s.cwd.as_deref())?;
    }
    Ok(Entry::Server(Box::new(server), ignored))
}

/// Runs a remote server's `headersHelper` (at `path`, in the file's directory `dir`) and checks its headers as `headers` are
/// checked; their values join `secrets`, so that no message or `Debug` shows them.
fn run_headers_helper(
    command: &str,
    server: &str,
    url: &str,
    path: &str,
    dir: Option<&Path>,
    secrets: &mut Vec<String>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let found = super::header_helper::run(command, server, url, dir).map_err(|message| {
        ConfigError::new(
            ConfigErrorKind::InvalidValue,
            format!("the headers helper: {message}"),
        )
        .at(path)
    })?;
    secrets.extend(found.iter().map(|(_, v)| v.clone()));
    for (k, v) in &found {
        super::remote::header_pair(k, v).map_err(|e| {
            let message = format!("the headers helper printed {}", e.message);
            ConfigError::new(e.kind, message).at(path)
        })?;
    }
    Ok(found)
}
