//! Finding the config files the user's hosts read, in their places and precedence
//! ([`ConfigLoader::discover`]), each server with the file it came from and whether that file
//! must be approved before its servers start.
//!
//! | order | scope | files |
//! |---|---|---|
//! | 1 | [`Scope::Local`] | `~/.claude.json`'s `projects[<cwd>].mcpServers` (Claude Code's local scope) |
//! | 2 | [`Scope::Project`] | in the current folder, then each parent up to (not including) the home directory: `.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`, `.gemini/settings.json`, `.codex/config.toml` |
//! | 3 | [`Scope::User`] | `~/.claude.json`, Claude Desktop's file, Codex's `config.toml`, Gemini CLI's and Cursor's user files, Zed's settings, VS Code's user `mcp.json`, Windsurf's `mcp_config.json` (their places: [`locations`](super::locations)) |
//!
//! A server of a name already found is *shadowed*: it is kept in [`Discovery::shadowed`], with
//! the origin of the one that won, and never started. This follows Claude Code's local >
//! project > user; within the project files, the nearest folder wins. A project server waiting
//! for approval shadows a user server of its name all the same: it is the one the hosts would
//! run there, and running the user's instead would change what the name means by approval.
//!
//! Claude Code limits the servers of its files (`.mcp.json`, `~/.claude.json`) in its settings
//! files, which are read too: `~/.claude/settings.json` (the user's), `.claude/settings.json`
//! and `.claude/settings.local.json` in the current folder and its parents up to the home
//! directory (the project's), and `~/.claude.json`'s `projects[<cwd>]`. They apply to the
//! servers of Claude Code's files only; `S` and `T` may hold `*` and `?`, and a server's name
//! is matched as Claude Code writes it in a rule (each character other than a letter, a digit,
//! `_` or `-` as `_`).
//!
//! | key | effect |
//! |---|---|
//! | `permissions.deny`: `mcp__S`, `mcp__S__*` | the server is not started: kept in [`Discovery::denied`] with the rule and its file |
//! | `permissions.deny`: `mcp__S__T` | the tool is excluded ([`ServerPolicy::deny_tool`](super::ServerPolicy::deny_tool)), refused naming the rule and its file |
//! | `permissions.ask`: `mcp__S`, `mcp__S__T` | every call of the server's tools (or of `T`) needs approval |
//! | `permissions.allow`: `mcp__S`, `mcp__S__T` (the user's files only) | the server's tools (or `T`) run without asking, and then its other tools need approval, as in Claude Code |
//! | `disabledMcpjsonServers` | that `.mcp.json` server is not started ([`Discovery::denied`]) |
//! | `disabledMcpServers` (`~/.claude.json`'s entry for the folder, written by Claude Code's `/mcp`) | that server, of any of Claude Code's files, is not started ([`Discovery::denied`]) |
//! | `enabledMcpjsonServers`, `enableAllProjectMcpServers` | Claude Code's own approval of a project's `.mcp.json`, not ours (which is of the file's contents): listed as ignored |
//!
//! Deny comes first, then ask, then allow, as in Claude Code: an `allow` never widens what a
//! deny, an exclusion or an `ask` refuses or asks about. A project's settings file came with
//! the folder: it may deny or ask, never approve (its `allow` rules are listed as ignored,
//! approved project or not, since an approval is of the files that define servers and would
//! not cover a settings file changed since). A settings file that cannot be read holds every
//! server of Claude Code's files back, its error naming the place. Enterprise managed settings
//! are not read.
//!
//! Trust: a project file came with the folder, and when the folder was cloned it is someone
//! else's code. Its servers, stdio and remote alike, need the user's approval of the file as it
//! is now ([`DiscoveredServer::needs_trust`], decided by a [`TrustStore`]): a stdio server is a
//! command run as the user, and a remote one is sent the headers the file builds, which may
//! expand the user's `${VARS}` (a token) towards an address the file chose. Claude Code asks
//! for every project server too. Files in the home directory are the user's own: trusted.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::claude_settings::{self, Settings};
use super::locations::{home_dir_in, HostConfig, Platform};
use super::trust::{FileDigest, TrustStore};
use super::{ConfigError, ConfigErrorKind, ConfigLoader, LoadReport, RuleSource, ServerConfig};

/// The project files looked for in each folder, in their precedence. Codex reads its
/// project's `.codex/config.toml` files over the user's (the folder nearest the current one
/// first), and only in a project the user trusts: here, as every project file, once approved.
const PROJECT_FILES: [(&[&str], HostConfig); 5] = [
    (&[".mcp.json"], HostConfig::ClaudeCode),
    (&[".vscode", "mcp.json"], HostConfig::VsCode),
    (&[".cursor", "mcp.json"], HostConfig::Cursor),
    (&[".gemini", "settings.json"], HostConfig::Gemini),
    (&[".codex", "config.toml"], HostConfig::Codex),
];

/// The user files, in their precedence.
const USER_FILES: [HostConfig; 8] = [
    HostConfig::ClaudeCode,
    HostConfig::ClaudeDesktop,
    HostConfig::Codex,
    HostConfig::Gemini,
    HostConfig::Cursor,
    HostConfig::Zed,
    HostConfig::VsCode,
    HostConfig::Windsurf,
];

/// Whose a config file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Claude Code's servers for this folder, kept in the user's `~/.claude.json`: the user's.
    Local,
    /// A file found in the current folder or a parent: it came with the folder.
    Project,
    /// A file in the user's home directory: the user's own.
    User,
}

impl Scope {
    /// The scope's name, as shown: `local`, `project` or `user`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// Where a server was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Origin {
    /// The file.
    pub file: PathBuf,
    /// The host whose file it is.
    pub host: HostConfig,
    /// Whose it is.
    pub scope: Scope,
}

/// A server found by discovery.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveredServer {
    /// Its configuration.
    pub server: ServerConfig,
    /// Where it was found.
    pub origin: Origin,
    /// Whether it must not start: its file is a project file the [`TrustStore`] has no
    /// approval of with its current contents.
    pub needs_trust: bool,
}

/// A server that lost to one of the same name found earlier.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Shadowed {
    /// Its configuration (never started).
    pub server: ServerConfig,
    /// Where it was found.
    pub origin: Origin,
    /// Where the server that won was found.
    pub by: Origin,
}

/// A server the user's host settings turn off (Claude Code's `permissions.deny` of the whole
/// server, `disabledMcpjsonServers`, `disabledMcpServers`): never started.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Denied {
    /// Its configuration.
    pub server: ServerConfig,
    /// Where it was found.
    pub origin: Origin,
    /// Why, in words: "denied by `mcp__github`".
    pub reason: String,
    /// Where the rule was written (the settings file and key path).
    pub source: RuleSource,
}

/// A file discovery read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveredFile {
    /// The file, its host and scope.
    pub origin: Origin,
    /// What the loader reported, its servers taken out (they are in [`Discovery::servers`] or
    /// [`Discovery::shadowed`]): the bad entries, the ignored keys, the disabled servers.
    pub report: LoadReport,
    /// Why the file as a whole could not be read, if it could not.
    pub error: Option<ConfigError>,
    /// For a project file: the digest of the bytes loaded, read once (what an approval
    /// records); `None` when it could not be read.
    pub digest: Option<FileDigest>,
    /// Whether its servers may start: a user or local file, or a project file approved with
    /// its current contents.
    pub trusted: bool,
    /// The names of the servers it defines (those shadowed included).
    pub server_names: Vec<String>,
}

/// What [`ConfigLoader::discover`] found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Discovery {
    /// Each server, under the first name found, in precedence order.
    pub servers: Vec<DiscoveredServer>,
    /// The servers that lost to one of the same name.
    pub shadowed: Vec<Shadowed>,
    /// The servers the user's host settings turn off, each with the rule.
    pub denied: Vec<Denied>,
    /// Each file read, in precedence order.
    pub files: Vec<DiscoveredFile>,
}

impl Discovery {
    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&DiscoveredServer> {
        self.servers.iter().find(|s| s.server.name() == name)
    }

    /// The project files whose servers wait for the user's approval.
    pub fn untrusted_files(&self) -> impl Iterator<Item = &DiscoveredFile> {
        self.files
            .iter()
            .filter(|f| !f.trusted && !f.server_names.is_empty())
    }

    /// The servers that may start, as one [`LoadReport`]: each server that needs no trust;
    /// for each that does, an error of kind [`ConfigErrorKind::NotTrusted`] naming it and its
    /// file; for each [denied](Discovery::denied) one, an error of kind
    /// [`ConfigErrorKind::Denied`] naming the rule and its file; and every file's bad entries, ignored keys and disabled servers. A file that could
    /// not be read at all defines no server: its error stays in
    /// [`files`](DiscoveredFile::error), not here, so that one broken file of a host the
    /// program does not use leaves the others usable.
    pub fn report(&self) -> LoadReport {
        let mut report = LoadReport::default();
        for s in &self.servers {
            if s.needs_trust {
                let mut e = ConfigError::new(
                    ConfigErrorKind::NotTrusted,
                    format!(
                        "not started: the project file {} is not approved (or changed since it \
                         was)",
                        s.origin.file.display()
                    ),
                )
                .for_server(Some(s.server.name()));
                e.file = Some(s.origin.file.clone());
                report.errors.push(e);
            } else {
                report.servers.push(s.server.clone());
            }
        }
        for d in &self.denied {
            let mut e = ConfigError::new(
                ConfigErrorKind::Denied,
                format!("not started: {} ({})", d.reason, d.source),
            )
            .for_server(Some(d.server.name()));
            e.file = d.source.file.clone();
            report.errors.push(e);
        }
        for f in &self.files {
            report.errors.extend(f.report.errors.iter().cloned());
            report.ignored.extend(f.report.ignored.iter().cloned());
            report
                .skipped_disabled
                .extend(f.report.skipped_disabled.iter().cloned());
            if report.degradation.is_none() {
                report.degradation = f.report.degradation.clone();
            }
        }
        report
    }
}

impl ConfigLoader {
    /// The servers of every config file the user's hosts read from `cwd` (see the
    /// [module table](crate::config::discover)), with no project file approved: every project
    /// server [`needs_trust`](DiscoveredServer::needs_trust). See
    /// [`discover_with`](Self::discover_with).
    ///
    /// # Errors
    /// As [`discover_with`](Self::discover_with).
    pub fn discover(&self, cwd: impl AsRef<Path>) -> Result<Discovery, ConfigError> {
        self.discover_with(cwd, &TrustStore::new())
    }

    /// The servers of every config file the user's hosts read from `cwd`, the project files
    /// approved in `trust` trusted. The home directory and the hosts' variables (`APPDATA`,
    /// `XDG_CONFIG_HOME`, `CODEX_HOME`, ...) come from the loader's environment
    /// ([`with_env`](Self::with_env)), else the process's.
    ///
    /// A file that does not exist is skipped; one that cannot be read or parsed is kept with
    /// its [`error`](DiscoveredFile::error), and the other files still load. A Gemini CLI or
    /// Zed settings file, or a `~/.claude.json`, without MCP servers is not an error.
    ///
    /// ```no_run
    /// use mcp_blocking::config::TrustStore;
    /// use mcp_blocking::ConfigLoader;
    /// let trust = TrustStore::open("/home/me/.config/myapp/trust.json").unwrap();
    /// let found = ConfigLoader::new().discover_with(std::env::current_dir().unwrap(), &trust)?;
    /// for s in &found.servers {
    ///     println!("{} from {} ({}){}", s.server.name(), s.origin.file.display(),
    ///         s.origin.scope.name(), if s.needs_trust { ": needs approval" } else { "" });
    /// }
    /// let startable = found.report(); // the servers that may start, and why the others may not
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigErrorKind::Io`] when `cwd` cannot be resolved.
    pub fn discover_with(
        &self,
        cwd: impl AsRef<Path>,
        trust: &TrustStore,
    ) -> Result<Discovery, ConfigError> {
        let platform = Platform::current();
        let env = |name: &str| match &self.env {
            Some(map) => map.get(name).map(Into::into),
            None => std::env::var_os(name),
        };
        let cwd = std::fs::canonicalize(cwd.as_ref()).map_err(|e| {
            ConfigError::new(
                ConfigErrorKind::Io,
                format!("cannot resolve the folder {}: {e}", cwd.as_ref().display()),
            )
        })?;
        let home = home_dir_in(platform, env).map(|h| std::fs::canonicalize(&h).unwrap_or(h));

        let mut found = Found::default();
        // `~/.claude.json` holds the local scope, the user's servers and Claude Code's choices
        // about the folder's: read once, for all three (it can be tens of megabytes).
        let claude_json = HostConfig::ClaudeCode
            .path_in(platform, env)
            .filter(|p| p.is_file());
        if let Some(path) = &claude_json {
            let doc = super::claude_json::read(path, Some(&cwd), &self.limits);
            found.claude_json = Some((path.clone(), doc));
            self.local_servers(path, &cwd, &mut found);
        }
        for dir in cwd.ancestors() {
            // Files in the home directory are the user's, read below as such.
            if home.as_deref() == Some(dir) {
                break;
            }
            for (parts, host) in PROJECT_FILES {
                let path = parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part));
                if path.is_file() {
                    self.read_file(&path, host, Scope::Project, trust, &mut found);
                }
            }
        }
        for host in USER_FILES {
            if let Some(path) = host.path_in(platform, env) {
                if path.is_file() {
                    self.read_file(&path, host, Scope::User, trust, &mut found);
                }
            }
        }
        let settings = self.claude_settings(&cwd, home.as_deref(), &mut found);
        found.apply_claude_settings(settings);
        Ok(found.discovery)
    }

    /// Claude Code's settings files from `cwd` (the user's, the project's, and `~/.claude.json`'s
    /// entry for the folder), each listed among the files read; `Err` with the first that could
    /// not be read, so that nothing it may deny starts.
    fn claude_settings(
        &self,
        cwd: &Path,
        home: Option<&Path>,
        found: &mut Found,
    ) -> Result<Vec<Settings>, PathBuf> {
        let mut read: Vec<(PathBuf, Scope, Result<Option<Settings>, ConfigError>)> = Vec::new();
        for dir in cwd.ancestors() {
            if home == Some(dir) {
                break;
            }
            for name in ["settings.local.json", "settings.json"] {
                let path = dir.join(".claude").join(name);
                let r = claude_settings::read(&path, Scope::Project, &self.limits);
                read.push((path, Scope::Project, r));
            }
        }
        if let Some(home) = home {
            let path = home.join(".claude").join("settings.json");
            let r = claude_settings::read(&path, Scope::User, &self.limits);
            read.push((path, Scope::User, r));
        }
        if let Some((path, doc)) = &found.claude_json {
            let r = claude_settings::read_claude_json(path, doc, cwd);
            read.push((path.clone(), Scope::Local, r));
        }
        let mut settings = Vec::new();
        let mut failed = None;
        for (path, scope, r) in read {
            let (report, error) = match r {
                Ok(None) => continue,
                Ok(Some(s)) => {
                    let report = LoadReport {
                        ignored: s.ignored.clone(),
                        ..LoadReport::default()
                    };
                    settings.push(s);
                    (report, None)
                }
                Err(e) => {
                    failed.get_or_insert_with(|| path.clone());
                    (LoadReport::default(), Some(e))
                }
            };
            // `~/.claude.json` is listed already, as the file of the user's servers.
            if scope == Scope::Local {
                if let Some(f) = found
                    .discovery
                    .files
                    .iter_mut()
                    .find(|f| f.origin.file == path)
                {
                    f.report.ignored.extend(report.ignored);
                    if f.error.is_none() {
                        f.error = error;
                    }
                    continue;
                }
            }
            found.discovery.files.push(DiscoveredFile {
                origin: Origin {
                    file: path,
                    host: HostConfig::ClaudeCode,
                    scope,
                },
                report,
                error,
                digest: None,
                trusted: true,
                server_names: Vec::new(),
            });
        }
        match failed {
            Some(path) => Err(path),
            None => Ok(settings),
        }
    }

    /// Loads one file into `found`.
    fn read_file(
        &self,
        path: &Path,
        host: HostConfig,
        scope: Scope,
        trust: &TrustStore,
        found: &mut Found,
    ) {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if found.seen.contains(&canonical) {
            return;
        }
        found.seen.push(canonical.clone());
        let origin = Origin {
            file: path.to_path_buf(),
            host,
            scope,
        };
        // A project file's approval is of the very bytes loaded: read once, hashed, and loaded
        // from that text (a file changed meanwhile is judged by what was read).
        let text =
            (scope == Scope::Project).then(|| self.limits.read(path, "file", ConfigErrorKind::Io));
        let digest = match &text {
            Some(Ok(text)) => Some(FileDigest::of_bytes(canonical, text.as_bytes())),
            _ => None,
        };
        let trusted =
            scope != Scope::Project || digest.as_ref().is_some_and(|d| trust.is_trusted(d));
        let mut loader = self.for_file(trusted);
        // The local scope of `~/.claude.json` was read first, as its own.
        loader.user_scope_only = host == HostConfig::ClaudeCode && scope == Scope::User;
        let loaded = match (&text, &found.claude_json) {
            (Some(Ok(text)), _) => loader.load_text(path, text, host.flavor()),
            (Some(Err(e)), _) => Err(e.clone().in_file(Some(path))),
            // Read already, for the local scope.
            (None, Some((read, doc))) if loader.user_scope_only && read == path => match doc {
                Ok(doc) => loader.load_parsed(path, doc, host.flavor()),
                Err(e) => Err(e.clone().in_file(Some(path))),
            },
            (None, _) => loader.load_flavored(path, host.flavor()),
        };
        match loaded {
            Ok(report) => found.add(origin, report, None, digest, trusted),
            // Settings files hold much else, and MCP servers only when the user added some.
            Err(e)
                if e.kind == ConfigErrorKind::UnknownFormat
                    && matches!(
                        host,
                        HostConfig::Gemini | HostConfig::Zed | HostConfig::ClaudeCode
                    )
                    && !(scope == Scope::Project && host == HostConfig::ClaudeCode) =>
            {
                found.add(origin, LoadReport::default(), None, digest, trusted);
            }
            Err(e) => found.add(origin, LoadReport::default(), Some(e), digest, trusted),
        }
    }

    /// The loader of a file: a project file not approved runs none of its commands while it
    /// is read (a `headersHelper`), whatever the program allowed.
    fn for_file(&self, approved: bool) -> ConfigLoader {
        let mut loader = self.clone();
        if !approved {
            loader.header_commands_held = loader.allow_header_commands;
            loader.allow_header_commands = false;
        }
        loader
    }

    /// Claude Code's local scope: the servers `~/.claude.json` keeps for the folder `cwd`
    /// (`projects[<cwd>].mcpServers`). A file that cannot be read here is left to the user
    /// file's own reading, which reports it.
    fn local_servers(&self, path: &Path, cwd: &Path, found: &mut Found) {
        let Some((_, Ok(doc))) = &found.claude_json else {
            return;
        };
        // Claude Code keys a project by its folder's path as it writes it (on Windows with `/`,
        // and without the `\\?\` prefix that resolving a path adds): matched as the user
        // file's own reading matches it.
        let Some((key, servers)) = doc
            .get("projects")
            .and_then(Value::as_object)
            .and_then(|p| super::documents::project_entry(p, cwd))
            .and_then(|(key, p)| Some((key, p.get("mcpServers")?)))
            .filter(|(_, s)| s.as_object().is_some_and(|m| !m.is_empty()))
        else {
            return;
        };
        let origin = Origin {
            file: path.to_path_buf(),
            host: HostConfig::ClaudeCode,
            scope: Scope::Local,
        };
        let prefix = format!("projects.{key}.");
        let base_dir = path.parent();
        let (report, error) = match self.load_doc(
            &json!({ "mcpServers": servers }),
            base_dir,
            super::fields::Flavor::ClaudeCode,
            false,
        ) {
            Ok(mut r) => {
                r.stamp_file(path);
                for e in &mut r.errors {
                    e.path.insert_str(0, &prefix);
                }
                for k in &mut r.ignored {
                    k.key.insert_str(0, &prefix);
                }
                (r, None)
            }
            Err(mut e) => {
                e.file = Some(path.to_path_buf());
                (LoadReport::default(), Some(e))
            }
        };
        found.add(origin, report, error, None, true);
    }
}

/// Discovery as it goes: what was found, and the files already read.
#[derive(Default)]
struct Found {
    discovery: Discovery,
    seen: Vec<PathBuf>,
    /// `~/.claude.json` and its document, once read.
    claude_json: Option<(PathBuf, Result<Value, ConfigError>)>,
}

impl Found {
    /// Claude Code's `settings` on the servers of its files: the denied ones taken out, the
    /// others' policies narrowed (or their approvals widened by the user's own settings).
    /// When a settings file could not be read (`Err`, naming it), every such server is held
    /// back.
    fn apply_claude_settings(&mut self, settings: Result<Vec<Settings>, PathBuf>) {
        let servers = std::mem::take(&mut self.discovery.servers);
        for mut s in servers {
            if s.origin.host != HostConfig::ClaudeCode {
                self.discovery.servers.push(s);
                continue;
            }
            let settings = match &settings {
                Ok(settings) => settings,
                Err(file) => {
                    let reason = "held back: a Claude Code settings file that may deny it \
                                  cannot be read (see its error)"
                        .to_owned();
                    let source = RuleSource {
                        file: Some(file.clone()),
                        key: String::new(),
                    };
                    self.deny(s, reason, source);
                    continue;
                }
            };
            let mcpjson = s.origin.scope == Scope::Project;
            let policy = std::mem::take(&mut s.server.policy);
            match claude_settings::apply(settings, s.server.name(), mcpjson, policy) {
                Ok(policy) => {
                    s.server.policy = policy;
                    self.discovery.servers.push(s);
                }
                Err(refused) => self.deny(s, refused.reason, refused.source),
            }
        }
    }

    fn deny(&mut self, s: DiscoveredServer, reason: String, source: RuleSource) {
        log::info!(
            "config: server `{}` of {} is not started: {reason}",
            s.server.name(),
            s.origin.file.display()
        );
        self.discovery.denied.push(Denied {
            server: s.server,
            origin: s.origin,
            reason,
            source,
        });
    }

    fn add(
        &mut self,
        origin: Origin,
        mut report: LoadReport,
        error: Option<ConfigError>,
        digest: Option<FileDigest>,
        trusted: bool,
    ) {
        let servers = std::mem::take(&mut report.servers);
        let server_names = servers.iter().map(|s| s.name().to_owned()).collect();
        for server in servers {
            match self.discovery.server(server.name()) {
                Some(winner) => {
                    log::debug!(
                        "config: server `{}` of {} is shadowed by the one of {}",
                        server.name(),
                        origin.file.display(),
                        winner.origin.file.display()
                    );
                    let by = winner.origin.clone();
                    self.discovery.shadowed.push(Shadowed {
                        server,
                        origin: origin.clone(),
                        by,
                    });
                }
                None => self.discovery.servers.push(DiscoveredServer {
                    server,
                    origin: origin.clone(),
                    needs_trust: !trusted,
                }),
            }
        }
        self.discovery.files.push(DiscoveredFile {
            origin,
            report,
            error,
            digest,
            trusted,
            server_names,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_file_not_approved_runs_no_header_command_while_it_is_read() {
        let loader = ConfigLoader::new().allow_header_commands(true);
        assert!(loader.for_file(true).allow_header_commands);
        assert!(!loader.for_file(false).allow_header_commands);
        // Held, not refused: the ignored key says it runs once the file is approved.
        assert!(loader.for_file(false).header_commands_held);
        assert!(!loader.for_file(true).header_commands_held);
        let denied = ConfigLoader::new();
        assert!(!denied.for_file(true).allow_header_commands);
        assert!(!denied.for_file(false).header_commands_held);
    }
}
