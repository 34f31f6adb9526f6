//! The `initialize` handshake: implementation info and capabilities.

use serde::Serialize;
use serde_json::Value;

use super::Map;

/// The name and version of a client or server (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the implementation does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons, as given (`{src, mimeType?, sizes?, theme?}` objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Implementation {
    name: "name" required,
    version: "version" required,
    title: "title" optional,
    description: "description" optional,
    website_url: "websiteUrl" optional,
    icons: "icons" optional,
});

impl Implementation {
    /// An implementation called `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: None,
            extra: Map::new(),
        }
    }
}

setters!(Implementation {
    with_title => title: String,
    with_description => description: String,
    with_website_url => website_url: String,
    with_icons => icons: Vec<Value>,
});

/// The `roots` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RootsCapability {
    /// The client sends `notifications/roots/list_changed` when its roots change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(RootsCapability {
    list_changed: "listChanged" optional,
});

setters!(RootsCapability { with_list_changed => list_changed: bool });

/// What the client can do; `Default` is the empty object `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// The client answers `roots/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client answers `sampling/createMessage` (`{}`, or `{context?, tools?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// The client answers `elicitation/create` (`{}` means form only, or `{form?, url?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ClientCapabilities {
    roots: "roots" optional,
    sampling: "sampling" optional,
    elicitation: "elicitation" optional,
    experimental: "experimental" optional,
});

setters!(ClientCapabilities {
    with_roots => roots: RootsCapability,
    with_sampling => sampling: Value,
    with_elicitation => elicitation: Value,
    with_experimental => experimental: Map,
});

/// A capability whose only flag is `listChanged` (`tools`, `prompts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListChangedCapability {
    /// The server sends a `list_changed` notification when the list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ListChangedCapability {
    list_changed: "listChanged" optional,
});

setters!(ListChangedCapability { with_list_changed => list_changed: bool });

/// The `resources` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// The server supports `resources/subscribe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ResourcesCapability {
    subscribe: "subscribe" optional,
    list_changed: "listChanged" optional,
});

setters!(ResourcesCapability {
    with_subscribe => subscribe: bool,
    with_list_changed => list_changed: bool,
});

/// What the server offers. Check these before calling a method they gate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// `tools/list` and `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// `resources/list`, `resources/templates/list`, `resources/read`, maybe subscriptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// `prompts/list` and `prompts/get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// `logging/setLevel` and `notifications/message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map>,
    /// Members this crate does not model (such as `tasks`).
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ServerCapabilities {
    tools: "tools" optional,
    resources: "resources" optional,
    prompts: "prompts" optional,
    logging: "logging" optional,
    completions: "completions" optional,
    experimental: "experimental" optional,
});

setters!(ServerCapabilities {
    with_tools => tools: ListChangedCapability,
    with_resources => resources: ResourcesCapability,
    with_prompts => prompts: ListChangedCapability,
    with_logging => logging: Value,
    with_completions => completions: Value,
    with_experimental => experimental: Map,
});

impl ServerCapabilities {
    /// The server offers tools.
    pub fn has_tools(&self) -> bool {
        self.tools.is_some()
    }

    /// The server offers resources.
    pub fn has_resources(&self) -> bool {
        self.resources.is_some()
    }

    /// The server accepts `resources/subscribe`.
    pub fn has_resource_subscribe(&self) -> bool {
        self.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
    }

    /// The server offers prompts.
    pub fn has_prompts(&self) -> bool {
        self.prompts.is_some()
    }

    /// The server accepts `logging/setLevel`.
    pub fn has_logging(&self) -> bool {
        self.logging.is_some()
    }

    /// The server accepts `completion/complete`.
    pub fn has_completions(&self) -> bool {
        self.completions.is_some()
    }
}

/// The server's answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, meant for the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(InitializeResult {
    protocol_version: "protocolVersion" required,
    capabilities: "capabilities" required,
    server_info: "serverInfo" required,
    instructions: "instructions" optional,
    meta: "_meta" optional,
});

impl InitializeResult {
    /// A result announcing `protocol_version`, `capabilities` and `server_info`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        Self {
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            instructions: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(InitializeResult { with_instructions => instructions: String, with_meta => meta: Map });

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn initialize_result_round_trips_with_unknown_members() {
        let wire = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "logging": {},
                "completions": {},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "tools": {"listChanged": false},
                "tasks": {"list": {}, "cancel": {}},
                "experimental": {"example.com/x": {"on": true}}
            },
            "serverInfo": {
                "name": "weather", "title": "Weather Server", "version": "1.4.0",
                "description": "Forecasts", "websiteUrl": "https://example.com",
                "icons": [{"src": "https://example.com/icon.png", "sizes": ["48x48"]}],
                "vendor": "Example"
            },
            "instructions": "Ask for a city.",
            "_meta": {"trace": "abc"},
            "serverTime": "2025-11-25T10:00:00Z"
        });
        let result: InitializeResult = round_trip(&wire);
        let caps = &result.capabilities;
        assert!(caps.has_tools() && caps.has_prompts() && caps.has_resources());
        assert!(caps.has_resource_subscribe() && caps.has_logging() && caps.has_completions());
        assert!(caps.extra.contains_key("tasks"));
        assert_eq!(
            result.server_info.extra.get("vendor"),
            Some(&json!("Example"))
        );
        assert_eq!(
            result.extra.get("serverTime"),
            Some(&json!("2025-11-25T10:00:00Z"))
        );
    }

    #[test]
    fn empty_capabilities_offer_nothing() {
        let caps: ServerCapabilities = round_trip(&json!({"resources": {}}));
        assert!(caps.has_resources());
        assert!(!caps.has_resource_subscribe());
        assert!(!caps.has_tools() && !caps.has_prompts());
        assert!(!caps.has_logging() && !caps.has_completions());
    }

    #[test]
    fn client_capabilities_default_is_empty_object() {
        assert_eq!(
            serde_json::to_value(ClientCapabilities::default()).expect("ser"),
            json!({})
        );
        let caps = ClientCapabilities::default()
            .with_roots(RootsCapability::default().with_list_changed(true))
            .with_elicitation(json!({"form": {}, "url": {}}));
        let wire = json!({"roots": {"listChanged": true}, "elicitation": {"form": {}, "url": {}}});
        assert_eq!(serde_json::to_value(&caps).expect("ser"), wire);
        let _: ClientCapabilities = round_trip(&wire);
    }

    #[test]
    fn implementation_builder_omits_absent_fields() {
        let info = Implementation::new("mcp-blocking", "0.1.0").with_title("MCP Blocking");
        let wire = json!({"name": "mcp-blocking", "version": "0.1.0", "title": "MCP Blocking"});
        assert_eq!(serde_json::to_value(&info).expect("ser"), wire);
    }
}
