//! Config files are untrusted data: what one can make the loader read and build is bounded
//! (`InputLimits`), every value is checked at load time with its key path, and no input makes
//! the loader panic, hang or grow without bound (property tests over random and mutated files).
//!
//! The property tests run `MCP_FUZZ_CASES` cases per target (default 2,000) from the seed
//! `MCP_FUZZ_SEED` (default fixed); a failing case prints its seed, case number and input.

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_blocking::config::{
    ConfigError, ConfigErrorKind, HttpConfig, InputLimits, Template, TransportConfig,
};
use mcp_blocking::{ConfigLoader, ServerConfig};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A strict loader with an empty environment.
fn strict() -> ConfigLoader {
    ConfigLoader::new().with_env(BTreeMap::new()).strict(true)
}

/// A fresh directory under the system temp dir for this test.
fn temp_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("mcp-config-untrusted-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The error's text after the file name, which must lead it.
fn message_after_file(err: &ConfigError, path: &Path) -> String {
    assert_eq!(err.file.as_deref(), Some(path), "{err}");
    let shown = err.to_string();
    let prefix = format!("{}: ", path.display());
    shown
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{shown}"))
        .to_owned()
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

const MEMORY_CHILD: &str = "MCP_CONFIG_MEMORY_CHILD";

/// The peak resident set of this process (`VmHWM`; the peak working set on Windows), in KiB.
fn vm_hwm_kib() -> u64 {
    common::memory::resident().peak / 1024
}

/// In a child process (so that no other test's memory counts): loads the fixture named by
/// [`MEMORY_CHILD`], checks the error, and prints how much the peak resident set grew.
fn memory_child(name: &str) {
    // Warm up the allocator and the loader's code on a small file first.
    strict().load(fixture("robotlab.yaml")).unwrap();
    let before = vm_hwm_kib();
    let path = fixture(name);
    let start = Instant::now();
    let err = strict().load(&path).unwrap_err();
    let elapsed = start.elapsed();
    let grown = vm_hwm_kib().saturating_sub(before);
    assert_eq!(err.kind, ConfigErrorKind::TooLarge, "{err}");
    println!(
        "MEASURED grown_kib={grown} elapsed_us={} error={err}",
        elapsed.as_micros()
    );
}

/// Runs [`memory_child`] for `name` in a child process; returns the growth in KiB, the time taken
/// and the error's text.
fn measure_in_child(name: &str) -> (u64, Duration, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "billion_laughs_is_stopped_in_bounded_time_and_memory",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MEMORY_CHILD, name)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("MEASURED ").map(|(_, m)| m))
        .unwrap_or_else(|| panic!("no measurement in {stdout}"));
    let field = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap()
            .parse()
            .unwrap()
    };
    let error = line.split_once("error=").unwrap().1.to_owned();
    (
        field("grown_kib="),
        Duration::from_micros(field("elapsed_us=")),
        error,
    )
}

/// Ten levels of nine aliases (billions of nodes once expanded) in a key no server reads, and
/// six levels: a typed error, fast, with the peak resident set grown by less than 50 MB.
#[test]
fn billion_laughs_is_stopped_in_bounded_time_and_memory() {
    if let Ok(name) = std::env::var(MEMORY_CHILD) {
        memory_child(&name);
        return;
    }
    // Both stop at the sixth level, where the count passes 100,000.
    for (name, line) in [
        ("broken/billion_laughs.yaml", 12),
        ("broken/billion_laughs_6.yaml", 12),
    ] {
        let (grown_kib, elapsed, error) = measure_in_child(name);
        assert!(grown_kib < 50 * 1024, "{name}: grew {grown_kib} KiB");
        assert!(elapsed < Duration::from_secs(1), "{name}: took {elapsed:?}");
        let path = fixture(name);
        assert_eq!(
            error,
            format!(
                "{}: document has more nodes than the `max_nodes` input limit (100000), counting \
                 keys and YAML aliases expanded, at line {line} column 12",
                path.display()
            ),
            "{name}"
        );
    }
}

#[test]
fn billion_laughs_fails_the_same_way_in_every_entry_point() {
    let text = std::fs::read_to_string(fixture("broken/billion_laughs.yaml")).unwrap();
    let err = strict().load_str(&text).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    // Lenient mode too: the document as a whole is refused.
    let err = ConfigLoader::new().load_str(&text).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    // In template front matter.
    let template = format!("---\n{text}---\nbody\n");
    let err = Template::parse(&template).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert!(
        err.message.contains("`max_nodes` input limit (100000)"),
        "{err}"
    );
}

#[test]
fn aliases_within_the_limit_still_load() {
    let text = "defaults: &fs {command: mcp-fs, args: [--root, /data]}\n\
                mcpServers:\n  a: *fs\n  b: *fs\n";
    let r = strict().load_str(text).unwrap();
    assert_eq!(r.servers.len(), 2);
    assert_eq!(r.servers[1].command(), Some("mcp-fs"));
    // The same file with a node limit just under its expanded size: the root and its 2 keys,
    // the anchored mapping (7 nodes), and `mcpServers` (1 + 2 keys + 2 aliases of 7 nodes): 27.
    let limits = InputLimits::default().with_max_nodes(26);
    let err = strict()
        .with_input_limits(limits)
        .load_str(text)
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert!(strict()
        .with_input_limits(limits.with_max_nodes(27))
        .load_str(text)
        .is_ok());
}

#[test]
fn aliased_text_is_bounded_too() {
    // A few aliases of a long string: few nodes, much text.
    let long = "x".repeat(1000);
    let text = format!(
        "s: &s {long}\nl: &l [*s, *s, *s, *s, *s, *s, *s, *s]\nm: [*l, *l, *l, *l, *l, *l, *l, *l]\nmcpServers: {{}}\n"
    );
    let limits = InputLimits::default().with_max_file_bytes(50_000);
    let err = strict()
        .with_input_limits(limits)
        .load_str(&text)
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert_eq!(
        err.message,
        "document holds more text than the `max_file_bytes` input limit (50000 bytes) once YAML \
         aliases are expanded, at line 3 column 25"
    );
}

#[test]
fn deep_nesting_is_a_typed_error() {
    for (name, at) in [
        ("broken/too_deep.json", "line 1 column 110"),
        ("broken/too_deep.yaml", "line 2 column 67"),
    ] {
        let path = fixture(name);
        let err = strict().load(&path).unwrap_err();
        assert_eq!(err.kind, ConfigErrorKind::TooDeep, "{err}");
        assert_eq!(
            message_after_file(&err, &path),
            format!(
                "document is nested deeper than the `max_depth` input limit (64 levels), at {at}"
            )
        );
    }
    // Past the JSON parser's own limit, with the limit raised as far as it goes.
    let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
    let loader = strict().with_input_limits(InputLimits::default().with_max_depth(usize::MAX));
    let err = loader.load_str(&deep).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooDeep);
    assert!(err.message.contains("(127 levels)"), "{err}");
    // Deep YAML block nesting, and in front matter.
    let mut yaml = String::new();
    for i in 0..100 {
        yaml += &format!("{}k{i}:\n", " ".repeat(i));
    }
    assert_eq!(
        strict().load_str(&yaml).unwrap_err().kind,
        ConfigErrorKind::TooDeep
    );
    let err = Template::parse(&format!("---\n{yaml}---\n")).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooDeep);
}

#[test]
fn an_endless_file_is_read_no_further_than_the_limit() {
    // `/dev/zero` never ends: the loader reads one byte past the limit and stops.
    let path = Path::new("/dev/zero");
    let start = Instant::now();
    let err = strict().load(path).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert_eq!(
        err.to_string(),
        "/dev/zero: file is larger than the `max_file_bytes` input limit (4194304 bytes)"
    );
    let err = strict().load_template(path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
}

#[test]
fn the_file_limit_is_exact_and_applies_to_text_and_env_files() {
    let dir = temp_dir("size");
    let text = r#"{"mcpServers": {"fs": {"command": "mcp-fs", "envFile": "big.env"}}}"#;
    let path = dir.join("mcp.json");
    std::fs::write(&path, text).unwrap();
    std::fs::write(dir.join("big.env"), "A=1\n").unwrap();
    let exact = InputLimits::default().with_max_file_bytes(text.len());
    assert!(strict().with_input_limits(exact).load(&path).is_ok());
    let under = exact.with_max_file_bytes(text.len() - 1);
    let err = strict().with_input_limits(under).load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert_eq!(
        message_after_file(&err, &path),
        format!(
            "file is larger than the `max_file_bytes` input limit ({} bytes)",
            text.len() - 1
        )
    );
    let err = strict()
        .with_input_limits(under)
        .load_str(text)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "text is larger than the `max_file_bytes` input limit ({} bytes)",
            text.len() - 1
        )
    );
    // An env file over the limit.
    std::fs::write(dir.join("big.env"), "A=1\n".repeat(100)).unwrap();
    let err = strict().with_input_limits(exact).load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert_eq!(
        message_after_file(&err, &path),
        format!(
            "server `fs`: mcpServers.fs.envFile: env file `big.env` is larger than the \
             `max_file_bytes` input limit ({} bytes)",
            text.len()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn interpolation_cannot_blow_up() {
    // A 64 KiB variable named 100 times: 6.4 MB of values from a 1 KB file.
    let big = "v".repeat(64 * 1024);
    let env = BTreeMap::from([("BIG".to_owned(), big)]);
    let args: Vec<String> = (0..100).map(|_| "\"${BIG}\"".to_owned()).collect();
    let text = format!(
        r#"{{"mcpServers": {{"fs": {{"command": "mcp-fs", "args": [{}]}}}}}}"#,
        args.join(", ")
    );
    let loader = ConfigLoader::new().with_env(env.clone()).strict(true);
    let err = loader.load_str(&text).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
    assert_eq!(
        err.to_string(),
        "server `fs`: mcpServers.fs.args[63]: values grow past the `max_file_bytes` input limit \
         (4194304 bytes) once `${...}` variables are expanded"
    );
    // The budget is for one load: the same file with fewer references loads.
    let few = text.replacen("\"${BIG}\", ", "", 90);
    let r = loader.load_str(&few).unwrap();
    let TransportConfig::Stdio(s) = r.servers[0].transport() else {
        panic!()
    };
    assert_eq!(s.args.len(), 10);
    // Defaults are not expanded again: `${A:-${B:-${C}}}` cannot nest.
    let nested = r#"{"mcpServers": {"fs": {"command": "x", "args": ["${A:-${B:-${C}}}"]}}}"#;
    let r = strict().load_str(nested).unwrap();
    let TransportConfig::Stdio(s) = r.servers[0].transport() else {
        panic!()
    };
    assert_eq!(s.args, ["${B:-${C}}"]);
}

// ---------------------------------------------------------------------------------------------
// Values checked at load time, and by `ServerConfig::validate`
// ---------------------------------------------------------------------------------------------

fn load_err(text: &str) -> ConfigError {
    strict().load_str(text).unwrap_err()
}

#[test]
fn a_url_that_does_not_parse_fails_at_load() {
    let path = fixture("broken/url_no_bracket.json");
    let err = strict().load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    assert_eq!(
        message_after_file(&err, &path),
        "server `api`: mcpServers.api.url: streamable-http url `http://[::1` is not a valid URL: \
         invalid authority"
    );
    for (url, why) in [
        ("http:///mcp", "is not a valid URL: invalid format"),
        ("http://", "is not a valid URL: empty string"),
        (
            "http://exa mple.com/",
            "is not a valid URL: invalid uri character",
        ),
        ("http://h:99999/", "has an invalid port `99999`"),
        ("http://h:abc/", "has an invalid port `abc`"),
        ("http://[::1]:x/", "has an invalid port `x`"),
    ] {
        let text = format!(r#"{{"mcpServers": {{"api": {{"type": "sse", "url": "{url}"}}}}}}"#);
        let err = load_err(&text);
        assert_eq!(err.kind, ConfigErrorKind::InvalidUrl, "{url}");
        assert_eq!(
            err.to_string(),
            format!("server `api`: mcpServers.api.url: sse url `{url}` {why}")
        );
    }
    for url in [
        "http://[::1]:8080/mcp",
        "https://user@h:443/x?y=1",
        "http://h:/x",
        "HTTPS://Example.COM",
    ] {
        let text = format!(r#"{{"mcpServers": {{"api": {{"url": "{url}"}}}}}}"#);
        assert!(strict().load_str(&text).is_ok(), "{url}");
    }
}

#[test]
fn a_url_error_never_shows_a_password_or_query() {
    let err =
        load_err(r#"{"mcpServers": {"api": {"url": "http://u:pw-s3cret@[::1/x?key=q-s3cret"}}}"#);
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn validate_checks_urls_of_configs_built_in_code() {
    let err = ServerConfig::http("api", "http://[::1")
        .validate()
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    assert_eq!(
        err.to_string(),
        "server `api`: transport.url: streamable-http url `http://[::1` is not a valid URL: invalid authority"
    );
    let err = ServerConfig::websocket("w", "ws://:80/")
        .validate()
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    // `ServerConfig::new` validates too.
    let http = HttpConfig::new("http://[::1");
    let err = ServerConfig::new("api", TransportConfig::StreamableHttp(http)).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    assert!(ServerConfig::http("api", "http://[::1]:9/")
        .validate()
        .is_ok());
}

#[test]
fn environment_variables_are_checked() {
    let path = fixture("broken/env_name.json");
    let err = strict().load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert_eq!(
        message_after_file(&err, &path),
        "server `fs`: mcpServers.fs.env.API_KEY=x: environment variable name `API_KEY=x` contains `=`"
    );
    let cases = [
        (
            r#"{"": "1"}"#,
            "mcpServers.fs.env: an environment variable name is empty",
        ),
        (
            r#"{"A\u0000B": "1"}"#,
            "mcpServers.fs.env.A\\0B: environment variable name `A\\0B` contains a NUL byte",
        ),
        (
            r#"{"KEY": "k-s3cret\u0000"}"#,
            "mcpServers.fs.env.KEY: the value of environment variable `KEY` contains a NUL byte",
        ),
    ];
    for (env, expected) in cases {
        let text = format!(r#"{{"mcpServers": {{"fs": {{"command": "x", "env": {env}}}}}}}"#);
        let err = load_err(&text);
        assert_eq!(err.kind, ConfigErrorKind::InvalidValue, "{env}");
        assert_eq!(err.to_string(), format!("server `fs`: {expected}"));
    }
    // A NUL byte reached through a variable is caught too, and its value is not shown.
    let env = BTreeMap::from([("TOKEN".to_owned(), "t-s3cret\0".to_owned())]);
    let text = r#"{"mcpServers": {"fs": {"command": "x", "env": {"T": "${TOKEN}"}}}}"#;
    let err = ConfigLoader::new()
        .with_env(env)
        .strict(true)
        .load_str(text)
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert!(!format!("{err} {err:?}").contains("s3cret"));
    // In code.
    for (name, value) in [("", "1"), ("A=B", "1"), ("A\0", "1"), ("A", "v\0")] {
        let err = ServerConfig::stdio("fs", "x")
            .with_env(name, value)
            .validate()
            .unwrap_err();
        assert_eq!(err.kind, ConfigErrorKind::InvalidValue, "{name:?}");
        assert!(err.path.starts_with("transport.env"), "{err}");
    }
}

#[test]
fn env_file_lines_are_checked() {
    let dir = temp_dir("envfile");
    std::fs::write(dir.join("a.env"), "OK=1\nBAD\0NAME=2\n").unwrap();
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {"fs": {"command": "x", "envFile": "a.env"}}}"#,
    )
    .unwrap();
    let err = strict().load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::EnvFile);
    assert_eq!(
        message_after_file(&err, &path),
        "server `fs`: mcpServers.fs.envFile: env file `a.env` line 2: environment variable name \
         `BAD\\0NAME` contains a NUL byte"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nul_bytes_in_what_reaches_the_operating_system_are_errors() {
    let path = fixture("broken/nul_byte.json");
    let err = strict().load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert_eq!(
        message_after_file(&err, &path),
        "server `fs`: mcpServers.fs.args[1]: an argument contains a NUL byte"
    );
    let err = load_err(
        r#"{"mcp": [{"name": "fs", "transport": {"type": "stdio", "command": "a\u0000"}}]}"#,
    );
    assert_eq!(
        err.to_string(),
        "server `fs`: mcp[0].transport.command: the command contains a NUL byte"
    );
    let err = load_err(r#"{"mcpServers": {"fs": {"command": "a", "cwd": "/t\u0000mp"}}}"#);
    assert_eq!(
        err.to_string(),
        "server `fs`: mcpServers.fs.cwd: the working directory contains a NUL byte"
    );
    // In code.
    let err = ServerConfig::stdio("fs", "x")
        .with_args(["a", "b\0"])
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "server `fs`: transport.args[1]: an argument contains a NUL byte"
    );
    let err = ServerConfig::stdio("fs", "x\0").validate().unwrap_err();
    assert_eq!(err.path, "transport.command");
    let err = ServerConfig::stdio("fs", "x")
        .with_cwd("/a\0")
        .validate()
        .unwrap_err();
    assert_eq!(err.path, "transport.cwd");
}

#[test]
fn header_and_session_values_are_checked() {
    let err =
        load_err(r#"{"mcpServers": {"api": {"url": "http://h", "headers": {"X-Key": "a\nb"}}}}"#);
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert_eq!(err.path, "mcpServers.api.headers.X-Key");
    let err = load_err(
        r#"{"mcpServers": {"api": {"type": "http", "url": "http://h", "session_id": "s\r\nX: y"}}}"#,
    );
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert_eq!(
        err.to_string(),
        "server `api`: mcpServers.api.session_id: the session id is not a valid HTTP header value \
         (line breaks and control characters are not allowed)"
    );
    let err = ServerConfig::http("api", "http://h")
        .with_session_id("a\nb")
        .validate()
        .unwrap_err();
    assert_eq!(err.path, "transport.session_id");
}

// ---------------------------------------------------------------------------------------------
// Regressions: cases the property tests found, kept by name
// ---------------------------------------------------------------------------------------------

/// Found by `fuzz_whole_loader_with_mutated_fixtures` (50,000 cases): a variable expanded
/// into a url with a bad scheme showed its value in the error message.
#[test]
fn regression_a_variable_in_a_bad_url_is_not_shown() {
    let env = BTreeMap::from([("SECRET".to_owned(), SECRET.to_owned())]);
    let text = r#"{"mcpServers": {"api": {"url": "h${SECRET}ttps://x.example.com/mcp"}}}"#;
    let err = ConfigLoader::new()
        .with_env(env.clone())
        .strict(true)
        .load_str(text)
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::InvalidUrl);
    assert_eq!(
        err.to_string(),
        "server `api`: mcpServers.api.url: streamable-http url must start with http:// or \
         https://, found `h<redacted>ttps://x.example.com/mcp`"
    );
    check_error(&err);
    // The same through a url that does not parse.
    let text = r#"{"mcpServers": {"api": {"url": "http://[${SECRET}"}}}"#;
    let err = ConfigLoader::new()
        .with_env(env)
        .strict(true)
        .load_str(text)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "server `api`: mcpServers.api.url: streamable-http url `http://[<redacted>` is not a \
         valid URL: invalid authority"
    );
}

// ---------------------------------------------------------------------------------------------
// Property tests: random and mutated config files through the whole loader
// ---------------------------------------------------------------------------------------------

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03 | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn cases() -> usize {
    std::env::var("MCP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn seed() -> u64 {
    std::env::var("MCP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00c0_ffee_5eed_1234)
}

/// Pieces that mean something to one of the parsers.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "'",
    "\\",
    "\n",
    "\r\n",
    "\t",
    " ",
    "  ",
    "- ",
    "? ",
    "&a ",
    "&b ",
    "*a",
    "*b",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!null ",
    "!tag ",
    "---\n",
    "...\n",
    "%YAML 1.2\n",
    "%TAG ! tag:x,2000:\n",
    "|\n",
    ">-\n",
    "#",
    "//",
    "/*",
    "*/",
    "${",
    "${SECRET}",
    "${NOPE}",
    "${A:-",
    ":-",
    "${env:SECRET}",
    "${input:tok}",
    "$${",
    "${workspaceFolder}",
    "\\u0000",
    "\u{0}",
    "\u{feff}",
    "é",
    "\u{1F600}",
    "=",
    "mcpServers",
    "servers",
    "mcp",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "type",
    "transport",
    "timeout",
    "name",
    "disabled",
    "session_id",
    "stdio",
    "http",
    "sse",
    "ws",
    "http://[::1",
    "http://h:99999",
    "ws://h",
    "https://u:p@h/x?q",
    "0",
    "-1",
    "1e400",
    ".nan",
    "5000",
    "true",
    "null",
    "~",
    "<<: ",
    "\"x\": ",
    "A=B",
    "\u{7f}",
];

/// The environment the fuzzed loads see; its values must never show in an error or `Debug`.
const SECRET: &str = "s3cret-value-0451";

fn loaders() -> [ConfigLoader; 2] {
    let env = BTreeMap::from([
        ("SECRET".to_owned(), SECRET.to_owned()),
        ("A".to_owned(), String::new()),
    ]);
    let inputs = BTreeMap::from([("tok".to_owned(), SECRET.to_owned())]);
    let base = ConfigLoader::new().with_env(env).with_inputs(inputs);
    let small = InputLimits::default()
        .with_max_file_bytes(8 * 1024)
        .with_max_nodes(2_000)
        .with_max_depth(12);
    [base.clone(), base.with_input_limits(small)]
}

/// The corpus mutations start from: every config fixture.
fn corpus() -> Vec<Vec<u8>> {
    let mut files = vec![
        fixture("mcp.json"),
        fixture("claude_desktop_config.json"),
        fixture("robotlab.yaml"),
        fixture("hosted_mcp.json"),
        fixture("github_assistant.md"),
        fixture("vscode/.vscode/mcp.json"),
    ];
    let mut broken: Vec<PathBuf> = std::fs::read_dir(fixture("broken"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().contains("billion_laughs"))
        .collect();
    broken.sort();
    files.extend(broken);
    files
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// One to eight random edits of `bytes`.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(6) {
            0 if !bytes.is_empty() => {
                let at = at.min(bytes.len() - 1);
                bytes[at] = rng.next() as u8;
            }
            1 => {
                let end = (at + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(64)).min(bytes.len());
                let piece = bytes[at..end].to_vec();
                let to = rng.below(bytes.len() + 1);
                bytes.splice(to..to, piece);
            }
            3 => bytes.truncate(at),
            _ => {
                let token = rng.pick(TOKENS).as_bytes();
                bytes.splice(at..at, token.iter().copied());
            }
        }
    }
}

/// A file made of random tokens and bytes.
fn random_file(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(120) {
        if rng.below(8) == 0 {
            out.push(rng.next() as u8);
        } else {
            out.extend_from_slice(rng.pick(TOKENS).as_bytes());
        }
    }
    out
}

/// What must hold of any load, whatever the input.
fn check_result(result: Result<mcp_blocking::config::LoadReport, ConfigError>, input: &str) {
    match result {
        Ok(report) => {
            for s in &report.servers {
                // What the loader accepts passes validation, and reloads from its JSON.
                s.validate()
                    .unwrap_or_else(|e| panic!("loaded server fails validate: {e}\n{input:?}"));
                let again = ServerConfig::from_value(&s.to_json())
                    .unwrap_or_else(|e| panic!("to_json does not reload: {e}\n{input:?}"));
                assert_eq!(&again, s, "{input:?}");
                assert!(!format!("{s:?}").contains(SECRET), "{s:?}");
            }
            for e in &report.errors {
                check_error(e);
            }
        }
        Err(e) => check_error(&e),
    }
}

fn check_error(e: &ConfigError) {
    let shown = format!("{e} {e:?}");
    assert!(!e.message.is_empty());
    assert!(!shown.contains(SECRET), "{shown}");
}

/// Runs `cases()` cases of `one`, each within `per_case`; a panic names the case and its input.
fn fuzz(
    target: &str,
    per_case: Duration,
    mut one: impl FnMut(&mut Rng) -> Vec<u8>,
    mut run: impl FnMut(&[u8]),
) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    for case in 0..cases() {
        let input = one(&mut rng);
        let t = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| run(&input)));
        let took = t.elapsed();
        if outcome.is_err() || took > per_case {
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join(format!("{target}-{seed}-{case}.bin"));
            std::fs::write(&file, &input).unwrap();
            panic!(
                "{target}: case {case} (seed {seed}) {} after {took:?}; input saved to {}: {:?}",
                if outcome.is_err() {
                    "panicked"
                } else {
                    "was too slow"
                },
                file.display(),
                String::from_utf8_lossy(&input)
            );
        }
    }
    eprintln!("{target}: {} cases in {:?}", cases(), start.elapsed());
}

#[test]
fn fuzz_whole_loader_with_mutated_fixtures() {
    let corpus = corpus();
    let loaders = loaders();
    fuzz(
        "loader-mutated",
        Duration::from_secs(2),
        |rng| {
            let mut bytes = rng.pick(&corpus).clone();
            mutate(rng, &mut bytes);
            bytes
        },
        |bytes| {
            let text = String::from_utf8_lossy(bytes);
            for loader in &loaders {
                check_result(loader.load_str(&text), &text);
                check_result(loader.clone().strict(true).load_str(&text), &text);
            }
            let _ = Template::parse(&text).map_err(|e| check_error(&e));
        },
    );
}

#[test]
fn fuzz_whole_loader_with_random_files() {
    let loaders = loaders();
    let dir = temp_dir("fuzz");
    let mut n = 0;
    fuzz(
        "loader-random",
        Duration::from_secs(2),
        random_file,
        |bytes| {
            let text = String::from_utf8_lossy(bytes);
            for loader in &loaders {
                check_result(loader.load_str(&text), &text);
            }
            // Raw bytes (maybe not UTF-8) through a file, as JSON, YAML and sniffed.
            n += 1;
            let ext = ["json", "yaml", "conf"][n % 3];
            let path = dir.join(format!("c{n}.{ext}"));
            std::fs::write(&path, bytes).unwrap();
            check_result(loaders[0].load(&path), &text);
            std::fs::remove_file(&path).unwrap();
        },
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Random alias graphs: any shape of anchors and aliases loads within the limits or fails with
/// `TooLarge` / `TooDeep`, fast.
#[test]
fn fuzz_alias_graphs() {
    let limits = InputLimits::default()
        .with_max_nodes(5_000)
        .with_max_depth(16);
    let loader = strict().with_input_limits(limits);
    fuzz(
        "alias-graphs",
        Duration::from_millis(500),
        |rng| {
            let levels = 1 + rng.below(12);
            let mut out = String::from("x:\n");
            for i in 0..levels {
                let width = 1 + rng.below(12);
                let items: Vec<String> = (0..width)
                    .map(|_| match (i, rng.below(4)) {
                        (0, _) | (_, 0) => "s".to_owned(),
                        (_, 1) => format!("{{k: *a{}}}", rng.below(i)),
                        _ => format!("*a{}", rng.below(i)),
                    })
                    .collect();
                out += &format!("  a{i}: &a{i} [{}]\n", items.join(", "));
            }
            out += "mcpServers: {fs: {command: x}}\n";
            out.into_bytes()
        },
        |bytes| {
            let text = std::str::from_utf8(bytes).unwrap();
            match loader.load_str(text) {
                Ok(r) => assert_eq!(r.servers.len(), 1),
                Err(e) => assert!(
                    matches!(e.kind, ConfigErrorKind::TooLarge | ConfigErrorKind::TooDeep),
                    "{e}\n{text}"
                ),
            }
        },
    );
}
