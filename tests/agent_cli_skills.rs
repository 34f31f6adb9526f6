//! `mcpb run --skill` and `mcpb chat --skill` end to end: the mcpb binary, fixture servers
//! offering a skill (one of them tampered), and the scripted model on loopback. A skill is
//! loaded and verified before the model is asked anything; one that fails stops the command
//! with the exit status `mcpb skill` gives it, and the model receives nothing.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use mcp_fixture_server::scripted_model::{ScriptedModel, Step};
use serde_json::{json, Value};

mod common;

use common::mcpb::{assert_exit, command, mcpb, stderr, stdout, wait_within};
use common::tempdir::TempDir;

/// A config file of fixture servers, each with its flags.
fn config(dir: &TempDir, servers: &[(&str, &[&str])]) -> String {
    let fixture = common::fixture::path();
    let mut doc = json!({"mcpServers": {}});
    for (name, flags) in servers {
        doc["mcpServers"][*name] = json!({"command": fixture, "args": flags});
    }
    dir.file("mcp.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

/// The system message of the `i`-th request the model received.
fn system(model: &ScriptedModel, i: usize) -> String {
    let body = &model.requests()[i].body;
    body["messages"][0]
        .get("content")
        .filter(|_| body["messages"][0]["role"] == "system")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn element(server: &str) -> String {
    format!("<skill server=\"{server}\" name=\"pdf-processing\">")
}

#[test]
fn run_offers_a_skill_only_with_skill() {
    let dir = TempDir::new("agent-cli-skills");
    let file = config(&dir, &[("fx", &["--skills"]), ("other", &[])]);
    let model =
        ScriptedModel::start(vec![Step::Text("one".into()), Step::Text("two".into())]).unwrap();
    let url = model.base_url();
    let out = mcpb(&["--config", &file, "run", "--model-url", &url, "hi"]);
    assert_exit(&out, 0);
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--model-url",
        &url,
        "--skill",
        "pdf-processing",
        "-v",
        "fill the form",
    ]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "two\n");
    assert!(
        stderr(&out).contains("skill `pdf-processing` of server `fx` offered"),
        "{}",
        stderr(&out)
    );
    let without = system(&model, 0);
    assert!(
        !without.contains("<skill") && !without.contains("Skill body."),
        "{without}"
    );
    let with = system(&model, 1);
    assert!(with.contains(&element("fx")), "{with}");
    assert!(
        with.contains(
            "Description: Extract, fill, and assemble PDF documents\n\nSkill body.\n\nFiles \
             of this skill:\n- skill://pdf-processing/references/FORMS.md (20 bytes)\n</skill>"
        ),
        "{with}"
    );
    // The model may read the skill's file: the file tool is offered with the skill only.
    let tools = |i: usize| model.requests()[i].body["tools"].to_string();
    assert!(!tools(0).contains("read_skill_file"), "{}", tools(0));
    assert!(tools(1).contains("\"read_skill_file\""), "{}", tools(1));
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[test]
fn a_tampered_skill_stops_the_run_with_exit_5_and_the_model_gets_nothing() {
    let dir = TempDir::new("agent-cli-skills");
    let file = config(&dir, &[("fx", &["--skills-tampered"])]);
    let model = ScriptedModel::start(vec![Step::Text("never".into())]).unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "--json",
        "run",
        "--model-url",
        &url,
        "--skill",
        "pdf-processing",
        "hi",
    ]);
    assert_exit(&out, 5);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["error"]["kind"], "skill", "{doc}");
    assert_eq!(doc["error"]["reason"], "digestmismatch", "{doc}");
    assert_eq!(doc["error"]["server"], "fx", "{doc}");
    assert!(model.requests().is_empty(), "the model was asked");
    assert!(
        !stdout(&out).contains("Evil") && !stderr(&out).contains("Evil"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // The same exit status as `mcpb skill` gives the same skill.
    let out = mcpb(&[
        "--config",
        &file,
        "--server",
        "fx",
        "skill",
        "pdf-processing",
    ]);
    assert_exit(&out, 5);
}

#[test]
fn a_skill_listed_by_two_servers_needs_its_server_named() {
    let dir = TempDir::new("agent-cli-skills");
    let file = config(&dir, &[("fx", &["--skills"]), ("fy", &["--skills"])]);
    let model = ScriptedModel::start(vec![Step::Text("ok".into())]).unwrap();
    let url = model.base_url();
    let base = ["--config", &file, "--json", "run", "--model-url", &url];
    let run = |extra: &[&str]| mcpb(&[&base[..], extra].concat());
    let out = run(&["--skill", "pdf-processing", "hi"]);
    assert_exit(&out, 2);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["error"]["kind"], "invalid_argument", "{doc}");
    assert!(model.requests().is_empty(), "the model was asked");

    let out = run(&["--skill", "fy/pdf-processing", "hi"]);
    assert_exit(&out, 0);
    let sys = system(&model, 0);
    assert!(
        sys.contains(&element("fy")) && !sys.contains(&element("fx")),
        "{sys}"
    );

    // No server lists it: exit 5, as `mcpb skill` for a skill its server does not list.
    let out = run(&["--skill", "no-such-skill", "hi"]);
    assert_exit(&out, 5);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["error"]["reason"], "notfound", "{doc}");
    let out = run(&["--skill", "fy/", "hi"]);
    assert_exit(&out, 2);
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn chat_offers_the_skill_in_every_answer() {
    let dir = TempDir::new("agent-cli-skills");
    let file = config(&dir, &[("fx", &["--skills"])]);
    let model =
        ScriptedModel::start(vec![Step::Text("one".into()), Step::Text("two".into())]).unwrap();
    let url = model.base_url();
    let mut child = command(&[
        "--config",
        &file,
        "chat",
        "--model-url",
        &url,
        "--skill",
        "fx/pdf-processing",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"first\nsecond\n")
        .unwrap();
    let out = wait_within(child, "mcpb chat", Duration::from_secs(60));
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "one\ntwo\n");
    assert_eq!(model.requests().len(), 2);
    for i in 0..2 {
        assert!(system(&model, i).contains(&element("fx")), "request {i}");
    }
}
