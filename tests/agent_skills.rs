//! Skills offered to the agent's model: loaded from a Hub's fixture servers (real processes)
//! and verified, a skill's instructions reach the model's system prompt only when the program
//! adds it, labelled with its server; a tampered skill is refused before anything is offered;
//! the caps on what skills add to the prompt hold (in-process servers, scripted model on
//! loopback).

mod common;
mod hub_support;

use common::agent::{chat, no_violations};
use hub_support::fixture;
use mcp_blocking::agent::Agent;
use mcp_blocking::error::{InvalidArgumentKind, SkillErrorKind};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{Error, Hub};
use mcp_fixture_server::scripted_model::{ScriptedModel, Step};
use serde_json::{json, Value};

/// The system message of a Chat request body ("" when there is none).
fn system(body: &Value) -> String {
    body["messages"][0]
        .get("content")
        .filter(|_| body["messages"][0]["role"] == "system")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The element the fixture's skill is offered in, as served by `server`.
fn fixture_skill(server: &str) -> String {
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
