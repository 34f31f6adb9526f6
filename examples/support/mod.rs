//! Shared by the examples: where the bundled fixture server is.

/// The fixture server binary, which Cargo builds alongside the examples (same target directory).
///
/// # Errors
/// When it has not been built (run `cargo build --bin mcp-fixture-server`).
pub fn fixture_server_path() -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|p| p.parent())
        .ok_or("no target directory")?;
    let path = dir.join(format!(
        "mcp-fixture-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    if !path.exists() {
        return Err(format!(
            "{} is missing: run `cargo build --bin mcp-fixture-server` first",
            path.display()
        )
        .into());
    }
    Ok(path)
}

/// [`fixture_server_path`] as a string, for benchmarks (which stop when it is missing).
#[allow(dead_code, reason = "only the benchmarks use it")]
pub fn fixture() -> String {
    match fixture_server_path() {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => panic!("{e}"),
    }
}
