//! `mcpb` on Windows with the files Windows users have: Claude Desktop's config at its Windows
//! location (`%APPDATA%\Claude\claude_desktop_config.json`, saved by a Windows editor: a byte
//! order mark and CRLF line endings), with `npx`-style shims, and sign-ins kept under
//! `%APPDATA%\mcpb`. Runs under Wine in CI (`.ci/windows/test`).
#![cfg(windows)]

mod common;

use common::{fixture, mcpb::command, tempdir::TempDir};
use mcp_blocking::config::locations::{HostConfig, Platform};

/// `text` as a Windows editor saves it.
fn windows_text(text: &str) -> String {
    format!("\u{feff}{}", text.replace('\n', "\r\n"))
}

#[test]
fn mcpb_loads_claude_desktop_s_file_from_its_windows_location_and_calls_a_shimmed_server() {
    let app_data = TempDir::new("appdata");
    let app_data_dir = app_data.file("probe", "");
    let app_data_dir = app_data_dir.parent().unwrap().to_path_buf();
    // Where Claude Desktop keeps it, for this %APPDATA%.
    let path = HostConfig::ClaudeDesktop
        .path_in(Platform::Windows, |name| {
            (name == "APPDATA").then(|| app_data_dir.clone().into_os_string())
        })
        .unwrap();
    assert!(
        path.ends_with(r"Claude\claude_desktop_config.json"),
        "{}",
        path.display()
    );
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // The server is started as `npx` is on Windows: a bare name found as a `.cmd` shim.
    let bin = TempDir::new("appdata-bin");
    let shim = bin.file(
        "fixture-shim.cmd",
        &format!("@echo off\r\n\"{}\" %*\r\n", fixture::path()),
    );
    let bin_dir = shim.parent().unwrap().display().to_string();
    let path_var = format!("{bin_dir};{}", std::env::var("PATH").unwrap_or_default());
    let config = format!(
        r#"{{
  "mcpServers": {{
    "fx": {{ "command": "fixture-shim", "args": ["--stderr-banner"], "env": {{ "PATH": {} }} }}
  }}
}}
"#,
        serde_json::to_string(&path_var).unwrap()
    );
    std::fs::write(&path, windows_text(&config)).unwrap();
    let path = path.to_str().unwrap();

    let out = command(&["--config", path, "servers"])
        .env("APPDATA", &app_data_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.starts_with("fx"), "{listed}");

    let out = command(&[
        "--config", path, "--server", "fx", "call", "add", "a=1", "b=2",
    ])
    .env("APPDATA", &app_data_dir)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "3");
}

#[test]
fn mcpb_prints_completions_for_powershell() {
    let out = command(&["completions", "powershell"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("Register-ArgumentCompleter"), "{script}");
}
