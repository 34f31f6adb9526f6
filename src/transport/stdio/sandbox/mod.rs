//! The sandbox a stdio server is spawned in (see [`Sandbox`]): what is prepared in the client
//! before the fork ([`prepare`]), and what the child applies before exec.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the paths granted, the runtime's own folders, fail closed or best effort |
//! | `landlock.rs` | Landlock, rlimits, `no_new_privs`, capabilities: the raw system calls |
//! | `seccomp.rs` | the socket filter: TCP and netlink sockets only |
//! | `proxy.rs` | the loopback HTTP proxy that admits the listed domains |

#[cfg(target_os = "linux")]
mod landlock;
pub(crate) mod proxy;
#[cfg(target_os = "linux")]
mod seccomp;

use std::path::{Path, PathBuf};

use crate::config::{ConfigError, ConfigErrorKind, Network, Sandbox, SandboxReport, StdioConfig};
use crate::error::Error;

use self::proxy::Proxy;

/// What the child applies between fork and exec (nothing off Linux).
#[cfg(target_os = "linux")]
pub(crate) type ChildSetup = landlock::ChildSetup;
/// What the child applies between fork and exec (nothing off Linux).
#[cfg(not(target_os = "linux"))]
pub(crate) struct ChildSetup;

#[cfg(not(target_os = "linux"))]
impl ChildSetup {
    #[cfg_attr(
        windows,
        allow(dead_code, reason = "Windows spawns without a pre-exec step")
    )]
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A sandbox ready to spawn in. (On Windows only the report is read: nothing else applies.)
#[cfg_attr(
    windows,
    allow(dead_code, reason = "only the report applies on Windows")
)]
pub(crate) struct Prepared {
    /// What the child applies.
    pub(crate) setup: std::sync::Arc<ChildSetup>,
    /// Variables the server gets on top of its own (the proxy, private caches).
    pub(crate) env: Vec<(String, String)>,
    /// The proxy, kept running as long as the server.
    pub(crate) proxy: Option<Proxy>,
    /// What is applied and what is not.
    pub(crate) report: SandboxReport,
    /// The server's own temporary folder, removed when dropped.
    pub(crate) temp: Option<PrivateTemp>,
}

/// A sandboxed server's temporary folder (`TMPDIR`), writable by it alone, removed with
/// everything in it when dropped: after the server has ended, or when it failed to start.
pub(crate) struct PrivateTemp(PathBuf);

impl PrivateTemp {
    /// Creates a new folder (mode 0700) under the system's temporary folder.
    fn create(server: &str) -> std::io::Result<PrivateTemp> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        // Names already taken (left by a client that was killed) are skipped, a bounded number.
        for _ in 0..1000 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!(
                "mcp-sandbox-{}-{}-{n}",
                safe_name(server),
                std::process::id()
            ));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&dir) {
                Ok(()) => return Ok(PrivateTemp(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "1000 names in a row were taken",
        ))
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        // `remove_dir_all` does not follow links the server may have left in the folder.
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            log::debug!("sandbox: could not remove {}: {e}", self.0.display());
        }
    }
}

/// `server` as a file name: anything but letters, digits, `-` and `_` replaced, cut to 64
/// characters, and a digest of the exact name after it, so that two names that read alike
/// (`a.b`, `a_b`) never share a folder.
fn safe_name(server: &str) -> String {
    use crate::hub::names::{fnv1a32, sanitize};
    // The digest (FNV-1a) is stable from run to run, which a cache folder's name must be.
    let readable: String = sanitize(server).chars().take(64).collect();
    format!("{readable}-{:08x}", fnv1a32(&[server.as_bytes()]))
}

/// Commands whose runtime keeps a package cache, and the variable that moves it: a sandboxed
/// server gets a private cache (writable), so that nothing it writes is later run by the same
/// runtime outside its sandbox.
const RUNTIME_CACHES: [(&[&str], &str, &str); 3] = [
    (
        &["npx", "npm", "node", "pnpm", "corepack"],
        "npm_config_cache",
        "npm",
    ),
    (&["uv", "uvx"], "UV_CACHE_DIR", "uv"),
    (
        &["python", "python3", "pip", "pip3", "pipx"],
        "PIP_CACHE_DIR",
        "pip",
    ),
];

/// Prepares `sandbox` for the server `server` of `cfg`: resolves the paths, starts the proxy,
/// builds the Landlock ruleset, and applies the fail-closed rule.
///
/// # Errors
/// [`Error::Config`] of kind [`ConfigErrorKind::Unenforceable`] naming what this system cannot
/// apply (unless best effort), or of kind `InvalidValue` for a rule the kernel refuses;
/// [`Error::Spawn`] when the proxy cannot listen.
pub(crate) fn prepare(
    server: &str,
    cfg: &StdioConfig,
    sandbox: &Sandbox,
) -> Result<Prepared, Error> {
    sandbox
        .check(cfg.cwd.as_deref())
        .map_err(|e| e.for_server(Some(server)))?;
    let cwd = cfg.cwd.clone().or_else(|| std::env::current_dir().ok());
    let mut env = Vec::new();
    let mut extra: Vec<(PathBuf, bool)> = Vec::new();
    let install = install_folders(cfg);
    if sandbox.has_default_paths() {
        let name = Path::new(&cfg.command)
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        for (commands, var, sub) in RUNTIME_CACHES {
            if commands
                .iter()
                .any(|c| name == *c || name.starts_with(&format!("{c}3.")))
            {
                if let Some(dir) = private_cache(server, sub) {
                    env.push((var.to_owned(), dir.display().to_string()));
                    extra.push((dir, true));
                }
            }
        }
        extra.extend(install.iter().skip(1).map(|p| (p.clone(), false)));
    }
    // Off Linux nothing is confined: no folder to give.
    let temp = if sandbox.has_default_paths() && cfg!(target_os = "linux") {
        match PrivateTemp::create(server) {
            Ok(t) => {
                for var in ["TMPDIR", "TMP", "TEMP"] {
                    env.push((var.to_owned(), t.0.display().to_string()));
                }
                extra.push((t.0.clone(), true));
                Some(t)
            }
            Err(e) => {
                log::warn!("server `{server}`: no private temporary folder: {e}");
                None
            }
        }
    } else {
        None
    };
    let mut paths = sandbox.granted(cwd.as_deref(), install.first().map(PathBuf::as_path), false);
    paths.extend(extra);
    // Again with the command's folders and the caches, which only the spawn knows.
    sandbox
        .check_denied(&paths, cwd.as_deref())
        .map_err(|e| e.for_server(Some(server)))?;
    let given: Vec<PathBuf> = sandbox
        .read_paths()
        .iter()
        .chain(sandbox.write_paths())
        .map(|p| crate::config::sandbox_absolute(p, cwd.as_deref()))
        .collect();

    let mut proxy = None;
    let (net_rules, connect_port) = match sandbox.network() {
        // Off Linux nothing confines the server's network: no proxy to route it through.
        Network::Domains { allow, deny } if cfg!(target_os = "linux") => {
            let p = Proxy::start(server, allow.clone(), deny.clone()).map_err(|source| {
                Error::Spawn {
                    server: server.to_owned(),
                    command: super::command_line(cfg),
                    source: std::io::Error::new(
                        source.kind(),
                        format!("the sandbox's proxy could not listen on loopback: {source}"),
                    ),
                }
            })?;
            let url = format!("http://{}", p.addr());
            for var in [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "http_proxy",
                "https_proxy",
                "all_proxy",
            ] {
                env.push((var.to_owned(), url.clone()));
            }
            // Node's own `fetch` reads the variables only when asked to.
            env.push(("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()));
            for var in ["NO_PROXY", "no_proxy"] {
                env.push((var.to_owned(), String::new()));
            }
            let port = p.addr().port();
            proxy = Some(p);
            (true, Some(port))
        }
        _ => (true, None),
    };

    let mut report = SandboxReport {
        proxy: proxy.as_ref().map(Proxy::addr),
        ..SandboxReport::default()
    };
    let setup = child_setup(
        sandbox,
        &paths,
        net_rules,
        connect_port,
        &given,
        &mut report,
    )
    .map_err(|e| {
        Error::from(
            ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("the kernel refused the sandbox's rules: {e}"),
            )
            .at(sandbox.key("filesystem"))
            .for_server(Some(server)),
        )
    })?;
    if let Some(t) = &temp {
        report.applied.push(format!(
            "a private temporary folder (TMPDIR): {}",
            t.0.display()
        ));
    }
    if !report.not_applied.is_empty() {
        if !sandbox.is_best_effort() {
            let mut e = ConfigError::new(
                ConfigErrorKind::Unenforceable,
                format!(
                    "the sandbox cannot be applied in full here, and the server is not started \
                     with less: {} (ask for `best_effort` to start it with what applies)",
                    report.not_applied.join("; ")
                ),
            )
            .at(if sandbox.source().key.is_empty() {
                "sandbox".to_owned()
            } else {
                sandbox.source().key.clone()
            });
            e.file = sandbox.source().file.clone();
            return Err(e.for_server(Some(server)).into());
        }
        for missing in &report.not_applied {
            log::warn!("server `{server}`: sandbox applied in part, without {missing}");
        }
    }
    Ok(Prepared {
        setup: std::sync::Arc::new(setup),
        env,
        proxy,
        report,
        temp,
    })
}

#[cfg(target_os = "linux")]
fn child_setup(
    sandbox: &Sandbox,
    paths: &[(PathBuf, bool)],
    net: bool,
    connect_port: Option<u16>,
    given: &[PathBuf],
    report: &mut SandboxReport,
) -> std::io::Result<ChildSetup> {
    let abi = landlock::abi();
    report.landlock_abi = abi;
    let built = landlock::build(
        abi,
        &landlock::Rules {
            paths: paths.to_vec(),
            connect_port,
            net,
        },
    )?;
    for p in &built.absent {
        if given.contains(p) {
            log::warn!(
                "sandbox: `{}` does not exist, so it is not granted",
                p.display()
            );
        }
    }
    report.applied = built.applied;
    report.not_applied = built.missing;
    let l = sandbox.limits();
    let mut limits = Vec::new();
    for (value, resource, what) in [
        (l.address_space, libc::RLIMIT_AS, "address space"),
        (l.open_files, libc::RLIMIT_NOFILE, "open files"),
        (l.processes, libc::RLIMIT_NPROC, "processes"),
        (
            l.cpu_time.map(crate::config::cpu_seconds_of),
            libc::RLIMIT_CPU,
            "CPU seconds",
        ),
    ] {
        let Some(value) = value else { continue };
        if resource == libc::RLIMIT_NPROC && landlock::is_root() {
            report.not_applied.push(
                "the process limit: Linux does not apply `RLIMIT_NPROC` to root, and this \
                 client runs as root"
                    .to_owned(),
            );
            continue;
        }
        // Above the current hard limit the child could not set it (without the capability it is
        // about to drop); the hard limit already holds the server lower, so that is the value.
        let value = match landlock::hard_limit(resource as libc::c_int) {
            Some(hard) if hard < value => {
                report.applied.push(format!(
                    "{what} ≤ {hard} (rlimit: the client's own hard limit, below the {value} asked)"
                ));
                hard
            }
            _ => {
                report.applied.push(format!("{what} ≤ {value} (rlimit)"));
                value
            }
        };
        limits.push(landlock::Limit {
            resource: resource as libc::c_int,
            value,
        });
    }
    let filter = seccomp::Filter::new();
    match &filter {
        Some(_) => report.applied.push(
            "sockets: TCP (IPv4, IPv6) and netlink only; no UDP, raw, packet, SCTP or Unix \
             socket, no listen, no TCP Fast Open, no io_uring (seccomp)"
                .to_owned(),
        ),
        None => report.not_applied.push(format!(
            "the socket filter: its seccomp program is written for x86_64 and aarch64, not {}",
            std::env::consts::ARCH
        )),
    }
    report
        .applied
        .push("no_new_privs, and no capabilities".to_owned());
    Ok(landlock::ChildSetup {
        ruleset: built.fd,
        limits,
        seccomp: filter,
    })
}

#[cfg(not(target_os = "linux"))]
fn child_setup(
    _sandbox: &Sandbox,
    _paths: &[(PathBuf, bool)],
    _net: bool,
    _connect_port: Option<u16>,
    _given: &[PathBuf],
    report: &mut SandboxReport,
) -> std::io::Result<ChildSetup> {
    report.not_applied.push(format!(
        "every rule: sandboxes are applied on Linux (Landlock), and this is {}",
        std::env::consts::OS
    ));
    Ok(ChildSetup)
}

/// The command's install folders: the folder it was found in (its parent when that is a
/// `bin`), and the same for the file it links to, if it is a link.
fn install_folders(cfg: &StdioConfig) -> Vec<PathBuf> {
    let path_var = cfg
        .env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let found = if cfg.command.contains('/') {
        let p = PathBuf::from(&cfg.command);
        Some(match (&cfg.cwd, p.is_relative()) {
            (Some(c), true) => c.join(p),
            _ => p,
        })
    } else {
        std::env::split_paths(&path_var)
            .map(|d| d.join(&cfg.command))
            .find(|p| p.is_file())
    };
    let Some(found) = found else {
        return Vec::new();
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let prefix = |file: &Path| install_folder(file, home.as_deref());
    let mut out = Vec::new();
    out.extend(prefix(&found));
    if let Ok(real) = std::fs::canonicalize(&found) {
        if let Some(p) = prefix(&real) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The folder granted for a command at `file`: its folder, or that folder's parent when it is a
/// `bin` (where the runtime keeps its libraries), but never the root, the home folder or a
/// folder holding it, nor a folder directly in the home folder (`~/bin` is not `~`, and
/// `~/.cargo/bin` is not `~/.cargo` with its credentials): then the `bin` folder alone, or,
/// when the command lies directly in such a folder, the command's file alone.
fn install_folder(file: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let file = crate::config::sandbox_absolute(file, None);
    let home = home.map(|h| crate::config::sandbox_absolute(h, None));
    let too_wide =
        |p: &Path| p.parent().is_none() || home.as_deref().is_some_and(|h| h.starts_with(p));
    let dir = file.parent()?;
    let up = match dir.file_name() {
        Some(n) if n == "bin" || n == "sbin" => dir
            .parent()
            .filter(|p| !too_wide(p) && p.parent() != home.as_deref()),
        _ => None,
    };
    let chosen = up.unwrap_or(dir);
    Some(if too_wide(chosen) {
        file.clone()
    } else {
        chosen.to_path_buf()
    })
}

/// A private cache folder for `server`'s runtime (`sub`), created now: under
/// `$XDG_CACHE_HOME` (or `~/.cache`), `mcp-blocking/sandbox/SERVER/SUB`.
fn private_cache(server: &str, sub: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let dir = base
        .join("mcp-blocking")
        .join("sandbox")
        .join(safe_name(server))
        .join(sub);
    match std::fs::create_dir_all(&dir) {
        Ok(()) => Some(dir),
        Err(e) => {
            log::warn!(
                "server `{server}`: no private {sub} cache at {}: {e}",
                dir.display()
            );
            None
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn names_that_read_alike_get_folders_of_their_own() {
        assert_ne!(safe_name("a.b"), safe_name("a_b"));
        assert_eq!(safe_name("a.b"), safe_name("a.b"));
        assert!(safe_name("a.b").starts_with("a_b-"));
        assert!(safe_name(&"x/".repeat(100)).len() <= 64 + 9);
    }

    #[test]
    fn the_install_folder_is_never_the_home_folder_or_one_directly_in_it() {
        let home = Some(Path::new("/home/u"));
        let folder = |f: &str| install_folder(Path::new(f), home).unwrap();
        assert_eq!(folder("/usr/local/bin/npx"), Path::new("/usr/local"));
        assert_eq!(folder("/opt/tool/server"), Path::new("/opt/tool"));
        assert_eq!(
            folder("/home/u/.nvm/versions/node/v22/bin/node"),
            Path::new("/home/u/.nvm/versions/node/v22")
        );
        // Going up from these `bin`s would grant the home folder, or a folder of it holding
        // more than the command (`~/.cargo/credentials.toml`, `~/.local/share`).
        assert_eq!(folder("/home/u/bin/server"), Path::new("/home/u/bin"));
        assert_eq!(
            folder("/home/u/.cargo/bin/server"),
            Path::new("/home/u/.cargo/bin")
        );
        assert_eq!(
            folder("/home/u/.local/bin/server"),
            Path::new("/home/u/.local/bin")
        );
        // A command directly in the home folder or the root: the file alone.
        assert_eq!(folder("/home/u/server"), Path::new("/home/u/server"));
        assert_eq!(folder("/server"), Path::new("/server"));
        assert_eq!(folder("/bin/server"), Path::new("/bin"));
        assert_eq!(folder("/home/bin/server"), Path::new("/home/bin"));
    }
}
