//! [`ServerConfig::from_value`] and [`ServerConfig::to_json`]: one server as a JSON object.

use serde_json::{json, Map, Value};

use super::entry::{parse_entry, Ctx, Dialect, Entry};
use super::{
    Approval, ConfigError, ConfigErrorKind, InputLimits, Limits, ServerConfig, ServerPolicy,
    SseConfig, ToolPattern, TransportConfig, WebSocketConfig,
};

impl ServerConfig {
    /// A validated server from a JSON object of the shape
    /// `{name, description, transport: {type, command, args, env, cwd, url, session_id, headers}, timeout}`
    /// (`headers` on every remote type, `session_id` on `streamable-http` only).
    ///
    /// Unknown keys are errors naming the nearest known key, wrong JSON
    /// types are errors naming the key path, and the flat `transport: "stdio"` form is an error that
    /// shows the nested form. Type names are case-insensitive. No `${...}` interpolation is done
    /// here; [`ConfigLoader`](crate::ConfigLoader) does that for files. `timeout` follows the
    /// host-config rule, and a value out of range is an error: see
    /// [timeouts](ServerConfig#timeouts). The policy keys a host file may carry
    /// (`includeTools`, `excludeTools`, `alwaysAllow`, `trust`, ...; see
    /// [`ConfigLoader`](crate::ConfigLoader#policy-keys)) are read at the top level.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use serde_json::json;
    /// let s = ServerConfig::from_value(&json!({
    ///     "name": "fs",
    ///     "transport": {"type": "STDIO", "command": "mcp-fs", "args": ["--root", "/data"]},
    ///     "timeout": 5000
    /// }))?;
    /// assert_eq!(s.timeout().as_secs(), 5);
    /// let err = ServerConfig::from_value(&json!({
    ///     "name": "api", "transport": {"type": "streamable_http", "url": "https://x"}
    /// })).unwrap_err();
    /// assert_eq!(err.to_string(), "server `api`: transport.type: unknown transport type \
    ///     `streamable_http`, expected one of: stdio, sse, ws, websocket, streamable-http, http \
    ///     (did you mean `streamable-http`?)");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// A [`ConfigError`] whose [`kind`](ConfigError::kind) names the problem, e.g.
    /// [`ConfigErrorKind::UnknownKey`], [`ConfigErrorKind::WrongType`],
    /// [`ConfigErrorKind::UnknownTransport`], [`ConfigErrorKind::FlatTransport`],
    /// [`ConfigErrorKind::MissingField`], [`ConfigErrorKind::InvalidUrl`] or
    /// [`ConfigErrorKind::InvalidValue`] (e.g. a `timeout` out of range), and
    /// [`ConfigErrorKind::Unenforceable`] for `sandboxEnabled: true` on a remote server (no
    /// process of this client's runs it, to confine).
    pub fn from_value(value: &Value) -> Result<ServerConfig, ConfigError> {
        let ctx = Ctx {
            path: String::new(),
            key_name: None,
            dialect: Dialect::RobotLab,
            vars: None,
            base_dir: None,
            limits: InputLimits::default(),
            flavor: super::entry::Flavor::Generic,
            allow_header_commands: false,
            header_commands_held: false,
            accept_unenforced: false,
            idps: None,
        };
        match parse_entry(value, &ctx)? {
            Entry::Server(s, _) => Ok(*s),
            Entry::Disabled(name) => Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                "the server is disabled",
            )
            .at("disabled")
            .for_server(Some(&name))),
        }
    }

    /// The config as JSON: `{name, description, transport, timeout}`, all four keys always
    /// present. Env and header values are shown as they are (this is for saving and reloading:
    /// [`ServerConfig::from_value`] of it gives an equal config); an auth provider is left out.
    /// The timeout is written for the host-config rule (see [timeouts](ServerConfig#timeouts))
    /// so that it reloads equal; that rule cannot say less than 1 s, so a shorter timeout
    /// reloads as 1 s.
    ///
    /// A [policy](ServerConfig::policy) is written in this library's spelling, at the top
    /// level: `includeTools`, `excludeTools`, `alwaysAllow` (or `trust: true` when every tool
    /// runs without asking), and a sandbox a file asked for as `sandboxEnabled: true` with its
    /// `sandbox` block (paths, domains, limits, `bestEffort`), which reloads as the same
    /// sandbox. One set with [`ServerConfig::with_sandbox`] is not written.
    ///
    /// ```
    /// use mcp_blocking::config::{Approval, ServerPolicy};
    /// use mcp_blocking::ServerConfig;
    /// use serde_json::json;
    /// let s = ServerConfig::stdio("fs", "mcp-fs").with_policy(
    ///     ServerPolicy::new().exclude_tools(["delete_*"]).with_approval(Approval::All),
    /// );
    /// let v = s.to_json();
    /// assert_eq!((&v["excludeTools"], &v["trust"]), (&json!(["delete_*"]), &json!(true)));
    /// assert_eq!(ServerConfig::from_value(&v)?, s);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use serde_json::json;
    /// let s = ServerConfig::sse("y", "http://x").with_timeout_secs(30.0);
    /// assert_eq!(s.to_json(), json!({
    ///     "name": "y", "description": "", "transport": {"type": "sse", "url": "http://x"}, "timeout": 30.0
    /// }));
    /// assert_eq!(ServerConfig::from_value(&s.to_json())?, s);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn to_json(&self) -> Value {
        let mut t = Map::new();
        t.insert("type".into(), self.transport_type().into());
        match &self.transport {
            TransportConfig::Stdio(s) => {
                t.insert("command".into(), s.command.clone().into());
                t.insert("args".into(), json!(s.args));
                t.insert("env".into(), json!(s.env));
                if let Some(cwd) = &s.cwd {
                    t.insert("cwd".into(), cwd.display().to_string().into());
                }
                if s.inherit_env {
                    t.insert("inherit_env".into(), true.into());
                }
                if self.limits.max_message_bytes != Limits::default().max_message_bytes {
                    t.insert(
                        "max_message_bytes".into(),
                        self.limits.max_message_bytes.into(),
                    );
                }
            }
            TransportConfig::Sse(SseConfig { url, headers, .. })
            | TransportConfig::WebSocket(WebSocketConfig { url, headers, .. }) => {
                t.insert("url".into(), url.clone().into());
                if !headers.is_empty() {
                    t.insert("headers".into(), headers_json(headers));
                }
            }
            TransportConfig::StreamableHttp(h) => {
                t.insert("url".into(), h.url.clone().into());
                t.insert("headers".into(), headers_json(&h.headers));
                if let Some(id) = &h.session_id {
                    t.insert("session_id".into(), id.clone().into());
                }
                if h.detect_legacy_sse {
                    t.insert("detect_legacy_sse".into(), true.into());
                }
            }
        }
        let secs = self.timeout.as_secs_f64();
        let timeout = if secs >= 1000.0 { secs * 1000.0 } else { secs };
        let mut out = json!({
            "name": self.name,
            "description": self.description,
            "transport": Value::Object(t),
            "timeout": timeout,
        });
        if self.protocol != super::ProtocolMode::default() {
            out["protocol"] = self.protocol.as_str().into();
        }
        if let Value::Object(map) = &mut out {
            policy_json(&self.policy, map);
        }
        out
    }
}

/// The policy's keys, in this library's spelling, into `out`.
fn policy_json(policy: &ServerPolicy, out: &mut Map<String, Value>) {
    let names = |patterns: &[ToolPattern]| -> Value {
        patterns
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .into()
    };
    if let Some(include) = policy.included() {
        out.insert("includeTools".into(), names(include));
    }
    // The exclusions written apart from the entry (a host's settings) are exclusions all the
    // same: saved, they are the entry's.
    let excluded: Vec<ToolPattern> = policy
        .excluded()
        .iter()
        .chain(policy.denied().iter().map(|r| &r.pattern))
        .cloned()
        .collect();
    if !excluded.is_empty() {
        out.insert("excludeTools".into(), names(&excluded));
    }
    match policy.approval() {
        Approval::All => {
            out.insert("trust".into(), true.into());
        }
        Approval::Tools(tools) => {
            out.insert("alwaysAllow".into(), json!(tools));
        }
        // Codex's spelling, the one that says "all but these": every tool approved, these
        // asked about. With none listed it is `All`, and reloads as such.
        Approval::AllExcept(tools) if tools.is_empty() => {
            out.insert("trust".into(), true.into());
        }
        Approval::AllExcept(tools) => {
            out.insert("default_tools_approval_mode".into(), "approve".into());
            let asked: Map<String, Value> = tools
                .iter()
                .map(|t| (t.clone(), json!({"approval_mode": "prompt"})))
                .collect();
            out.insert("tools".into(), Value::Object(asked));
        }
        // `Unset` says nothing, and so does the file.
        _ => {}
    }
    if let Some(sb) = policy.sandbox() {
        let mut block = Map::new();
        for (group, lists) in [
            (
                "filesystem",
                [
                    ("allowRead", &sb.allow_read),
                    ("allowWrite", &sb.allow_write),
                    ("denyRead", &sb.deny_read),
                    ("denyWrite", &sb.deny_write),
                ]
                .as_slice(),
            ),
            (
                "network",
                [
                    ("allowedDomains", &sb.allowed_domains),
                    ("deniedDomains", &sb.denied_domains),
                ]
                .as_slice(),
            ),
        ] {
            let m: Map<String, Value> = lists
                .iter()
                .filter(|(_, l)| !l.is_empty())
                .map(|(k, l)| ((*k).to_owned(), json!(l)))
                .collect();
            if !m.is_empty() {
                block.insert(group.into(), Value::Object(m));
            }
        }
        let l = &sb.limits;
        let limits: Map<String, Value> = [
            ("addressSpace", l.address_space),
            ("openFiles", l.open_files),
            ("processes", l.processes),
            ("cpuSeconds", l.cpu_time.map(super::sandbox::cpu_seconds)),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.into())))
        .collect();
        if !limits.is_empty() {
            block.insert("limits".into(), Value::Object(limits));
        }
        if sb.best_effort {
            block.insert("bestEffort".into(), true.into());
        }
        out.insert("sandboxEnabled".into(), true.into());
        out.insert("sandbox".into(), Value::Object(block));
    }
}

/// Headers as a JSON object, in order.
fn headers_json(headers: &[(String, String)]) -> Value {
    Value::Object(
        headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect(),
    )
}
