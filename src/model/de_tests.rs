//! Tests of the member-by-member `Deserialize` impls (`de.rs`, `deserialize_struct!`, the
//! content block reader): each compared with the derived `#[serde(flatten)]` impls they replace
//! (`de_reference.rs`) on real server answers and on thousands of damaged copies of them, for
//! the same value or the same error text (position included), read from text and from a `Value`.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::de_reference as old;
use super::*;

/// Real answers: `@modelcontextprotocol/server-everything` and this crate's fixture server.
const EVERYTHING: &str = include_str!("testdata/server_everything.json");
const FIXTURE: &str = include_str!("testdata/fixture_server.json");

fn answers(text: &str) -> Value {
    serde_json::from_str(text).expect("test data is JSON")
}

/// What reading `text` as `T` gives: the value written back as text, or the error's text.
fn outcome<T: DeserializeOwned + Serialize>(text: &str) -> Result<String, String> {
    serde_json::from_str::<T>(text)
        .map(|v| serde_json::to_string(&v).expect("serialise"))
        .map_err(|e| e.to_string())
}

fn from_reader<T: DeserializeOwned + Serialize>(text: &str) -> Result<String, String> {
    serde_json::from_reader::<_, T>(text.as_bytes())
        .map(|v| serde_json::to_string(&v).expect("serialise"))
        .map_err(|e| e.to_string())
}

fn outcome_of_value<T: DeserializeOwned + Serialize>(value: Value) -> Result<String, String> {
    serde_json::from_value::<T>(value)
        .map(|v| serde_json::to_string(&v).expect("serialise"))
        .map_err(|e| e.to_string())
}

/// `N` (this crate) and `R` (the derived reference) read `text` alike, from text, bytes, a
/// reader and a `Value` (owned or borrowed).
fn same<N, R>(text: &str)
where
    N: DeserializeOwned + Serialize,
    R: DeserializeOwned + Serialize,
{
    assert_eq!(outcome::<N>(text), outcome::<R>(text), "from text: {text}");
    let from_slice = |t: &str| serde_json::from_slice::<N>(t.as_bytes()).map_err(|e| e.to_string());
    assert_eq!(
        from_slice(text).err(),
        outcome::<R>(text).err(),
        "from bytes: {text}"
    );
    assert_eq!(
        from_reader::<N>(text),
        from_reader::<R>(text),
        "from a reader: {text}"
    );
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let by_ref = N::deserialize(&value)
            .map(|v| serde_json::to_string(&v).expect("serialise"))
            .map_err(|e| e.to_string());
        assert_eq!(
            by_ref,
            outcome_of_value::<R>(value.clone()),
            "from a &Value: {text}"
        );
        assert_eq!(
            outcome_of_value::<N>(value.clone()),
            outcome_of_value::<R>(value),
            "from a Value: {text}"
        );
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("serialise")
}

/// An object's members as (name, value text).
type Members = Vec<(String, String)>;

fn object(members: &[(String, String)]) -> String {
    let inner: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{v}", quote(k)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Values that fit no field, or the wrong one.
const JUNK: [&str; 11] = [
    "null",
    "5",
    "-1",
    "1.5",
    "\"s\"",
    "true",
    "[]",
    "{}",
    "[1]",
    "{\"a\":1}",
    "{\"type\":\"text\"}",
];

/// Copies of `v`'s text, each damaged in one place at most `depth` levels down: a member
/// removed, replaced by junk, given twice, an unknown member added, the members reversed,
/// `"type"` moved last or given twice; an array element removed or replaced.
fn damaged(v: &Value, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    match v {
        Value::Object(map) => {
            let members: Members = map
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            let with = |f: &dyn Fn(&mut Members)| {
                let mut m = members.clone();
                f(&mut m);
                object(&m)
            };
            out.push(with(&|m| m.reverse()));
            out.push(with(&|m| {
                m.insert(0, ("x-first".into(), "[1,{\"b\":2}]".into()))
            }));
            out.push(with(&|m| m.push(("x-last".into(), "null".into()))));
            out.push(with(&|m| m.push(("type".into(), "\"image\"".into()))));
            out.push(with(&|m| m.push(("type".into(), "\"text\"".into()))));
            out.push(with(&|m| {
                if let Some(at) = m.iter().position(|(k, _)| k == "type") {
                    let t = m.remove(at);
                    m.push(t);
                }
            }));
            for i in 0..members.len() {
                out.push(with(&|m| {
                    m.remove(i);
                }));
                out.push(with(&|m| m.push(m[i].clone())));
                out.push(with(&|m| {
                    let k = m[i].0.clone();
                    m.push((k, "\"again\"".into()));
                }));
                out.push(with(&|m| {
                    let k = m[i].0.clone();
                    m.insert(0, (k, "7".into()));
                }));
                for junk in JUNK {
                    out.push(with(&|m| m[i].1 = junk.into()));
                }
                if depth > 0 {
                    let child = map.values().nth(i).expect("member");
                    for inner in damaged(child, depth - 1) {
                        out.push(with(&|m| m[i].1 = inner.clone()));
                    }
                }
            }
        }
        Value::Array(items) => {
            let texts: Vec<String> = items.iter().map(Value::to_string).collect();
            let with = |f: &dyn Fn(&mut Vec<String>)| {
                let mut t = texts.clone();
                f(&mut t);
                format!("[{}]", t.join(","))
            };
            for i in 0..items.len() {
                out.push(with(&|t| {
                    t.remove(i);
                }));
                out.push(with(&|t| t[i] = "{\"type\":\"hologram\"}".into()));
                out.push(with(&|t| t[i] = "\"bare\"".into()));
                if depth > 0 {
                    for inner in damaged(&items[i], depth - 1) {
                        out.push(with(&|t| t[i] = inner.clone()));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// `N` and `R` read `doc`, its pretty-printed text, whole-document junk and every damaged copy
/// alike. Returns how many texts were compared.
fn same_on_damage<N, R>(doc: &Value, depth: usize) -> usize
where
    N: DeserializeOwned + Serialize,
    R: DeserializeOwned + Serialize,
{
    let mut texts = vec![
        doc.to_string(),
        serde_json::to_string_pretty(doc).expect("serialise"),
    ];
    texts.extend(JUNK.iter().map(|j| (*j).to_owned()));
    texts.push("{\"a\":".into());
    texts.extend(damaged(doc, depth));
    for text in &texts {
        same::<N, R>(text);
    }
    texts.len()
}

/// `doc` with each list member (`tools`, `resources`, ...) cut to its first three entries:
/// the damaged copies of a whole list would take long to read in a debug build.
fn shortened(doc: &Value) -> Value {
    let mut doc = doc.clone();
    if let Some(map) = doc.as_object_mut() {
        for value in map.values_mut() {
            if let Value::Array(items) = value {
                items.truncate(3);
            }
        }
    }
    doc
}

#[test]
fn real_answers_and_their_damaged_copies_read_as_before() {
    let mut compared = 0;
    for data in [answers(EVERYTHING), answers(FIXTURE)] {
        // Whole, then shortened and damaged.
        same::<ListToolsResult, old::ListToolsResult>(&data["tools/list"].to_string());
        let data: serde_json::Map<String, Value> = data
            .as_object()
            .expect("object")
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if k == "tools/call" {
                        v.clone()
                    } else {
                        shortened(v)
                    },
                )
            })
            .collect();
        let data = Value::Object(data);
        compared +=
            same_on_damage::<InitializeResult, old::InitializeResult>(&data["initialize"], 3);
        compared += same_on_damage::<ListToolsResult, old::ListToolsResult>(&data["tools/list"], 3);
        compared +=
            same_on_damage::<ListPromptsResult, old::ListPromptsResult>(&data["prompts/list"], 4);
        compared += same_on_damage::<ListResourcesResult, old::ListResourcesResult>(
            &data["resources/list"],
            3,
        );
        compared += same_on_damage::<ListResourceTemplatesResult, old::ListResourceTemplatesResult>(
            &data["resources/templates/list"],
            3,
        );
        for result in data["tools/call"].as_array().into_iter().flatten() {
            compared += same_on_damage::<CallToolResult, old::CallToolResult>(result, 4);
        }
    }
    assert!(compared > 3000, "only {compared} texts compared");
}

/// Every content block kind with every member, an unknown block and a bare string.
fn all_blocks() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "first", "annotations": {"audience": ["user"],
             "priority": 0.5, "lastModified": "2025-11-25T10:00:00Z", "x": 1},
             "_meta": {"k": "v"}, "lang": "en"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"mimeType": "audio/wav", "data": "UklGRg==", "type": "audio",
             "annotations": {"priority": 1}},
            {"type": "resource_link", "uri": "file:///report.pdf", "name": "report",
             "title": "Report", "description": "Q3", "mimeType": "application/pdf",
             "size": 52311, "icons": [{"src": "x"}], "_meta": {}, "extra": true},
            {"type": "resource", "resource": {"uri": "file:///notes.md", "text": "second",
             "mimeType": "text/markdown", "_meta": {"a": 1}, "z": 0}},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAE="},
             "annotations": {"audience": ["assistant"]}, "_meta": {"b": 2}},
            {"type": "hologram", "x": 1},
            "bare"
        ],
        "structuredContent": {"temp": 21.5},
        "isError": false,
        "_meta": {"elapsedMs": 12},
        "resultType": "complete"
    })
}

#[test]
fn every_content_block_and_its_damaged_copies_read_as_before() {
    let compared = same_on_damage::<CallToolResult, old::CallToolResult>(&all_blocks(), 4);
    assert!(compared > 500, "only {compared} texts compared");
}

#[test]
fn prompt_and_resource_results_and_their_damaged_copies_read_as_before() {
    let prompt = json!({
        "description": "A greeting",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Hi"}, "x": 1},
            {"content": {"type": "resource", "resource": {"uri": "u", "text": "t"}},
             "role": "assistant"}
        ],
        "_meta": {"m": 1},
        "extra": [1]
    });
    same_on_damage::<GetPromptResult, old::GetPromptResult>(&prompt, 4);
    let read = json!({
        "contents": [
            {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"},
            {"uri": "file:///b.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}
        ],
        "_meta": {"k": 1},
        "cacheHint": "no-store"
    });
    same_on_damage::<ReadResourceResult, old::ReadResourceResult>(&read, 3);
}

#[test]
fn unknown_members_stay_in_document_order() {
    let text = r#"{"z-first":1,"name":"t","b-mid":{"k":[1,2]},"inputSchema":{"type":"object"},"a-last":null}"#;
    let tool: Tool = serde_json::from_str(text).expect("parse");
    let names: Vec<&str> = tool.extra.keys().map(String::as_str).collect();
    assert_eq!(names, ["z-first", "b-mid", "a-last"]);
    assert_eq!(tool.extra["b-mid"], json!({"k": [1, 2]}));
    assert_eq!(tool.extra["a-last"], Value::Null);
    // Written back: known members first, then the unknown ones in their order.
    assert_eq!(
        serde_json::to_string(&tool).expect("serialise"),
        r#"{"name":"t","inputSchema":{"type":"object"},"z-first":1,"b-mid":{"k":[1,2]},"a-last":null}"#
    );
    // A repeated unknown member keeps its first place and its last value.
    let twice: Tool =
        serde_json::from_str(r#"{"u":1,"name":"t","v":2,"inputSchema":{},"u":3}"#).expect("parse");
    assert_eq!(
        twice.extra,
        serde_json::from_str::<Map>(r#"{"u":3,"v":2}"#).unwrap()
    );
    assert_eq!(twice.extra.keys().collect::<Vec<_>>(), ["u", "v"]);
}

#[test]
fn every_known_tool_field_is_read() {
    let tool: Tool = serde_json::from_value(json!({
        "name": "get_weather",
        "title": "Weather",
        "description": "Forecast",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {}},
        "annotations": {"title": "W", "readOnlyHint": true, "destructiveHint": false,
                        "idempotentHint": true, "openWorldHint": false, "x-hint": 1},
        "icons": [{"src": "data:,"}],
        "execution": {"taskSupport": "optional"},
        "_meta": {"k": "v"}
    }))
    .expect("parse");
    assert_eq!(tool.name, "get_weather");
    assert_eq!(tool.title.as_deref(), Some("Weather"));
    assert_eq!(tool.description.as_deref(), Some("Forecast"));
    assert_eq!(tool.input_schema, json!({"type": "object"}));
    assert_eq!(
        tool.output_schema,
        Some(json!({"type": "object", "properties": {}}))
    );
    let a = tool.annotations.as_ref().expect("annotations");
    assert_eq!(a.title.as_deref(), Some("W"));
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(true), Some(false), Some(true), Some(false))
    );
    assert_eq!(a.extra.get("x-hint"), Some(&json!(1)));
    assert_eq!(tool.icons, Some(vec![json!({"src": "data:,"})]));
    assert_eq!(tool.execution, Some(json!({"taskSupport": "optional"})));
    assert_eq!(
        tool.meta.as_ref().and_then(|m| m.get("k")),
        Some(&json!("v"))
    );
    assert!(tool.extra.is_empty());

    let result: CallToolResult = serde_json::from_value(json!({
        "content": [{"type": "text", "text": "a"}],
        "structuredContent": {"n": 1},
        "isError": true,
        "_meta": {"m": 2}
    }))
    .expect("parse");
    assert_eq!(result.content, vec![Content::text("a")]);
    assert_eq!(result.structured_content, Some(json!({"n": 1})));
    assert!(result.failed());
    assert_eq!(
        result.meta.as_ref().and_then(|m| m.get("m")),
        Some(&json!(2))
    );

    let list: ListToolsResult = serde_json::from_value(json!({
        "tools": [], "nextCursor": "c2", "_meta": {}
    }))
    .expect("parse");
    assert_eq!(list.next_cursor.as_deref(), Some("c2"));
    assert_eq!(list.meta, Some(Map::new()));

    let init: InitializeResult = serde_json::from_value(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true,
                         "listChanged": false}, "prompts": {}, "logging": {},
                         "completions": {}, "experimental": {"e": {}}, "tasks": {"list": {}}},
        "serverInfo": {"name": "s", "version": "1", "title": "S", "description": "d",
                       "websiteUrl": "https://example.com", "icons": []},
        "instructions": "Be nice.",
        "_meta": {"i": 1}
    }))
    .expect("parse");
    let caps = &init.capabilities;
    assert_eq!(caps.tools.as_ref().and_then(|t| t.list_changed), Some(true));
    assert!(caps.has_resource_subscribe());
    assert!(caps.has_prompts() && caps.has_logging() && caps.has_completions());
    assert!(caps
        .experimental
        .as_ref()
        .is_some_and(|e| e.contains_key("e")));
    assert_eq!(caps.extra.get("tasks"), Some(&json!({"list": {}})));
    assert_eq!(
        init.server_info.website_url.as_deref(),
        Some("https://example.com")
    );
    assert_eq!(init.server_info.icons, Some(vec![]));
    assert_eq!(init.instructions.as_deref(), Some("Be nice."));
    assert!(init.meta.is_some());
}

#[test]
fn null_and_missing_optional_fields_are_none() {
    for text in [
        r#"{"name":"t","inputSchema":{}}"#,
        r#"{"name":"t","inputSchema":{},"title":null,"description":null,"outputSchema":null,"annotations":null,"icons":null,"execution":null,"_meta":null}"#,
    ] {
        let tool: Tool = serde_json::from_str(text).expect("parse");
        assert_eq!(tool, Tool::new("t", json!({})), "{text}");
    }
    let result: CallToolResult =
        serde_json::from_str(r#"{"content":[],"structuredContent":null,"isError":null}"#)
            .expect("parse");
    assert_eq!(result, CallToolResult::default());
    let block: Content =
        serde_json::from_str(r#"{"type":"text","text":"a","annotations":null,"_meta":null}"#)
            .expect("parse");
    assert_eq!(block, Content::text("a"));
}

#[test]
fn wrong_types_missing_and_repeated_fields_are_rejected_with_serde_messages() {
    let err = |text: &str| {
        serde_json::from_str::<Tool>(text)
            .expect_err(text)
            .to_string()
    };
    assert_eq!(
        err(r#"{"name":5,"inputSchema":{}}"#),
        "invalid type: integer `5`, expected a string at line 1 column 9"
    );
    assert_eq!(
        err(r#"{"name":"t","inputSchema":{},"annotations":{"readOnlyHint":"yes"}}"#),
        "invalid type: string \"yes\", expected a boolean at line 1 column 64"
    );
    assert_eq!(
        err(r#"{"name":"t"}"#),
        "missing field `inputSchema` at line 1 column 12"
    );
    assert_eq!(
        err(r#"{"name":"t","inputSchema":{},"name":"u"}"#),
        "duplicate field `name` at line 1 column 35"
    );
    assert_eq!(
        err(r#"["t",{}]"#),
        "invalid type: sequence, expected struct Tool at line 1 column 0"
    );
    let block = serde_json::from_str::<CallToolResult>(
        r#"{"content":[{"type":"image","data":"AA=="},{"type":"text","text":"b"}]}"#,
    )
    .expect_err("mimeType is required");
    assert_eq!(
        block.to_string(),
        "invalid `image` content block: missing field `mimeType` at line 1 column 43"
    );
}

#[test]
fn a_content_block_reads_the_same_wherever_its_type_is() {
    let first: Content =
        serde_json::from_str(r#"{"type":"text","text":"a","x":1,"y":2}"#).expect("parse");
    let last: Content =
        serde_json::from_str(r#"{"x":1,"text":"a","y":2,"type":"text"}"#).expect("parse");
    let Content::Text(t) = &last else {
        panic!("not text: {last:?}")
    };
    assert_eq!(t.extra.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(first, last);
    // A repeated member: the last value wins, as for a map.
    let twice: Content =
        serde_json::from_str(r#"{"type":"text","text":"a","text":"b"}"#).expect("parse");
    assert_eq!(twice, Content::text("b"));
    let retyped: Content = serde_json::from_str(
        r#"{"type":"text","data":"AA==","mimeType":"image/png","type":"image"}"#,
    )
    .expect("parse");
    assert_eq!(
        retyped,
        Content::Image(ImageContent::new("AA==", "image/png"))
    );
}

#[test]
fn real_server_lists_round_trip() {
    fn back_and_forth<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(wire: &Value) {
        let parsed: T = serde_json::from_value(wire.clone()).expect("parse");
        let text = serde_json::to_string(&parsed).expect("serialise");
        let again: T = serde_json::from_str(&text).expect("parse again");
        assert_eq!(again, parsed);
        // The same members and values (member order may differ from the server's).
        assert_eq!(&serde_json::from_str::<Value>(&text).expect("JSON"), wire);
    }
    for data in [answers(EVERYTHING), answers(FIXTURE)] {
        back_and_forth::<InitializeResult>(&data["initialize"]);
        back_and_forth::<ListToolsResult>(&data["tools/list"]);
        back_and_forth::<ListPromptsResult>(&data["prompts/list"]);
        back_and_forth::<ListResourcesResult>(&data["resources/list"]);
        back_and_forth::<ListResourceTemplatesResult>(&data["resources/templates/list"]);
        for result in data["tools/call"].as_array().into_iter().flatten() {
            back_and_forth::<CallToolResult>(result);
        }
    }
    let everything = answers(EVERYTHING);
    let tools: ListToolsResult =
        serde_json::from_value(everything["tools/list"].clone()).expect("parse");
    assert!(tools.tools.len() >= 10);
    assert!(tools.tools.iter().any(|t| t.name == "get-tiny-image"));
}

#[test]
fn notifications_server_requests_and_task_results_and_their_damaged_copies_read_as_before() {
    same_on_damage::<LoggingMessage, old::LoggingMessage>(
        &json!({"level": "warning", "logger": "db", "data": {"rows": [1, 2]}, "x": 1}),
        2,
    );
    same_on_damage::<Progress, old::Progress>(
        &json!({"progressToken": 7, "progress": 0.5, "total": 10, "message": "half", "_meta": {}}),
        2,
    );
    same_on_damage::<Progress, old::Progress>(&json!({"progressToken": "t", "progress": 3}), 2);
    same_on_damage::<ResourceUpdated, old::ResourceUpdated>(
        &json!({"uri": "file:///a", "title": "A"}),
        2,
    );
    same_on_damage::<Cancelled, old::Cancelled>(&json!({"requestId": 3, "reason": "late"}), 2);
    same_on_damage::<CompleteResult, old::CompleteResult>(
        &json!({"completion": {"values": ["a", "b"], "total": 2, "hasMore": false, "x": 0},
                "_meta": {"m": 1}, "y": 1}),
        3,
    );
    same_on_damage::<DiscoverResult, old::DiscoverResult>(
        &json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "instructions": "i", "ttlMs": 1000, "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
                "resultType": "complete"}),
        3,
    );
    same_on_damage::<ListRootsResult, old::ListRootsResult>(
        &json!({"roots": [{"uri": "file:///w", "name": "w", "_meta": {}, "x": 1}], "_meta": {}}),
        3,
    );
    same_on_damage::<CreateMessageParams, old::CreateMessageParams>(
        &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"},
                              "_meta": {}, "x": 1}],
                "maxTokens": 100, "systemPrompt": "s", "modelPreferences": {"hints": []},
                "includeContext": "none", "temperature": 0.5, "stopSequences": ["\n"],
                "metadata": {}, "tools": [{"name": "t"}], "toolChoice": {"mode": "auto"},
                "_meta": {"progressToken": 1}, "task": {"ttl": 5}}),
        3,
    );
    same_on_damage::<CreateMessageResult, old::CreateMessageResult>(
        &json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m",
                "stopReason": "endTurn", "_meta": {}, "usage": {"in": 1}}),
        2,
    );
    same_on_damage::<ElicitParams, old::ElicitParams>(
        &json!({"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"},
                "url": "https://example.com", "elicitationId": "e1", "_meta": {}, "x": 1}),
        2,
    );
    same_on_damage::<ElicitResult, old::ElicitResult>(
        &json!({"action": "accept", "content": {"name": "n"}, "_meta": {}, "x": 1}),
        2,
    );
    same_on_damage::<ClientCapabilities, old::ClientCapabilities>(
        &json!({"roots": {"listChanged": true, "x": 1}, "sampling": {}, "elicitation": {},
                "experimental": {"e": {}}, "tasks": {}}),
        3,
    );
    let task = json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:00:00Z",
                      "lastUpdatedAt": "2025-11-25T10:00:01Z", "ttl": 60000, "pollInterval": 500});
    same_on_damage::<CreateTaskResult, old::CreateTaskResult>(
        &json!({"task": task, "_meta": {"io.modelcontextprotocol/model-immediate-response": "x"},
                "y": 1}),
        3,
    );
    same_on_damage::<ListTasksResult, old::ListTasksResult>(
        &json!({"tasks": [task], "nextCursor": "c", "_meta": {}}),
        3,
    );
    same_on_damage::<TaskMetadata, old::TaskMetadata>(&json!({"ttl": 5, "x": 1}), 2);
    same_on_damage::<Task, old::Task>(&task, 2);
    for ttl in [
        "null", "0", "1.4", "1.5", "-1", "-0.0", "1e300", "\"60\"", "[]",
    ] {
        same::<Task, old::Task>(&format!(
            r#"{{"taskId":"t","status":"completed","ttl":{ttl},"pollInterval":{ttl},"x":1}}"#
        ));
    }
    same_on_damage::<TasksCapability, old::TasksCapability>(
        &json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}, "x": 1}),
        2,
    );
}

#[test]
fn task_tool_calls_are_read_in_place_as_the_parsed_capability_says() {
    for tasks in [
        None,
        Some(json!(null)),
        Some(json!([])),
        Some(json!("x")),
        Some(json!({})),
        Some(json!({"requests": null})),
        Some(json!({"requests": []})),
        Some(json!({"requests": {"tools": null}})),
        Some(json!({"requests": {"tools": {"call": null}}})),
        Some(json!({"requests": {"tools": {"call": false}}})),
        Some(json!({"requests": {"tools": {"call": {}}}})),
        Some(json!({"list": {}, "requests": {"tools": {"call": {}, "x": 1}}, "y": 2})),
    ] {
        let mut caps = ServerCapabilities::default();
        if let Some(t) = &tasks {
            caps.extra.insert("tasks".into(), t.clone());
        }
        let parsed: Option<TasksCapability> =
            tasks.clone().and_then(|t| serde_json::from_value(t).ok());
        assert_eq!(caps.tasks(), parsed, "{tasks:?}");
        assert_eq!(
            caps.has_task_tool_calls(),
            parsed.is_some_and(|t| t.has_tool_calls()),
            "{tasks:?}"
        );
    }
}
