//! The wire rules of the modern protocol era (2026-07-28): the per-request `_meta` fields, the
//! HTTP headers a request carries (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and the
//! `Mcp-Param-*` headers of `x-mcp-header` tool parameters), and the error codes that tell a
//! modern server's refusal from a legacy server's confusion. I/O-free.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{Map, Value};

/// `_meta` key: the protocol version of this request (required).
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities (required; `{}` for none).
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the server may send `notifications/message` at for this
/// request (none: no log messages).
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: the server's name and version.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a subscription's messages: the `subscriptions/listen` request's id.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// `-32020`: the HTTP headers do not match the body.
pub(crate) const HEADER_MISMATCH: i32 = -32020;
/// `-32021`: the server needs a client capability that was not declared.
pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
/// `-32022`: the server does not speak the requested version (`data.supported` lists those it
/// does).
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

/// Whether `code` is a modern server's refusal: the server is modern, so an `Auto` probe that
/// meets it must not fall back to `initialize`.
pub(crate) fn is_modern_rejection(code: i32) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The modern versions this client speaks, newest first.
pub(crate) const MODERN_VERSIONS: [&str; 1] = [crate::config::MODERN_PROTOCOL_VERSION];

/// The first version of ours (newest first) that an `UnsupportedProtocolVersion` error's
/// `data.supported` lists. It may be the one just refused: a server may refuse a first request
/// whatever it carries, so the caller bounds its retries ([`MAX_VERSION_RETRIES`]).
pub(crate) fn pick_supported(data: Option<&Value>) -> Option<&'static str> {
    let supported = data?.get("supported")?.as_array()?;
    MODERN_VERSIONS
        .iter()
        .copied()
        .find(|v| supported.iter().any(|s| s.as_str() == Some(v)))
}

/// How many times `server/discover` is sent again after an `UnsupportedProtocolVersion` error.
pub(crate) const MAX_VERSION_RETRIES: usize = 2;

/// `params` with the modern `_meta` fields merged into its `_meta` (what it had there, e.g. a
/// progress token, stays).
pub(crate) fn with_meta(params: Option<Value>, meta: &Map<String, Value>) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let slot = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(m) = slot {
        for (k, v) in meta {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(params)
}

/// The protocol version a request's `params._meta` names, when it names a modern one.
pub(crate) fn modern_version(params: Option<&Value>) -> Option<&str> {
    let v = params?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()?;
    (crate::config::ProtocolEra::of_version(v) == crate::config::ProtocolEra::Modern).then_some(v)
}

/// The standard headers a modern HTTP request for `method` with `params` carries:
/// `MCP-Protocol-Version` (equal to the body's `_meta`), `Mcp-Method`, and `Mcp-Name` for
/// `tools/call`, `prompts/get` (the name) and `resources/read` (the uri). `None` for a request
/// that is not a modern one (its params carry no modern `_meta` version).
pub(crate) fn standard_headers(
    method: &str,
    params: Option<&Value>,
) -> Option<Vec<(String, String)>> {
    let version = modern_version(params)?;
    let mut out = vec![
        ("MCP-Protocol-Version".to_owned(), version.to_owned()),
        ("Mcp-Method".to_owned(), encode_header_value(method)),
    ];
    let key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension routes its methods by task.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(name) = key.and_then(|k| params?.get(k)?.as_str()) {
        out.push(("Mcp-Name".to_owned(), encode_header_value(name)));
    }
    Some(out)
}

/// A header value as the modern HTTP transport sends it: as it is when it is visible ASCII or
/// inner spaces, else (non-ASCII, control characters, leading or trailing whitespace, or a value
/// that looks like the sentinel itself) `=?base64?<base64 of the UTF-8>?=`.
pub(crate) fn encode_header_value(v: &str) -> String {
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && v.trim_matches(' ') == v
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if plain {
        v.to_owned()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(v.as_bytes()))
    }
}

/// One `x-mcp-header` parameter of a tool: the header's name (after `Mcp-Param-`) and the path
/// of the argument (property names from the top of `arguments`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    pub(crate) name: String,
    pub(crate) path: Vec<String>,
}

/// The `x-mcp-header` parameters of a tool's `inputSchema`, or why the tool is invalid (it is
/// then left out of `tools/list`): an empty name, a name that is not an HTTP token, a
/// case-insensitive duplicate, an annotation on a property that is not a string, integer or
/// boolean, or one reachable only through something else than a chain of `properties`.
pub(crate) fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), &mut found)?;
    let total = count_annotations(schema);
    if total != found.len() {
        return Err(
            "an `x-mcp-header` annotation is reachable only through something other than \
             `properties` (items, a combinator or a reference)"
                .into(),
        );
    }
    let mut seen: HashMap<String, ()> = HashMap::new();
    for h in &found {
        if seen.insert(h.name.to_ascii_lowercase(), ()).is_some() {
            return Err(format!(
                "the `x-mcp-header` name `{}` is used twice",
                h.name
            ));
        }
    }
    Ok(found)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(annotation) = prop.get("x-mcp-header") {
            let name = annotation
                .as_str()
                .ok_or("an `x-mcp-header` value is not a string")?;
            if name.is_empty() {
                return Err(format!("`{key}` has an empty `x-mcp-header`"));
            }
            if !name.bytes().all(is_token_char) {
                return Err(format!(
                    "`{key}`: the `x-mcp-header` name is not an HTTP token"
                ));
            }
            let primitive = matches!(
                prop.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            );
            if !primitive {
                return Err(format!(
                    "`{key}`: `x-mcp-header` is allowed only on a string, integer or boolean"
                ));
            }
            out.push(ParamHeader {
                name: name.to_owned(),
                path: path.clone(),
            });
        }
        collect(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

fn count_annotations(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            usize::from(m.contains_key("x-mcp-header"))
                + m.values().map(count_annotations).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

/// RFC 9110 `tchar`.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers of a `tools/call` with these `arguments`: a string as it is, an
/// integer in decimal, a boolean as `true`/`false`; a null or absent argument (or one of
/// another type) sends no header.
pub(crate) fn param_header_values(
    headers: &[ParamHeader],
    arguments: Option<&Value>,
) -> Vec<(String, String)> {
    let Some(args) = arguments else {
        return Vec::new();
    };
    headers
        .iter()
        .filter_map(|h| {
            let mut v = args;
            for key in &h.path {
                v = v.get(key)?;
            }
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                Value::Number(n) => n
                    .as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| format!("{f:.0}"))?,
                _ => return None,
            };
            Some((format!("Mcp-Param-{}", h.name), encode_header_value(&text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sentinel_holds_standard_base64_with_padding() {
        assert_eq!(encode_header_value("f\n"), "=?base64?Zgo=?=");
        assert_eq!(encode_header_value("fo\n"), "=?base64?Zm8K?=");
        assert_eq!(encode_header_value("\n"), "=?base64?Cg==?=");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
    }

    #[test]
    fn header_values_are_plain_or_the_base64_sentinel() {
        assert_eq!(encode_header_value("us west 1"), "us west 1");
        assert_eq!(encode_header_value(""), "");
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert!(encode_header_value("line1\nline2").starts_with("=?base64?"));
        assert!(encode_header_value("=?base64?abc?=").starts_with("=?base64?PT9i"));
    }

    #[test]
    fn meta_merges_into_params_and_keeps_a_progress_token() {
        let mut meta = Map::new();
        meta.insert(META_PROTOCOL_VERSION.into(), json!("2026-07-28"));
        let p = with_meta(
            Some(json!({"name": "x", "_meta": {"progressToken": 3}})),
            &meta,
        );
        assert_eq!(p["_meta"]["progressToken"], json!(3));
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], json!("2026-07-28"));
        assert_eq!(
            with_meta(None, &meta)["_meta"][META_PROTOCOL_VERSION],
            json!("2026-07-28")
        );
    }

    #[test]
    fn standard_headers_name_the_method_and_the_target() {
        let params =
            json!({"uri": "file:///a%20b.txt", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let h = standard_headers("resources/read", Some(&params)).expect("modern");
        assert!(h.contains(&("Mcp-Method".into(), "resources/read".into())));
        assert!(h.contains(&("Mcp-Name".into(), "file:///a%20b.txt".into())));
        assert!(h.contains(&("MCP-Protocol-Version".into(), "2026-07-28".into())));
        let get = json!({"taskId": "t-1", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let h = standard_headers("tasks/get", Some(&get)).expect("modern");
        assert!(h.contains(&("Mcp-Name".into(), "t-1".into())), "{h:?}");
        assert!(standard_headers("tools/list", None).is_none());
    }

    #[test]
    fn x_mcp_header_annotations_are_validated() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "f": {"type": "number"}}});
        let h = param_headers(&ok).expect("valid");
        assert_eq!(h.len(), 2);
        let args = json!({"region": "eu", "n": 42, "f": 1.5});
        let v = param_header_values(&h, Some(&args));
        assert!(v.contains(&("Mcp-Param-Region".into(), "eu".into())));
        assert!(v.contains(&("Mcp-Param-N".into(), "42".into())));
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A:B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                  "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
        ] {
            assert!(param_headers(&bad).is_err(), "{bad}");
        }
        let null = json!({"verbose": null});
        let h = param_headers(
            &json!({"properties": {"verbose": {"type": "boolean", "x-mcp-header": "Verbose"}}}),
        )
        .unwrap();
        assert!(param_header_values(&h, Some(&null)).is_empty());
    }

    #[test]
    fn a_supported_version_is_picked_from_the_error_data() {
        let data = json!({"supported": ["2026-07-28"], "requested": "2027-01-01"});
        assert_eq!(pick_supported(Some(&data)), Some("2026-07-28"));
        let none = json!({"supported": ["2030-01-01"]});
        assert_eq!(pick_supported(Some(&none)), None);
        assert_eq!(pick_supported(None), None);
    }
}
