//! `mcpb` answering what its servers ask: elicitation (a form on a terminal, `--input`, or
//! declined), sampling (`--sampling-model-url`, answered by the scripted model on loopback)
//! and roots (`--root`, `roots add`/`roots remove` in the shell).
//!
//! The terminal is a real pseudo-terminal: mcpb runs in a session of its own whose controlling
//! terminal is the pty (so `/dev/tty` opens), with stdin and stderr on it and stdout on a pipe;
//! the test reads the pty until a question appears (with a deadline) and types the answer.
//! The peer is `server-everything`, installed under `target/peers/` by `common::peers`.
// Linux only: the peers run on the Node that `common::peers` installs for Linux, and the pty is
// a Unix one.
#![cfg(unix)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcp_fixture_server::scripted_model::{ScriptedModel, Step};
use serde_json::Value;

mod common;

use common::mcpb::{command, wait_within};
use common::peers::{self, EVERYTHING};
use common::tempdir::TempDir;

/// How long a whole mcpb run may take (the peer's first start included).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// How long a question may take to appear on the terminal.
const PROMPT_LIMIT: Duration = Duration::from_secs(60);

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// `node .../server-everything/dist/index.js`.
fn everything() -> String {
    format!(
        "{} {}",
        quoted(peers::node()),
        quoted(&peers::npm().entry(EVERYTHING))
    )
}

/// `mcpb --stdio EVERYTHING --timeout 60 ARGS`.
fn on_everything(args: &[&str]) -> Command {
    let line = everything();
    let mut all = vec!["--stdio", line.as_str(), "--timeout", "60"];
    all.extend_from_slice(args);
    command(&all)
}

/// Runs `cmd` without a terminal: stdin empty, stdout and stderr pipes.
fn unattended(mut cmd: Command, what: &str) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpb");
    wait_within(child, what, RUN_LIMIT)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The texts of a `--json` call result's content.
fn texts(o: &Output) -> String {
    let doc: Value = serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", stdout(o), stderr(o)));
    doc["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {doc}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A directory of one test: `TempDir` only hands out files.
fn dir_in(tmp: &TempDir, name: &str) -> PathBuf {
    let dir = tmp
        .file(".keep", "")
        .parent()
        .expect("a directory")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// mcpb on a pseudo-terminal: its controlling terminal, stdin and stderr; stdout a pipe.
struct OnPty {
    master: File,
    /// What mcpb wrote on the terminal (and the terminal echoed), and a signal when more came.
    seen: Arc<(Mutex<Vec<u8>>, Condvar)>,
    /// How far [`expect`](Self::expect) has read.
    pos: usize,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    child: Option<Child>,
}

impl OnPty {
    fn spawn(mut cmd: Command) -> OnPty {
        use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
            .expect("open a pty");
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(name.to_str().unwrap())
            .expect("open the pty's terminal side");
        cmd.stdin(slave.try_clone().unwrap())
            .stderr(slave)
            .stdout(Stdio::piped());
        // SAFETY: between fork and exec the closure only makes system calls (setsid, ioctl)
        // on a descriptor the child already has; it allocates nothing and takes no lock.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::setsid()?;
                let stdin = std::os::fd::BorrowedFd::borrow_raw(0);
                rustix::process::ioctl_tiocsctty(stdin)?;
                Ok(())
            });
        }
        let child = cmd.spawn().expect("run mcpb on the pty");
        // The parent's copies of the terminal side go with `cmd`.
        drop(cmd);
        let master = File::from(master);
        let seen = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let mut master = master.try_clone().unwrap();
            let seen = Arc::clone(&seen);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("pty-reader".into())
                .spawn(move || {
                    use rustix::event::{poll, PollFd, PollFlags, Timespec};
                    let slice = Timespec {
                        tv_sec: 0,
                        tv_nsec: 50_000_000,
                    };
                    while !stop.load(Ordering::SeqCst) {
                        let mut fds = [PollFd::new(&master, PollFlags::IN)];
                        match poll(&mut fds, Some(&slice)) {
                            Ok(0) => continue,
                            Ok(_) => {}
                            Err(_) => break,
                        }
                        let mut buf = [0u8; 4096];
                        match master.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                seen.0.lock().unwrap().extend_from_slice(&buf[..n]);
                                seen.1.notify_all();
                            }
                        }
                    }
                })
                .unwrap()
        };
        OnPty {
            master,
            seen,
            pos: 0,
            stop,
            reader: Some(reader),
            child: Some(child),
        }
    }

    /// Everything shown on the terminal so far.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.seen.0.lock().unwrap()).into_owned()
    }

    /// Waits until `text` appears after what was read so far, and reads past it.
    #[track_caller]
    fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + PROMPT_LIMIT;
        let (lock, more) = &*self.seen;
        let mut seen = lock.lock().unwrap();
        loop {
            let shown = String::from_utf8_lossy(&seen[self.pos.min(seen.len())..]).into_owned();
            if let Some(i) = shown.find(text) {
                // Positions in the lossy text equal byte positions for the UTF-8 mcpb writes.
                self.pos += i + text.len();
                return;
            }
            let now = Instant::now();
            assert!(
                now < deadline,
                "`{text}` did not appear on the terminal within {PROMPT_LIMIT:?}; it shows:\n{}",
                String::from_utf8_lossy(&seen)
            );
            seen = more.wait_timeout(seen, deadline - now).unwrap().0;
        }
    }

    /// Types `line` and Enter.
    fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\r").unwrap();
        self.master.flush().unwrap();
    }

    /// Types raw bytes (a control character).
    fn type_raw(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for mcpb to exit (at most [`RUN_LIMIT`]) and stops reading the terminal.
    fn finish(mut self, what: &str) -> (Output, String) {
        let child = self.child.take().expect("running");
        let out = wait_within(child, what, RUN_LIMIT);
        self.stop.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let screen = self.screen();
        (out, screen)
    }
}

impl Drop for OnPty {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

#[test]
fn everything_elicitation_is_answered_on_a_terminal() {
    let mut pty = OnPty::spawn(on_everything(&[
        "--json",
        "call",
        "trigger-elicitation-request",
    ]));
    pty.expect("asks for input");
    pty.expect("fill in the form? [y]es / [n]o (decline) / [c]ancel: ");
    pty.type_line("y");
    pty.expect("name (String) [text, required]: ");
    // Required: Enter alone is asked again.
    pty.type_line("");
    pty.expect("(required)");
    pty.expect("name (String) [text, required]: ");
    pty.type_line("Ada Lovelace");
    pty.expect("check (Boolean) [y/n");
    pty.type_line("yes");
    pty.expect("firstLine (String with default)");
    pty.type_line("");
    pty.expect("email (String with email format)");
    pty.type_line("not an address");
    pty.expect("(expected an email address");
    pty.type_line("ada@example.org");
    pty.expect("homepage (String with uri format)");
    pty.type_line("");
    pty.expect("birthdate (String with date format)");
    pty.type_line("1815-02-30");
    pty.expect("(expected a date, YYYY-MM-DD)");
    pty.type_line("1815-12-10");
    pty.expect("integer (Integer) [integer >= 1 <= 100, Enter for 42]: ");
    pty.type_line("101");
    pty.expect("(expected at most 100)");
    pty.type_line("7");
    pty.expect("number (Number in range 1-1000)");
    pty.type_line("");
    pty.expect("untitledSingleSelectEnum");
    pty.type_line("3");
    pty.expect("untitledMultipleSelectEnum");
    pty.type_line("Piano, Drums");
    pty.expect("titledSingleSelectEnum");
    pty.type_line("wonder woman");
    pty.expect("titledMultipleSelectEnum");
    pty.type_line("");
    pty.expect("legacyTitledEnum");
    pty.type_line("Dogs");
    pty.expect("send them? [y]es (accept) / [n]o (decline) / [c]ancel: ");
    pty.type_line("y");
    let (out, screen) = pty.finish("mcpb call trigger-elicitation-request on a pty");
    assert_eq!(out.status.code(), Some(0), "{}\n{screen}", stdout(&out));
    let text = texts(&out);
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
    assert!(text.contains("- Email: ada@example.org"), "{text}");
    assert!(text.contains("- Birthdate: 1815-12-10"), "{text}");
    assert!(text.contains("- Favorite Integer: 7"), "{text}");
    let raw: Value = serde_json::from_str(
        text.split("Raw result: ")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}")),
    )
    .unwrap();
    let content = &raw["content"];
    assert_eq!(raw["action"], "accept");
    assert_eq!(content["untitledSingleSelectEnum"], "Joey");
    assert_eq!(
        content["untitledMultipleSelectEnum"],
        serde_json::json!(["Piano", "Drums"])
    );
    assert_eq!(content["titledSingleSelectEnum"], "hero-3");
    assert_eq!(content["legacyTitledEnum"], "pet-2");
    // Left out: filled from the schema's defaults.
    assert_eq!(content["firstLine"], "It was a dark and stormy night.");
    assert_eq!(content["number"].to_string(), "3.14");
    assert!(content.get("homepage").is_none(), "{content}");
}

#[test]
fn everything_elicitation_declined_or_cancelled_on_a_terminal() {
    for (answer, said) in [("n", "declined"), ("c", "cancelled")] {
        let mut pty = OnPty::spawn(on_everything(&[
            "--json",
            "call",
            "trigger-elicitation-request",
        ]));
        pty.expect("fill in the form?");
        pty.type_line(answer);
        let (out, screen) = pty.finish("mcpb call trigger-elicitation-request, declined");
        assert_eq!(out.status.code(), Some(0), "{screen}");
        let text = texts(&out);
        assert!(text.contains(&format!("User {said}")), "{text}");
    }
}

#[test]
fn everything_elicitation_is_declined_without_a_terminal() {
    let out = unattended(
        on_everything(&["--json", "call", "trigger-elicitation-request"]),
        "mcpb call trigger-elicitation-request without a terminal",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = texts(&out);
    assert!(text.contains("User declined"), "{text}");
    assert!(text.contains("\"action\": \"decline\""), "{text}");
    let err = stderr(&out);
    assert!(err.contains("no terminal to ask on: declined"), "{err}");
    assert!(err.contains("--input FIELD=VALUE: name, check"), "{err}");
    assert!(err.contains("required: name"), "{err}");
}

#[test]
fn everything_elicitation_is_answered_by_input_without_a_terminal() {
    let out = unattended(
        on_everything(&[
            "--input",
            "name=Grace Hopper",
            "--input",
            "integer=12",
            "--input",
            "untitledMultipleSelectEnum=Bass,1",
            "--json",
            "call",
            "trigger-elicitation-request",
        ]),
        "mcpb --input call trigger-elicitation-request",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = texts(&out);
    assert!(text.contains("- Name: Grace Hopper"), "{text}");
    assert!(text.contains("- Favorite Integer: 12"), "{text}");
    assert!(text.contains("\"Bass\",\n      \"Guitar\""), "{text}");
    assert!(
        stderr(&out).contains("answered from --input (name, integer"),
        "{}",
        stderr(&out)
    );

    // A value the schema refuses is not sent: without a terminal the form is declined.
    let out = unattended(
        on_everything(&[
            "--input",
            "name=Grace",
            "--input",
            "integer=500",
            "--json",
            "call",
            "trigger-elicitation-request",
        ]),
        "mcpb --input integer=500",
    );
    assert!(texts(&out).contains("User declined"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("--input integer: expected at most 100"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ctrl_c_during_a_form_exits_promptly_and_the_form_ends() {
    let mut pty = OnPty::spawn(on_everything(&["call", "trigger-elicitation-request"]));
    pty.expect("fill in the form?");
    let pressed = Instant::now();
    pty.type_raw(b"\x03");
    let (out, screen) = pty.finish("mcpb interrupted in a form");
    let took = pressed.elapsed();
    assert_eq!(out.status.code(), Some(130), "{screen}");
    // The issue asks for 1 s; a loaded machine gets slack (the real figure is in the report).
    assert!(
        took < Duration::from_secs(5),
        "exited {took:?} after Ctrl-C"
    );
    eprintln!("ctrl-c in a form: exited after {took:?}");
}

/// The scripted model, answering `text` once.
fn model_answering(text: &str) -> ScriptedModel {
    ScriptedModel::start(vec![Step::Text(text.to_owned())]).expect("start the scripted model")
}

#[test]
fn everything_sampling_is_confirmed_on_a_terminal_and_answered_by_the_model() {
    let model = model_answering("a scripted completion");
    let url = model.base_url();
    let mut pty = OnPty::spawn(on_everything(&[
        "--sampling-model-url",
        &url,
        "--sampling-model",
        "scripted-1",
        "--json",
        "call",
        "trigger-sampling-request",
        "prompt=name three colours",
        "maxTokens=20",
    ]));
    pty.expect("asks the model `scripted-1` (sampling, at most 20 tokens)");
    pty.expect("system: You are a helpful test server.");
    pty.expect("user: Resource trigger-sampling-request context: name three colours");
    pty.expect("send it to the model? [y]es / [n]o: ");
    assert!(model.requests().is_empty(), "sent before it was confirmed");
    pty.type_line("y");
    let (out, screen) = pty.finish("mcpb call trigger-sampling-request on a pty");
    assert_eq!(out.status.code(), Some(0), "{screen}");
    let text = texts(&out);
    assert!(text.contains("a scripted completion"), "{text}");
    assert!(text.contains("\"model\": \"scripted-1\""), "{text}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "scripted-1");
    assert_eq!(body["max_tokens"], 20, "{body}");
    let sent = body.to_string();
    assert!(sent.contains("You are a helpful test server."), "{sent}");
    assert!(sent.contains("context: name three colours"), "{sent}");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[test]
fn everything_sampling_refused_on_a_terminal_reaches_no_model() {
    let model = model_answering("never sent");
    let url = model.base_url();
    let mut pty = OnPty::spawn(on_everything(&[
        "--sampling-model-url",
        &url,
        "call",
        "trigger-sampling-request",
        "prompt=hi",
    ]));
    pty.expect("send it to the model?");
    pty.type_line("n");
    let (out, screen) = pty.finish("mcpb sampling declined on a pty");
    assert_eq!(out.status.code(), Some(1), "{screen}");
    // The server's tool reports the refusal it got (-1, the user rejected it).
    assert!(
        stdout(&out).contains("the user declined the sampling request"),
        "{}\n{screen}",
        stdout(&out)
    );
    assert!(model.requests().is_empty());
}

#[test]
fn everything_sampling_without_a_terminal_needs_sampling_yes() {
    let model = model_answering("sent with --sampling-yes");
    let url = model.base_url();
    let refused = unattended(
        on_everything(&[
            "--sampling-model-url",
            &url,
            "--json",
            "call",
            "trigger-sampling-request",
            "prompt=hi",
        ]),
        "mcpb sampling without a terminal",
    );
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("add --sampling-yes"),
        "{}",
        stderr(&refused)
    );
    assert!(model.requests().is_empty());

    let sent = unattended(
        on_everything(&[
            "--sampling-model-url",
            &url,
            "--sampling-yes",
            "--json",
            "call",
            "trigger-sampling-request",
            "prompt=hi",
        ]),
        "mcpb sampling with --sampling-yes",
    );
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    assert!(
        texts(&sent).contains("sent with --sampling-yes"),
        "{}",
        stdout(&sent)
    );
    // Shown on stderr even when not asked.
    assert!(stderr(&sent).contains("context: hi"), "{}", stderr(&sent));
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn without_the_flags_sampling_and_roots_are_not_offered() {
    let out = unattended(on_everything(&["--json", "tools"]), "mcpb tools");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // server-everything registers these tools only for a client with the capability.
    assert!(names.contains(&"trigger-elicitation-request"), "{names:?}");
    assert!(!names.contains(&"trigger-sampling-request"), "{names:?}");
    assert!(!names.contains(&"get-roots-list"), "{names:?}");

    let out = unattended(
        on_everything(&["--sampling-yes", "tools"]),
        "mcpb --sampling-yes without a model",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--sampling-model-url"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn everything_sees_the_roots_as_file_uris() {
    let tmp = TempDir::new("answers-roots");
    let a = dir_in(&tmp, "alpha");
    let b = dir_in(&tmp, "with space");
    let out = unattended(
        on_everything(&[
            "--root",
            a.to_str().unwrap(),
            "--root",
            b.to_str().unwrap(),
            "--json",
            "call",
            "get-roots-list",
        ]),
        "mcpb --root call get-roots-list",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = texts(&out);
    let uri_a = format!("file://{}", std::fs::canonicalize(&a).unwrap().display());
    let uri_b = format!(
        "file://{}",
        std::fs::canonicalize(&b)
            .unwrap()
            .display()
            .to_string()
            .replace(' ', "%20")
    );
    assert!(text.contains("(2 total)"), "{text}");
    assert!(
        text.contains(&format!("1. alpha\n   URI: {uri_a}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("2. with space\n   URI: {uri_b}")),
        "{text}"
    );
}

#[test]
fn shell_roots_add_and_remove_reach_the_server() {
    let tmp = TempDir::new("answers-shell-roots");
    let a = dir_in(&tmp, "one");
    let b = dir_in(&tmp, "two");
    let uri = |d: &Path| format!("file://{}", std::fs::canonicalize(d).unwrap().display());
    let script = format!(
        "call roots\nroots add {}\ncall roots\nroots remove {}\nroots\ncall roots\nroots remove {}\n",
        b.display(),
        a.display(),
        a.display()
    );
    let mut child = command(&[
        "--stdio",
        common::fixture::path(),
        "--root",
        a.to_str().unwrap(),
        "shell",
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
        .write_all(script.as_bytes())
        .unwrap();
    let out = wait_within(child, "mcpb shell with roots", RUN_LIMIT);
    let text = stdout(&out);
    let lists: Vec<Value> = text
        .lines()
        .filter(|l| l.starts_with("{\"roots\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let uris = |v: &Value| -> Vec<String> {
        v["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(lists.len(), 3, "{text}\n{}", stderr(&out));
    assert_eq!(uris(&lists[0]), vec![uri(&a)]);
    assert_eq!(uris(&lists[1]), vec![uri(&a), uri(&b)]);
    assert_eq!(uris(&lists[2]), vec![uri(&b)]);
    assert!(text.contains(&format!("added {}", uri(&b))), "{text}");
    assert!(text.contains(&format!("removed {}", uri(&a))), "{text}");
    // `roots` lists them; removing one that is not there is a usage error (the last line).
    assert!(text.contains(&format!("\n{}\n", uri(&b))), "{text}");
    assert!(stderr(&out).contains("is not a root"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(2));
}
