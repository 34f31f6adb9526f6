//! Where MCP hosts keep their user configuration, on each system.
//!
//! | host | Windows | macOS | Linux and other Unix |
//! |---|---|---|---|
//! | Claude Desktop | `%APPDATA%\Claude\claude_desktop_config.json` | `~/Library/Application Support/Claude/claude_desktop_config.json` | `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (`~/.config` when unset) |
//! | VS Code (user `mcp.json`) | `%APPDATA%\Code\User\mcp.json` | `~/Library/Application Support/Code/User/mcp.json` | `$XDG_CONFIG_HOME/Code/User/mcp.json` (`~/.config` when unset) |
//! | Cursor | `%USERPROFILE%\.cursor\mcp.json` | `~/.cursor/mcp.json` | `~/.cursor/mcp.json` |
//! | Claude Code | `%USERPROFILE%\.claude.json` | `~/.claude.json` | `~/.claude.json` |
//! | Gemini CLI | `%USERPROFILE%\.gemini\settings.json` | `~/.gemini/settings.json` | `~/.gemini/settings.json` |
//! | Codex | `%CODEX_HOME%\config.toml`, else `%USERPROFILE%\.codex\config.toml` | `$CODEX_HOME/config.toml`, else `~/.codex/config.toml` | `$CODEX_HOME/config.toml`, else `~/.codex/config.toml` |
//! | Windsurf | `%USERPROFILE%\.codeium\windsurf\mcp_config.json` | `~/.codeium/windsurf/mcp_config.json` | `~/.codeium/windsurf/mcp_config.json` |
//! | Zed | `%APPDATA%\Zed\settings.json` | `~/.config/zed/settings.json` | `$XDG_CONFIG_HOME/zed/settings.json` (`~/.config` when unset) |
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

use super::fields::Flavor;

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
    /// Claude Code's user file `.claude.json` (`mcpServers`, and per project
    /// `projects[<path>].mcpServers`).
    ClaudeCode,
    /// Gemini CLI's user `settings.json` (`mcpServers`).
    Gemini,
    /// Codex's `config.toml` (`[mcp_servers.NAME]`).
    Codex,
    /// Windsurf's `mcp_config.json` (`mcpServers`).
    Windsurf,
    /// Zed's user `settings.json` (`context_servers`).
    Zed,
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
    pub const ALL: [HostConfig; 8] = [
        HostConfig::ClaudeDesktop,
        HostConfig::VsCode,
        HostConfig::Cursor,
        HostConfig::ClaudeCode,
        HostConfig::Gemini,
        HostConfig::Codex,
        HostConfig::Windsurf,
        HostConfig::Zed,
    ];

    /// The host's name, as a person writes it.
    pub fn name(self) -> &'static str {
        match self {
            HostConfig::ClaudeDesktop => "Claude Desktop",
            HostConfig::VsCode => "VS Code",
            HostConfig::Cursor => "Cursor",
            HostConfig::ClaudeCode => "Claude Code",
            HostConfig::Gemini => "Gemini CLI",
            HostConfig::Codex => "Codex",
            HostConfig::Windsurf => "Windsurf",
            HostConfig::Zed => "Zed",
        }
    }

    /// The spelling rules of the host's files.
    pub(crate) fn flavor(self) -> Flavor {
        match self {
            HostConfig::ClaudeDesktop => Flavor::ClaudeDesktop,
            HostConfig::VsCode => Flavor::VsCode,
            HostConfig::Cursor => Flavor::Cursor,
            HostConfig::ClaudeCode => Flavor::ClaudeCode,
            HostConfig::Gemini => Flavor::Gemini,
            HostConfig::Codex => Flavor::Codex,
            HostConfig::Windsurf => Flavor::Windsurf,
            HostConfig::Zed => Flavor::Zed,
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
            HostConfig::Gemini => {
                Some(platform.join(home()?.into_os_string(), &[".gemini", "settings.json"]))
            }
            HostConfig::Codex => match env("CODEX_HOME") {
                Some(dir) => Some(platform.join(dir, &["config.toml"])),
                None => Some(platform.join(home()?.into_os_string(), &[".codex", "config.toml"])),
            },
            HostConfig::Windsurf => Some(platform.join(
                home()?.into_os_string(),
                &[".codeium", "windsurf", "mcp_config.json"],
            )),
            // Zed keeps to ~/.config on macOS too, and spells its folder `Zed` on Windows.
            HostConfig::Zed => match platform {
                Platform::Windows => Some(platform.join(app_data()?, &["Zed", "settings.json"])),
                Platform::MacOs => Some(platform.join(
                    home()?.into_os_string(),
                    &[".config", "zed", "settings.json"],
                )),
                Platform::Unix => Some(platform.join(app_data()?, &["zed", "settings.json"])),
            },
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
                Some(r"C:\Users\alex\.gemini\settings.json".into()),
                Some(r"C:\Users\alex\.codex\config.toml".into()),
                Some(r"C:\Users\alex\.codeium\windsurf\mcp_config.json".into()),
                Some(r"C:\Users\alex\AppData\Roaming\Zed\settings.json".into()),
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
                Some("/Users/alex/.gemini/settings.json".into()),
                Some("/Users/alex/.codex/config.toml".into()),
                Some("/Users/alex/.codeium/windsurf/mcp_config.json".into()),
                Some("/Users/alex/.config/zed/settings.json".into()),
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
                Some("/home/alex/.gemini/settings.json".into()),
                Some("/home/alex/.codex/config.toml".into()),
                Some("/home/alex/.codeium/windsurf/mcp_config.json".into()),
                Some("/home/alex/.config/zed/settings.json".into()),
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
        assert_eq!(
            all(Platform::Unix, env)[7],
            Some("/cfg/zed/settings.json".into())
        );
    }

    #[test]
    fn no_home_no_path() {
        assert_eq!(all(Platform::Unix, &[("HOME", "")]), vec![None; 8]);
        assert_eq!(all(Platform::Windows, &[]), vec![None; 8]);
        // With APPDATA alone, the files under it are known, the ones in the profile are not.
        assert_eq!(
            all(Platform::Windows, &[("APPDATA", r"C:\R")]),
            [
                Some(r"C:\R\Claude\claude_desktop_config.json".into()),
                Some(r"C:\R\Code\User\mcp.json".into()),
                None,
                None,
                None,
                None,
                None,
                Some(r"C:\R\Zed\settings.json".into()),
            ]
        );
    }

    #[test]
    fn codex_home_moves_codex_s_file_on_every_system() {
        let on = |platform, env| {
            HostConfig::Codex
                .path_in(platform, env_of(env))
                .map(|p| p.to_string_lossy().into_owned())
        };
        let unix = &[("HOME", "/home/alex"), ("CODEX_HOME", "/srv/codex")];
        assert_eq!(
            on(Platform::Unix, unix),
            Some("/srv/codex/config.toml".into())
        );
        assert_eq!(
            on(Platform::MacOs, unix),
            Some("/srv/codex/config.toml".into())
        );
        let windows = &[("USERPROFILE", r"C:\Users\a"), ("CODEX_HOME", r"D:\codex")];
        assert_eq!(
            on(Platform::Windows, windows),
            Some(r"D:\codex\config.toml".into())
        );
        // An empty CODEX_HOME counts as unset; it needs no home directory when set.
        let empty = &[("HOME", "/h"), ("CODEX_HOME", "")];
        assert_eq!(
            on(Platform::Unix, empty),
            Some("/h/.codex/config.toml".into())
        );
        assert_eq!(
            on(Platform::Unix, &[("CODEX_HOME", "/c")]),
            Some("/c/config.toml".into())
        );
    }

    #[test]
    fn each_host_reads_its_own_spelling() {
        assert_eq!(HostConfig::Gemini.flavor(), Flavor::Gemini);
        assert_eq!(HostConfig::Codex.flavor(), Flavor::Codex);
        assert_eq!(HostConfig::Zed.flavor(), Flavor::Zed);
        assert_eq!(HostConfig::Windsurf.flavor(), Flavor::Windsurf);
        assert_eq!(HostConfig::ClaudeCode.flavor(), Flavor::ClaudeCode);
        let names: std::collections::HashSet<_> =
            HostConfig::ALL.iter().map(|h| h.name()).collect();
        assert_eq!(names.len(), HostConfig::ALL.len());
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
