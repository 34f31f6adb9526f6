//! `mcpb skills` and `mcpb skill NAME [FILE]` against the fixture server's skill: listed,
//! loaded, a file read only when named, and a tampered skill refused with nothing of it shown.

use std::process::Output;

use serde_json::Value;

mod common;

use common::mcpb::{assert_exit, mcpb, stderr, stdout};

fn on_fixture(flags: &str, args: &[&str]) -> Output {
    let line = format!("'{}' {flags}", common::fixture::path());
    let mut all = vec!["--stdio", line.as_str()];
    all.extend_from_slice(args);
    mcpb(&all)
}

#[test]
fn skills_lists_the_skill_by_name_and_uri() {
    let o = on_fixture("--skills", &["skills"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.starts_with("pdf-processing  skill://pdf-processing/SKILL.md\n"),
        "{out}"
    );
    assert!(
        out.contains("Extract, fill, and assemble PDF documents"),
        "{out}"
    );

    let o = on_fixture("--skills", &["--json", "skills"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["skills"][0]["resources"][1]["size"], 20);
}

#[test]
fn skill_prints_the_instructions_and_a_named_file() {
    let o = on_fixture("--skills", &["skill", "pdf-processing"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("Skill body.\n"), "{out}");
    assert!(
        out.contains("skill://pdf-processing/references/FORMS.md  (20 bytes)"),
        "{out}"
    );

    let o = on_fixture(
        "--skills",
        &["skill", "pdf-processing", "references/FORMS.md"],
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Supporting content.\n");
}

#[test]
fn a_tampered_skill_is_refused_and_nothing_of_it_printed() {
    let o = on_fixture("--skills-tampered", &["skill", "pdf-processing"]);
    assert_exit(&o, 5);
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("digest"), "{err}");
    assert!(!err.contains("Evil body"), "{err}");

    let o = on_fixture(
        "--skills-tampered",
        &["--json", "skill", "pdf-processing", "references/FORMS.md"],
    );
    assert_exit(&o, 5);
    assert!(!stdout(&o).contains("Supporting content"), "{}", stdout(&o));
}

#[test]
fn an_unknown_skill_or_file_fails_and_a_server_without_skills_says_so() {
    let o = on_fixture("--skills", &["skill", "no-such-skill"]);
    assert_exit(&o, 5);
    assert!(stderr(&o).contains("no such skill"), "{}", stderr(&o));

    let o = on_fixture("--skills", &["skill", "pdf-processing", "secret.md"]);
    assert_exit(&o, 5);
    assert!(stderr(&o).contains("not a listed file"), "{}", stderr(&o));

    let o = on_fixture("", &["skills"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("offers no skills"), "{}", stderr(&o));
}
