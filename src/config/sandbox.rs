//! What a sandboxed stdio server may reach: [`Sandbox`], set with
//! [`ServerConfig::with_sandbox`](super::ServerConfig::with_sandbox) or read from a file's
//! `sandboxEnabled` and `sandbox` keys (VS Code's, see [`SandboxSettings`]).
//!
//! This module holds the rules and checks them; `transport/stdio/sandbox/` applies them when
//! the server is spawned (Landlock, rlimits, `no_new_privs`, and a loopback proxy for the
//! listed domains).

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::{ConfigError, ConfigErrorKind, RuleSource, SandboxSettings};

/// How many paths and domain rules one sandbox may list, each (a file is untrusted input).
pub const MAX_SANDBOX_RULES: usize = 256;

/// The folders every sandboxed server may read (and run programs from) unless
/// [`Sandbox::without_default_paths`] is set: the system's programs and libraries, and the
/// parts of `/etc` that the C library, TLS and name resolution read. Those that do not exist
/// are skipped. Listed in the README's sandbox section.
pub const SYSTEM_READ_PATHS: [&str; 24] = [
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys/fs/cgroup",
    "/sys/devices/system/cpu",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/passwd",
];

/// Devices every sandboxed server may read and write (unless
/// [`Sandbox::without_default_paths`]): the null device, randomness and the zero device.
pub const DEVICE_PATHS: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// What a sandboxed server may reach on the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Network {
    /// No TCP connection out and no listening socket (the default).
    #[default]
    None,
    /// Only through a loopback HTTP proxy that the client runs for the server, which admits the
    /// hosts `allow` matches and `deny` does not. The server is told of it by `HTTP_PROXY`,
    /// `HTTPS_PROXY` and `ALL_PROXY`; Landlock lets it connect to that port alone.
    Domains {
        /// The hosts admitted.
        allow: Vec<DomainRule>,
        /// Hosts refused even when `allow` matches them (VS Code's `deniedDomains`).
        deny: Vec<DomainRule>,
    },
}

/// A host name (or `*.` and a domain, for its subdomains), and a port or, without one, the
/// web's ports 80 and 443.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainRule {
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl DomainRule {
    /// Reads `host`, `host:port`, `*.domain`, `*.domain:port`, an IPv4 address or a bracketed
    /// IPv6 one (`[::1]:8080`). Host names are compared without case and without a trailing dot.
    ///
    /// ```
    /// use mcp_blocking::config::DomainRule;
    /// let r = DomainRule::parse("*.github.com").unwrap();
    /// assert!(r.matches("api.github.com", 443));
    /// assert!(!r.matches("github.com", 443));
    /// assert!(!r.matches("api.github.com", 22));
    /// assert!(DomainRule::parse("localhost:8080").unwrap().matches("LOCALHOST", 8080));
    /// assert!(DomainRule::parse("exa mple.com").is_err());
    /// ```
    ///
    /// # Errors
    /// A message saying what is wrong with `s`.
    pub fn parse(s: &str) -> Result<DomainRule, String> {
        let t = s.trim();
        if t.is_empty() || t.len() > 260 {
            return Err(format!("`{s}` is not a host name"));
        }
        let (host, port) = split_host_port(t)?;
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let ok_name = !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        let ok_v6 = host.starts_with('[')
            && host.ends_with(']')
            && host[1..host.len() - 1]
                .parse::<std::net::Ipv6Addr>()
                .is_ok();
        if !(ok_name || ok_v6) || (wildcard && ok_v6) {
            return Err(format!(
                "`{s}` is not a host name, `*.` and a domain, or an IP address (with an optional `:PORT`)"
            ));
        }
        Ok(DomainRule {
            host,
            wildcard,
            port,
        })
    }

    /// Whether a connection to `host` (any case, a trailing dot allowed; IPv6 in brackets) on
    /// `port` is one this rule names.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => port == 80 || port == 443,
        };
        if !port_ok {
            return false;
        }
        let host = host.trim_end_matches('.');
        if self.wildcard {
            host.len() > self.host.len() + 1
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
                && host[host.len() - self.host.len()..].eq_ignore_ascii_case(&self.host)
        } else {
            host.eq_ignore_ascii_case(&self.host)
        }
    }
}

impl fmt::Display for DomainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

fn split_host_port(t: &str) -> Result<(&str, Option<u16>), String> {
    let bad_port = || format!("`{t}` has a port that is not a number from 1 to 65535");
    let parse_port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(bad_port)
    };
    if t.starts_with('[') {
        return match t.find(']') {
            Some(end) if end + 1 == t.len() => Ok((t, None)),
            Some(end) => match t[end + 1..].strip_prefix(':') {
                Some(p) => Ok((&t[..=end], Some(parse_port(p)?))),
                None => Err(format!("`{t}` is not a host name")),
            },
            None => Err(format!("`{t}` is not a host name")),
        };
    }
    match t.rsplit_once(':') {
        Some((h, p)) => Ok((h, Some(parse_port(p)?))),
        None => Ok((t, None)),
    }
}

/// Resource limits of a sandboxed server, each applied as an rlimit (soft and hard) before it
/// starts; `None` leaves the limit as the client's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SandboxLimits {
    /// Address space, in bytes (`RLIMIT_AS`).
    pub address_space: Option<u64>,
    /// Open files (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Processes (`RLIMIT_NPROC`). Linux counts every process of the user, not only the
    /// server's, and does not apply it to root: a client running as root cannot enforce it.
    pub processes: Option<u64>,
    /// CPU time, whole seconds (`RLIMIT_CPU`; the server is killed when it passes).
    pub cpu_time: Option<Duration>,
}

/// The confinement of a stdio server, applied as it is spawned (Linux: Landlock, rlimits,
/// `no_new_privs`; see the README's sandbox section).
///
/// By default the server may read its working directory (unless that is the root, the home
/// folder, the system's temporary folder or a folder holding one: name it with
/// [`allow_read`](Sandbox::allow_read) then), its
/// command's install folder and the system folders ([`SYSTEM_READ_PATHS`]), use the devices of [`DEVICE_PATHS`], write
/// nowhere, and reach no network. It cannot signal or reach through abstract Unix sockets any
/// process outside its sandbox. A sandbox that cannot be applied in full fails the connect
/// with [`ConfigErrorKind::Unenforceable`] naming what is missing, unless
/// [`best_effort`](Sandbox::best_effort) was asked for.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::Sandbox;
/// let config = ServerConfig::stdio("fs", "mcp-server-filesystem")
///     .with_args(["/srv/data"])
///     .with_sandbox(
///         Sandbox::new()
///             .allow_write("/srv/data")
///             .allow_domain("registry.npmjs.org")
///             .max_processes(64),
///     );
/// assert!(config.sandbox().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sandbox {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    deny_write: Vec<PathBuf>,
    network: Network,
    limits: SandboxLimits,
    best_effort: bool,
    no_default_paths: bool,
    source: RuleSource,
    /// The first bad value given to a setter: (key, message), reported by `check`.
    invalid: Option<(String, String)>,
}

impl Sandbox {
    /// The default confinement: the default readable paths, no writes, no network, no limits.
    pub fn new() -> Self {
        Self::default()
    }

    fn invalid(mut self, key: &str, message: String) -> Self {
        self.invalid.get_or_insert((key.to_owned(), message));
        self
    }

    fn push_path(
        mut self,
        key: &str,
        which: fn(&mut Self) -> &mut Vec<PathBuf>,
        p: PathBuf,
    ) -> Self {
        if which(&mut self).len() >= MAX_SANDBOX_RULES {
            return self.invalid(key, format!("more than {MAX_SANDBOX_RULES} paths"));
        }
        which(&mut self).push(p);
        self
    }

    /// The server may also read `path` (a file or a folder and all it holds). `~/` is the home
    /// folder; a relative path is taken from the server's working directory.
    pub fn allow_read(self, path: impl Into<PathBuf>) -> Self {
        self.push_path("filesystem.allowRead", |s| &mut s.read, path.into())
    }

    /// The server may read, write, create and remove files in `path`.
    pub fn allow_write(self, path: impl Into<PathBuf>) -> Self {
        self.push_path("filesystem.allowWrite", |s| &mut s.write, path.into())
    }

    /// The server may not read `path`. Landlock grants and never takes back: a path inside one
    /// the server may read is a [`ConfigErrorKind::Unenforceable`] error, not a silent widening;
    /// elsewhere it is already unreadable and the rule is a check.
    pub fn deny_read(self, path: impl Into<PathBuf>) -> Self {
        self.push_path("filesystem.denyRead", |s| &mut s.deny_read, path.into())
    }

    /// The server may not write `path`: as [`deny_read`](Self::deny_read), for writes.
    pub fn deny_write(self, path: impl Into<PathBuf>) -> Self {
        self.push_path("filesystem.denyWrite", |s| &mut s.deny_write, path.into())
    }

    /// No network at all (the default; undoes [`allow_domain`](Self::allow_domain)).
    pub fn no_network(mut self) -> Self {
        self.network = Network::None;
        self
    }

    fn push_domain(mut self, key: &str, rule: &str, deny: bool) -> Self {
        let rule = match DomainRule::parse(rule) {
            Ok(r) => r,
            Err(e) => return self.invalid(key, e),
        };
        if let Network::None = self.network {
            self.network = Network::Domains {
                allow: Vec::new(),
                deny: Vec::new(),
            };
        }
        if let Network::Domains {
            allow,
            deny: denied,
        } = &mut self.network
        {
            let list = if deny { denied } else { allow };
            if list.len() >= MAX_SANDBOX_RULES {
                return self.invalid(key, format!("more than {MAX_SANDBOX_RULES} domains"));
            }
            list.push(rule);
        }
        self
    }

    /// The server may reach `host[:port]` (or `*.domain`) through the client's proxy (see
    /// [`DomainRule::parse`]); without a port, ports 80 and 443. A bad rule is an error at
    /// [`validate`](super::ServerConfig::validate).
    pub fn allow_domain(self, rule: &str) -> Self {
        self.push_domain("network.allowedDomains", rule, false)
    }

    /// The proxy refuses `host[:port]` even when an allowed rule matches it.
    pub fn deny_domain(self, rule: &str) -> Self {
        self.push_domain("network.deniedDomains", rule, true)
    }

    /// Caps the server's address space at `bytes` (`RLIMIT_AS`).
    pub fn max_address_space(mut self, bytes: u64) -> Self {
        self.limits.address_space = Some(bytes);
        self
    }

    /// Caps the server's open files at `n` (`RLIMIT_NOFILE`).
    pub fn max_open_files(mut self, n: u64) -> Self {
        self.limits.open_files = Some(n);
        self
    }

    /// Caps the processes of the server's user at `n` (`RLIMIT_NPROC`; see
    /// [`SandboxLimits::processes`]).
    pub fn max_processes(mut self, n: u64) -> Self {
        self.limits.processes = Some(n);
        self
    }

    /// Caps the server's CPU time (`RLIMIT_CPU`, rounded up to whole seconds).
    pub fn max_cpu_time(mut self, time: Duration) -> Self {
        self.limits.cpu_time = Some(time);
        self
    }

    /// Applies what this system can and starts the server anyway: what was not applied is
    /// logged (warn) and reported by [`Client::sandbox_report`](crate::Client::sandbox_report).
    pub fn best_effort(mut self) -> Self {
        self.best_effort = true;
        self
    }

    /// Leaves out the default readable paths (the working directory, the command's folder,
    /// [`SYSTEM_READ_PATHS`] and [`DEVICE_PATHS`]): only the paths given are reachable.
    pub fn without_default_paths(mut self) -> Self {
        self.no_default_paths = true;
        self
    }

    /// Where this sandbox was asked for (a file's key), for messages.
    pub fn with_source(mut self, source: RuleSource) -> Self {
        self.source = source;
        self
    }

    /// The paths given as readable.
    pub fn read_paths(&self) -> &[PathBuf] {
        &self.read
    }

    /// The paths given as writable.
    pub fn write_paths(&self) -> &[PathBuf] {
        &self.write
    }

    /// The paths that must stay unreadable.
    pub fn denied_read_paths(&self) -> &[PathBuf] {
        &self.deny_read
    }

    /// The paths that must stay unwritable.
    pub fn denied_write_paths(&self) -> &[PathBuf] {
        &self.deny_write
    }

    /// What the server may reach on the network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The resource limits.
    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    /// Whether the server starts even when part of the sandbox cannot be applied.
    pub fn is_best_effort(&self) -> bool {
        self.best_effort
    }

    /// Whether the default readable paths are granted.
    pub fn has_default_paths(&self) -> bool {
        !self.no_default_paths
    }

    /// Where the sandbox was asked for.
    pub fn source(&self) -> &RuleSource {
        &self.source
    }

    /// The sandbox a file's `sandboxEnabled: true` asked for, with its `sandbox` block.
    ///
    /// VS Code lets a sandboxed server read every file but those of `denyRead`; here reads are
    /// as narrow as [`Sandbox::new`] plus `filesystem.allowRead` and the writable paths, so
    /// that a `denyRead` is kept by construction (one inside a readable path is an error).
    pub fn from_settings(s: &SandboxSettings) -> Sandbox {
        let mut out = Sandbox::new().with_source(s.source.clone());
        for p in &s.allow_read {
            out = out.allow_read(p);
        }
        for p in &s.allow_write {
            out = out.allow_write(p);
        }
        for p in &s.deny_read {
            out = out.deny_read(p);
        }
        for p in &s.deny_write {
            out = out.deny_write(p);
        }
        for d in &s.allowed_domains {
            out = out.allow_domain(d);
        }
        for d in &s.denied_domains {
            out = out.deny_domain(d);
        }
        out.limits = s.limits;
        out.best_effort = s.best_effort;
        out
    }

    /// A one-line description, for `mcpb servers`.
    ///
    /// ```
    /// use mcp_blocking::config::Sandbox;
    /// let s = Sandbox::new().allow_write("/data").max_processes(8);
    /// assert_eq!(s.summary(), "reads: defaults; writes: /data; network: none; processes ≤ 8");
    /// ```
    pub fn summary(&self) -> String {
        let list = |v: &[PathBuf]| {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut reads = Vec::new();
        if !self.no_default_paths {
            reads.push("defaults".to_owned());
        }
        if !self.read.is_empty() {
            reads.push(list(&self.read));
        }
        let mut parts = vec![format!(
            "reads: {}",
            if reads.is_empty() {
                "none".to_owned()
            } else {
                reads.join(", ")
            }
        )];
        if !self.write.is_empty() {
            parts.push(format!("writes: {}", list(&self.write)));
        }
        parts.push(match &self.network {
            Network::None => "network: none".to_owned(),
            Network::Domains { allow, deny } => {
                let mut s = format!(
                    "network: {}",
                    allow
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                if !deny.is_empty() {
                    let d: Vec<String> = deny.iter().map(ToString::to_string).collect();
                    s.push_str(&format!(" (not {})", d.join(", ")));
                }
                s
            }
        });
        let l = &self.limits;
        if let Some(b) = l.address_space {
            parts.push(format!("address space ≤ {b} bytes"));
        }
        if let Some(n) = l.open_files {
            parts.push(format!("open files ≤ {n}"));
        }
        if let Some(n) = l.processes {
            parts.push(format!("processes ≤ {n}"));
        }
        if let Some(t) = l.cpu_time {
            parts.push(format!("CPU ≤ {} s", cpu_seconds(t)));
        }
        if self.best_effort {
            parts.push("best effort".to_owned());
        }
        parts.join("; ")
    }

    /// The key of `sub` under where this sandbox was written (`sandbox.` in code).
    pub(crate) fn key(&self, sub: &str) -> String {
        let base = self.source.key.strip_suffix("sandboxEnabled");
        match base {
            Some(b) => format!("{b}sandbox.{sub}"),
            None => format!("sandbox.{sub}"),
        }
    }

    /// An error at `sub`, in this sandbox's file.
    pub(crate) fn error(&self, kind: ConfigErrorKind, sub: &str, message: String) -> ConfigError {
        let mut e = ConfigError::new(kind, message).at(self.key(sub));
        e.file = self.source.file.clone();
        e
    }

    /// Checks the rules as written: a bad value given to a setter, an empty path, a denied
    /// path inside a granted one (Landlock cannot take a right back), a zero limit.
    /// `cwd` is the server's working directory, for relative paths.
    pub(crate) fn check(&self, cwd: Option<&Path>) -> Result<(), ConfigError> {
        if let Some((key, message)) = &self.invalid {
            return Err(self.error(ConfigErrorKind::InvalidValue, key, message.clone()));
        }
        for (key, list) in [
            ("filesystem.allowRead", &self.read),
            ("filesystem.allowWrite", &self.write),
            ("filesystem.denyRead", &self.deny_read),
            ("filesystem.denyWrite", &self.deny_write),
        ] {
            for p in list {
                let s = p.as_os_str();
                if s.is_empty() || s.as_encoded_bytes().contains(&0) {
                    return Err(self.error(
                        ConfigErrorKind::InvalidValue,
                        key,
                        "a path is empty or holds a NUL byte".to_owned(),
                    ));
                }
            }
        }
        let l = &self.limits;
        for (key, v) in [
            ("limits.addressSpace", l.address_space),
            ("limits.openFiles", l.open_files),
            ("limits.processes", l.processes),
            ("limits.cpuSeconds", l.cpu_time.map(cpu_seconds)),
        ] {
            if v == Some(0) {
                return Err(self.error(
                    ConfigErrorKind::InvalidValue,
                    key,
                    "a limit of 0 leaves the server nothing to start with".to_owned(),
                ));
            }
        }
        self.check_denied(&self.granted(cwd, None, false), cwd)
    }

    /// Refuses a denied path inside one of `granted` (each with whether it is writable): a
    /// `denyRead` inside any granted path, a `denyWrite` inside a writable one. Paths are
    /// compared as written and, where they exist, with their links resolved (Landlock grants
    /// what a path resolves to).
    pub(crate) fn check_denied(
        &self,
        granted: &[(PathBuf, bool)],
        cwd: Option<&Path>,
    ) -> Result<(), ConfigError> {
        let forms = |p: &Path| -> Vec<PathBuf> {
            let mut v = vec![p.to_path_buf()];
            if let Ok(real) = std::fs::canonicalize(p) {
                if real != p {
                    v.push(real);
                }
            }
            v
        };
        for (key, denied, writes_only, what) in [
            ("filesystem.denyRead", &self.deny_read, false, "read"),
            ("filesystem.denyWrite", &self.deny_write, true, "write"),
        ] {
            for d in denied {
                let d = absolute(d, cwd);
                let d_forms = forms(&d);
                for (g, writable) in granted {
                    if writes_only && !writable {
                        continue;
                    }
                    let inside = forms(g)
                        .iter()
                        .any(|g| d_forms.iter().any(|d| d.starts_with(g)));
                    if inside {
                        return Err(self.error(
                            ConfigErrorKind::Unenforceable,
                            key,
                            format!(
                                "`{}` lies inside `{}`, which the server may {what}: Landlock \
                                 grants a folder with all it holds and cannot take a path inside \
                                 it back (name narrower folders to grant instead)",
                                d.display(),
                                g.display()
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The paths granted, absolute, each with whether it is writable: the given ones, then the
    /// defaults (the working directory, the command's `install` folder, the system folders
    /// and devices). With `reads_only`, only what may be read (writable paths included).
    pub(crate) fn granted(
        &self,
        cwd: Option<&Path>,
        install: Option<&Path>,
        reads_only: bool,
    ) -> Vec<(PathBuf, bool)> {
        let mut out: Vec<(PathBuf, bool)> = Vec::new();
        out.extend(self.write.iter().map(|p| (absolute(p, cwd), true)));
        out.extend(self.read.iter().map(|p| (absolute(p, cwd), false)));
        if !self.no_default_paths {
            let c = cwd
                .map(Path::to_path_buf)
                .or_else(|| std::env::current_dir().ok());
            if let Some(c) = c.filter(|c| !too_wide(c)) {
                out.push((c, false));
            }
            if let Some(i) = install {
                out.push((i.to_path_buf(), false));
            }
            out.extend(SYSTEM_READ_PATHS.iter().map(|p| (PathBuf::from(p), false)));
            if !reads_only {
                out.extend(DEVICE_PATHS.iter().map(|p| (PathBuf::from(p), true)));
            } else {
                out.extend(DEVICE_PATHS.iter().map(|p| (PathBuf::from(p), false)));
            }
        }
        out
    }
}

/// What the spawn of a sandboxed server applied, from
/// [`Client::sandbox_report`](crate::Client::sandbox_report).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SandboxReport {
    /// The Landlock ABI version the kernel offers (`None`: no Landlock, or not Linux).
    pub landlock_abi: Option<u32>,
    /// What was applied, in words (e.g. `filesystem rules (Landlock)`).
    pub applied: Vec<String>,
    /// What was asked for and not applied, in words naming what is missing (only with
    /// [`Sandbox::best_effort`]; otherwise the server does not start).
    pub not_applied: Vec<String>,
    /// The loopback proxy the server's network goes through, when it may reach domains.
    pub proxy: Option<std::net::SocketAddr>,
}

impl SandboxReport {
    /// Whether everything asked for was applied.
    pub fn is_complete(&self) -> bool {
        self.not_applied.is_empty()
    }
}

/// Whether `dir`, as a working directory, is too wide to grant by default: the root, the home
/// folder, the system's temporary folder, or a folder holding one of them (a server started
/// from `~` would read `~/.ssh`, from `/tmp` other servers' temporary folders).
pub(crate) fn too_wide(dir: &Path) -> bool {
    let dir = absolute(dir, None);
    // The system's temporary folder holds other servers' private ones.
    dir.parent().is_none()
        || absolute(&std::env::temp_dir(), None).starts_with(&dir)
        || std::env::var_os("HOME")
            .map(|h| absolute(Path::new(&h), None))
            .is_some_and(|home| home.starts_with(&dir))
}

/// Whole seconds of CPU time, rounded up.
pub(crate) fn cpu_seconds(t: Duration) -> u64 {
    t.as_secs() + u64::from(t.subsec_nanos() > 0)
}

/// `p` made absolute: `~` and `~/...` from `HOME`, a relative path from `cwd` (or the client's
/// working directory), `.` and `..` resolved lexically.
pub(crate) fn absolute(p: &Path, cwd: Option<&Path>) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    let joined = if let Ok(rest) = p.strip_prefix("~") {
        match home() {
            Some(h) => h.join(rest),
            None => p.to_path_buf(),
        }
    } else if p.is_absolute() {
        p.to_path_buf()
    } else {
        match cwd
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
        {
            Some(c) => c.join(p),
            None => p.to_path_buf(),
        }
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_rules_parse_and_match() {
        let r = DomainRule::parse("Example.COM.").unwrap();
        assert!(r.matches("example.com", 443) && r.matches("EXAMPLE.com.", 80));
        assert!(!r.matches("example.com", 8080) && !r.matches("www.example.com", 443));
        let w = DomainRule::parse("*.example.com:8443").unwrap();
        assert!(w.matches("a.b.example.com", 8443));
        assert!(!w.matches("example.com", 8443) && !w.matches("badexample.com", 8443));
        assert!(!w.matches("a.example.com", 443));
        let v6 = DomainRule::parse("[::1]:9000").unwrap();
        assert!(v6.matches("[::1]", 9000));
        assert_eq!(v6.to_string(), "[::1]:9000");
        assert!(DomainRule::parse("10.0.0.1:22")
            .unwrap()
            .matches("10.0.0.1", 22));
        for bad in [
            "",
            "a b",
            "x.com:0",
            "x.com:70000",
            "*.",
            "*.[::1]",
            "[::1",
            "a..b",
            "http://x.com",
            "x.com:",
            "*x.com",
        ] {
            assert!(DomainRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_denied_path_inside_a_granted_one_is_unenforceable() {
        let s = Sandbox::new()
            .allow_write("/srv/data")
            .deny_read("/srv/data/secret");
        let e = s.check(Some(Path::new("/work"))).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Unenforceable);
        assert_eq!(e.path, "sandbox.filesystem.denyRead");
        assert!(e.message.contains("/srv/data/secret"), "{}", e.message);
        // Inside the working directory, readable by default.
        let e = Sandbox::new()
            .deny_read("secret")
            .check(Some(Path::new("/work")))
            .unwrap_err();
        assert!(
            e.message.contains("`/work/secret` lies inside `/work`"),
            "{}",
            e.message
        );
        // Outside everything granted: a check that holds by construction.
        Sandbox::new()
            .allow_write("/srv/data")
            .deny_read("~/.ssh")
            .deny_write("/etc")
            .check(Some(Path::new("/work")))
            .unwrap();
        // Without the defaults, the working directory is not granted.
        Sandbox::new()
            .without_default_paths()
            .deny_read("secret")
            .check(Some(Path::new("/work")))
            .unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn a_denied_path_reached_through_a_link_is_caught() {
        let base = std::env::temp_dir().join(format!("mcp-sbx-link-{}", std::process::id()));
        let real = base.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = base.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = Sandbox::new()
            .without_default_paths()
            .allow_read(&link)
            .deny_read(real.join("secret"))
            .check(None)
            .unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Unenforceable);
        // A denied write where only reads are granted holds by construction.
        Sandbox::new()
            .without_default_paths()
            .allow_read(&link)
            .deny_write(real.join("secret"))
            .check(None)
            .unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn the_root_and_the_home_folder_are_too_wide_to_grant_as_working_directory() {
        assert!(too_wide(Path::new("/")));
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
        assert!(too_wide(&home));
        if let Some(parent) = home.parent() {
            assert!(too_wide(parent));
        }
        assert!(!too_wide(&home.join("project")));
        assert!(too_wide(&std::env::temp_dir()));
        assert!(!too_wide(Path::new("/srv/data/that-is-not-home")));
        // Not granted by default; granted when named.
        let g = Sandbox::new().granted(Some(&home), None, true);
        assert!(!g.iter().any(|(p, _)| *p == home));
        let g = Sandbox::new()
            .allow_read(&home)
            .granted(Some(&home), None, true);
        assert!(g.iter().any(|(p, _)| *p == home));
    }

    #[test]
    fn bad_values_are_reported_at_their_key() {
        let e = Sandbox::new()
            .allow_domain("not a host")
            .check(None)
            .unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue);
        assert_eq!(e.path, "sandbox.network.allowedDomains");
        let e = Sandbox::new().max_open_files(0).check(None).unwrap_err();
        assert_eq!(e.path, "sandbox.limits.openFiles");
        let e = Sandbox::new().allow_read("").check(None).unwrap_err();
        assert_eq!(e.path, "sandbox.filesystem.allowRead");
        let mut s = Sandbox::new();
        for i in 0..=MAX_SANDBOX_RULES {
            s = s.allow_read(format!("/d{i}"));
        }
        assert!(s.check(None).unwrap_err().message.contains("more than 256"));
        let from_file = Sandbox::new()
            .with_source(RuleSource::key("servers.fs.sandboxEnabled"))
            .deny_domain("a b");
        assert_eq!(
            from_file.check(None).unwrap_err().path,
            "servers.fs.sandbox.network.deniedDomains"
        );
    }

    #[test]
    #[cfg(unix)]
    fn paths_are_made_absolute_lexically() {
        assert_eq!(
            absolute(Path::new("a/../b/./c"), Some(Path::new("/w"))),
            PathBuf::from("/w/b/c")
        );
        assert_eq!(absolute(Path::new("/x/../y"), None), PathBuf::from("/y"));
        assert_eq!(cpu_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(cpu_seconds(Duration::from_secs(3)), 3);
    }
}
