//! Compact copies of the tool lists the Hub keeps for as long as a server is connected.
//!
//! A parsed tool list carries the slack of its parse: every JSON object grew one member at a
//! time, so its member table has room to spare. The Hub keeps a copy built with exact sizes
//! (objects with `Map::with_capacity`, arrays and strings exactly as long as they are), equal to
//! the original, members in the same order. The copy is made on the thread that keeps it (not
//! on the thread that parsed the list), so the parsing thread's allocations are all transient.
//! Tools handed out ([`HubTool`](super::HubTool)) are compact copies too.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::model::{Tool, ToolAnnotations};

/// A compact copy of `tools` (see the module documentation).
pub(crate) fn tools(tools: &[Tool]) -> Arc<[Tool]> {
    tools.iter().map(tool).collect()
}

/// A compact copy of one tool, equal to it.
pub(crate) fn tool(t: &Tool) -> Tool {
    // Every member named, so a member added to `Tool` cannot be left out of the copy unnoticed.
    let Tool {
        name,
        title,
        description,
        input_schema,
        output_schema,
        annotations,
        icons,
        execution,
        meta,
        extra,
    } = t;
    Tool {
        name: name.as_str().to_owned(),
        title: title.as_deref().map(str::to_owned),
        description: description.as_deref().map(str::to_owned),
        input_schema: value(input_schema),
        output_schema: output_schema.as_ref().map(value),
        annotations: annotations.as_ref().map(hints),
        icons: icons
            .as_ref()
            .map(|icons| icons.iter().map(value).collect()),
        execution: execution.as_ref().map(value),
        meta: meta.as_ref().map(map),
        extra: map(extra),
    }
}

fn hints(a: &ToolAnnotations) -> ToolAnnotations {
    let ToolAnnotations {
        title,
        read_only_hint,
        destructive_hint,
        idempotent_hint,
        open_world_hint,
        extra,
    } = a;
    ToolAnnotations {
        title: title.as_deref().map(str::to_owned),
        read_only_hint: *read_only_hint,
        destructive_hint: *destructive_hint,
        idempotent_hint: *idempotent_hint,
        open_world_hint: *open_world_hint,
        extra: map(extra),
    }
}

/// A copy of `v` with exact sizes, equal to it.
pub(crate) fn value(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(map(m)),
        Value::Array(items) => Value::Array(items.iter().map(value).collect()),
        Value::String(s) => Value::String(s.as_str().to_owned()),
        Value::Null | Value::Bool(_) | Value::Number(_) => v.clone(),
    }
}

/// A copy of `m` with exact sizes, members in the same order.
fn map(m: &Map<String, Value>) -> Map<String, Value> {
    let mut copy = Map::with_capacity(m.len());
    for (k, v) in m {
        copy.insert(k.as_str().to_owned(), value(v));
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "z": {"type": "string", "enum": ["b", "a", "c"]},
                "a": {"type": "integer", "minimum": -3, "maximum": 1.5e300},
                "m": {"type": "array", "items": {"type": ["null", "boolean"]}},
                "k": {"type": "object", "additionalProperties": false, "properties": {}}
            },
            "required": ["z", "a"],
            "$defs": {"x": {"const": "y"}}
        });
        // Parsed, as a server's list is, so the maps carry the slack of their growth.
        let schema: Value = serde_json::from_str(&schema.to_string()).unwrap();
        let mut annotations = ToolAnnotations::default().with_title("T".to_owned());
        annotations
            .extra
            .insert("vendorHint".into(), json!({"b": 1, "a": 2}));
        let mut t = Tool::new("echo", schema)
            .with_title("Echo".to_owned())
            .with_description("Says it back".to_owned())
            .with_output_schema(json!({"type": "object", "properties": {"t": {}}}))
            .with_annotations(annotations)
            .with_icons(vec![json!({"src": "data:,", "sizes": ["1x1"]})])
            .with_execution(json!({"taskSupport": "optional"}));
        t.meta = Some(
            json!({"y": null, "x": [1, 2, {"q": true}]})
                .as_object()
                .unwrap()
                .clone(),
        );
        t.extra.insert("zeta".into(), json!(1));
        t.extra.insert("alpha".into(), json!("2"));
        t
    }

    /// Member order, all the way down, as text.
    fn text(t: &Tool) -> String {
        serde_json::to_string(t).unwrap()
    }

    #[test]
    fn a_compact_copy_is_equal_with_members_in_order() {
        let original = sample();
        let given = vec![original.clone(), Tool::new("bare", json!({}))];
        let copy = tools(&given);
        assert_eq!(copy.len(), 2);
        assert_eq!(copy[0], original);
        assert_eq!(text(&copy[0]), text(&original));
        assert_eq!(copy[1], Tool::new("bare", json!({})));
        let keys: Vec<&String> = copy[0].input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a", "m", "k"]);
        let extra: Vec<&String> = copy[0].extra.keys().collect();
        assert_eq!(extra, ["zeta", "alpha"]);
    }

    #[test]
    fn a_compact_copy_has_no_spare_room() {
        let mut wide = Map::new();
        for i in 0..9 {
            wide.insert(format!("p{i}"), json!([1, 2, 3]));
        }
        let parsed: Value = serde_json::from_str(&Value::Object(wide).to_string()).unwrap();
        let copy = value(&parsed);
        assert_eq!(copy, parsed);
        let Value::Object(m) = &copy else {
            unreachable!("an object")
        };
        // `serde_json::Map` (an `IndexMap` here) shows no capacity; its members do.
        assert!(m.values().all(|v| v.as_array().unwrap().capacity() == 3));
        let original = Value::String(String::with_capacity(64) + "abc");
        let Value::String(s) = value(&original) else {
            unreachable!("a string")
        };
        assert_eq!((s.as_str(), s.capacity()), ("abc", 3));
    }
}
