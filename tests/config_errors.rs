//! One broken fixture per configuration error class: each loads to the exact message expected.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_blocking::config::{ConfigError, ConfigErrorKind, HostedMcpServer};
use mcp_blocking::ConfigLoader;

/// The system's text for a missing file (`ENOENT` on Unix, `ERROR_FILE_NOT_FOUND` on Windows,
/// both 2), as an error quotes it: "No such file or directory (os error 2)" on Linux.
fn not_found() -> String {
    std::io::Error::from_raw_os_error(2).to_string()
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/broken")
        .join(name)
}

/// Loads a broken fixture strictly with an empty environment; checks the kind and the message
/// (after the file name, which must lead it).
fn check(name: &str, kind: ConfigErrorKind, message: &str) {
    let path = fixture(name);
    let loader = ConfigLoader::new().with_env(BTreeMap::new()).strict(true);
    let err: ConfigError = if name.ends_with(".md") {
        loader.load_template(&path).unwrap_err()
    } else {
        loader.load(&path).unwrap_err()
    };
    assert_eq!(err.kind, kind, "{err}");
    assert_eq!(err.file.as_deref(), Some(path.as_path()));
    let shown = err.to_string();
    let prefix = format!("{}: ", path.display());
    assert_eq!(shown.strip_prefix(&prefix), Some(message), "{shown}");
}

#[test]
fn invalid_json() {
    check(
        "syntax.json",
        ConfigErrorKind::Syntax,
        "invalid JSON: EOF while parsing an object at line 2 column 0",
    );
}

#[test]
fn invalid_yaml() {
    check(
        "syntax.yaml",
        ConfigErrorKind::Syntax,
        "invalid YAML: while parsing a flow sequence, expected ',' or ']' at byte 42 line 4 column 1",
    );
}

#[test]
fn unknown_top_level_key() {
    check(
        "unknown_format.json",
        ConfigErrorKind::UnknownFormat,
        "no MCP servers found: expected a top-level `mcpServers` map, `servers` map or `mcp` list (did you mean `mcpServers`?)",
    );
}

#[test]
fn unknown_key() {
    check(
        "unknown_key.json",
        ConfigErrorKind::UnknownKey,
        "server `fs`: mcpServers.fs.comand: unknown key `comand` (did you mean `command`?)",
    );
}

#[test]
fn wrong_type() {
    check(
        "wrong_type.json",
        ConfigErrorKind::WrongType,
        "server `fs`: mcpServers.fs.args: expected a list of strings, found a string",
    );
}

#[test]
fn missing_command_and_url() {
    check(
        "missing_field.json",
        ConfigErrorKind::MissingField,
        "server `fs`: mcpServers.fs: neither `command` nor `url` given; a server needs one",
    );
}

#[test]
fn unknown_transport_type() {
    check(
        "unknown_transport.json",
        ConfigErrorKind::UnknownTransport,
        "server `api`: mcpServers.api.type: unknown transport type `streamable_http`, expected one of: stdio, sse, ws, websocket, streamable-http, http (did you mean `streamable-http`?)",
    );
}

#[test]
fn flat_transport() {
    check(
        "flat_transport.yaml",
        ConfigErrorKind::FlatTransport,
        "server `github`: mcp[0].transport: `transport` must be a mapping, not the string `stdio`; write `transport: { type: stdio, command: npx }`",
    );
}

#[test]
fn invalid_url() {
    check(
        "invalid_url.json",
        ConfigErrorKind::InvalidUrl,
        "server `api`: mcpServers.api.url: streamable-http url must start with http:// or https://, found `ftp://x.example.com/mcp`",
    );
}

#[test]
fn key_not_for_this_transport() {
    check(
        "not_applicable.json",
        ConfigErrorKind::NotApplicable,
        "server `fs`: mcpServers.fs.headers: `headers` does not apply to a stdio server",
    );
}

#[test]
fn command_and_url() {
    check(
        "command_and_url.json",
        ConfigErrorKind::CommandAndUrl,
        "server `both`: mcpServers.both: both `command` and `url` given; a server has one or the other",
    );
}

#[test]
fn duplicate_name() {
    check(
        "duplicate_name.yaml",
        ConfigErrorKind::DuplicateName,
        "server `fs`: [1].name: duplicate server name `fs` (first defined at [0])",
    );
}

#[test]
fn undefined_variable() {
    check(
        "undefined_variable.json",
        ConfigErrorKind::UndefinedVariable,
        "server `api`: mcpServers.api.headers.Authorization: variable `MISSING_TOKEN` is not set and has no default (write `${MISSING_TOKEN:-default}` to give one)",
    );
}

#[test]
fn input_not_supplied() {
    check(
        "missing_input.json",
        ConfigErrorKind::MissingInput,
        "server `mem`: servers.mem.env.KEY: `${input:api-key}` has no value: inputs are not prompted for non-interactively; supply it with `ConfigLoader::with_inputs`",
    );
}

#[test]
fn unterminated_interpolation() {
    check(
        "bad_interpolation.json",
        ConfigErrorKind::BadInterpolation,
        "server `fs`: mcpServers.fs.args[0]: unterminated `${` (write `$${` for a literal `${`)",
    );
}

#[test]
fn env_file_missing() {
    check(
        "env_file.json",
        ConfigErrorKind::EnvFile,
        &format!(
            "server `fs`: mcpServers.fs.envFile: cannot read env file `no-such.env`: {}",
            not_found()
        ),
    );
}

#[test]
fn front_matter_not_closed() {
    check(
        "front_matter.md",
        ConfigErrorKind::FrontMatter,
        "front matter opened with `---` is never closed (add a `---` line after it)",
    );
}

#[test]
fn hosted_invalid_value() {
    let path = fixture("invalid_value.json");
    let report = HostedMcpServer::load_list(&path).unwrap();
    assert!(report.servers.is_empty());
    let err = &report.errors[0];
    assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    assert_eq!(
        err.to_string(),
        format!(
            "{}: server `a`: [0].require_approval: `require_approval` must be \"never\" or \"always\", found `sometimes`",
            path.display()
        )
    );
}

#[test]
fn unreadable_file() {
    let path = fixture("does-not-exist.json");
    let err = ConfigLoader::new().load(&path).unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::Io);
    assert_eq!(
        err.to_string(),
        format!("{}: cannot read: {}", path.display(), not_found())
    );
}

#[test]
fn lenient_mode_reports_and_goes_on() {
    let text = r#"{"mcpServers": {"good": {"command": "a"}, "bad": {"type": "ws"}, "off": {"command": "c", "disabled": true}}}"#;
    let r = ConfigLoader::new().load_str(text).unwrap();
    assert_eq!(
        r.servers.iter().map(|s| s.name()).collect::<Vec<_>>(),
        ["good"]
    );
    assert_eq!(r.skipped_disabled, ["off"]);
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].server.as_deref(), Some("bad"));
    let strict = ConfigLoader::new().strict(true).load_str(text).unwrap_err();
    assert_eq!(
        strict.to_string(),
        "server `bad`: mcpServers.bad.url: websocket transport needs a `url`"
    );
}
