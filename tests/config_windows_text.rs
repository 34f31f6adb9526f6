//! Config files as Windows editors write them (a UTF-8 byte order mark, CRLF line endings,
//! backslashed paths) load as their Unix twins do, whatever the system.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_blocking::config::TransportConfig;
use mcp_blocking::ConfigLoader;

/// A Claude Desktop file of Windows, with its paths and escapes.
const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "C:\\Program Files\\nodejs\\npx.cmd",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\Users\\alex\\Desktop"],
      "env": { "APPDATA": "C:\\Users\\alex\\AppData\\Roaming" },
      "cwd": "C:\\Users\\alex"
    }
  }
}
"#;

/// A RobotLab YAML list of Windows.
const ROBOTLAB: &str = "- name: files\n  transport:\n    type: stdio\n    command: 'C:\\tools\\server.exe'\n    args: ['D:\\data']\n";

/// `text` as a Windows editor saves it: a byte order mark, then CRLF line endings.
fn windows_text(text: &str) -> String {
    format!("\u{feff}{}", text.replace('\n', "\r\n"))
}

/// A new directory for one test's files.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpb-wintext-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The command, arguments and working directory of the one stdio server of `file`.
fn stdio_of(file: &std::path::Path) -> (String, Vec<String>, Option<String>) {
    let r = ConfigLoader::new()
        .with_env(BTreeMap::new())
        .strict(true)
        .load(file)
        .unwrap();
    assert_eq!(r.servers.len(), 1, "{:?}", r.errors);
    let TransportConfig::Stdio(s) = r.servers[0].transport() else {
        panic!("not stdio")
    };
    let cwd = s.cwd.as_ref().map(|c| c.display().to_string());
    (s.command.clone(), s.args.clone(), cwd)
}

#[test]
fn a_json_file_with_a_bom_and_crlf_loads_as_without() {
    let dir = temp_dir("json");
    let unix = dir.join("unix.json");
    let windows = dir.join("claude_desktop_config.json");
    std::fs::write(&unix, CLAUDE_DESKTOP).unwrap();
    std::fs::write(&windows, windows_text(CLAUDE_DESKTOP)).unwrap();
    let got = stdio_of(&windows);
    assert_eq!(got, stdio_of(&unix));
    assert_eq!(got.0, r"C:\Program Files\nodejs\npx.cmd");
    assert_eq!(got.1[2], r"C:\Users\alex\Desktop");
    assert_eq!(got.2.as_deref(), Some(r"C:\Users\alex"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_yaml_file_with_a_bom_and_crlf_loads_as_without() {
    let dir = temp_dir("yaml");
    let unix = dir.join("unix.yaml");
    let windows = dir.join("servers.yaml");
    std::fs::write(&unix, ROBOTLAB).unwrap();
    std::fs::write(&windows, windows_text(ROBOTLAB)).unwrap();
    let got = stdio_of(&windows);
    assert_eq!(got, stdio_of(&unix));
    assert_eq!(got.0, r"C:\tools\server.exe");
    assert_eq!(got.1, [r"D:\data"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_of_no_known_extension_with_a_bom_and_crlf_is_told_by_its_text() {
    let dir = temp_dir("sniff");
    let json = dir.join("servers.conf");
    let yaml = dir.join("servers.list");
    std::fs::write(&json, windows_text(CLAUDE_DESKTOP)).unwrap();
    std::fs::write(&yaml, windows_text(ROBOTLAB)).unwrap();
    assert_eq!(stdio_of(&json).0, r"C:\Program Files\nodejs\npx.cmd");
    assert_eq!(stdio_of(&yaml).0, r"C:\tools\server.exe");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn text_with_a_bom_and_crlf_loads_from_a_string() {
    let r = ConfigLoader::new()
        .with_env(BTreeMap::new())
        .strict(true)
        .load_str(&windows_text(CLAUDE_DESKTOP))
        .unwrap();
    assert_eq!(
        r.servers[0].command(),
        Some(r"C:\Program Files\nodejs\npx.cmd")
    );
    let r = ConfigLoader::new()
        .with_env(BTreeMap::new())
        .strict(true)
        .load_str(&windows_text(ROBOTLAB))
        .unwrap();
    assert_eq!(r.servers[0].command(), Some(r"C:\tools\server.exe"));
}
