//! Hosts' own spellings of a server's transport, rewritten into ours before an entry is read,
//! with each error reported back at the key as the file wrote it.
//!
//! | host | written | read as |
//! |---|---|---|
//! | Gemini CLI | `httpUrl` | `url` + `type: http` (Streamable HTTP) |
//! | Gemini CLI (its files only) | `url` without `type` | `type: sse` (legacy HTTP+SSE) |
//! | Gemini CLI (its files only) | `timeout` in milliseconds | `timeout` (under 1000 ms: 1 s, the floor of every timeout) |
//! | Gemini CLI (its files only) | `$VAR` in `env` values | `${VAR}` |
//! | Windsurf | `serverUrl` | `url` (the transport inferred as for `url`) |
//! | Zed | `command: {path, args, env}` | flat `command`, `args`, `env` |
//! | Zed | `source: "custom"` | (nothing: every server here is custom) |
//! | Codex | `http_headers` | `headers` |
//! | Codex | `bearer_token_env_var = "VAR"` | `headers.Authorization: "Bearer ${VAR}"` (unset: an error at the key) |
//! | Codex | `env_http_headers = {H = "VAR"}` | `headers.H: "${VAR}"` when `VAR` is set |
//! | Codex | `env_vars = ["VAR", {name = "W"}]` | `env.VAR: "${VAR}"` when `VAR` is set (an explicit `env.VAR` wins; a `source = "remote"` one is reported, not passed) |
//! | Codex | `startup_timeout_sec`, `startup_timeout_ms`, `tool_timeout_sec` | `timeout`: the longest of them, since one timeout bounds both connecting and each call |
//! | Codex | `required` | (nothing: reported in `LoadReport::ignored`) |
//! | Codex (its files only) | `supports_parallel_tool_calls`, `scopes`, `oauth_resource`, `auth`, `name`, `oauth.callback_url` | (nothing: reported in `LoadReport::ignored`, each with why) |
//! | Codex (its files only) | `oauth.callback_port` | `oauth.redirect_port` |
//! | Codex (its files only) | `environment_id` or `experimental_environment` other than `local`, `omit_tools_from` | an error of kind `Unenforceable` at the key: the server is meant to run elsewhere, or its tools to be kept from the model, and neither happens here (accepted with `ConfigLoader::accept_unenforced`: reported instead) |
//!
//! A rewrite happens in host files only (not in RobotLab's nested entries), and the rewritten
//! entry holds none of these spellings, so it is read once more as written in ours.

use serde_json::{Map, Value};

use super::entry::{Ctx, Dialect, Entry, Flavor};
use super::fields::{join, present};
use super::{ConfigError, ConfigErrorKind, IgnoredKey};

/// An entry rewritten into our spellings, and where each rewritten key was written.
pub(crate) struct Normalized {
    value: Value,
    /// (path in the rewritten entry, path as written), most specific first.
    moved: Vec<(String, String)>,
    ignored: Vec<IgnoredKey>,
}

impl Normalized {
    /// Reads the rewritten entry with `read`: its errors are put back at the keys as written,
    /// and the keys this pass read and did not act on join the entry's ignored keys.
    pub(crate) fn parse(
        self,
        read: impl FnOnce(&Value) -> Result<Entry, ConfigError>,
    ) -> Result<Entry, ConfigError> {
        match read(&self.value) {
            Ok(Entry::Server(s, mut ignored)) => {
                ignored.extend(self.ignored);
                Ok(Entry::Server(s, ignored))
            }
            Ok(other) => Ok(other),
            Err(e) => Err(self.written(e)),
        }
    }

    /// `e` at the key as the file wrote it.
    fn written(&self, mut e: ConfigError) -> ConfigError {
        for (ours, theirs) in &self.moved {
            let Some(rest) = e.path.strip_prefix(ours.as_str()) else {
                continue;
            };
            if !(rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')) {
                continue;
            }
            let (ours_key, theirs_key) = (last_key(ours), last_key(theirs));
            // A variable the file named by a key of its host (`bearer_token_env_var`,
            // `env_vars`): no `${VAR:-default}` to write there.
            if e.kind == ConfigErrorKind::UndefinedVariable && ours_key != theirs_key {
                let var = e.found.as_deref().unwrap_or("").trim_start_matches("${");
                let var = var.trim_end_matches('}');
                e.message = format!("variable `{var}` is not set");
            }
            if ours_key != theirs_key {
                e.message = e
                    .message
                    .replace(&format!("`{ours_key}`"), &format!("`{theirs_key}`"));
            }
            e.path = format!("{theirs}{rest}");
            break;
        }
        e
    }
}

/// The last key of a key path (`url` of `mcpServers.x.url`).
fn last_key(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// The entry `v` in our spellings, or `None` when it holds none of a host's own.
///
/// # Errors
/// A host key of the wrong type or with a value that cannot be rewritten, at its path.
pub(crate) fn normalize(v: &Value, ctx: &Ctx<'_>) -> Result<Option<Normalized>, ConfigError> {
    let Value::Object(obj) = v else {
        return Ok(None);
    };
    if ctx.dialect != Dialect::Host || obj.contains_key("transport") {
        return Ok(None);
    }
    let mut n = Rewrite {
        obj: obj.clone(),
        path: ctx.path.as_str(),
        ctx,
        moved: Vec::new(),
        ignored: Vec::new(),
        changed: false,
    };
    n.urls()?;
    n.zed()?;
    n.codex_headers()?;
    n.codex_env()?;
    n.codex_timeouts()?;
    n.codex_required()?;
    // Names as plain as `auth` and `name` are Codex's only in its own files.
    if ctx.flavor == Flavor::Codex {
        n.codex_other()?;
    }
    if ctx.flavor == Flavor::Gemini {
        n.gemini()?;
    }
    if !n.changed {
        return Ok(None);
    }
    // Most specific first, so that `headers.X` is matched before `headers`.
    n.moved.sort_by_key(|m| std::cmp::Reverse(m.0.len()));
    Ok(Some(Normalized {
        value: Value::Object(n.obj),
        moved: n.moved,
        ignored: n.ignored,
    }))
}

struct Rewrite<'a> {
    obj: Map<String, Value>,
    path: &'a str,
    ctx: &'a Ctx<'a>,
    moved: Vec<(String, String)>,
    ignored: Vec<IgnoredKey>,
    changed: bool,
}

impl Rewrite<'_> {
    fn at(&self, key: &str) -> String {
        join(self.path, key)
    }

    /// Records that `ours` (a key path below the entry) was written as `theirs`.
    fn moved(&mut self, ours: &str, theirs: &str) {
        self.moved.push((self.at(ours), self.at(theirs)));
        self.changed = true;
    }

    fn string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        match present(&self.obj, key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ConfigError::wrong_type(&self.at(key), "a string", other)),
        }
    }

    /// `key` and `other` are two spellings of one setting: at most one may be given.
    fn not_both(&self, key: &str, other: &str) -> Result<(), ConfigError> {
        if self.obj.contains_key(key) && self.obj.contains_key(other) {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("both `{key}` and `{other}` given; write one of them"),
            )
            .at(self.at(key)));
        }
        Ok(())
    }

    /// Gemini's `httpUrl`, Windsurf's `serverUrl`.
    fn urls(&mut self) -> Result<(), ConfigError> {
        for (key, kind) in [("httpUrl", Some("http")), ("serverUrl", None)] {
            let Some(url) = self.obj.get(key).cloned() else {
                continue;
            };
            self.not_both(key, "url")?;
            self.obj.remove(key);
            self.obj.insert("url".into(), url);
            if let (Some(kind), false) = (kind, self.obj.contains_key("type")) {
                self.obj.insert("type".into(), Value::String(kind.into()));
            }
            self.moved("url", key);
        }
        Ok(())
    }

    /// Zed's `source` and its older `command: {path, args, env}` with `settings`.
    fn zed(&mut self) -> Result<(), ConfigError> {
        if let Some(source) = self.string("source")? {
            match source.as_str() {
                "custom" => {}
                "extension" => {
                    return Err(ConfigError::new(
                        ConfigErrorKind::NotApplicable,
                        "a Zed extension's server is started by the extension inside Zed; \
                         give its command as a custom server (`\"source\": \"custom\"`) to \
                         run it here",
                    )
                    .at(self.at("source"))
                    .found_expected("extension", "custom"))
                }
                other => {
                    return Err(ConfigError::new(
                        ConfigErrorKind::InvalidValue,
                        format!(
                            "`source` must be `custom` or `extension`, found `{}`",
                            super::echo(other, 64)
                        ),
                    )
                    .at(self.at("source")))
                }
            }
            self.obj.remove("source");
            self.changed = true;
        }
        if let Some(Value::Object(cmd)) = self.obj.get("command").cloned() {
            let cpath = self.at("command");
            for key in cmd.keys() {
                if !["path", "args", "env"].contains(&key.as_str()) {
                    return Err(ConfigError::new(
                        ConfigErrorKind::UnknownKey,
                        format!("unknown key `{key}`"),
                    )
                    .at(join(&cpath, key))
                    .found_expected(key.clone(), "one of: path, args, env")
                    .suggest(super::suggest::nearest(key, ["path", "args", "env"])));
                }
            }
            for key in ["args", "env"] {
                if cmd.contains_key(key) && self.obj.contains_key(key) {
                    return Err(ConfigError::new(
                        ConfigErrorKind::InvalidValue,
                        format!("`{key}` given both inside `command` and beside it; write one"),
                    )
                    .at(join(&cpath, key)));
                }
            }
            let path = cmd.get("path").cloned().ok_or_else(|| {
                ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "`command` written as a mapping needs its `path`",
                )
                .at(join(&cpath, "path"))
            })?;
            self.obj.insert("command".into(), path);
            self.moved("command", "command.path");
            for key in ["args", "env"] {
                if let Some(v) = cmd.get(key) {
                    self.obj.insert(key.into(), v.clone());
                    self.moved(key, &format!("command.{key}"));
                }
            }
        }
        if let Some(settings) = self.obj.remove("settings") {
            let key = self.at("settings");
            let reason = if settings.as_object().is_some_and(Map::is_empty) {
                "empty; Zed passes `settings` to an extension's server, which this is not"
            } else {
                "Zed passes `settings` to an extension's server; a server run from its command \
                 has no use for them"
            };
            self.ignored
                .push(IgnoredKey::new(self.ctx.key_name, key, reason));
            self.changed = true;
        }
        Ok(())
    }

    /// A Codex value naming an environment variable, checked.
    fn var_name(&self, value: &Value, path: &str) -> Result<String, ConfigError> {
        let Value::String(name) = value else {
            return Err(ConfigError::wrong_type(
                path,
                "a string (an environment variable's name)",
                value,
            ));
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!(
                    "`{}` is not an environment variable's name",
                    super::echo(name, 64)
                ),
            )
            .at(path)
            .found_expected(
                super::echo(name, 64).into_owned(),
                "letters, digits and `_`",
            ));
        }
        Ok(name.clone())
    }

    /// Whether the variable `name` is set (to a non-empty value); when variables are not
    /// expanded, it is taken as set, and `${name}` stays as written.
    fn is_set(&self, name: &str) -> bool {
        match self.ctx.vars {
            Some(vars) => vars
                .expand(&format!("${{{name}:-}}"), &mut Vec::new())
                .is_ok_and(|v| !v.is_empty()),
            None => true,
        }
    }

    /// Codex's `http_headers`, `env_http_headers` and `bearer_token_env_var`.
    fn codex_headers(&mut self) -> Result<(), ConfigError> {
        let codex = ["http_headers", "env_http_headers", "bearer_token_env_var"];
        if !codex.iter().any(|k| self.obj.contains_key(*k)) {
            return Ok(());
        }
        for key in codex {
            self.not_both(key, "headers")?;
        }
        let mut headers = Map::new();
        if let Some(v) = self.obj.remove("http_headers") {
            match v {
                Value::Object(m) => headers = m,
                Value::Null => {}
                other => {
                    return Err(ConfigError::wrong_type(
                        &self.at("http_headers"),
                        "a mapping of strings",
                        &other,
                    ))
                }
            }
            self.moved("headers", "http_headers");
        }
        if let Some(v) = self.obj.remove("env_http_headers") {
            let epath = self.at("env_http_headers");
            let map = match v {
                Value::Object(m) => m,
                Value::Null => Map::new(),
                other => {
                    return Err(ConfigError::wrong_type(
                        &epath,
                        "a mapping of header names to environment variable names",
                        &other,
                    ))
                }
            };
            for (header, var) in &map {
                let name = self.var_name(var, &join(&epath, header))?;
                // As Codex does: a header whose variable is not set is not sent.
                if self.is_set(&name) {
                    headers.insert(header.clone(), Value::String(format!("${{{name}}}")));
                    self.moved(
                        &format!("headers.{header}"),
                        &format!("env_http_headers.{header}"),
                    );
                }
            }
        }
        if let Some(v) = self.obj.remove("bearer_token_env_var") {
            let bpath = self.at("bearer_token_env_var");
            let name = self.var_name(&v, &bpath)?;
            // Unlike a header's, a bearer token's variable must be set: an unset one is an
            // error at this key, not a server that fails to authenticate later.
            headers.insert(
                "Authorization".into(),
                Value::String(format!("Bearer ${{{name}}}")),
            );
            self.moved("headers.Authorization", "bearer_token_env_var");
        }
        self.obj.insert("headers".into(), Value::Object(headers));
        self.changed = true;
        Ok(())
    }

    /// Codex's `env_vars`: variables passed on from our environment by name.
    fn codex_env(&mut self) -> Result<(), ConfigError> {
        let Some(v) = self.obj.remove("env_vars") else {
            return Ok(());
        };
        self.changed = true;
        let vpath = self.at("env_vars");
        let names = match v {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            other => {
                return Err(ConfigError::wrong_type(
                    &vpath,
                    "a list of environment variable names",
                    &other,
                ))
            }
        };
        let mut env = match self.obj.remove("env") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    &self.at("env"),
                    "a mapping of strings",
                    &other,
                ))
            }
        };
        for (i, item) in names.iter().enumerate() {
            let ipath = format!("{vpath}[{i}]");
            let name = match item {
                // `{ name = "X", source = "local" | "remote" }`
                Value::Object(spec) => {
                    let source = match present(spec, "source") {
                        None => "local",
                        Some(Value::String(s)) => s.as_str(),
                        Some(other) => {
                            return Err(ConfigError::wrong_type(
                                &join(&ipath, "source"),
                                "a string (local or remote)",
                                other,
                            ))
                        }
                    };
                    if source != "local" {
                        self.ignored.push(IgnoredKey::new(
                            self.ctx.key_name,
                            join(&ipath, "source"),
                            format!(
                                "Codex reads a `{}` variable from its remote executor, which is \
                                 not here: not passed on",
                                super::echo(source, 32)
                            ),
                        ));
                        continue;
                    }
                    let n = spec.get("name").unwrap_or(&Value::Null);
                    self.var_name(n, &join(&ipath, "name"))?
                }
                other => self.var_name(other, &ipath)?,
            };
            if env.contains_key(&name) || !self.is_set(&name) {
                continue;
            }
            env.insert(name.clone(), Value::String(format!("${{{name}}}")));
            self.moved(&format!("env.{name}"), &format!("env_vars[{i}]"));
        }
        self.obj.insert("env".into(), Value::Object(env));
        Ok(())
    }

    /// Codex's startup and tool timeouts, as our one timeout: the longest of them.
    fn codex_timeouts(&mut self) -> Result<(), ConfigError> {
        const KEYS: [(&str, f64); 3] = [
            ("startup_timeout_sec", 1.0),
            ("startup_timeout_ms", 0.001),
            ("tool_timeout_sec", 1.0),
        ];
        let mut longest: Option<(f64, &str)> = None;
        for (key, to_secs) in KEYS {
            let Some(v) = self.obj.remove(key) else {
                continue;
            };
            self.changed = true;
            if v.is_null() {
                continue;
            }
            self.not_both_removed(key)?;
            let secs = match v.as_f64() {
                Some(n) if n.is_finite() && n > 0.0 => n * to_secs,
                _ => {
                    return Err(ConfigError::new(
                        ConfigErrorKind::InvalidValue,
                        format!("`{key}` must be a positive number"),
                    )
                    .at(self.at(key))
                    .found_expected(super::error::json_type_name(&v), "a positive number"))
                }
            };
            // Past the longest timeout, said in the key's own unit: our `timeout`'s rule
            // (seconds below 1000, milliseconds from 1000) is not what the file wrote.
            let max_secs = super::MAX_TIMEOUT.as_secs_f64();
            if secs > max_secs {
                let (max, unit) = match key {
                    "startup_timeout_ms" => (max_secs * 1000.0, "milliseconds"),
                    _ => (max_secs, "seconds"),
                };
                return Err(ConfigError::new(
                    ConfigErrorKind::InvalidValue,
                    format!("`{key}` is at most {max} {unit} (24 h), found {v}"),
                )
                .at(self.at(key))
                .found_expected(v.to_string(), format!("at most {max}")));
            }
            if longest.is_none_or(|(l, _)| secs > l) {
                longest = Some((secs, key));
            }
        }
        if let Some((secs, key)) = longest {
            // Our `timeout` key reads 1000 and more as milliseconds; under 1 s is 1 s, the
            // floor of every timeout read from a host file.
            let ms = (secs * 1000.0).ceil().max(1000.0);
            let ms = serde_json::Number::from_f64(ms).map_or(Value::Null, Value::Number);
            self.obj.insert("timeout".into(), ms);
            self.moved("timeout", key);
        }
        Ok(())
    }

    /// Codex's `required`: whether Codex itself fails to start without this server.
    fn codex_required(&mut self) -> Result<(), ConfigError> {
        let Some(v) = self.obj.remove("required") else {
            return Ok(());
        };
        if !v.is_boolean() && !v.is_null() {
            return Err(ConfigError::wrong_type(
                &self.at("required"),
                "a boolean",
                &v,
            ));
        }
        self.ignored.push(IgnoredKey::new(
            self.ctx.key_name,
            self.at("required"),
            "Codex does not start without a required server; here each server's failure to \
             start is reported on its own, and the program decides",
        ));
        self.changed = true;
        Ok(())
    }

    /// Codex's keys that mean nothing here, each reported with why; and those that limit the
    /// server in a way this library cannot, which fail closed.
    fn codex_other(&mut self) -> Result<(), ConfigError> {
        // (key, what a value must be, why it is not used)
        const INERT: [(&str, &str, &str); 4] = [
            (
                "supports_parallel_tool_calls",
                "a boolean",
                "Codex lets its model call this server's tools at once; here the program \
                 decides how many calls it makes at a time",
            ),
            (
                "scopes",
                "a list of strings",
                "Codex's OAuth scopes for its login; here they are given as `oauth.scopes`, \
                 else taken from the server's challenge",
            ),
            (
                "oauth_resource",
                "a string",
                "Codex's OAuth resource parameter; here the resource is the server's own URL, \
                 as the MCP authorization spec asks",
            ),
            (
                "auth",
                "a string",
                "Codex's choice between its stored OAuth login and its ChatGPT session; here \
                 a server is authorized by its `headers` or its `oauth` block",
            ),
        ];
        for (key, expected, reason) in INERT {
            let Some(v) = self.obj.remove(key) else {
                continue;
            };
            let fits = match expected {
                "a boolean" => v.is_boolean(),
                "a string" => v.is_string(),
                _ => v
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_string)),
            };
            if !fits && !v.is_null() {
                return Err(ConfigError::wrong_type(&self.at(key), expected, &v));
            }
            self.ignored
                .push(IgnoredKey::new(self.ctx.key_name, self.at(key), reason));
            self.changed = true;
        }
        // A display name Codex still accepts; the server's name here is its table's.
        if self.ctx.key_name.is_some() {
            if let Some(v) = self.obj.remove("name") {
                if !v.is_string() {
                    return Err(ConfigError::wrong_type(&self.at("name"), "a string", &v));
                }
                self.ignored.push(IgnoredKey::new(
                    self.ctx.key_name,
                    self.at("name"),
                    "Codex's former display name; the server is named by its table",
                ));
                self.changed = true;
            }
        }
        // Codex's `oauth` block: `client_id` is ours too; its callback settings are spelt
        // differently.
        let codex_oauth =
            |v: &Value| v.get("callback_port").is_some() || v.get("callback_url").is_some();
        // Only a block holding them is rewritten: the rewritten entry is read again.
        if let Some(Value::Object(mut oauth)) =
            self.obj.get("oauth").filter(|v| codex_oauth(v)).cloned()
        {
            if let Some(port) = oauth.remove("callback_port") {
                if oauth.contains_key("redirect_port") {
                    return Err(ConfigError::new(
                        ConfigErrorKind::InvalidValue,
                        "both `callback_port` and `redirect_port` given; write one of them",
                    )
                    .at(self.at("oauth.callback_port")));
                }
                oauth.insert("redirect_port".into(), port);
                self.moved("oauth.redirect_port", "oauth.callback_port");
            }
            if let Some(url) = oauth.remove("callback_url") {
                if !url.is_string() {
                    return Err(ConfigError::wrong_type(
                        &self.at("oauth.callback_url"),
                        "a string",
                        &url,
                    ));
                }
                self.ignored.push(IgnoredKey::new(
                    self.ctx.key_name,
                    self.at("oauth.callback_url"),
                    "Codex's registered callback URL; here the redirect is the loopback \
                     listener's own (`oauth.redirect_port` fixes its port)",
                ));
            }
            self.obj.insert("oauth".into(), Value::Object(oauth));
            self.changed = true;
        }
        for key in ["environment_id", "experimental_environment"] {
            let Some(v) = self.obj.remove(key) else {
                continue;
            };
            self.changed = true;
            let Value::String(env) = &v else {
                return Err(ConfigError::wrong_type(&self.at(key), "a string", &v));
            };
            if env == "local" {
                self.ignored.push(IgnoredKey::new(
                    self.ctx.key_name,
                    self.at(key),
                    "`local`, where the server runs here too",
                ));
                continue;
            }
            let shown = super::echo(env, 64);
            self.unenforced(
                key,
                format!(
                    "Codex starts this server in its environment `{shown}`, not on this \
                     machine; here it would run locally, outside what that environment allows"
                ),
            )?;
        }
        if let Some(v) = self.obj.remove("omit_tools_from") {
            self.changed = true;
            let Value::Array(surfaces) = &v else {
                return Err(ConfigError::wrong_type(
                    &self.at("omit_tools_from"),
                    "a list of strings",
                    &v,
                ));
            };
            if surfaces.is_empty() {
                self.ignored.push(IgnoredKey::new(
                    self.ctx.key_name,
                    self.at("omit_tools_from"),
                    "empty: no tool is kept from the model",
                ));
            } else {
                self.unenforced(
                    "omit_tools_from",
                    "Codex keeps this server's tools from some of the model's surfaces; here \
                     every tool not excluded is offered"
                        .into(),
                )?;
            }
        }
        Ok(())
    }

    /// A key that limits the server in a way this library cannot: an error of kind
    /// [`ConfigErrorKind::Unenforceable`] at it, or, when the program accepted that risk, a
    /// reported key.
    fn unenforced(&mut self, key: &str, what: String) -> Result<(), ConfigError> {
        if !self.ctx.accept_unenforced {
            return Err(ConfigError::new(
                ConfigErrorKind::Unenforceable,
                format!(
                    "{what} (a program may accept the risk with \
                     `ConfigLoader::accept_unenforced`)"
                ),
            )
            .at(self.at(key)));
        }
        self.ignored.push(IgnoredKey::new(
            self.ctx.key_name,
            self.at(key),
            format!("not applied, and the program accepted running the server without it: {what}"),
        ));
        Ok(())
    }

    /// A Codex timeout key beside our own `timeout`.
    fn not_both_removed(&self, key: &str) -> Result<(), ConfigError> {
        if self.obj.contains_key("timeout") {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("both `{key}` and `timeout` given; write one of them"),
            )
            .at(self.at(key)));
        }
        Ok(())
    }

    /// What Gemini CLI's keys mean in its own files.
    fn gemini(&mut self) -> Result<(), ConfigError> {
        // Gemini picks the transport by key: `httpUrl` Streamable HTTP, `url` legacy SSE.
        if self.obj.contains_key("url") && !self.obj.contains_key("type") {
            self.obj.insert("type".into(), Value::String("sse".into()));
            self.changed = true;
        }
        // Gemini's `timeout` is in milliseconds; ours reads 1000 and more as milliseconds too,
        // and under 1000 as seconds, so only a value under 1 s needs rewriting.
        if let Some(Value::Number(n)) = self.obj.get("timeout") {
            if n.as_f64().is_some_and(|ms| ms > 0.0 && ms < 1000.0) {
                self.obj
                    .insert("timeout".into(), Value::Number(1000.into()));
                self.changed = true;
            }
        }
        // `$VAR` in `env` values, as Gemini expands it.
        if let Some(Value::Object(env)) = self.obj.get_mut("env") {
            for v in env.values_mut() {
                if let Value::String(s) = v {
                    if let Some(braced) = brace_bare_vars(s) {
                        *s = braced;
                        self.changed = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `text` with each bare `$NAME` written `${NAME}`, or `None` when it has none.
fn brace_bare_vars(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut changed = false;
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        // `$$` stays as written, and so does whatever follows it.
        if let Some(tail) = after.strip_prefix('$') {
            out.push_str("$$");
            rest = tail;
            continue;
        }
        let len = after
            .char_indices()
            .take_while(|(j, c)| {
                c.is_ascii_alphabetic() || *c == '_' || (*j > 0 && c.is_ascii_digit())
            })
            .count();
        if len == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str("${");
        out.push_str(&after[..len]);
        out.push('}');
        changed = true;
        rest = &after[len..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_variables_are_braced() {
        assert_eq!(brace_bare_vars("$A_1x"), Some("${A_1x}".into()));
        assert_eq!(brace_bare_vars("a $B c"), Some("a ${B} c".into()));
        assert_eq!(brace_bare_vars("${A} $1 $"), None);
        assert_eq!(brace_bare_vars("$$B"), None);
        assert_eq!(brace_bare_vars("x$B$C"), Some("x${B}${C}".into()));
    }
}
