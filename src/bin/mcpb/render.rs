//! What each command prints: a readable text form and the `--json` document.
//!
//! Content blocks are rendered from their JSON form, so a block type this crate does not model
//! is still shown (as JSON) rather than dropped.

use std::fmt::Write;

use mcp_blocking::config::{Approval, LoadReport, RuleSource, ToolPattern, TransportConfig};
use mcp_blocking::model::{
    CallToolResult, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, SkillEntry, Tool,
};
use mcp_blocking::{Client, LoadedSkill, ServerConfig};
use serde::Serialize;
use serde_json::{json, Value};

use crate::args::Global;
use crate::Output;

fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| json!({ "unserialisable": e.to_string() }))
}

/// Where a server is: its command line or its url, as the library's redaction rule shows it
/// (without a url's password and query, and without anything that came from a variable, an env
/// value or a header value).
pub(crate) fn target_of(config: &ServerConfig) -> String {
    let shown = match config.transport() {
        TransportConfig::Stdio(s) => std::iter::once(&s.command)
            .chain(&s.args)
            .map(|w| {
                if w.is_empty() || w.contains(char::is_whitespace) {
                    format!("{w:?}")
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.url().unwrap_or("").to_owned(),
    };
    config.redact(&shown)
}

/// What the server's policy limits (the tools it offers, those it excludes, those that need
/// approval; the key of the sandbox asked for in JSON only), a line each for `servers`, and as
/// JSON (`null` when it limits nothing).
pub(crate) fn policy(config: &ServerConfig) -> (Vec<String>, Value) {
    let p = config.policy();
    if p.is_unrestricted() && p.denied().is_empty() {
        return (Vec::new(), Value::Null);
    }
    fn names(list: &[ToolPattern]) -> Vec<&str> {
        list.iter().map(ToolPattern::as_str).collect()
    }
    let key = |s: &RuleSource| s.key.rsplit('.').next().unwrap_or_default().to_owned();
    let mut lines = Vec::new();
    let mut json = json!({});
    if let Some(include) = p.included() {
        lines.push(format!(
            "offers only: {} (`{}`)",
            list_text(&names(include)),
            key(p.include_source())
        ));
        json["include"] = json!({ "tools": names(include), "key": p.include_source().key });
    }
    if !p.excluded().is_empty() {
        lines.push(format!(
            "excludes: {} (`{}`)",
            list_text(&names(p.excluded())),
            key(p.exclude_source())
        ));
        json["exclude"] = json!({ "tools": names(p.excluded()), "key": p.exclude_source().key });
    }
    let mut denied = Vec::new();
    for rule in p.denied() {
        lines.push(format!("denies: `{}` ({})", rule.written, rule.source));
        denied.push(json!({
            "rule": rule.written,
            "key": rule.source.key,
            "file": rule.source.file.as_ref().map(|f| f.display().to_string()),
        }));
    }
    if !denied.is_empty() {
        json["denied"] = denied.into();
    }
    let approval = match p.approval() {
        Approval::All => Some((
            "all",
            Vec::new(),
            "runs every tool without asking".to_owned(),
        )),
        Approval::Tools(t) if t.is_empty() => {
            Some(("tools", Vec::new(), "asks before every tool".to_owned()))
        }
        Approval::Tools(t) => Some((
            "tools",
            t.clone(),
            format!("asks before every tool but: {}", list_text(t)),
        )),
        Approval::AllExcept(t) => Some((
            "allExcept",
            t.clone(),
            format!("asks before: {}", list_text(t)),
        )),
        _ => None,
    };
    if let Some((mode, tools, text)) = approval {
        lines.push(format!("{text} (`{}`)", key(p.approval_source())));
        json["approval"] = json!({ "mode": mode, "tools": tools, "key": p.approval_source().key });
    }
    // The sandbox itself is shown by `crate::sandbox::shown`, as the server gets it.
    if let Some(sandbox) = p.sandbox() {
        json["sandbox"] = json!({ "key": sandbox.source.key });
    }
    (lines, json)
}

/// `a, b, c`, cut after ten names.
fn list_text<S: AsRef<str>>(names: &[S]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(10)
        .map(|n| n.as_ref().to_owned())
        .collect();
    if names.len() > 10 {
        shown.push(format!("and {} more", names.len() - 10));
    }
    shown.join(", ")
}

/// The width of the longest server name: of `names`, and of the file's invalid entries.
pub(crate) fn name_width<'a>(
    names: impl Iterator<Item = &'a str>,
    report: &'a LoadReport,
) -> usize {
    let invalid = report.errors.iter().filter_map(|e| e.server.as_deref());
    names.chain(invalid).map(str::len).max().unwrap_or(0)
}

pub(crate) fn servers(global: &Global, file: &str, report: &LoadReport) -> Output {
    let mut text = String::new();
    let width = name_width(report.servers.iter().map(|s| s.name()), report);
    let mut servers = Vec::new();
    for s in &report.servers {
        let s = &crate::sandbox::apply(global, s.clone());
        let target = target_of(s);
        let _ = writeln!(
            text,
            "{:width$}  {:15}  {target}",
            s.name(),
            s.transport_type()
        );
        let (lines, limits) = policy(s);
        let (sandbox_line, sandbox) = crate::sandbox::shown(s);
        for line in lines.into_iter().chain(sandbox_line) {
            let _ = writeln!(text, "{:width$}  {line}", "");
        }
        let mut entry = json!({
            "name": s.name(),
            "transport": s.transport_type(),
            "target": target,
            "timeout": s.timeout().as_secs_f64(),
            "policy": limits,
            "sandbox": sandbox,
        });
        if !s.description().is_empty() {
            entry["description"] = s.description().into();
        }
        servers.push(entry);
    }
    let mut errors = Vec::new();
    for e in &report.errors {
        let name = e.server.as_deref().unwrap_or("?");
        // The file is said once, in the header of the JSON and in the command line.
        let mut e_here = e.clone();
        e_here.file = None;
        e_here.server = None;
        let message = crate::config_error_text(&e_here);
        let _ = writeln!(text, "{name:width$}  {:15}  {message}", "error");
        errors.push(json!({
            "server": e.server,
            "path": e.path,
            "message": message,
            "suggestion": e.suggestion,
        }));
    }
    for name in &report.skipped_disabled {
        let _ = writeln!(text, "{name:width$}  {:15}", "disabled");
    }
    let ignored = ignored(report, &mut text);
    if report.servers.is_empty() && report.errors.is_empty() && report.skipped_disabled.is_empty() {
        text.push_str("(no servers)\n");
    }
    let failed = !report.errors.is_empty();
    Output {
        json: json!({
            "file": file,
            "servers": servers,
            "errors": errors,
            "disabled": report.skipped_disabled,
            "ignored": ignored,
        }),
        text,
        exit: if failed { 2 } else { 0 },
        note: failed.then(|| {
            format!(
                "config `{file}`: {} of {} servers have errors",
                report.errors.len(),
                report.errors.len() + report.servers.len()
            )
        }),
    }
}

/// The keys of `report` the loader read and did not act on, a line each in `text` (`ignored:
/// FILE: server `x`: KEY: ignored: WHY`), and as JSON.
pub(crate) fn ignored(report: &LoadReport, text: &mut String) -> Vec<Value> {
    report
        .ignored
        .iter()
        .map(|k| {
            let _ = writeln!(text, "{k}");
            json!({
                "file": k.file.as_ref().map(|f| f.display().to_string()),
                "server": k.server,
                "key": k.key,
                "reason": k.reason,
            })
        })
        .collect()
}

pub(crate) fn info(client: &Client, shown: &str, target: &str) -> Output {
    let init = client.initialize_result();
    let info = client.server_info();
    let caps = client
        .capabilities()
        .map(|c| to_json(&c))
        .unwrap_or(Value::Null);
    let mut text = String::new();
    if let Some(i) = &info {
        let title = i
            .title
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        let _ = writeln!(text, "server:       {} {}{title}", i.name, i.version);
    }
    let _ = writeln!(text, "name:         {shown}");
    let _ = writeln!(
        text,
        "transport:    {} {target}",
        client.config().transport_type()
    );
    if let (Some(v), Some(era)) = (client.protocol_version(), client.protocol_era()) {
        let _ = writeln!(text, "protocol:     {v} ({})", era.as_str());
    }
    if let Value::Object(m) = &caps {
        let list: Vec<String> = m
            .iter()
            .map(|(k, v)| match v {
                Value::Object(o) if !o.is_empty() => {
                    let flags: Vec<&str> = o.keys().map(String::as_str).collect();
                    format!("{k} ({})", flags.join(", "))
                }
                _ => k.clone(),
            })
            .collect();
        let _ = writeln!(text, "capabilities: {}", list.join(", "));
    }
    if let Some(instr) = client.instructions() {
        let _ = writeln!(text, "instructions:");
        for line in instr.lines() {
            let _ = writeln!(text, "  {line}");
        }
    }
    let json = json!({
        "server": shown,
        "transport": client.config().transport_type(),
        "target": target,
        "protocolVersion": client.protocol_version(),
        "protocolEra": client.protocol_era().map(|e| e.as_str()),
        "serverInfo": info.as_ref().map(to_json),
        "capabilities": caps,
        "instructions": client.instructions(),
        "initializeResult": init.as_ref().map(to_json),
    });
    Output::ok(json, text)
}

/// `name(a: number, b?: string)` from a JSON schema's properties and `required`.
fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(k, p)| {
                    let opt = if required.contains(&k.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    match p["type"].as_str() {
                        Some(t) => format!("{k}{opt}: {t}"),
                        None => format!("{k}{opt}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{name}({})", params.join(", "))
}

fn indented(text: &mut String, body: &str) {
    for line in body.lines() {
        let _ = writeln!(text, "    {line}");
    }
}

pub(crate) fn tools(tools: &[Tool]) -> Output {
    let mut text = String::new();
    for t in tools {
        let _ = writeln!(text, "{}", signature(&t.name, &t.input_schema));
        indented(&mut text, t.description());
    }
    if tools.is_empty() {
        text.push_str("(no tools)\n");
    }
    Output::ok(json!({ "tools": tools }), text)
}

/// One content block (of a tool result or a prompt message) as text.
fn content_text(block: &Value) -> String {
    let bytes = |b64: &Value| b64.as_str().map_or(0, |s| s.len() / 4 * 3);
    let mime = |v: &Value| v["mimeType"].as_str().unwrap_or("?").to_owned();
    match block["type"].as_str().unwrap_or("") {
        "text" => block["text"].as_str().unwrap_or("").to_owned(),
        "image" | "audio" => format!(
            "[{} {}, about {} bytes]",
            block["type"].as_str().unwrap_or(""),
            mime(block),
            bytes(&block["data"])
        ),
        "resource_link" => format!(
            "[resource link {} ({})]",
            block["uri"].as_str().unwrap_or(""),
            block["name"].as_str().unwrap_or("")
        ),
        "resource" => resource_text(&block["resource"]),
        _ => block.to_string(),
    }
}

fn resource_text(contents: &Value) -> String {
    match contents["text"].as_str() {
        Some(t) => t.to_owned(),
        None => format!(
            "[blob {} {}, about {} bytes]",
            contents["uri"].as_str().unwrap_or(""),
            contents["mimeType"].as_str().unwrap_or("?"),
            contents["blob"].as_str().map_or(0, |s| s.len() / 4 * 3)
        ),
    }
}

pub(crate) fn call_result(result: &CallToolResult) -> Output {
    let json = to_json(result);
    let blocks: Vec<String> = json["content"]
        .as_array()
        .map(|c| c.iter().map(content_text).collect())
        .unwrap_or_default();
    let mut text = blocks.join("\n");
    let has_text = result.content.iter().any(|c| c.as_text().is_some());
    if let (Some(sc), false) = (&result.structured_content, has_text) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&serde_json::to_string_pretty(sc).unwrap_or_default());
    }
    Output::ok(json, text)
}

/// The text of a tool result whose binary contents were saved: each saved block is replaced
/// by a `saved PATH (N bytes, MIME)` line.
pub(crate) fn call_text_with_saved(json: &Value, saved: &[crate::save::Saved]) -> String {
    let mut saved = saved.iter();
    let lines: Vec<String> = json["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|block| {
            let binary = matches!(block["type"].as_str(), Some("image" | "audio"))
                || block["resource"]["blob"].is_string();
            let file = if binary { saved.next() } else { None };
            match file {
                Some(s) => format!(
                    "saved {} ({} bytes, {})",
                    s.path.display(),
                    s.bytes,
                    if s.mime.is_empty() { "?" } else { &s.mime }
                ),
                None => content_text(block),
            }
        })
        .collect();
    lines.join("\n")
}

/// The values a server proposes for an argument, one per line.
pub(crate) fn completion(result: &CompleteResult) -> Output {
    let json = to_json(result);
    let mut text = String::new();
    for v in json["completion"]["values"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let _ = writeln!(text, "{}", v.as_str().unwrap_or(""));
    }
    if json["completion"]["hasMore"] == true {
        let total = json["completion"]["total"]
            .as_u64()
            .map(|t| format!(" ({t} in all)"))
            .unwrap_or_default();
        let _ = writeln!(text, "...{total}");
    }
    if text.is_empty() {
        text.push_str("(no completions)\n");
    }
    Output::ok(json, text)
}

/// Skills, one each: `NAME  URI`, then the description.
pub(crate) fn skills(skills: &[SkillEntry]) -> Output {
    let mut text = String::new();
    for skill in skills {
        let _ = writeln!(text, "{}  {}", skill.name().unwrap_or(""), skill.uri);
        indented(&mut text, skill.description().unwrap_or(""));
    }
    if skills.is_empty() {
        text.push_str("(no skills)\n");
    }
    Output::ok(json!({ "skills": skills }), text)
}

/// A loaded skill: its instructions, then the files it lists (not read).
pub(crate) fn skill(skill: &LoadedSkill) -> Output {
    let mut text = skill.instructions.trim_start_matches('\n').to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !skill.files.is_empty() {
        text.push_str("\nfiles:\n");
        for file in &skill.files {
            let _ = writeln!(text, "  {}  ({} bytes)", file.uri, file.size);
        }
    }
    Output::ok(
        json!({
            "skill": skill.entry,
            "frontmatter": skill.frontmatter,
            "instructions": skill.instructions,
            "files": skill.files,
        }),
        text,
    )
}

/// A verified file of a skill: its text, or its size when it is not UTF-8 (the JSON then
/// holds it in base64).
pub(crate) fn skill_file(uri: &str, bytes: Vec<u8>) -> Output {
    match String::from_utf8(bytes) {
        Ok(text) => Output::ok(json!({ "uri": uri, "text": text }), text),
        Err(e) => {
            let bytes = e.into_bytes();
            let blob = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
            let text = format!(
                "({} bytes of binary data; --json gives them in base64)\n",
                bytes.len()
            );
            Output::ok(json!({ "uri": uri, "blob": blob }), text)
        }
    }
}

pub(crate) fn resources(resources: &[Resource]) -> Output {
    let text = uri_listing(resources, "uri", "(no resources)");
    Output::ok(json!({ "resources": resources }), text)
}

pub(crate) fn templates(templates: &[ResourceTemplate]) -> Output {
    let text = uri_listing(templates, "uriTemplate", "(no resource templates)");
    Output::ok(json!({ "resourceTemplates": templates }), text)
}

/// Resources or templates, one each: `URI  NAME (MIME)` (the URI under `uri_key`), then the
/// description; `none` when there are none.
fn uri_listing<T: Serialize>(items: &[T], uri_key: &str, none: &str) -> String {
    let mut text = String::new();
    for item in items {
        let v = to_json(item);
        let mime = v["mimeType"]
            .as_str()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let (uri, name) = (
            v[uri_key].as_str().unwrap_or(""),
            v["name"].as_str().unwrap_or(""),
        );
        let _ = writeln!(text, "{uri}  {name}{mime}");
        indented(&mut text, v["description"].as_str().unwrap_or(""));
    }
    if items.is_empty() {
        text.push_str(none);
        text.push('\n');
    }
    text
}

pub(crate) fn read(result: &ReadResourceResult) -> Output {
    let json = to_json(result);
    let contents = json["contents"].as_array().cloned().unwrap_or_default();
    let many = contents.len() > 1;
    let mut text = String::new();
    for c in &contents {
        if many {
            let _ = writeln!(
                text,
                "--- {} ({}) ---",
                c["uri"].as_str().unwrap_or(""),
                c["mimeType"].as_str().unwrap_or("?")
            );
        }
        text.push_str(&resource_text(c));
        if many && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Output::ok(json, text)
}

pub(crate) fn prompts(prompts: &[Prompt]) -> Output {
    let mut text = String::new();
    for p in prompts {
        let args: Vec<String> = p
            .arguments
            .iter()
            .flatten()
            .map(|a| {
                let opt = if a.required == Some(true) { "" } else { "?" };
                format!("{}{opt}", a.name)
            })
            .collect();
        let _ = writeln!(text, "{}({})", p.name, args.join(", "));
        indented(&mut text, p.description.as_deref().unwrap_or(""));
    }
    if prompts.is_empty() {
        text.push_str("(no prompts)\n");
    }
    Output::ok(json!({ "prompts": prompts }), text)
}

pub(crate) fn prompt(result: &GetPromptResult) -> Output {
    let json = to_json(result);
    let mut text = String::new();
    if let Some(d) = &result.description {
        let _ = writeln!(text, "# {d}");
    }
    for m in json["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        let _ = writeln!(text, "[{role}] {}", content_text(&m["content"]));
    }
    Output::ok(json, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_mark_optional_arguments() {
        let schema = json!({"type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "string"}, "c": {}},
            "required": ["a"]});
        assert_eq!(signature("t", &schema), "t(a: number, b?: string, c?)");
        assert_eq!(signature("u", &json!({})), "u()");
    }

    #[test]
    fn blocks_of_every_kind_are_shown() {
        assert_eq!(content_text(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            content_text(&json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})),
            "[image image/png, about 3 bytes]"
        );
        assert_eq!(
            content_text(&json!({"type": "resource", "resource": {"uri": "u", "text": "body"}})),
            "body"
        );
        assert_eq!(
            content_text(&json!({"type": "hologram", "x": 1})),
            r#"{"type":"hologram","x":1}"#
        );
    }

    #[test]
    fn urls_lose_their_query_and_user_info() {
        let s = ServerConfig::http("a", "https://u:p@h.example/mcp?key=secret");
        assert_eq!(
            target_of(&s),
            "https://u:<redacted>@h.example/mcp?<redacted>"
        );
        let s = ServerConfig::stdio("b", "node").with_args(["x y.js", "--flag"]);
        assert_eq!(target_of(&s), "node \"x y.js\" --flag");
    }
}
