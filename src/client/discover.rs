//! The modern handshake (2026-07-28): `server/discover`, with a retry at a version the server
//! lists, and the `Auto` probe that falls back to `initialize`.
//!
//! ```text
//!  Auto: server/discover ──DiscoverResult──> modern
//!                        ├─ -32022 ──> again with a version from data.supported
//!                        ├─ -32020 / -32021 ──> a modern refusal: connect fails
//!                        └─ other error, HTTP 4xx, not a discover result, no answer ──> initialize
//! ```

use std::time::Instant;

use serde_json::Value;

use super::connection::Connection;
use super::options::CallOptions;
use super::Client;
use crate::error::{ConnectError, ConnectErrorKind, Error};
use crate::model::{DiscoverResult, InitializeResult};
use crate::protocol::era;
use crate::protocol::wire::{Modern, Wire};

impl Client {
    /// The modern handshake: `server/discover` (with a retry at a version the server lists).
    /// `Ok(None)` when `probe` (the `Auto` mode) finds a legacy server: the caller then runs
    /// `initialize`.
    pub(super) fn discover(
        &self,
        conn: &mut Connection,
        target: &str,
        probe: bool,
        deadline: Instant,
    ) -> Result<Option<InitializeResult>, Error> {
        let server = self.server_name().to_owned();
        let caps = serde_json::to_value(self.capabilities_to_declare_modern()).unwrap_or_default();
        let info = serde_json::to_value(&self.client_info).unwrap_or(Value::Null);
        conn.wire = Wire::Modern(Box::new(Modern::new(caps, info)));
        // The probe may take half of what is left of connecting at most, so that `initialize`
        // still has the other half when a server leaves it unanswered; a modern-only handshake
        // has all of it.
        let probe_deadline = if probe {
            let now = Instant::now();
            let left = deadline.saturating_duration_since(now);
            crate::deadline::add(now, super::era_cache::probe_share(left))
        } else {
            deadline
        };
        // Quoting the server's stderr through a handle of its own: the era changes meanwhile.
        let tail = conn.stderr_tail.clone();
        let protocol = |detail: String| -> Error {
            ConnectError::new(&server, target, ConnectErrorKind::Protocol, detail)
                .with_stderr_tail(tail.text())
                .into()
        };
        let outcome = loop {
            let left = match conn.left_of(probe_deadline, "server/discover") {
                Ok(left) => left,
                Err(e) if probe => break Err(Some(e)),
                Err(e) => return Err(refused(e, &server, target, conn)),
            };
            let opts = CallOptions::new().timeout(left);
            match conn.request("server/discover", None, &opts) {
                Ok(payload) => break Ok(payload.parse::<DiscoverResult>()),
                Err(Error::Rpc { code, data, .. })
                    if code.0 == era::UNSUPPORTED_PROTOCOL_VERSION =>
                {
                    let again = conn
                        .wire
                        .modern_mut()
                        .is_some_and(|m| m.retry_version(data.as_deref()));
                    if !again {
                        let supported = data
                            .as_deref()
                            .and_then(|d| d.get("supported"))
                            .map(|v| conn.sink.ctx.limits.echo(&v.to_string()).into_owned())
                            .unwrap_or_else(|| "none".into());
                        if probe {
                            break Err(None);
                        }
                        return Err(protocol(format!(
                            "{target} speaks none of the modern protocol versions this client \
                             does ({}); it supports {supported}",
                            era::MODERN_VERSIONS.join(", ")
                        )));
                    }
                }
                Err(e @ Error::Rpc { code, .. }) if era::is_modern_rejection(code.0) => {
                    return Err(refused(e, &server, target, conn));
                }
                Err(e) if probe && falls_back(&e) => break Err(Some(e)),
                Err(e) => return Err(refused(e, &server, target, conn)),
            }
        };
        let discovered = match outcome {
            Ok(Ok(d)) => d,
            Ok(Err(e)) if !probe => {
                return Err(protocol(format!(
                    "{target} sent a malformed `server/discover` result: {e}"
                )))
            }
            Ok(Err(e)) => {
                log::debug!("server `{server}`: not a discover result ({e}); trying initialize");
                conn.wire = Wire::legacy();
                return Ok(None);
            }
            Err(why) => {
                if let Some(e) = why {
                    log::debug!(
                        "server `{server}`: the discover probe failed ({e}); trying initialize"
                    );
                }
                conn.wire = Wire::legacy();
                return Ok(None);
            }
        };
        // The era was set above: `None` is not reached (it would fall back to `initialize`).
        let Some(modern) = conn.wire.modern_mut() else {
            return Ok(None);
        };
        if let Err(listed) = modern.discovered(discovered) {
            if probe {
                conn.wire = Wire::legacy();
                return Ok(None);
            }
            return Err(protocol(format!(
                "{target} supports only {}, none of which this client speaks in the modern era",
                conn.sink.ctx.limits.echo(&listed.join(", "))
            )));
        }
        let version = modern.version().to_owned();
        // Kept just above: `None` is not reached either.
        let Some(init) = conn
            .wire
            .discover_result()
            .map(|d| d.to_initialize_result(&version))
        else {
            return Ok(None);
        };
        log::debug!(
            "server `{server}`: connected to {} {} (protocol {version}, stateless)",
            init.server_info.name,
            init.server_info.version,
        );
        Ok(Some(init))
    }

    /// The capabilities declared in `_meta` (roots without `listChanged`: the notification
    /// does not exist in the modern era).
    fn capabilities_to_declare_modern(&self) -> crate::model::ClientCapabilities {
        let mut caps = self.capabilities_to_declare();
        if caps.roots.is_some() {
            caps.roots = Some(crate::model::RootsCapability::default());
        }
        caps
    }
}

/// A failed `server/discover` as a connect error: the server's JSON-RPC error is a refusal of
/// `server/discover` (kind `Rejected`); anything else as any handshake failure.
fn refused(e: Error, server: &str, target: &str, conn: &Connection) -> Error {
    match e {
        Error::Rpc {
            ref code,
            ref message,
            ..
        } => {
            let detail = format!("{target} refused `server/discover`: error {code}: {message}");
            ConnectError::new(server, target, ConnectErrorKind::Rejected, detail)
                .with_stderr_tail(conn.stderr_tail.text())
                .with_source(e)
                .into()
        }
        e => e.into_connect(target, || conn.stderr_tail.text()),
    }
}

/// Whether a probe failure means "not a modern server" (fall back to `initialize`): a JSON-RPC
/// error that is not a modern refusal, an HTTP 4xx other than an authentication failure, no
/// answer in time. A server that cannot be reached, or refuses the credentials, fails the same
/// way whatever the era, so that is the error.
fn falls_back(e: &Error) -> bool {
    match e {
        Error::Rpc { code, .. } => !era::is_modern_rejection(code.0),
        Error::Timeout { .. } => true,
        Error::Transport {
            status: Some(s), ..
        } => (400..500).contains(s) && !crate::error::is_auth_status(*s),
        Error::Protocol { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    //! The handshake against scripted in-process servers.

    use serde_json::{json, Value};

    use crate::config::{ProtocolMode, ServerConfig};
    use crate::testing::TestServer;

    fn reply(msg: &Value, result: Value) -> Vec<Value> {
        vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})]
    }

    /// A legacy server that answers `initialize` and ignores `server/discover`, or answers it
    /// with `code`.
    fn legacy_ignoring_discover(code: Option<i64>) -> TestServer {
        TestServer::from_fn("old", move |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => match code {
                Some(code) => vec![json!({"jsonrpc": "2.0", "id": msg["id"],
                    "error": {"code": code, "message": "refused"}})],
                None => vec![],
            },
            Some("initialize") => reply(
                msg,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "serverInfo": {"name": "old", "version": "1"}}),
            ),
            Some(_) if msg.get("id").is_some() => reply(msg, json!({})),
            _ => vec![],
        })
    }

    /// An `Auto` client of `server` (not through `client_builder_for`, which makes `Auto`
    /// legacy for the built-in in-process server).
    fn auto(server: &TestServer, timeout: f64) -> crate::ClientBuilder {
        let config = ServerConfig::stdio("old", "unused")
            .with_timeout_secs(timeout)
            .with_protocol(ProtocolMode::Auto);
        crate::Client::builder(config).in_process(std::sync::Arc::new(server.clone()))
    }

    #[test]
    fn auto_falls_back_on_silence_and_on_a_legacy_error_but_not_on_a_modern_refusal() {
        use crate::config::ProtocolEra;
        let silent = legacy_ignoring_discover(None);
        let c = auto(&silent, 0.3).connect().expect("falls back");
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Legacy));
        let methods = silent.received_methods();
        assert_eq!(methods[0], "server/discover");
        assert!(methods.contains(&"initialize".to_owned()), "{methods:?}");

        let confused = legacy_ignoring_discover(Some(-32600));
        let c = auto(&confused, 5.0).connect().expect("falls back");
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Legacy));

        let modern = legacy_ignoring_discover(Some(-32021));
        let e = auto(&modern, 5.0).connect().unwrap_err();
        assert!(e.to_string().contains("-32021"), "{e}");
        assert!(!modern.received_methods().contains(&"initialize".to_owned()));
    }
}
