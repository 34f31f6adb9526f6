//! The fixture server the tests spawn: the example `mcp-fixture-server` (`examples/fixture_server.rs`,
//! which serves the `mcp-fixture-server` crate under `fixtures/server/`).
//!
//! Cargo gives tests the paths of the package's binaries (`CARGO_BIN_EXE_*`), not of its
//! examples, so the path is worked out from the test executable: tests live in
//! `<target>/<profile>/deps/`, examples in `<target>/<profile>/examples/`.
//!
//! Which commands build it: a plain `cargo test` (whatever the features) builds every example,
//! as a program, before it runs any test, so the README's `cargo test --all-features` needs
//! nothing built beforehand. A filtered run such as `cargo test --test stdio_client` builds only
//! that test (and `cargo test --example mcp-fixture-server` builds the example as a test harness,
//! not as the program); when the program was never built, [`path`] panics naming the command to
//! run first: `cargo build --example mcp-fixture-server`.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of the fixture server executable, as a string for `ServerConfig::stdio`.
///
/// # Panics
/// When it has not been built (see the module documentation).
pub fn path() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("the path of the test executable");
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("the test executable is in <target>/<profile>/deps/");
        let path: PathBuf = profile_dir.join("examples").join(format!(
            "mcp-fixture-server{}",
            std::env::consts::EXE_SUFFIX
        ));
        assert!(
            path.is_file(),
            "the fixture server {} is missing: run `cargo build --example mcp-fixture-server` \
             first (a plain `cargo test` builds it; `cargo test --test NAME` does not)",
            path.display()
        );
        path.to_string_lossy().into_owned()
    })
}
