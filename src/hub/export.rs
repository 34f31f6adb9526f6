//! A tool list in the shapes LLM APIs take: OpenAI Chat Completions, OpenAI Responses (with
//! hosted-MCP entries) and Anthropic Messages.

use serde_json::{json, Map, Value};

use super::registry::HubTool;

/// The `tools` array of an OpenAI Chat Completions request:
/// `[{"type":"function","function":{"name","description","parameters"}}]`.
pub(crate) fn openai_chat(tools: &[HubTool]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("name".into(), json!(t.name));
                describe(&mut f, t);
                f.insert("parameters".into(), parameters(&t.tool.input_schema));
                json!({ "type": "function", "function": f })
            })
            .collect(),
    )
}

/// The `tools` array of an OpenAI Responses request: function tools
/// `{"type":"function","name","description","parameters","strict":false}` followed by the
/// hosted-MCP entries as given (`{"type":"mcp","server_label",...}`).
pub(crate) fn openai_responses(tools: &[HubTool], hosted: &[Value]) -> Value {
    let mut out: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut f = Map::new();
            f.insert("type".into(), json!("function"));
            f.insert("name".into(), json!(t.name));
            describe(&mut f, t);
            f.insert("parameters".into(), parameters(&t.tool.input_schema));
            // MCP schemas are rarely valid under strict mode (every property required,
            // additionalProperties false), and Responses defaults to strict.
            f.insert("strict".into(), json!(false));
            Value::Object(f)
        })
        .collect();
    out.extend(hosted.iter().cloned());
    Value::Array(out)
}

/// The `tools` array of an Anthropic Messages request: `[{"name","description","input_schema"}]`.
pub(crate) fn anthropic(tools: &[HubTool]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("name".into(), json!(t.name));
                describe(&mut f, t);
                f.insert("input_schema".into(), parameters(&t.tool.input_schema));
                Value::Object(f)
            })
            .collect(),
    )
}

fn describe(f: &mut Map<String, Value>, t: &HubTool) {
    if let Some(d) = t.tool.description.as_deref().filter(|d| !d.is_empty()) {
        f.insert("description".into(), json!(d));
    }
}

/// The input schema as an object schema the APIs accept: `type: "object"` and a `properties`
/// member are added when missing (OpenAI rejects an object schema without `properties`).
fn parameters(schema: &Value) -> Value {
    let mut s = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    s.entry("type").or_insert_with(|| json!("object"));
    if s.get("type") == Some(&json!("object")) {
        s.entry("properties").or_insert_with(|| json!({}));
    }
    Value::Object(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tool;

    fn tool(server: &str, name: &str, offered: &str) -> HubTool {
        let mut t = Tool::new(
            name,
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
        );
        t.description = Some(format!("{name} from {server}"));
        HubTool {
            name: offered.into(),
            server: server.into(),
            tool: t,
        }
    }

    #[test]
    fn openai_chat_shape() {
        let got = openai_chat(&[tool("a", "echo", "a__echo")]);
        assert_eq!(
            got,
            json!([{"type":"function","function":{
                "name":"a__echo","description":"echo from a",
                "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])
        );
    }

    #[test]
    fn openai_responses_shape_with_hosted_entries() {
        let hosted = json!({"type":"mcp","server_label":"context7","server_url":"https://mcp.context7.com/mcp","require_approval":"never"});
        let got = openai_responses(&[tool("a", "echo", "echo")], std::slice::from_ref(&hosted));
        assert_eq!(
            got,
            json!([{"type":"function","name":"echo","description":"echo from a",
                "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
                "strict":false}, hosted])
        );
    }

    #[test]
    fn anthropic_shape() {
        let got = anthropic(&[tool("a", "echo", "echo")]);
        assert_eq!(
            got,
            json!([{"name":"echo","description":"echo from a",
                "input_schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}])
        );
    }

    #[test]
    fn bare_schemas_are_completed_and_empty_descriptions_left_out() {
        let t = HubTool {
            name: "x".into(),
            server: "s".into(),
            tool: Tool::new("x", json!({})),
        };
        assert_eq!(
            anthropic(&[t]),
            json!([{"name":"x","input_schema":{"type":"object","properties":{}}}])
        );
    }
}
