//! The tool lists the Hub keeps for as long as a server is connected, in a compact form.
//!
//! A parsed tool takes about seven times the bytes of its JSON text (a `Tool` is over 500
//! bytes before its schema, and every JSON object and string is an allocation of its own), and
//! the Hub only needs a tool's name and idempotency hint until it hands the tool out. So it
//! keeps each tool as its JSON text ([`KeptTool`]), read again when the tool is handed out
//! ([`HubTool`](super::HubTool), at most once per tool per run). A tool whose text would not
//! read back as an equal tool is kept as a tool instead: a copy with exact sizes (objects with
//! `Map::with_capacity`, arrays and strings exactly as long as they are), members in the same
//! order.
//!
//! A server's list is read page by page as a [`KeptPage`]: each tool is parsed, kept and
//! dropped before the next one is read, so listing never holds a whole parsed list (about 1.7 KB
//! per tool) on the connecting thread. With many servers connecting at once, every connecting
//! thread's allocations stay small, and so does what the allocator keeps of them afterwards. (A
//! stateless-era page, 2026-07-28, is checked as one `Value` first, and read from that.)

use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::model::{deserialize_struct, TaskSupport, Tool, ToolAnnotations};

/// A tool as the Hub keeps it (see the module documentation).
pub(crate) struct KeptTool {
    /// The server's name for the tool.
    pub(crate) name: String,
    /// Whether the tool declares `idempotentHint: true`.
    pub(crate) idempotent: bool,
    /// Whether the tool's `execution.taskSupport` is `required`.
    pub(crate) task_required: bool,
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
            task_required: t.task_support() == TaskSupport::Required,
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

/// A `tools/list` page with its tools kept as they are read: it reads the members a
/// [`ListToolsResult`](crate::model::ListToolsResult) reads, as that type reads them, so a page
/// fails here exactly when, and with the same error as, it would fail there.
pub(crate) struct KeptPage {
    pub(crate) tools: KeptList,
    pub(crate) next_cursor: Option<String>,
    /// Read so that a malformed `_meta` fails as it does for a parsed page; not kept.
    #[allow(dead_code, reason = "read for its errors only")]
    meta: Option<crate::model::Map>,
    /// Unknown members, read as a parsed page reads them; not kept.
    #[allow(dead_code, reason = "read for its errors only")]
    extra: crate::model::Map,
}

deserialize_struct!(KeptPage as ListToolsResult {
    tools: "tools" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

/// A page's `tools`, each kept as soon as it is parsed (read as `Vec<Tool>` reads, with the
/// same errors).
pub(crate) struct KeptList(pub(crate) Vec<KeptTool>);

impl<'de> Deserialize<'de> for KeptList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items;
        impl<'de> Visitor<'de> for Items {
            type Value = KeptList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // What `Vec<Tool>` says, so errors read the same.
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeptList, A::Error> {
                // The hint comes from the peer's input: trusted for at most 1,024 entries.
                let mut kept = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(tool) = seq.next_element::<Tool>()? {
                    kept.push(KeptTool::new(&tool));
                }
                Ok(KeptList(kept))
            }
        }
        d.deserialize_seq(Items)
    }
}

impl crate::client::ToolPage for KeptPage {
    type Item = KeptTool;
    fn into_parts(self) -> (Vec<KeptTool>, Option<String>) {
        (self.tools.0, self.next_cursor)
    }
    fn requires_task(tool: &KeptTool) -> Option<&str> {
        tool.task_required.then_some(tool.name.as_str())
    }
    fn retain(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.tools.0.retain(|t| keep(&t.name));
        self
    }
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

    /// A page of `tools`, as a server would send it.
    fn page(tools: &[Tool], rest: &str) -> String {
        let tools = serde_json::to_string(tools).unwrap();
        format!(r#"{{"tools":{tools}{rest}}}"#)
    }

    #[test]
    fn a_page_read_tool_by_tool_keeps_what_keeping_the_parsed_page_keeps() {
        // `null` in the text reads as an absent member, on both sides.
        let odd = Tool::new("odd", json!({"type": "object"})).with_output_schema(Value::Null);
        let tools = [
            sample(),
            Tool::new("bare", json!({})),
            odd,
            Tool::new("slow", json!({"type": "object"})).with_task_support(TaskSupport::Required),
        ];
        let wire = page(&tools, r#","nextCursor":"c2","_meta":{"m":1},"vendor":[1]"#);
        let parsed: crate::model::ListToolsResult = serde_json::from_str(&wire).unwrap();
        let read: KeptPage = serde_json::from_str(&wire).unwrap();
        assert_eq!(read.next_cursor.as_deref(), Some("c2"));
        let (from_parsed, from_page) = (keep(&parsed.tools), read.tools.0);
        assert_eq!(from_page.len(), 4);
        for (a, b) in from_parsed.iter().zip(&from_page) {
            assert_eq!(
                (&a.name, a.idempotent, a.task_required),
                (&b.name, b.idempotent, b.task_required)
            );
            assert_eq!(
                matches!(a.form, Form::Text(_)),
                matches!(b.form, Form::Text(_))
            );
            assert_eq!(text(&a.tool()), text(&b.tool()));
        }
        let required: Vec<&str> = from_page
            .iter()
            .filter_map(<KeptPage as crate::client::ToolPage>::requires_task)
            .collect();
        assert_eq!(required, ["slow"]);
    }

    #[test]
    fn a_malformed_page_fails_as_a_parsed_page_fails() {
        let good = serde_json::to_string(&[sample()]).unwrap();
        let cases = [
            "[]".to_owned(),
            "\"tools\"".to_owned(),
            "{}".to_owned(),
            r#"{"tools":null}"#.to_owned(),
            r#"{"tools":{}}"#.to_owned(),
            r#"{"tools":[{"inputSchema":{}}]}"#.to_owned(),
            r#"{"tools":[{"name":"a","inputSchema":{}}, 3]}"#.to_owned(),
            format!(r#"{{"tools":{good},"tools":[]}}"#),
            format!(r#"{{"tools":{good},"nextCursor":7}}"#),
            format!(r#"{{"tools":{good},"_meta":"m"}}"#),
            format!(r#"{{"nextCursor":null,"tools":{good},"x":{{"#),
            format!(r#"{{"tools":{good}"#),
        ];
        for case in &cases {
            let parsed = serde_json::from_str::<crate::model::ListToolsResult>(case);
            let read = serde_json::from_str::<KeptPage>(case);
            let (Err(a), Err(b)) = (parsed, read) else {
                panic!("{case}: both fail")
            };
            assert_eq!(a.to_string(), b.to_string(), "{case}");
        }
        // A cursor given as `null` is no cursor, as for a parsed page.
        let read: KeptPage = serde_json::from_str(r#"{"tools":[],"nextCursor":null}"#).unwrap();
        assert!(read.next_cursor.is_none() && read.tools.0.is_empty());
    }

    #[test]
    fn a_client_listing_kept_tools_remembers_which_need_tasks() {
        use crate::model::CallToolResult;
        let server = crate::testing::TestServer::new("unit")
            .tool(
                Tool::new("report", json!({"type": "object"}))
                    .with_task_support(TaskSupport::Required),
                |_| {
                    Ok(CallToolResult::success(vec![crate::model::Content::text(
                        "done",
                    )]))
                },
            )
            .tool(Tool::new("plain", json!({"type": "object"})), |_| {
                Ok(CallToolResult::success(vec![]))
            });
        let c = server.connect().unwrap();
        let kept = c.list_tools_as::<KeptPage>().unwrap();
        let names: Vec<&str> = kept.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["report", "plain"]);
        assert_eq!(kept[0].tool(), c.list_tools_page(None).unwrap().tools[0]);
        let listed = server
            .received_methods()
            .iter()
            .filter(|m| *m == "tools/list")
            .count();
        assert_eq!(c.call_tool("report", json!({})).unwrap().text(), "done");
        // Known from the kept list: the call went out as a task at once, with no list before it.
        let after: Vec<serde_json::Value> = server.received();
        assert_eq!(
            after.iter().filter(|m| m["method"] == "tools/list").count(),
            listed
        );
        let calls: Vec<&serde_json::Value> = after
            .iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(calls[0]["params"]["task"].is_object(), "{}", calls[0]);
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
