//! Connecting through the Hub: parallel connect, failure bookkeeping, retry with backoff,
//! `connect_all`, `inject`, and discovery on the first run.

mod common;
mod hub_support;

use std::sync::Arc;
use std::time::Duration;

use hub_support::{broken, fixture, fixture_path, wait_for};
use mcp_blocking::hub::{HubEvent, Run};
use mcp_blocking::{Client, Hub, ServerConfig};
use serde_json::json;

#[test]
#[cfg(unix)] // `slow_start` delays the server with `sh`.
fn servers_connect_in_parallel() {
    use hub_support::slow_start;
    use std::time::Instant;
    // Each server takes 0.4 s to start; six in sequence would take 2.4 s.
    let one = Hub::new([slow_start("solo", 0.4)]);
    let t = Instant::now();
    assert_eq!(one.resolve(&Run::new()).failed, []);
    let single = t.elapsed();

    let six = Hub::new((0..6).map(|i| slow_start(&format!("s{i}"), 0.4)));
    let t = Instant::now();
    let set = six.resolve(&Run::new());
    let all = t.elapsed();
    assert_eq!(set.failed, []);
    assert_eq!(six.connected_servers().len(), 6);
    assert!(
        all < single * 3,
        "six servers took {all:?}, one took {single:?}: not parallel"
    );
}

#[test]
fn a_failing_server_is_recorded_and_the_others_connect() {
    let hub = Hub::new([
        fixture("good1", "", &[]),
        broken("bad"),
        fixture("good2", "", &["--extra-tools", "1"]),
    ]);
    let events = hub.events();
    let set = hub.resolve(&Run::new());
    assert_eq!(set.failed_server_names(), ["bad"]);
    assert_eq!(hub.failed_server_names(), ["bad"]);
    assert_eq!(hub.connected_servers(), ["good1", "good2"]);
    let reason = &hub.failures()[0].reason;
    assert!(reason.contains("`bad`"), "{reason}");
    assert!(reason.contains("could not connect"), "{reason}");
    // The error quotes the server's last stderr lines.
    assert!(
        reason.contains("failing at start-up on purpose"),
        "{reason}"
    );
    assert!(set.names().contains(&"gen_0"));
    assert!(set.tools.iter().all(|t| t.server != "bad"));
    wait_for(
        &events,
        |e| matches!(e, HubEvent::ConnectFailed { server, .. } if server == "bad"),
    );
    assert!(set.status_note().unwrap_or_default().contains("`bad`"));
}

/// A command path that does not exist until `install` writes it.
struct LateServer {
    path: std::path::PathBuf,
}

impl LateServer {
    fn new(tag: &str) -> Self {
        // A shell script on Unix, a copy of the fixture server on Windows.
        let ext = if cfg!(windows) { ".exe" } else { ".sh" };
        let path = std::env::temp_dir().join(format!("hub-late-{tag}-{}{ext}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        LateServer { path }
    }

    fn config(&self, name: &str) -> ServerConfig {
        ServerConfig::stdio(name, self.path.to_string_lossy())
    }

    #[cfg(unix)]
    fn install(&self) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(
            &self.path,
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", fixture_path()),
        )
        .unwrap();
        std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[cfg(windows)]
    fn install(&self) {
        std::fs::copy(fixture_path(), &self.path).unwrap();
    }
}

impl Drop for LateServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[test]
fn a_failed_server_is_retried_on_a_later_run_and_recovers() {
    let late = LateServer::new("recover");
    let hub = Hub::builder()
        .servers([fixture("up", "", &[]), late.config("late")])
        .connect_backoff(Duration::ZERO, Duration::ZERO)
        .build();
    let first = hub.resolve(&Run::new());
    assert_eq!(first.failed_server_names(), ["late"]);
    assert_eq!(hub.failures()[0].attempts, 1);

    let second = hub.resolve(&Run::new());
    assert_eq!(second.failed_server_names(), ["late"]);
    assert_eq!(hub.failures()[0].attempts, 2, "retried on the second run");

    late.install();
    let third = hub.resolve(&Run::new());
    assert_eq!(third.failed, []);
    assert_eq!(hub.connected_servers(), ["up", "late"]);
    let echo = hub
        .call_tool("late__echo", json!({"text": "back"}))
        .unwrap();
    assert_eq!(echo.text(), "back");
}

#[test]
fn retries_wait_for_the_backoff() {
    let hub = Hub::builder()
        .servers([broken("bad")])
        .connect_backoff(Duration::from_secs(3600), Duration::from_secs(3600))
        .build();
    hub.resolve(&Run::new());
    hub.resolve(&Run::new());
    assert_eq!(hub.failures()[0].attempts, 1, "no retry before the backoff");
    // connect_all ignores the backoff.
    let failed = hub.connect_all();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempts, 2);
}

#[test]
fn connect_all_connects_eagerly_and_initialises() {
    let hub = Hub::builder()
        .servers([fixture("a", "", &[]), broken("b")])
        .discovery(true)
        .build();
    assert!(!hub.is_initialized());
    let failed = hub.connect_all();
    assert!(hub.is_initialized());
    assert_eq!(
        failed.iter().map(|f| f.server.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    assert_eq!(hub.connected_servers(), ["a"]);
    // Discovery no longer applies: the first run does not drop `a`.
    let set = hub.resolve(&Run::new().query("something unrelated entirely"));
    assert!(set.names().contains(&"echo"));
}

#[test]
fn injected_clients_are_adopted_and_not_closed_by_the_hub() {
    let outside = Arc::new(Client::connect(fixture("outside", "", &[])).unwrap());
    let listed = Arc::new(Client::connect(fixture("listed", "", &["--extra-tools", "2"])).unwrap());
    let hub = Hub::default();
    let only_echo = outside
        .list_tools()
        .unwrap()
        .into_iter()
        .filter(|t| t.name == "echo")
        .collect::<Vec<_>>();
    hub.inject(
        vec![Arc::clone(&outside), Arc::clone(&listed)],
        vec![("outside".into(), only_echo)],
    );
    assert!(hub.is_initialized());
    assert_eq!(hub.connected_servers(), ["outside", "listed"]);
    let names: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
    // `outside` offers just the echo it was given, which collides with `listed`'s.
    assert!(names.contains(&"outside__echo".to_string()), "{names:?}");
    assert!(names.contains(&"listed__echo".to_string()));
    assert!(names.contains(&"gen_1".to_string()));
    assert!(!names.contains(&"outside__add".to_string()));
    let r = hub
        .call_tool("outside__echo", json!({"text": "hi"}))
        .unwrap();
    assert_eq!(r.text(), "hi");
    // An injected client's list_changed goes to its owner, who asks the Hub to refresh.
    listed
        .call_tool("add_tool", json!({"name": "later"}))
        .unwrap();
    assert!(!hub.tools().iter().any(|t| t.name == "later"));
    hub.refresh_tools("listed");
    assert_eq!(
        hub.call_tool("later", json!({"text": "now"}))
            .unwrap()
            .text(),
        "now"
    );
    hub.disconnect();
    assert!(outside.is_connected() && listed.is_connected());
    assert!(hub.tools().is_empty());
}

fn three() -> Vec<ServerConfig> {
    vec![
        fixture(
            "filesystem",
            "Read, write, and search local files and directories",
            &[],
        ),
        fixture(
            "github",
            "GitHub repos, issues, pull requests, code search",
            &[],
        ),
        fixture(
            "brew",
            "Install, update, and manage macOS packages via Homebrew",
            &[],
        ),
    ]
}

#[test]
fn discovery_connects_only_the_relevant_servers_on_the_first_run() {
    let hub = Hub::builder().servers(three()).discovery(true).build();
    let set = hub.resolve(&Run::new().query("install imagemagick"));
    assert_eq!(hub.connected_servers(), ["brew"]);
    assert_eq!(set.skipped, ["filesystem", "github"]);
    assert!(set.tools.iter().all(|t| t.server == "brew"));
    // Later runs keep what is connected and do not run discovery again.
    let later = hub.resolve(&Run::new().query("search github repos"));
    assert_eq!(hub.connected_servers(), ["brew"]);
    assert!(later.tools.iter().all(|t| t.server == "brew"));
}

#[test]
fn discovery_falls_back_to_every_server() {
    let hub = Hub::builder().servers(three()).discovery(true).build();
    hub.resolve(&Run::new().query("zzzz qqqq"));
    assert_eq!(hub.connected_servers(), ["filesystem", "github", "brew"]);
}

#[test]
fn discovery_waits_for_a_run_with_servers() {
    use mcp_blocking::hub::Setting;
    let hub = Hub::builder().servers(three()).discovery(true).build();
    let none = hub.resolve(
        &Run::new()
            .query("install imagemagick")
            .servers(Setting::None),
    );
    assert!(none.tools.is_empty());
    assert!(!hub.is_initialized());
    hub.resolve(&Run::new().query("open pull requests on github"));
    assert_eq!(hub.connected_servers(), ["github"]);
}
