//! `server/discover` (protocol 2026-07-28): how a modern server describes itself, in place of
//! the legacy `initialize` result.

use serde::Serialize;
use serde_json::Value;

use super::init::{Implementation, InitializeResult, ServerCapabilities};

type Map = serde_json::Map<String, Value>;

/// The result of `server/discover`.
///
/// A connected modern client also reports it as an [`InitializeResult`] (see
/// [`DiscoverResult::to_initialize_result`]), so code written for either era reads the server's
/// name, capabilities and instructions the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// The protocol versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, meant for the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long (milliseconds) the result may be cached; absent or negative means not at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// `public` or `private`: who may share a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// The `_meta` member; `io.modelcontextprotocol/serverInfo` names the server.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model (`resultType` among them).
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(DiscoverResult {
    supported_versions: "supportedVersions" required,
    capabilities: "capabilities" required,
    instructions: "instructions" optional,
    ttl_ms: "ttlMs" optional,
    cache_scope: "cacheScope" optional,
    meta: "_meta" optional,
});

impl DiscoverResult {
    /// The server's name and version from `_meta["io.modelcontextprotocol/serverInfo"]`, when
    /// it gave them.
    pub fn server_info(&self) -> Option<Implementation> {
        let info = self
            .meta
            .as_ref()?
            .get(crate::protocol::era::META_SERVER_INFO)?;
        serde_json::from_value(info.clone()).ok()
    }

    /// The same facts as an `initialize` result at `version` (the server's name is `unknown`
    /// when it gave none).
    pub fn to_initialize_result(&self, version: &str) -> InitializeResult {
        let info = self
            .server_info()
            .unwrap_or_else(|| Implementation::new("unknown", ""));
        let mut init = InitializeResult::new(version, self.capabilities.clone(), info);
        init.instructions = self.instructions.clone();
        init.meta = self.meta.clone();
        init
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_discover_result_reads_as_an_initialize_result() {
        let d: DiscoverResult = serde_json::from_value(json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "instructions": "hi",
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
        }))
        .unwrap();
        let init = d.to_initialize_result("2026-07-28");
        assert_eq!(init.server_info.name, "s");
        assert_eq!(init.protocol_version, "2026-07-28");
        assert_eq!(init.instructions.as_deref(), Some("hi"));
        assert!(init.capabilities.tools.is_some());
    }
}
