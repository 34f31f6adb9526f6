//! The skills extension on a `Client`, against an in-process server: listing reads no file,
//! loading reads `SKILL.md` only and refuses it unless it is as listed, a supporting file is
//! read only when asked and returned only once verified, and every cap holds.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use mcp_blocking::error::{ProtocolErrorKind, SkillErrorKind};
use mcp_blocking::model::{SkillEntry, SkillResources};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{Client, Error, SkillLimits};
use serde_json::{json, Value};

const SKILL: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const BODY: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_TEXT: &str = "Supporting content.\n";

fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn listed(uri: &str, text: &str) -> Value {
    json!({"uri": uri, "digest": digest(text.as_bytes()), "size": text.len()})
}

fn entry() -> Value {
    json!({
        "uri": SKILL,
        "frontmatter": {"name": "pdf-processing",
                        "description": "Extract, fill, and assemble PDF documents"},
        "resources": [listed(SKILL, BODY), listed(FORMS, FORMS_TEXT)],
    })
}

/// A server offering `entries`, serving `files` (URI, contents as `resources/read` contents),
/// and recording each URI read.
fn server(entries: Vec<Value>, files: Vec<(&str, Value)>) -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let seen = reads.clone();
    let files: Vec<(String, Value)> = files.into_iter().map(|(u, c)| (u.to_owned(), c)).collect();
    let server = TestServer::new("skills")
        .capabilities(json!({
            "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}
        }))
        .on_request("skills/list", move |_| Ok(json!({ "skills": entries })))
        .on_request("resources/read", move |params| {
            let uri = params
                .and_then(|p| p["uri"].as_str())
                .unwrap_or("")
                .to_owned();
            seen.lock().unwrap().push(uri.clone());
            let contents = files
                .iter()
                .find(|(u, _)| *u == uri)
                .map(|(_, c)| c.clone())
                .unwrap_or_else(|| json!({"uri": uri, "text": ""}));
            Ok(json!({ "contents": [contents] }))
        });
    (server, reads)
}

fn text(uri: &str, text: &str) -> Value {
    json!({"uri": uri, "mimeType": "text/markdown", "text": text})
}

fn happy() -> (TestServer, Arc<Mutex<Vec<String>>>) {
    server(
        vec![entry()],
        vec![(SKILL, text(SKILL, BODY)), (FORMS, text(FORMS, FORMS_TEXT))],
    )
}

fn kind(e: &Error) -> SkillErrorKind {
    match e {
        Error::Skill { kind, .. } => *kind,
        other => panic!("expected a skill error, got {other:?}"),
    }
}

fn reads(r: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    r.lock().unwrap().clone()
}

#[test]
fn listing_reads_no_file_and_loading_reads_only_skill_md() {
    let (server, read) = happy();
    let client = server.connect().unwrap();
    assert!(client.supports_skills());
    let skills = client.list_skills().unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name(), Some("pdf-processing"));
    assert!(reads(&read).is_empty(), "listing read {:?}", reads(&read));

    let skill = client.load_skill("pdf-processing").unwrap();
    assert_eq!(reads(&read), [SKILL]);
    assert_eq!(skill.instructions, "\nSkill body.\n");
    assert_eq!(skill.frontmatter["name"], "pdf-processing");
    assert_eq!(skill.files.len(), 1);
    assert_eq!(skill.files[0].uri, FORMS);

    let bytes = skill.read_file(&client, FORMS).unwrap();
    assert_eq!(bytes, FORMS_TEXT.as_bytes());
    assert_eq!(reads(&read), [SKILL, FORMS]);
}

#[test]
fn a_server_without_the_extension_does_not_support_skills() {
    let client = TestServer::new("plain").connect().unwrap();
    assert!(!client.supports_skills());
}

#[test]
fn a_wrong_digest_is_refused_and_the_file_never_read() {
    let evil = BODY.replace("Skill body.", "Evil body!!");
    let (server, read) = server(
        vec![entry()],
        vec![
            (SKILL, text(SKILL, &evil)),
            (FORMS, text(FORMS, FORMS_TEXT)),
        ],
    );
    let client = server.connect().unwrap();
    let e = client.load_skill(SKILL).unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::DigestMismatch, "{e}");
    assert_eq!(reads(&read), [SKILL]);
}

#[test]
fn a_wrong_size_is_refused_and_the_file_never_read() {
    let longer = format!("{BODY}extra bytes the entry did not account for\n");
    let (server, read) = server(
        vec![entry()],
        vec![
            (SKILL, text(SKILL, &longer)),
            (FORMS, text(FORMS, FORMS_TEXT)),
        ],
    );
    let client = server.connect().unwrap();
    let e = client.load_skill(SKILL).unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::SizeMismatch, "{e}");
    assert_eq!(reads(&read), [SKILL]);
}

#[test]
fn tampered_frontmatter_is_refused_even_with_a_matching_digest() {
    // The entry's digest and size are those of the tampered file; only the frontmatter differs.
    let tampered = BODY.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let mut e = entry();
    e["resources"][0] = listed(SKILL, &tampered);
    let (server, read) = server(
        vec![e],
        vec![
            (SKILL, text(SKILL, &tampered)),
            (FORMS, text(FORMS, FORMS_TEXT)),
        ],
    );
    let client = server.connect().unwrap();
    let err = client.load_skill(SKILL).unwrap_err();
    assert_eq!(kind(&err), SkillErrorKind::FrontmatterMismatch, "{err}");
    assert!(err.to_string().contains("description"), "{err}");
    assert_eq!(reads(&read), [SKILL]);
}

#[test]
fn a_supporting_file_not_as_listed_is_refused() {
    for (served, want) in [
        ("Supporting content!\n", SkillErrorKind::DigestMismatch),
        ("Supporting content.\n\n", SkillErrorKind::SizeMismatch),
    ] {
        let (server, _) = server(
            vec![entry()],
            vec![(SKILL, text(SKILL, BODY)), (FORMS, text(FORMS, served))],
        );
        let client = server.connect().unwrap();
        let skill = client.load_skill(SKILL).unwrap();
        let e = skill.read_file(&client, FORMS).unwrap_err();
        assert_eq!(kind(&e), want, "{e}");
    }
}

#[test]
fn an_unlisted_file_is_not_read() {
    let (server, read) = happy();
    let client = server.connect().unwrap();
    let skill = client.load_skill(SKILL).unwrap();
    let e = skill
        .read_file(&client, "skill://pdf-processing/secret.md")
        .unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::Unlisted);
    assert_eq!(reads(&read), [SKILL]);
}

#[test]
fn a_blob_file_is_decoded_then_verified() {
    let blob = base64::engine::general_purpose::STANDARD.encode(FORMS_TEXT);
    let (server, _) = server(
        vec![entry()],
        vec![
            (SKILL, text(SKILL, BODY)),
            (FORMS, json!({"uri": FORMS, "blob": blob})),
        ],
    );
    let client = server.connect().unwrap();
    let skill = client.load_skill(SKILL).unwrap();
    assert_eq!(
        skill.read_file(&client, FORMS).unwrap(),
        FORMS_TEXT.as_bytes()
    );
}

#[test]
fn an_unknown_skill_or_dynamic_files_are_refused_without_reading() {
    let mut dynamic = entry();
    dynamic["resources"] = json!("dynamic");
    let (server, read) = server(vec![dynamic], vec![(SKILL, text(SKILL, BODY))]);
    let client = server.connect().unwrap();
    let e = client.load_skill("no-such-skill").unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::NotFound);
    let e = client.load_skill(SKILL).unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::Unverifiable);
    assert!(reads(&read).is_empty());
}

#[test]
fn the_entry_cap_holds_over_pages() {
    let page = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                let mut e = entry();
                e["uri"] = json!(format!("skill://s{i}/SKILL.md"));
                e
            })
            .collect()
    };
    let pages = Arc::new(Mutex::new(0));
    let server = TestServer::new("many").on_request("skills/list", move |params| {
        *pages.lock().unwrap() += 1;
        let cursor = params.and_then(|p| p["cursor"].as_str()).unwrap_or("0");
        let next: u32 = cursor.parse::<u32>().unwrap() + 1;
        Ok(json!({"skills": page(3), "nextCursor": next.to_string()}))
    });
    let client = server.connect().unwrap();
    let limits = SkillLimits {
        max_entries: 7,
        ..SkillLimits::default()
    };
    match client.list_skills_with(&limits).unwrap_err() {
        Error::Protocol { kind, .. } => assert_eq!(kind, ProtocolErrorKind::TooMany),
        other => panic!("expected TooMany, got {other:?}"),
    }
    // Pages of 3: the third would bring 9 > 7.
    assert_eq!(
        server
            .received_methods()
            .iter()
            .filter(|m| *m == "skills/list")
            .count(),
        3
    );
}

#[test]
fn a_repeated_cursor_ends_the_listing() {
    let server = TestServer::new("loop").on_request("skills/list", move |_| {
        Ok(json!({"skills": [entry()], "nextCursor": "same"}))
    });
    let client = server.connect().unwrap();
    match client.list_skills().unwrap_err() {
        Error::Protocol { kind, .. } => assert_eq!(kind, ProtocolErrorKind::Unexpected),
        other => panic!("expected a cursor loop error, got {other:?}"),
    }
}

fn load_with(client: &Client, limits: SkillLimits) -> Result<mcp_blocking::LoadedSkill, Error> {
    let entry: SkillEntry = serde_json::from_value(entry()).unwrap();
    client.load_skill_entry(&entry, &limits)
}

#[test]
fn the_file_count_file_size_and_skill_size_caps_hold_before_any_read() {
    let (server, read) = happy();
    let client = server.connect().unwrap();
    let cases = [
        SkillLimits {
            max_files: 1,
            ..SkillLimits::default()
        },
        SkillLimits {
            max_file_bytes: BODY.len() as u64 - 1,
            ..SkillLimits::default()
        },
        SkillLimits {
            max_skill_bytes: (BODY.len() + FORMS_TEXT.len()) as u64 - 1,
            ..SkillLimits::default()
        },
    ];
    for limits in cases {
        let e = load_with(&client, limits).unwrap_err();
        assert_eq!(kind(&e), SkillErrorKind::TooLarge, "{limits:?}: {e}");
    }
    assert!(reads(&read).is_empty(), "{:?}", reads(&read));
    // At exactly the caps, it loads.
    let exact = SkillLimits {
        max_files: 2,
        max_file_bytes: BODY.len() as u64,
        max_skill_bytes: (BODY.len() + FORMS_TEXT.len()) as u64,
        ..SkillLimits::default()
    };
    load_with(&client, exact).unwrap();
    // The per-file cap also holds for a supporting file.
    let small = SkillLimits {
        max_file_bytes: BODY.len() as u64,
        ..SkillLimits::default()
    };
    let mut big = entry();
    let large = "x".repeat(BODY.len() + 1);
    big["resources"][1] = listed(FORMS, &large);
    let entry: SkillEntry = serde_json::from_value(big).unwrap();
    let skill = client.load_skill_entry(&entry, &small).unwrap();
    let e = skill.read_file(&client, FORMS).unwrap_err();
    assert_eq!(kind(&e), SkillErrorKind::TooLarge);
    assert_eq!(reads(&read), [SKILL, SKILL]);
}

#[test]
fn the_default_caps_are_the_extensions_limits() {
    let d = SkillLimits::default();
    assert_eq!(d.max_files, 512);
    assert_eq!(d.max_skill_bytes, 16 * 1024 * 1024);
    assert_eq!(d.max_file_bytes, 16 * 1024 * 1024);
    let e: SkillEntry = serde_json::from_value(entry()).unwrap();
    assert!(matches!(e.resources, SkillResources::Listed(ref f) if f.len() == 2));
}

#[test]
fn the_hub_lists_the_skills_of_the_servers_that_offer_them() {
    let (with, read) = happy();
    let broken = TestServer::new("broken")
        .capabilities(json!({"extensions": {"io.modelcontextprotocol/skills": {}}}))
        .on_request("skills/list", |_| Ok(json!({"skills": "not a list"})));
    let plain = TestServer::new("plain");
    let clients = [with.connect(), broken.connect(), plain.connect()]
        .into_iter()
        .map(|c| Arc::new(c.unwrap()))
        .collect();
    let hub = mcp_blocking::Hub::default();
    hub.inject(clients, Vec::new());
    let listed = hub.list_skills();
    let names: Vec<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["skills", "broken"]);
    assert_eq!(listed[0].1.as_ref().unwrap()[0].uri, SKILL);
    assert!(
        matches!(listed[1].1, Err(Error::Protocol { .. })),
        "{:?}",
        listed[1].1
    );
    assert!(reads(&read).is_empty());
    assert!(!plain.received_methods().contains(&"skills/list".to_owned()));
}
