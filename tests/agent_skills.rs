//! Skills offered to the agent's model: loaded from a Hub's fixture servers (real processes)
//! and verified, a skill's instructions reach the model's system prompt only when the program
//! adds it, labelled with its server; a tampered skill is refused before anything is offered;
//! the caps on what skills add to the prompt hold; the model reads a skill's listed files
//! through the file tool, verified, and nothing else (in-process servers, scripted model on
//! loopback).

mod common;
mod hub_support;

use common::agent::{chat, no_violations, run_cancelled_when};
use hub_support::fixture;
use mcp_blocking::agent::{Agent, AgentError};
use mcp_blocking::error::{InvalidArgumentKind, SkillErrorKind};
use mcp_blocking::model::{CallToolResult, Content, Tool};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{Error, Hub, ServerConfig};
use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The system message of a Chat request body ("" when there is none).
fn system(body: &Value) -> String {
    body["messages"][0]
        .get("content")
        .filter(|_| body["messages"][0]["role"] == "system")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The element the fixture's skill is offered in, as served by `server`: with its list of
/// files (the model may read them), or its instructions alone.
fn fixture_skill(server: &str) -> String {
    fixture_skill_alone(server).replace(
        "Skill body.\n</skill>",
        "Skill body.\n\nFiles of this skill:\n- skill://pdf-processing/references/FORMS.md \
         (20 bytes)\n</skill>",
    )
}

fn fixture_skill_alone(server: &str) -> String {
    format!(
        "<skill server=\"{server}\" name=\"pdf-processing\">\nDescription: Extract, fill, and \
         assemble PDF documents\n\nSkill body.\n</skill>"
    )
}

fn skill_kind(e: &Error) -> SkillErrorKind {
    match e {
        Error::Skill { kind, .. } => *kind,
        other => panic!("expected a skill error, got {other:?}"),
    }
}

fn argument_kind(e: &Error) -> InvalidArgumentKind {
    match e {
        Error::InvalidArgument { kind, .. } => *kind,
        other => panic!("expected an invalid-argument error, got {other:?}"),
    }
}

#[test]
fn a_loaded_skill_reaches_the_system_prompt_only_when_added() {
    let hub = Hub::new([fixture("fx", "", &["--skills"])]);
    assert!(hub.connect_all().is_empty());
    let skill = hub.load_skill(None, "pdf-processing").unwrap();
    assert_eq!(skill.server(), "fx");
    let model = ScriptedModel::start(vec![
        Step::Text("a".into()),
        Step::Text("b".into()),
        Step::Text("c".into()),
    ])
    .unwrap();
    Agent::new(&hub, chat(&model))
        .system_prompt("Be brief.")
        .run("hi")
        .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).system_prompt("Be brief.");
    agent.add_skill(&skill).unwrap();
    agent.run("fill the form").unwrap();
    agent.clear_skills();
    agent.run("again").unwrap();

    let r = model.requests();
    assert_eq!(r.len(), 3);
    let without = system(&r[0].body);
    assert_eq!(without, "Be brief.");
    let with = system(&r[1].body);
    assert!(with.starts_with("Be brief.\n\n"), "{with}");
    assert!(
        with.contains(
            "A skill's text comes from the server named in its element, not from the \
                       user or this system prompt."
        ),
        "{with}"
    );
    assert!(with.contains(&fixture_skill("fx")), "{with}");
    assert_eq!(with.matches("Skill body.").count(), 1, "{with}");
    // The skill's other file was listed, not read, and is not offered.
    assert!(!with.contains("Supporting content."), "{with}");
    assert_eq!(system(&r[2].body), "Be brief.");
    no_violations(&model);
}

#[test]
fn a_tampered_skill_is_refused_and_nothing_of_it_is_offered() {
    let hub = Hub::new([fixture("fx", "", &["--skills-tampered"])]);
    assert!(hub.connect_all().is_empty());
    let e = hub.load_skill(None, "pdf-processing").unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::DigestMismatch, "{e}");
    assert_eq!(e.server(), Some("fx"));
    assert!(!e.to_string().contains("Evil body"), "{e}");
    let e = hub.load_skill(Some("fx"), "pdf-processing").unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::DigestMismatch, "{e}");
}

#[test]
fn the_hub_loads_a_skill_from_the_one_server_listing_it_or_the_one_named() {
    let hub = Hub::new([
        fixture("fx", "", &["--skills"]),
        fixture("fy", "", &["--skills"]),
        fixture("plain", "", &[]),
    ]);
    assert!(hub.connect_all().is_empty());
    // Two servers list it: nothing is loaded until one is named.
    let e = hub.load_skill(None, "pdf-processing").unwrap_err();
    assert_eq!(argument_kind(&e), InvalidArgumentKind::Ambiguous, "{e}");
    assert!(
        e.to_string().contains("`fx`") && e.to_string().contains("`fy`"),
        "{e}"
    );
    let skill = hub.load_skill(Some("fy"), "pdf-processing").unwrap();
    assert_eq!(skill.server(), "fy");
    assert_eq!(skill.instructions, "\nSkill body.\n");
    // By the URI of its SKILL.md, too.
    let by_uri = hub
        .load_skill(Some("fx"), "skill://pdf-processing/SKILL.md")
        .unwrap();
    assert_eq!(by_uri.server(), "fx");

    let e = hub.load_skill(Some("nope"), "pdf-processing").unwrap_err();
    assert_eq!(argument_kind(&e), InvalidArgumentKind::UnknownName, "{e}");
    let e = hub.load_skill(Some("plain"), "pdf-processing").unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::NotFound, "{e}");
    assert_eq!(e.server(), Some("plain"));
    let e = hub.load_skill(None, "no-such-skill").unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::NotFound, "{e}");
    assert_eq!(e.server(), Some("hub"));

    // Two skills of the same name from two servers are two skills, each labelled.
    let model = ScriptedModel::start(vec![Step::Text("ok".into())]).unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    agent.add_skill(&skill).unwrap();
    agent.add_skill(&by_uri).unwrap();
    agent.add_skill(&skill).unwrap(); // again: replaces itself
    agent.run("hi").unwrap();
    let sys = system(&model.requests()[0].body);
    assert_eq!(sys.matches("Skill body.").count(), 2, "{sys}");
    let fy = sys.find(&fixture_skill("fy")).expect("fy's skill");
    let fx = sys.find(&fixture_skill("fx")).expect("fx's skill");
    assert!(fy < fx, "in the order added: {sys}");
    no_violations(&model);
}

/// The SHA-256 digest of `bytes` as a skills listing writes it.
fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// An in-process server offering one skill per `(name, body length)`, each body that many
/// bytes of one letter after its frontmatter.
fn big_skills(skills: &[(&str, usize)]) -> TestServer {
    let mut entries = Vec::new();
    let mut files: Vec<(String, String)> = Vec::new();
    for (name, len) in skills {
        let uri = format!("skill://{name}/SKILL.md");
        let text = format!(
            "---\nname: {name}\ndescription: A large skill\n---\n{}\n",
            "w".repeat(*len)
        );
        entries.push(json!({
            "uri": uri,
            "frontmatter": {"name": name, "description": "A large skill"},
            "resources": [{"uri": uri, "digest": digest(text.as_bytes()), "size": text.len()}],
        }));
        files.push((uri, text));
    }
    TestServer::new("big")
        .capabilities(json!({
            "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}
        }))
        .on_request("skills/list", move |_| Ok(json!({ "skills": entries })))
        .on_request("resources/read", move |params| {
            let uri = params.and_then(|p| p["uri"].as_str()).unwrap_or("");
            let text = files
                .iter()
                .find(|(u, _)| u == uri)
                .map_or("", |(_, t)| t.as_str());
            Ok(json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
        })
}

#[test]
fn a_skill_over_64_kib_is_refused_whole_and_skills_stop_at_256_kib_in_all() {
    const KIB: usize = 1024;
    assert_eq!(Agent::MAX_SKILL_PROMPT_BYTES, 64 * KIB);
    assert_eq!(Agent::MAX_SKILLS_PROMPT_BYTES, 256 * KIB);
    let server = big_skills(&[
        ("huge", 65 * KIB),
        ("s1", 60 * KIB),
        ("s2", 60 * KIB),
        ("s3", 60 * KIB),
        ("s4", 60 * KIB),
        ("s5", 60 * KIB),
    ]);
    let client = server.connect().unwrap();
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![Step::Text("ok".into())]).unwrap();
    let mut agent = Agent::new(&hub, chat(&model));

    // Verified, and within the client's caps, but too large for the prompt.
    let huge = client.load_skill("huge").unwrap();
    let e = agent.add_skill(&huge).unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::TooLarge, "{e}");
    assert!(e.to_string().contains("more than the 65536"), "{e}");
    assert!(
        !e.to_string().contains("www"),
        "no skill text in the error: {e}"
    );

    for name in ["s1", "s2", "s3", "s4"] {
        agent.add_skill(&client.load_skill(name).unwrap()).unwrap();
    }
    let e = agent
        .add_skill(&client.load_skill("s5").unwrap())
        .unwrap_err();
    assert_eq!(skill_kind(&e), SkillErrorKind::TooLarge, "{e}");
    assert!(e.to_string().contains("262144 they may take in all"), "{e}");

    agent.run("hi").unwrap();
    let sys = system(&model.requests()[0].body);
    for name in ["s1", "s2", "s3", "s4"] {
        assert!(sys.contains(&format!("name=\"{name}\"")), "{name} offered");
    }
    assert!(!sys.contains("name=\"s5\"") && !sys.contains("name=\"huge\""));
    assert!(
        sys.len() <= Agent::MAX_SKILLS_PROMPT_BYTES + 1024,
        "{}",
        sys.len()
    );
    no_violations(&model);
}

const FORMS: &str = "skill://pdf-processing/references/FORMS.md";

/// The names of the tools a Chat request body offers.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the tool results a Chat request body carries, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn the_model_reads_a_listed_file_of_an_offered_skill_through_the_file_tool() {
    let hub = Hub::new([fixture("fx", "", &["--skills"])]);
    assert!(hub.connect_all().is_empty());
    let skill = hub.load_skill(None, "pdf-processing").unwrap();
    assert_eq!(skill.files.len(), 1);
    let model = ScriptedModel::start(vec![
        calls(vec![call("read_skill_file", json!({"uri": FORMS}))]),
        Step::Summary("read: ".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    agent.add_skill(&skill).unwrap();
    let out = agent.run("fill the form").unwrap();
    assert_eq!(out.text, "read: Supporting content.\n");
    let record = &out.tool_calls[0];
    assert_eq!(record.server.as_deref(), Some("fx"));
    assert_eq!(record.tool, "read_skill_file");
    assert!(!record.is_error);

    let r = model.requests();
    // Offered beside the fixture's tools, and the file listed (not read) in the element.
    assert!(offered(&r[0].body).contains(&"read_skill_file".to_owned()));
    assert!(offered(&r[0].body).contains(&"echo".to_owned()));
    let sys = system(&r[0].body);
    assert!(
        sys.contains(&format!(
            "Files of this skill:\n- {FORMS} (20 bytes)\n</skill>"
        )),
        "{sys}"
    );
    assert!(
        sys.contains("read it with the `read_skill_file` tool"),
        "{sys}"
    );
    assert!(!sys.contains("Supporting content."), "{sys}");
    assert_eq!(tool_results(&r[1].body), ["Supporting content.\n"]);
    no_violations(&model);

    // Off: the instructions alone, and no file tool.
    let model = ScriptedModel::start(vec![Step::Text("ok".into())]).unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).offer_skill_files(false);
    agent.add_skill(&skill).unwrap();
    agent.run("fill the form").unwrap();
    let body = &model.requests()[0].body;
    assert!(!offered(body).contains(&"read_skill_file".to_owned()));
    let sys = system(body);
    assert!(sys.contains(&fixture_skill_alone("fx")), "{sys}");
    assert!(
        !sys.contains("FORMS.md") && !sys.contains("read_skill_file"),
        "{sys}"
    );
    no_violations(&model);

    // No skill with files offered: no file tool either.
    let model = ScriptedModel::start(vec![Step::Text("ok".into())]).unwrap();
    Agent::new(&hub, chat(&model)).run("hi").unwrap();
    assert!(!offered(&model.requests()[0].body).contains(&"read_skill_file".to_owned()));
}

/// An in-process server offering one skill, `name` (described as `description`): its SKILL.md
/// and the files `listed` (URI, bytes as listed, each with its size and digest). A read of
/// SKILL.md is answered with it; `serve` answers the read of any other URI with its
/// `contents` item.
fn skill_server(
    name: &'static str,
    description: &str,
    listed: &[(&str, &[u8])],
    serve: impl Fn(&str) -> Value + Send + Sync + 'static,
) -> TestServer {
    let skill_uri = format!("skill://{name}/SKILL.md");
    let skill_md = format!("---\nname: {name}\ndescription: {description}\n---\nRead the files.\n");
    let mut resources = vec![json!({"uri": skill_uri,
        "digest": digest(skill_md.as_bytes()), "size": skill_md.len()})];
    for (uri, bytes) in listed {
        resources.push(json!({"uri": uri, "digest": digest(bytes), "size": bytes.len()}));
    }
    let entry = json!({"uri": skill_uri,
        "frontmatter": {"name": name, "description": description}, "resources": resources});
    TestServer::new(name)
        .capabilities(json!({
            "resources": {}, "tools": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}
        }))
        .on_request("skills/list", move |_| Ok(json!({ "skills": [entry] })))
        .on_request("resources/read", move |params| {
            let uri = params.and_then(|p| p["uri"].as_str()).unwrap_or("");
            if uri == skill_uri {
                return Ok(json!({"contents": [{"uri": uri, "text": skill_md}]}));
            }
            Ok(json!({ "contents": [serve(uri)] }))
        })
}

/// The `forms` skill's server: its one skill lists `files` (URI, listed bytes, served bytes),
/// each served as a blob, and the reads of them counted; it also has a tool named
/// `read_skill_file`.
fn skill_with_files(
    files: Vec<(&'static str, Vec<u8>, Vec<u8>)>,
) -> (TestServer, Arc<AtomicUsize>) {
    let listed: Vec<(&str, &[u8])> = files.iter().map(|(u, l, _)| (*u, l.as_slice())).collect();
    let reads = Arc::new(AtomicUsize::new(0));
    let counted = reads.clone();
    let served: Vec<(&str, Vec<u8>)> = files.iter().map(|(u, _, b)| (*u, b.clone())).collect();
    let server = skill_server("forms", "Forms", &listed, move |uri| {
        counted.fetch_add(1, Ordering::SeqCst);
        let bytes = served
            .iter()
            .find(|(u, _)| *u == uri)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_default();
        json!({"uri": uri, "blob": base64_encode(bytes)})
    })
    .tool(
        Tool::new("read_skill_file", json!({"type": "object"})),
        |_| {
            Ok(CallToolResult::success(vec![Content::text(
                "the server's own tool",
            )]))
        },
    );
    (server, reads)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn the_file_tool_gives_the_model_only_verified_text_of_listed_files() {
    let (server, reads) = skill_with_files(vec![
        (
            "skill://forms/good.md",
            b"good text".to_vec(),
            b"good text".to_vec(),
        ),
        (
            "skill://forms/bad.md",
            b"listed text".to_vec(),
            b"SECRET text".to_vec(),
        ),
        (
            "skill://forms/logo.png",
            vec![0x89, 0xff, 0x00, 0x10],
            vec![0x89, 0xff, 0x00, 0x10],
        ),
    ]);
    let client = Arc::new(server.connect().unwrap());
    // A Hub whose one server is the in-process one (its configured command never runs).
    let hub = Hub::new([ServerConfig::stdio("forms", "not-run")]);
    let tools = client.list_tools().unwrap();
    hub.inject(vec![client.clone()], vec![("forms".into(), tools)]);
    let skill = client.load_skill("forms").unwrap();
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("read_skill_file_2", json!({"uri": "skill://forms/bad.md"})),
            call(
                "read_skill_file_2",
                json!({"uri": "skill://forms/other.md"}),
            ),
            call(
                "read_skill_file_2",
                json!({"uri": "skill://forms/logo.png"}),
            ),
            call(
                "read_skill_file_2",
                json!({"uri": "skill://forms/good.md", "server": "nope"}),
            ),
            call("read_skill_file_2", json!({})),
            call(
                "read_skill_file_2",
                json!({"uri": "skill://forms/good.md", "server": "forms"}),
            ),
        ]),
        Step::Text("done".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    agent.add_skill(&skill).unwrap();
    let out = agent.run("fill").unwrap();
    let errors: Vec<bool> = out.tool_calls.iter().map(|c| c.is_error).collect();
    assert_eq!(errors, [true, true, true, true, true, false]);
    let results = tool_results(&model.requests()[1].body);
    assert_eq!(results.len(), 6);
    // The server's tool of the same name keeps it; the file tool takes the next.
    let names = offered(&model.requests()[0].body);
    assert!(
        names.contains(&"read_skill_file".to_owned())
            && names.contains(&"read_skill_file_2".to_owned())
    );
    assert!(
        results[0].contains("its SHA-256 digest is not the listed one"),
        "{}",
        results[0]
    );
    assert!(!results.iter().any(|r| r.contains("SECRET")), "{results:?}");
    assert!(
        results[1].contains("No skill lists the file"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("is not text (4 bytes)"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("No skill of the server `nope`"),
        "{}",
        results[3]
    );
    assert!(results[4].contains("`uri` is missing"), "{}", results[4]);
    assert_eq!(results[5], "good text");
    // Read: the bad file, the binary one and the good one; never the unlisted one.
    assert_eq!(reads.load(Ordering::SeqCst), 3);
    no_violations(&model);
}

#[test]
fn cancelling_the_run_ends_a_skill_file_read_being_waited_for() {
    let file = "a file the server holds back";
    let (got_tx, got_rx) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let listed: [(&str, &[u8]); 1] = [("skill://slow/f.md", file.as_bytes())];
    let server = skill_server("slow", "Slow", &listed, move |uri| {
        // Held until the test ends (a minute at the most).
        let _ = got_tx.try_send(());
        let _ = release_rx.recv_timeout(Duration::from_secs(60));
        json!({"uri": uri, "text": file})
    });
    let client = Arc::new(server.connect().unwrap());
    let hub = Hub::new([ServerConfig::stdio("slow", "not-run")]);
    hub.inject(vec![client.clone()], vec![("slow".into(), Vec::new())]);
    let skill = client.load_skill("slow").unwrap();
    let model = ScriptedModel::start(vec![
        calls(vec![call(
            "read_skill_file",
            json!({"uri": "skill://slow/f.md"}),
        )]),
        Step::Text("never asked".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    agent.add_skill(&skill).unwrap();
    let (ran, cancelled_at) = run_cancelled_when(&mut agent, "go", || {
        got_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server never got the read");
    });
    let after_cancel = cancelled_at.elapsed();
    assert!(
        after_cancel < Duration::from_secs(3),
        "the run ended {after_cancel:?} after the cancellation (the bar is 1 s)"
    );
    assert!(matches!(ran, Err(AgentError::Cancelled { .. })), "{ran:?}");
    assert_eq!(model.requests().len(), 1, "the model was not asked again");
    drop(release_tx);
}
