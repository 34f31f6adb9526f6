//! The client side of the official MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! The era follows `MCP_CONFORMANCE_PROTOCOL_VERSION` (set by the 0.2 suites): from
//! `2026-07-28` on the client speaks the modern (stateless) era, before it (or without the
//! variable, as 0.1.16 runs) the legacy one.
//!
//! | scenario (`MCP_CONFORMANCE_SCENARIO`)   | what this client does                                          |
//! |-----------------------------------------|----------------------------------------------------------------|
//! | `initialize`                            | connect (initialize + initialized), list tools, close          |
//! | `tools_call`                            | list tools, call `add_numbers` with `{a: 5, b: 3}`             |
//! | `elicitation-sep1034-client-defaults`   | call `test_client_elicitation_defaults`, accept with defaults  |
//! | `sse-retry`                             | call `test_reconnection` (the reply is resumed on a GET)       |
//! | `json-schema-2020-12-preservation`      | call `json_schema_echo` with the focal tool's schema as listed |
//! | `request-metadata`                      | connect (the first version is refused: retry), list tools      |
//! | `sep-2322-client-request-state`         | call the `test_mrtr_*` tools (input requests answered)         |
//! | `http-standard-headers`                 | call every tool, read every resource, get every prompt         |
//! | `http-custom-headers`                   | make the calls `MCP_CONFORMANCE_CONTEXT.toolCalls` lists       |
//! | `http-invalid-tool-headers`             | call every tool left after listing (invalid ones are dropped)  |
//! | `auth/*`                                | authorize (OAuth, headless), list tools, call the first one    |
//! | anything else                           | list tools and call the first one                              |
//!
//! Auth scenarios run without a browser: the authorization URL is fetched without following
//! redirects and the code is read from the `Location` header (the mock server approves at
//! once). `MCP_CONFORMANCE_CONTEXT` gives pre-registered and client-credentials identities, the
//! workload's JWT of `auth/wif-jwt-bearer` (`valid_jwt`), and the identity provider and ID
//! token of `auth/enterprise-managed-authorization`.
//!
//! Contract: the server URL is the last argument; logs go to stderr; exit 0 on success.
//!
//! ```text
//! conformance client --command "target/debug/examples/conformance_client" --scenario initialize
//! ```

use std::process::ExitCode;

use mcp_blocking::auth::{
    AssertionSource, EnterpriseIdp, JwtAlgorithm, OAuthConfig, RedirectHandler, SigningKey,
};
use mcp_blocking::config::{ProtocolEra, ProtocolMode};
use mcp_blocking::model::{ElicitParams, ElicitResult, Implementation};
use mcp_blocking::{Client, ServerConfig};
use serde_json::{json, Map, Value};

type Outcome = Result<(), Box<mcp_blocking::Error>>;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .target(env_logger::Target::Stderr)
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let mode = if ProtocolEra::of_version(&version) == ProtocolEra::Modern {
        ProtocolMode::Modern
    } else {
        ProtocolMode::Legacy
    };
    eprintln!("scenario `{scenario}` against {url} ({mode}, version {version:?})");
    match run(&scenario, &url, mode) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The skills scenarios (SEP-2640): list the skills; unless the scenario is about prefetching,
/// load each (`SKILL.md`, verified) and only then read its files (each verified). A skill that
/// fails verification is refused, and nothing more of it is read.
fn skills(client: &Client, scenario: &str) -> Outcome {
    let entries = client.list_skills()?;
    eprintln!("{} skills", entries.len());
    if scenario == "sep-2640-client-no-prefetch" {
        return Ok(());
    }
    let limits = mcp_blocking::SkillLimits::default();
    for entry in &entries {
        match client.load_skill_entry(entry, &limits) {
            Ok(skill) => {
                for file in &skill.files {
                    if let Err(e) = skill.read_file(client, &file.uri) {
                        eprintln!("{}: {e}", file.uri);
                    }
                }
            }
            Err(e) => eprintln!("{}: refused: {e}", entry.uri),
        }
    }
    Ok(())
}

/// The OAuth settings of an `auth/*` scenario.
fn oauth_for(scenario: &str) -> Result<OAuthConfig, String> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let field = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    match scenario {
        "auth/client-credentials-basic" => Ok(OAuthConfig::client_credentials(
            field("client_id").ok_or("no client_id in the context")?,
            field("client_secret").ok_or("no client_secret in the context")?,
        )),
        "auth/client-credentials-jwt" => {
            let alg = field("signing_algorithm").unwrap_or_else(|| "ES256".into());
            let alg = JwtAlgorithm::parse(&alg).ok_or(format!("unknown algorithm {alg}"))?;
            let key =
                SigningKey::from_pem(&field("private_key_pem").ok_or("no private key")?, alg)?;
            Ok(OAuthConfig::private_key_jwt(
                field("client_id").ok_or("no client_id in the context")?,
                key,
            ))
        }
        "auth/wif-jwt-bearer" => {
            // Workload identity: the platform's JWT is the only credential.
            let jwt = field("valid_jwt").ok_or("no valid_jwt in the context")?;
            let mut oauth = OAuthConfig::workload_identity(AssertionSource::value(jwt));
            if let Some(id) = field("client_id") {
                oauth = oauth.client_id(id);
            }
            Ok(oauth)
        }
        "auth/enterprise-managed-authorization" => {
            let mut idp = EnterpriseIdp::new(
                field("idp_issuer").ok_or("no idp_issuer in the context")?,
                field("idp_client_id").ok_or("no idp_client_id in the context")?,
            )
            .id_token(AssertionSource::value(
                field("idp_id_token").ok_or("no idp_id_token in the context")?,
            ));
            if let Some(endpoint) = field("idp_token_endpoint") {
                idp = idp.token_endpoint(endpoint);
            }
            Ok(OAuthConfig::enterprise(idp)
                .client_id(field("client_id").ok_or("no client_id in the context")?)
                .client_secret(field("client_secret").ok_or("no client_secret in the context")?))
        }
        _ => {
            let mut oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
                "http://localhost:3000/callback",
                headless_authorize,
            ))
            .client_metadata_url("https://conformance-test.local/client-metadata.json")
            // The suite's 2025-03-26 scenarios include a server without any metadata.
            .legacy_endpoint_fallback(true);
            if let Some(id) = field("client_id") {
                oauth = oauth.client_id(id);
            }
            if let Some(secret) = field("client_secret") {
                oauth = oauth.client_secret(secret);
            }
            // DPoP is not turned on here: the DPoP scenarios' server challenges with the DPoP
            // scheme alone, and the client then sends proofs by itself.
            Ok(oauth)
        }
    }
}

/// Plays the browser: GETs the authorization URL without following the redirect and returns
/// where the server sent it (carrying `code` and `state`).
fn headless_authorize(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent.get(url).call().map_err(|e| e.to_string())?;
    resp.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the authorization endpoint answered {} without a redirect",
                resp.status()
            )
        })
}

fn run(scenario: &str, url: &str, mode: ProtocolMode) -> Outcome {
    let mut config = ServerConfig::http("conformance", url)
        .with_timeout_secs(20.0)
        .with_protocol(mode);
    if scenario.starts_with("auth/") {
        let oauth = oauth_for(scenario).map_err(|detail| {
            Box::new(mcp_blocking::Error::Protocol {
                server: "conformance".into(),
                kind: mcp_blocking::error::ProtocolErrorKind::Other,
                detail,
            })
        })?;
        config = config.with_oauth(oauth);
    }
    let client = Client::builder(config)
        .client_info(Implementation::new(
            "mcp-blocking-conformance",
            env!("CARGO_PKG_VERSION"),
        ))
        .elicitation(|_server: &str, params: ElicitParams| {
            eprintln!("elicitation: {}", params.message);
            // Confirm what asks for a confirmation; otherwise accept with nothing typed in:
            // the client fills the schema's defaults.
            let mut content = Map::new();
            let asks_confirmation = params
                .requested_schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .is_some_and(|p| p.get("confirmed").is_some());
            if asks_confirmation {
                content.insert("confirmed".into(), json!(true));
            }
            Ok(ElicitResult::accept(content))
        })
        .connect()?;
    let outcome = scenario_steps(&client, scenario);
    client.close()?;
    outcome
}

fn scenario_steps(client: &Client, scenario: &str) -> Outcome {
    if scenario.starts_with("sep-2640-client") {
        return skills(client, scenario);
    }
    let tools = client.list_tools()?;
    eprintln!("{} tools", tools.len());
    let call = |name: &str, args: Value| -> Outcome {
        let r = client.call_tool(name, args)?;
        eprintln!("{name}: {}", serde_json::to_string(&r).unwrap_or_default());
        Ok(())
    };
    // Calls whose failure is the server's business (the scenario checks what was sent).
    let try_call = |name: &str, args: Value| {
        if let Err(e) = call(name, args) {
            eprintln!("{name}: {e}");
        }
    };
    match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Ok(()),
        "tools_call" => call("add_numbers", json!({"a": 5, "b": 3})),
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults", json!({}))
        }
        "sse-retry" => call("test_reconnection", json!({})),
        "json-schema-2020-12-preservation" => {
            let focal = tools.iter().find(|t| t.name == "json_schema_2020_12_tool");
            let schema = focal.map_or(Value::Null, |t| t.input_schema.clone());
            call("json_schema_echo", json!({ "schema": schema }))
        }
        "sep-2322-client-request-state" => {
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                call(name, json!({}))?;
            }
            Ok(())
        }
        "http-standard-headers" => {
            for t in &tools {
                try_call(&t.name, json!({}));
            }
            for r in client.list_resources().unwrap_or_default() {
                if let Err(e) = client.read_resource(&r.uri) {
                    eprintln!("{}: {e}", r.uri);
                }
            }
            for p in client.list_prompts().unwrap_or_default() {
                if let Err(e) = client.get_prompt(&p.name, Value::Null) {
                    eprintln!("{}: {e}", p.name);
                }
            }
            Ok(())
        }
        "http-custom-headers" => {
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or(Value::Null);
            let calls = context["toolCalls"].as_array().cloned().unwrap_or_default();
            for c in calls {
                let name = c["name"].as_str().unwrap_or_default();
                try_call(name, c["arguments"].clone());
            }
            Ok(())
        }
        "http-invalid-tool-headers" => {
            for t in &tools {
                try_call(&t.name, json!({}));
            }
            Ok(())
        }
        _ => match tools.first() {
            Some(t) => call(&t.name, json!({})),
            None => Ok(()),
        },
    }
}
