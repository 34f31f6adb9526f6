//! Where MCP hosts keep their user configuration, on each system.
//!
//! | host | Windows | macOS | Linux and other Unix |
//! |---|---|---|---|
//! | Claude Desktop | `%APPDATA%\Claude\claude_desktop_config.json` | `~/Library/Application Support/Claude/claude_desktop_config.json` | `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (`~/.config` when unset) |
//! | VS Code (user `mcp.json`) | `%APPDATA%\Code\User\mcp.json` | `~/Library/Application Support/Code/User/mcp.json` | `$XDG_CONFIG_HOME/Code/User/mcp.json` (`~/.config` when unset) |
//! | Cursor | `%USERPROFILE%\.cursor\mcp.json` | `~/.cursor/mcp.json` | `~/.cursor/mcp.json` |
//! | Claude Code | `%USERPROFILE%\.claude.json` | `~/.claude.json` | `~/.claude.json` |
//!
//! `~` is `$HOME` (on Windows `%USERPROFILE%`, else `$HOME`); `%APPDATA%` falls back to
//! `%USERPROFILE%\AppData\Roaming`. An empty variable counts as unset. These are where the files
//! go, not whether they exist: [`HostConfig::path`] names the file whether or not the host is
//! installed.
//!
//! [`HostConfig::path_in`] takes the system and the environment as arguments, so every system's
//! answer can be asked for (and tested) anywhere; [`HostConfig::path`] asks for this system's in
//! this process's environment. Paths are built with the separator of the system asked about.
//!
//! ```
//! use std::ffi::OsString;
//! use mcp_blocking::config::locations::{HostConfig, Platform};
//!
//! let env = |name: &str| match name {
//!     "APPDATA" => Some(OsString::from(r"C:\Users\alex\AppData\Roaming")),
//!     _ => None,
//! };
//! let path = HostConfig::ClaudeDesktop.path_in(Platform::Windows, env).unwrap();
//! assert_eq!(
//!     path.to_str(),
//!     Some(r"C:\Users\alex\AppData\Roaming\Claude\claude_desktop_config.json")
//! );
//!
//! // On the system this runs on, from its environment:
//! if let Some(path) = HostConfig::ClaudeDesktop.path() {
//!     if path.is_file() {
//!         let report = mcp_blocking::ConfigLoader::new().load(&path)?;
//!         println!("{} servers in {}", report.servers.len(), path.display());
//!     }
//! }
//! # Ok::<(), mcp_blocking::config::ConfigError>(())
//! ```

use std::ffi::OsString;
use std::path::PathBuf;

/// An MCP host whose user configuration file has a known place.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostConfig {
    /// Claude Desktop's `claude_desktop_config.json` (`mcpServers`).
    ClaudeDesktop,
    /// VS Code's user `mcp.json` (`servers`).
    VsCode,
    /// Cursor's global `mcp.json` (`mcpServers`).
    Cursor,
    /// Claude Code's user file `.claude.json` (`mcpServers`).
    ClaudeCode,
}

/// A family of operating systems, as far as where files go.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Windows.
    Windows,
    /// macOS.
    MacOs,
    /// Linux and the other Unix systems (the XDG layout).
    Unix,
}

impl Platform {
    /// The system this program runs on.
    pub fn current() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::Unix
        }
    }

    /// The path separator of this system's paths.
    fn separator(self) -> &'static str {
        match self {
            Platform::Windows => "\\",
            Platform::MacOs | Platform::Unix => "/",
        }
    }

    /// `base` with `parts` appended, each after this system's separator (none doubled).
    fn join(self, base: OsString, parts: &[&str]) -> PathBuf {
        let sep = self.separator();
        let mut path = base;
        for part in parts {
            let bytes = path.as_encoded_bytes();
            let ends_with_separator = bytes
                .last()
                .is_some_and(|b| *b == b'/' || (self == Platform::Windows && *b == b'\\'));
            if !ends_with_separator {
                path.push(sep);
            }
            path.push(part);
        }
        PathBuf::from(path)
    }
}

impl HostConfig {
    /// Every host this module knows, in a fixed order.
    pub const ALL: [HostConfig; 4] = [
        HostConfig::ClaudeDesktop,
        HostConfig::VsCode,
        HostConfig::Cursor,
        HostConfig::ClaudeCode,
    ];

    /// The host's name, as a person writes it.
    pub fn name(self) -> &'static str {
        match self {
            HostConfig::ClaudeDesktop => "Claude Desktop",
            HostConfig::VsCode => "VS Code",
            HostConfig::Cursor => "Cursor",
            HostConfig::ClaudeCode => "Claude Code",
        }
    }

    /// Where the host keeps its user configuration on `platform`, with environment variables
    /// looked up by `env`; `None` when the variables it needs are unset (or empty). See the
    /// [module docs](self) for the table.
    pub fn path_in(
        self,
        platform: Platform,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Option<PathBuf> {
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        let home = || home_dir_in(platform, env);
        let app_data = || -> Option<OsString> {
            match platform {
                Platform::Windows => env("APPDATA").or_else(|| {
                    let home = home()?.into_os_string();
                    Some(
                        platform
                            .join(home, &["AppData", "Roaming"])
                            .into_os_string(),
                    )
                }),
                Platform::MacOs => Some(
                    platform
                        .join(
                            home()?.into_os_string(),
                            &["Library", "Application Support"],
                        )
                        .into_os_string(),
                ),
                Platform::Unix => env("XDG_CONFIG_HOME").or_else(|| {
                    Some(
                        platform
                            .join(home()?.into_os_string(), &[".config"])
                            .into_os_string(),
                    )
                }),
            }
        };
        match self {
            HostConfig::ClaudeDesktop => {
                Some(platform.join(app_data()?, &["Claude", "claude_desktop_config.json"]))
            }
            HostConfig::VsCode => Some(platform.join(app_data()?, &["Code", "User", "mcp.json"])),
            HostConfig::Cursor => {
                Some(platform.join(home()?.into_os_string(), &[".cursor", "mcp.json"]))
            }
            HostConfig::ClaudeCode => {
                Some(platform.join(home()?.into_os_string(), &[".claude.json"]))
            }
        }
    }

    /// Where the host keeps its user configuration on this system, from this process's
    /// environment ([`path_in`](Self::path_in) with [`Platform::current`] and
    /// [`std::env::var_os`]).
    pub fn path(self) -> Option<PathBuf> {
        self.path_in(Platform::current(), |name| std::env::var_os(name))
    }
}

/// The user's home directory on `platform`, with environment variables looked up by `env`:
/// `$HOME`; on Windows `%USERPROFILE%`, else `$HOME` (which some shells set there). `None` when
/// unset or empty.
pub fn home_dir_in(platform: Platform, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let home = match platform {
        Platform::Windows => env("USERPROFILE").or_else(|| env("HOME")),
        Platform::MacOs | Platform::Unix => env("HOME"),
    };
    home.map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn all(
        platform: Platform,
        env: &'static [(&'static str, &'static str)],
    ) -> Vec<Option<String>> {
        HostConfig::ALL
            .iter()
            .map(|h| {
                h.path_in(platform, env_of(env))
                    .map(|p| p.to_string_lossy().into_owned())
            })
            .collect()
    }

    #[test]
    fn windows_paths_are_under_appdata_and_the_user_profile() {
        let env = &[
            ("APPDATA", r"C:\Users\alex\AppData\Roaming"),
            ("USERPROFILE", r"C:\Users\alex"),
            ("HOME", "/home/ignored"),
        ];
        assert_eq!(
            all(Platform::Windows, env),
            [
                Some(r"C:\Users\alex\AppData\Roaming\Claude\claude_desktop_config.json".into()),
                Some(r"C:\Users\alex\AppData\Roaming\Code\User\mcp.json".into()),
                Some(r"C:\Users\alex\.cursor\mcp.json".into()),
                Some(r"C:\Users\alex\.claude.json".into()),
            ]
        );
    }

    #[test]
    fn windows_without_appdata_uses_roaming_under_the_profile() {
        let env = &[("USERPROFILE", r"C:\Users\alex\"), ("APPDATA", "")];
        assert_eq!(
            HostConfig::ClaudeDesktop
                .path_in(Platform::Windows, env_of(env))
                .unwrap()
                .to_string_lossy(),
            r"C:\Users\alex\AppData\Roaming\Claude\claude_desktop_config.json"
        );
    }

    #[test]
    fn macos_paths_are_under_application_support_and_home() {
        let env = &[("HOME", "/Users/alex"), ("XDG_CONFIG_HOME", "/ignored")];
        assert_eq!(
            all(Platform::MacOs, env),
            [
                Some(
                    "/Users/alex/Library/Application Support/Claude/claude_desktop_config.json"
                        .into()
                ),
                Some("/Users/alex/Library/Application Support/Code/User/mcp.json".into()),
                Some("/Users/alex/.cursor/mcp.json".into()),
                Some("/Users/alex/.claude.json".into()),
            ]
        );
    }

    #[test]
    fn unix_paths_follow_xdg_config_home_else_dot_config() {
        let env = &[("HOME", "/home/alex/")];
        assert_eq!(
            all(Platform::Unix, env),
            [
                Some("/home/alex/.config/Claude/claude_desktop_config.json".into()),
                Some("/home/alex/.config/Code/User/mcp.json".into()),
                Some("/home/alex/.cursor/mcp.json".into()),
                Some("/home/alex/.claude.json".into()),
            ]
        );
        let env = &[("HOME", "/home/alex"), ("XDG_CONFIG_HOME", "/cfg")];
        assert_eq!(
            all(Platform::Unix, env)[..2],
            [
                Some("/cfg/Claude/claude_desktop_config.json".into()),
                Some("/cfg/Code/User/mcp.json".into()),
            ]
        );
    }

    #[test]
    fn no_home_no_path() {
        assert_eq!(
            all(Platform::Unix, &[("HOME", "")]),
            [None, None, None, None]
        );
        assert_eq!(all(Platform::Windows, &[]), [None, None, None, None]);
        // With APPDATA alone, the files under it are known, the ones in the profile are not.
        assert_eq!(
            all(Platform::Windows, &[("APPDATA", r"C:\R")]),
            [
                Some(r"C:\R\Claude\claude_desktop_config.json".into()),
                Some(r"C:\R\Code\User\mcp.json".into()),
                None,
                None,
            ]
        );
    }

    #[test]
    fn the_home_on_windows_is_the_user_profile_else_home() {
        let profile = home_dir_in(
            Platform::Windows,
            env_of(&[("USERPROFILE", r"C:\Users\a"), ("HOME", "/h")]),
        );
        assert_eq!(profile, Some(PathBuf::from(r"C:\Users\a")));
        let home = home_dir_in(Platform::Windows, env_of(&[("HOME", r"C:\h")]));
        assert_eq!(home, Some(PathBuf::from(r"C:\h")));
        let unix = home_dir_in(
            Platform::Unix,
            env_of(&[("USERPROFILE", "x"), ("HOME", "/h")]),
        );
        assert_eq!(unix, Some(PathBuf::from("/h")));
    }

    #[test]
    fn this_system_is_the_one_built_for() {
        #[cfg(target_os = "linux")]
        assert_eq!(Platform::current(), Platform::Unix);
        #[cfg(windows)]
        assert_eq!(Platform::current(), Platform::Windows);
        #[cfg(target_os = "macos")]
        assert_eq!(Platform::current(), Platform::MacOs);
    }
}
