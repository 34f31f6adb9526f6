//! The tool lists the Hub keeps for as long as a server is connected, in a compact form.
//!
//! A parsed tool takes about seven times the bytes of its JSON text (a `Tool` is over 500
//! bytes before its schema, and every JSON object and string is an allocation of its own), and
//! the Hub only needs a tool's name and idempotency hint until it hands the tool out. So it
//! keeps each tool as its JSON text ([`KeptTool`]), read again when the tool is handed out
//! ([`HubTool`](super::HubTool), at most once per tool per run). A tool whose text would not
//! read back as an equal tool is kept as a tool instead: a copy with exact sizes (objects with
//! `Map::with_capacity`, arrays and strings exactly as long as they are), members in the same
//! order. The kept form is made on the thread that keeps it (not on the thread that parsed the
//! list), so the parsing thread's allocations are all transient.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::model::{Tool, ToolAnnotations};

/// A tool as the Hub keeps it (see the module documentation).
pub(crate) struct KeptTool {
    /// The server's name for the tool.
    pub(crate) name: String,
    /// Whether the tool declares `idempotentHint: true`.
    pub(crate) idempotent: bool,
    form: Form,
}

enum Form {
    /// The tool's JSON text, which reads back as an equal tool.
    Text(Box<str>),
    /// A compact copy of the tool.
    Tool(Box<Tool>),
}

impl KeptTool {
    /// The kept form of `t`.
    pub(crate) fn new(t: &Tool) -> KeptTool {
        let form = match serde_json::to_string(t) {
            Ok(text) if serde_json::from_str::<Tool>(&text).is_ok_and(|back| back == *t) => {
                Form::Text(text.into_boxed_str())
            }
            _ => Form::Tool(Box::new(tool(t))),
        };
        KeptTool {
            name: t.name.as_str().to_owned(),
            idempotent: t.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true),
            form,
        }
    }

    /// The tool, equal to the one it was made from.
    pub(crate) fn tool(&self) -> Tool {
        match &self.form {
            Form::Tool(t) => (**t).clone(),
            // Read without error when it was kept (see `new`): the same text reads the same.
            Form::Text(text) => serde_json::from_str(text).unwrap_or_else(|e| {
                log::error!("hub: tool `{}` could not be read back: {e}", self.name);
                Tool::new(self.name.as_str(), Value::Object(Map::new()))
            }),
        }
    }
}

/// The kept form of `tools`.
pub(crate) fn keep(tools: &[Tool]) -> Arc<[KeptTool]> {
    tools.iter().map(KeptTool::new).collect()
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
    fn a_kept_tool_reads_back_equal_with_members_in_order() {
        let original = sample();
        let kept = keep(&[original.clone(), Tool::new("bare", json!({}))]);
        assert!(matches!(kept[0].form, Form::Text(_)));
        assert_eq!((kept[0].name.as_str(), kept[0].idempotent), ("echo", false));
        for _ in 0..2 {
            assert_eq!(kept[0].tool(), original);
            assert_eq!(text(&kept[0].tool()), text(&original));
        }
        assert_eq!(kept[1].tool(), Tool::new("bare", json!({})));
        // A tool whose text would read back otherwise (`null` reads as an absent member) is
        // kept as a compact copy.
        let odd = Tool::new("odd", json!({"type": "object"}))
            .with_output_schema(Value::Null)
            .with_annotations(ToolAnnotations::default().with_idempotent_hint(true));
        let kept = KeptTool::new(&odd);
        assert!(matches!(kept.form, Form::Tool(_)));
        assert!(kept.idempotent);
        assert_eq!(kept.tool(), odd);
    }

    #[test]
    fn a_compact_copy_is_equal_with_members_in_order() {
        let original = sample();
        let given = [original.clone(), Tool::new("bare", json!({}))];
        let copy: Vec<Tool> = given.iter().map(tool).collect();
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
