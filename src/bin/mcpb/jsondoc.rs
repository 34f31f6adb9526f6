//! The `--json` output of each command (`mcpb help json`; also in the README). Stable: fields
//! may be added, none is removed or changes meaning.

/// The text `mcpb help json` prints.
pub(crate) const TEXT: &str = r#"mcpb --json: exactly one JSON document on stdout per run (the result, or an error), pretty
printed. Stable: new fields may appear; no field is removed or changes meaning. MCP objects
(tools, resources, prompts, results) are as the server sent them, in the protocol's camelCase.

Every command, on failure (any exit code but 0 and 1):
  {"error": {"exit": N, "kind": K, "server": NAME|null, "message": "one line",
             "detail": ["more lines"], ...}}
  kind: usage | config | unsupported | unknown_tool | unknown_prompt | invalid_argument |
        output | connect | timeout | rpc | protocol | closed | unauthorized | interrupted |
        turn_limit | model | task | tool_not_allowed | skill
  tool_not_allowed (exit 2: the server's config excludes the tool; nothing was sent) adds
  "tool", "rule", "key" (the key path, or null) and "file" (or null)
  task adds "reason" (unsupported | cancelled | invalid)
  skill (exit 5: a skill or one of its files refused; none of it is printed) adds "reason"
  (notfound | unlisted | sizemismatch | digestmismatch | frontmattermismatch | unverifiable |
  toolarge) and "uri"
  interrupted (exit 130, Ctrl-C) adds "reason"
  connect adds "reason" (unreachable | auth | timed_out | closed | rejected | protocol | other)
  and "www_authenticate" when the server sent one; rpc adds "code" and "data";
  unauthorized adds "status" and "www_authenticate" (both null, and "reason":
  "sign_in_required", when the server needs a sign-in: run login); unsupported adds "capability";
  invalid_argument adds "problems": ["one sentence per argument"].

info       {"server", "transport", "target", "protocolVersion", "serverInfo",
            "capabilities", "instructions", "initializeResult"}
tools      {"tools": [Tool]}
resources  {"resources": [Resource]}
templates  {"resourceTemplates": [ResourceTemplate]}
prompts    {"prompts": [Prompt]}
  with --config and no --server (every server):
           {"servers": [{"server": NAME, "tools"|"resources"|"resourceTemplates"|"prompts": [...]}
                        | {"server": NAME, "error": {...as above}}]}
call       CallToolResult: {"content": [...], "structuredContent"?, "isError"?}
           (exit 1 when isError); with -o DIR also "saved": [Saved]
call TOOL --help
           {"server": NAME, "tool": Tool}
read       ReadResourceResult: {"contents": [...]}; with -o also "saved": [Saved]
prompt     GetPromptResult: {"description"?, "messages": [...]}
complete   CompleteResult: {"completion": {"values": [...], "total"?, "hasMore"?}}
ping       {"server": NAME, "ok": true, "elapsedMs": MS}
servers    {"file", "servers": [{"name", "transport", "target", "timeout", "description"?,
            "policy": Policy, "sandbox": Sandbox}],
            "errors": [{"server", "path", "message", "suggestion"}], "disabled": [NAME],
            "ignored": [Ignored]}
  without --config (the files found from here):
           {"discovered": true, "servers": [{"name", "transport", "target", "origin": Origin,
            "needsTrust", "policy": Policy, "sandbox": Sandbox, "shadowed": [Origin]}], "errors": [{"file", "server", "path",
            "message"}], "ignored": [Ignored], "denied": [{"name", "origin": Origin,
            "reason", "file", "key"}], "files": [{...Origin, "trusted", "servers": [NAME]}],
            "trustFile"}
servers --check
           {"file", "servers": [{"server", "ok": true, "latencyMs", "serverInfo": {"name",
            "version"}, "protocolVersion", "tools": N|null}
            | {"server", "ok": false, "latencyMs"?, "error": {...}}
            | {"server", "ok": null, "disabled": true}]}
skills     {"skills": [SkillEntry]}
skill      {"skill": SkillEntry, "frontmatter", "instructions", "files": [{"uri", "digest",
            "size"}]}; with FILE: {"uri", "text"}, or {"uri", "blob"} (base64) when not UTF-8
tasks      {"server": NAME, "tasks": [Task]}
task-cancel
           {"server": NAME, "task": Task}
subscribe  one JSON document per line (JSON Lines), one per update, until Ctrl-C:
           {"server": NAME, "updated": URI}
run        {"text", "turns", "tool_calls": [{"server", "tool", "arguments", "is_error"}],
            "usage": {"input_tokens", "output_tokens"}}; on failure kind turn_limit (exit 8,
            with "turns", "tool_calls", "usage"), model (exit 9, "status" when the API
            answered), interrupted (exit 130), or skill (exit 5, a --skill refused; the
            model was asked nothing)
chat       one "run" document per message (JSON Lines)
login      {"signed_in": true, "server": URL, "tokens": [Tokens]}; a refused sign-in is kind
            connect (exit 3, "reason": "auth")
logout     {"signed_in": false, "server": URL, "removed": N}
auth status
           {"signed_in": BOOL, "server": URL, "tokens": [Tokens]}
trust      {"approved": [Waiting], "declined": [Waiting]}; nothing waiting:
           {"approved": [], "waiting": []}; without a terminal or --yes: kind config (exit 2)
           with "waiting": [Waiting]
shell      each command prints its own document, as above
help, completions, man
           {"help"|"script"|"man": TEXT}

Saved: {"path": FILE, "bytes": N, "mimeType": TYPE}
Origin: {"file", "host", "scope": "local" | "project" | "user"}
Ignored: {"file", "server", "key", "reason"}
Policy: null (nothing limited), or {"include"?: {"tools", "key"}, "exclude"?: {"tools", "key"},
        "denied"?: [{"rule", "key", "file"}], "approval"?: {"mode": "all" | "tools" |
        "allExcept", "tools", "key"}, "sandbox"?: {"key"}}
Sandbox: null (the server runs unconfined; always for a remote server), or what it may reach,
        from its file's sandboxEnabled and --sandbox: {"summary": "one line", "read": [PATH],
        "write": [PATH], "denyRead": [PATH], "denyWrite": [PATH], "defaultPaths": BOOL (its
        folder, its command's and the system's are readable), "network": "none" | {"allow":
        [HOST[:PORT]], "deny": [HOST[:PORT]]}, "limits": {"addressSpace", "openFiles",
        "processes", "cpuSeconds"} (each a number or null), "bestEffort": BOOL, "key": the
        file's key that asked for it, or null}
SkillEntry: {"uri", "frontmatter", "resources": [{"uri", "digest", "size"}] | "dynamic"}, as
        the server listed it
Waiting: {"file", "host", "sha256", "servers": [{"name", "transport", "target"}]}
Tokens: {"issuer", "resource", "client_id", "scope", "expires_at", "refreshable"} (never the
        tokens themselves)
"#;
