//! Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, Node 22+) against
//! `examples/conformance_client.rs`:
//! - 0.1.16: the client scenarios `initialize`, `tools_call`, `elicitation-sep1034-client-defaults`
//!   and `sse-retry` must pass, and the `core` suite must match
//!   `tests/conformance-expected-failures.txt` exactly (no unlisted failure, no stale entry);
//! - 0.2.0-alpha.12: `--suite all` at `--spec-version 2025-11-25` (legacy era) and at
//!   `--spec-version 2026-07-28` (modern era; the client picks it from
//!   `MCP_CONFORMANCE_PROTOCOL_VERSION`) must match `tests/conformance-expected-failures-2025-11-25.yml`
//!   and `tests/conformance-expected-failures-2026-07-28.yml`;
//! - 0.1.16: the 14 `auth/*` scenarios and the `client-credentials` extensions pass with no warning;
//! - 0.2.0-alpha.12: every client scenario `conformance list --client` names that `--suite all`
//!   does not run passes with no warning: each extension at both eras, each 2025-03-26 scenario
//!   at 2025-03-26.
//!
//! The suites and their Node are installed under `target/peers/` on first use (see
//! `common/peers.rs`). The suite runs a `--suite` in parallel itself, and the test harness runs
//! these tests on parallel threads.
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::peers;

fn client_binary() -> PathBuf {
    // target/<profile>/deps/conformance-<hash> -> target/<profile>/examples/conformance_client
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target profile dir")
        .to_path_buf();
    let bin = profile_dir.join("examples").join("conformance_client");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target_dir = profile_dir.parent().expect("target dir");
        let status = Command::new(cargo)
            .args(["build", "--example", "conformance_client", "--target-dir"])
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build --example conformance_client");
        assert!(status.success(), "building the conformance client failed");
    }
    bin
}

struct Suite {
    cli: PathBuf,
    client: PathBuf,
}

impl Suite {
    fn new() -> Suite {
        Suite::of(peers::CONFORMANCE)
    }

    /// The suite of the npm package `package` (see `peers::NPM_PACKAGES`).
    fn of(package: &str) -> Suite {
        Suite {
            cli: peers::npm().entry(package),
            client: client_binary(),
        }
    }

    fn run(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(peers::node())
            .arg(&self.cli)
            .arg("client")
            .arg("--command")
            .arg(&self.client)
            .args(args)
            .env("PATH", peers::path_with_node())
            .output()
            .expect("run the conformance suite");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

#[test]
fn client_scenarios_pass() {
    let suite = Suite::new();
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ] {
        let (ok, out) = suite.run(&["--scenario", scenario]);
        assert!(
            ok && out.contains("OVERALL: PASSED") && out.contains("0 failed, 0 warnings"),
            "scenario {scenario} failed:\n{out}"
        );
    }
}

#[test]
fn core_suite_matches_the_expected_failures() {
    let suite = Suite::new();
    let baseline = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance-expected-failures.txt"
    );
    let (ok, out) = suite.run(&["--suite", "core", "--expected-failures", baseline]);
    assert!(ok, "the core suite does not match {baseline}:\n{out}");
    assert!(out.contains("all failures are expected"), "{out}");
}

#[test]
fn auth_scenarios_pass_without_warnings() {
    let suite = Suite::new();
    let (ok, out) = suite.run(&["--suite", "auth"]);
    assert!(
        ok && out.contains("0 failed, 0 warnings") && !out.contains("\u{2717}"),
        "the auth suite failed:\n{out}"
    );
}

/// Runs alpha.12's `--suite all` at `spec_version` against its expected-failures file.
fn alpha_suite_matches_its_expected_failures(spec_version: &str) {
    let suite = Suite::of(peers::CONFORMANCE_NEXT);
    let baseline = format!(
        "{}/tests/conformance-expected-failures-{spec_version}.yml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out) = suite.run(&[
        "--suite",
        "all",
        "--spec-version",
        spec_version,
        "--expected-failures",
        &baseline,
    ]);
    assert!(
        ok,
        "`--suite all --spec-version {spec_version}` does not match {baseline}:\n{out}"
    );
    assert!(
        out.contains("all failures are expected") || out.contains("0 failed"),
        "{out}"
    );
}

#[test]
fn client_credentials_extensions_pass() {
    let suite = Suite::new();
    for scenario in [
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
    ] {
        let (ok, out) = suite.run(&["--scenario", scenario]);
        assert!(
            ok && out.contains("OVERALL: PASSED") && out.contains("0 failed, 0 warnings"),
            "scenario {scenario} failed:\n{out}"
        );
    }
}

#[test]
fn alpha_suite_matches_the_expected_failures_at_2025_11_25() {
    alpha_suite_matches_its_expected_failures("2025-11-25");
}

#[test]
fn alpha_suite_matches_the_expected_failures_at_2026_07_28() {
    alpha_suite_matches_its_expected_failures("2026-07-28");
}

/// The two eras `--suite all` runs at (see the expected-failures files).
const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// The client scenarios alpha.12 lists (`conformance list --client`), each with its tags: the
/// spec versions it applies to, or `extension`.
fn listed_client_scenarios(suite: &Suite) -> Vec<(String, Vec<String>)> {
    let out = Command::new(peers::node())
        .arg(&suite.cli)
        .args(["list", "--client"])
        .env("PATH", peers::path_with_node())
        .output()
        .expect("list the conformance scenarios");
    assert!(out.status.success(), "conformance list --client failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| match l.split_once(" [") {
            Some((name, tags)) => (
                name.to_owned(),
                tags.trim_end_matches(']')
                    .split(',')
                    .map(|t| t.trim().to_owned())
                    .collect(),
            ),
            None => (l.to_owned(), Vec::new()),
        })
        .collect()
}

/// Every client scenario alpha.12 lists that `--suite all` at the two eras does not run passes,
/// with no failure and no warning: each extension (DPoP, workload identity, enterprise-managed
/// authorization, client credentials, skills) at both eras (`--force`: the suite skips
/// extensions otherwise), and each scenario of an older version only (the 2025-03-26 OAuth
/// back-compat ones) at the versions it lists. Together with the two `--suite all` tests and
/// their empty expected-failures files, no listed client scenario goes unrun.
#[test]
fn every_client_scenario_outside_the_suites_passes() {
    let suite = Suite::of(peers::CONFORMANCE_NEXT);
    let listed = listed_client_scenarios(&suite);
    let mut runs: Vec<(String, String, bool)> = Vec::new();
    for (name, tags) in &listed {
        if tags.iter().any(|t| t == "extension") {
            for era in ERAS {
                runs.push((name.clone(), era.to_owned(), true));
            }
        } else if !tags.iter().any(|t| ERAS.contains(&t.as_str())) {
            for version in tags {
                runs.push((name.clone(), version.clone(), false));
            }
        }
    }
    // The list was read: the scenarios this client is known to need are in it.
    for wanted in [
        "auth/dpop",
        "auth/dpop-nonce",
        "auth/wif-jwt-bearer",
        "auth/enterprise-managed-authorization",
        "sep-2640-client-verify-digest",
        "auth/2025-03-26-oauth-endpoint-fallback",
    ] {
        assert!(
            runs.iter().any(|(n, _, _)| n == wanted),
            "{wanted} is not among the scenarios to run: {listed:?}"
        );
    }
    // A few at a time: each scenario starts its own servers and the client.
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, version, force)) = runs.get(i) else {
                    break;
                };
                let mut args = vec!["--scenario", name, "--spec-version", version];
                if *force {
                    args.push("--force");
                }
                let (ok, out) = suite.run(&args);
                if !(ok && out.contains("OVERALL: PASSED") && out.contains("0 failed, 0 warnings"))
                {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{name} at {version}:\n{out}"));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}
