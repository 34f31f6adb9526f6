//! A real server in a sandbox: `npx -y @modelcontextprotocol/server-filesystem DIR`, confined
//! to DIR (plus Node's own folders), lists and reads files in DIR and is refused outside it,
//! through the library and through `mcpb --sandbox --allow-write DIR`.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;

use common::peers;
use common::tempdir::TempDir;
use mcp_blocking::config::Sandbox;
use mcp_blocking::{Client, ServerConfig};
use serde_json::json;

/// `npx -y server-filesystem dir` (the machine's `npx`, found on `PATH`), run from the folder
/// the peers are installed in, so that npx finds the package there.
fn filesystem(dir: &Path) -> ServerConfig {
    let npm = peers::npm().package_dir(peers::FILESYSTEM);
    let root = npm
        .ancestors()
        .find(|p| p.ends_with("npm"))
        .expect("the npm peers' folder")
        .to_path_buf();
    ServerConfig::stdio("filesystem", "npx")
        .with_args(["-y", peers::FILESYSTEM, &dir.to_string_lossy()])
        .with_cwd(root)
        .with_timeout_secs(peers::PEER_TIMEOUT_SECS)
}

#[test]
fn server_filesystem_works_in_its_folder_and_is_refused_outside_it() {
    let dir = TempDir::new("sbx-fs");
    let inside = dir.file("notes.txt", "hello from inside\n");
    let outside_dir = TempDir::new("sbx-fs-out");
    let outside = outside_dir.file("secret.txt", "not for the server\n");
    let client = Client::connect(
        filesystem(dir.path()).with_sandbox(Sandbox::new().allow_write(dir.path())),
    )
    .expect("a sandboxed server-filesystem starts");
    let listed = client
        .call_tool("list_directory", json!({"path": dir.path()}))
        .unwrap()
        .text();
    assert!(listed.contains("notes.txt"), "{listed}");
    let read = client
        .call_tool("read_text_file", json!({"path": inside}))
        .unwrap()
        .text();
    assert_eq!(read.trim(), "hello from inside");
    let wrote = client
        .call_tool(
            "write_file",
            json!({"path": dir.path().join("new.txt"), "content": "written"}),
        )
        .unwrap();
    assert!(wrote.is_error != Some(true), "{}", wrote.text());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "written"
    );
    client.close().unwrap();

    // The server's own check would refuse a path outside DIR before the sandbox is reached:
    // give it both folders, and the sandbox only DIR.
    let both = filesystem(dir.path());
    let both = both.clone().with_args([
        "-y".to_owned(),
        peers::FILESYSTEM.to_owned(),
        dir.path().to_string_lossy().into_owned(),
        outside_dir.path().to_string_lossy().into_owned(),
    ]);
    let unconfined = Client::connect(both.clone()).unwrap();
    let read = unconfined
        .call_tool("read_text_file", json!({"path": outside}))
        .unwrap();
    assert_eq!(
        read.text().trim(),
        "not for the server",
        "without a sandbox"
    );
    unconfined.close().unwrap();
    // (It starts: Landlock leaves `stat` alone, which is all the server does to its folders
    // at start.)
    let confined =
        Client::connect(both.with_sandbox(Sandbox::new().allow_write(dir.path()))).unwrap();
    let read = confined
        .call_tool("read_text_file", json!({"path": outside}))
        .unwrap();
    assert!(
        read.is_error == Some(true),
        "read outside its sandbox: {}",
        read.text()
    );
    assert!(
        read.text().contains("EACCES") || read.text().contains("permission denied"),
        "{}",
        read.text()
    );
    assert!(
        !read.text().contains("not for the server"),
        "{}",
        read.text()
    );
    let wrote = confined
        .call_tool(
            "write_file",
            json!({"path": outside_dir.path().join("planted.txt"), "content": "x"}),
        )
        .unwrap();
    assert!(
        wrote.is_error == Some(true),
        "write outside its sandbox: {}",
        wrote.text()
    );
    assert!(!outside_dir.path().join("planted.txt").exists());
    confined.close().unwrap();
}
