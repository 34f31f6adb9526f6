//! `mcp-fixture-server`: a small, fast MCP server used by the tests, the
//! benchmarks and the demo of `mcp-blocking`.
//!
//! It speaks MCP (JSON-RPC 2.0, one JSON message per `\n`-terminated line) on
//! stdin/stdout and logs only to stderr (lines start with `fixture:`). It does
//! not use the `mcp_blocking` library. It exits with status 0 on stdin EOF
//! (immediately, even if slow calls are still running), unless
//! `--ignore-sigterm` is given.
//!
//! The main thread reads stdin. Requests that block (`slow`, `progress`,
//! `ping_client`, `roots`, `sample`, `elicit`, `ask_first`) run on their own
//! thread, so the reader keeps reading cancellations and the client's answers
//! meanwhile. Every other request (including the `echo` hot path) is answered
//! inline on the main thread. All stdout writes go through one mutex; each
//! message is written and flushed under it.
//!
//! # Flags
//!
//! | Flag | Behaviour |
//! |---|---|
//! | `--protocol-version V` | `initialize` replies with version `V` whatever the client asked (e.g. `1999-01-01`). Without it, the reply echoes the client's version if it is one of `2025-11-25`, `2025-06-18`, `2025-03-26`, `2024-11-05`, else `2025-11-25`. |
//! | `--page-size N` | Page size of `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list` (default 0 = everything in one page, no `nextCursor`). |
//! | `--extra-tools N` | Adds N generated echo-like tools `gen_0` .. `gen_{N-1}` (argument `text`) after the built-in tools. |
//! | `--noise` | Writes non-JSON lines (`> fixture@0.1.0 start`, `npm WARN ...`, `[fixture] ...`) and blank lines to stdout around messages, and ends every other message with `\r\n`. The messages themselves stay valid one-line JSON. |
//! | `--ignore-sigterm` | Ignores SIGTERM and does not exit on stdin EOF (parks forever), so only SIGKILL ends it. |
//! | `--spawn-grandchild` | At start, spawns this binary again with `--sleep 3600` (stdio to /dev/null, same process group, no `setsid`) and keeps it. Its pid is printed on stderr (`fixture: grandchild pid N`) and returned by the `grandchild_pid` tool. It is never killed by the server. |
//! | `--crash-on-start` | Writes `fixture: failing at start-up on purpose` and `fixture: (this is the second line of the start-up error)` to stderr and exits with status 2 before reading anything. |
//! | `--never-answer` | Reads (and discards) stdin forever, answering nothing; exits 0 on EOF (for handshake timeouts). |
//! | `--exit-on-initialized` | Exits with status 0 right after receiving `notifications/initialized`. |
//! | `--stderr-banner` | Writes three banner lines to stderr at start. |
//! | `--verbose` | Logs every received line to stderr. |
//! | `--sleep SECS` | Sleeps SECS seconds then exits 0, speaking no MCP (used for the grandchild). |
//!
//! # Methods
//!
//! | Method | Behaviour |
//! |---|---|
//! | `initialize` | Records the params (see `client_info`); replies `{protocolVersion, capabilities:{tools:{listChanged:true}, resources:{subscribe:true, listChanged:true}, prompts:{listChanged:true}, logging:{}, completions:{}}, serverInfo:{name:"mcp-fixture-server", version:"0.1.0"}, instructions:"Fixture server for mcp-blocking tests."}`. |
//! | `notifications/initialized` | Noted (exits with `--exit-on-initialized`). |
//! | `ping` | `{}`. |
//! | `tools/list` | Paginated (`cursor` in, `nextCursor` out). Cursors are opaque base64 strings; an invalid one gives error -32602. |
//! | `tools/call` | See the tools table. Unknown tool: error -32602 `Unknown tool: X`. Missing or mistyped arguments: error -32602. |
//! | `resources/list` | Paginated: `fixture://readme` (text/plain), `fixture://logo` (image/png, blob), `fixture://config` (application/json). |
//! | `resources/templates/list` | Paginated: one template `fixture://items/{id}` (text/plain). |
//! | `resources/read {uri}` | readme: text `# Fixture\nThis is the fixture server's readme.\n`; logo: blob of a 1x1 PNG; config: text `{"debug":false,"retries":3}`; `fixture://items/ID`: text `item ID`. Unknown: error -32002 `Resource not found` with data `{uri}`. |
//! | `resources/subscribe {uri}`, `resources/unsubscribe {uri}` | `{}`; the subscription set is used by the `touch` tool. |
//! | `prompts/list` | Paginated: `greeting` (required argument `name`), `summarize` (optional argument `style`). |
//! | `prompts/get {name, arguments}` | greeting: one user text message `Hello, NAME!`; summarize: one user text message `Summarize the conversation in a STYLE style.` (STYLE defaults to `concise`). Missing required argument or unknown prompt: error -32602. |
//! | `completion/complete` | `ref/prompt` `greeting`, argument `name`: the names of `["alice","albert","bob","carol"]` starting with `argument.value`; `ref/resource` `fixture://items/{id}`, argument `id`: those of `["1","2","3"]`; anything else: no values. `total` = number of values, `hasMore` false. |
//! | `logging/setLevel {level}` | `{}`; the `log` tool drops messages below that level (default: send everything). Unknown level: -32602. |
//! | `notifications/cancelled {requestId}` | Appends `requestId` (as its JSON value) to the list returned by `cancelled_requests`; a running threaded call with that id (`slow`, `progress`, ...) stops and sends NO response. |
//! | other notifications | Ignored. |
//! | other requests | Error -32601 `Method not found: M`. |
//! | a line that is not JSON | Error -32700 with id null. A JSON array (batch): error -32600 with id null. |
//!
//! # Tools
//!
//! Text results below are one `{type:"text"}` content block. "isError" means a
//! normal result with `isError: true` (a tool error, not a JSON-RPC error).
//!
//! | Tool | Arguments | Behaviour |
//! |---|---|---|
//! | `echo` | `text: string` | Text `text`. The hot path. |
//! | `add` | `a: number, b: number` | Text `SUM` and `structuredContent {"sum": SUM}` (integer if both are integers). Has an `outputSchema`. |
//! | `slow` | `ms: integer` | Sleeps `ms` ms (threaded; cancellable), then text `done after MS ms`. Cancelled: no response at all. |
//! | `large` | `bytes: integer` | Text of exactly `bytes` ASCII characters (a repeated 64-byte pattern). |
//! | `fail` | none | isError, text `the tool failed on purpose`. |
//! | `rpc_error` | none | JSON-RPC error -32000 `deliberate error`, data `{"hint":"fixture"}`. |
//! | `crash` | `code?: integer` (default 3) | Writes `fixture: crashing now on purpose` to stderr and exits with status `code`, without replying. |
//! | `stderr_flood` | `bytes: integer` | Writes exactly `bytes` bytes of 100-byte lines to stderr, then text `flooded`. |
//! | `progress` | `steps: integer, ms?: integer` (default 0) | Threaded, cancellable. If `params._meta.progressToken` is set, sends `notifications/progress {progressToken, progress: i, total: steps, message: "step i"}` for i in 1..=steps, sleeping `ms` ms before each; then text `progressed STEPS`. |
//! | `log` | `level: string, message: string` | Sends `notifications/message {level, logger:"fixture", data: message}` then text `logged`; if `level` is below the `logging/setLevel` level, sends nothing and replies text `filtered`. Unknown level: -32602. |
//! | `ping_client` | none | Threaded. Sends `ping` to the client, waits up to 10 s; text `client answered ping: RESULT_JSON`, or isError `ping error CODE: MESSAGE`. |
//! | `roots` | none | Threaded. Sends `roots/list`; text = JSON of the client's result, or isError `roots/list error CODE: MESSAGE`. |
//! | `sample` | `prompt: string` | Threaded. Sends `sampling/createMessage {messages:[{role:"user", content:{type:"text", text: prompt}}], maxTokens:100}`; text = JSON of the result, or isError `sampling/createMessage error CODE: MESSAGE`. |
//! | `elicit` | `message: string` | Threaded. Sends `elicitation/create {mode:"form", message, requestedSchema:{type:"object", properties:{name:{type:"string", default:"anon"}, age:{type:"integer"}}}}`; text = JSON of the result, or isError `elicitation/create error CODE: MESSAGE`. |
//! | `ask_first` | none | Threaded. Sends `ping` and `roots/list` (both before waiting), waits for both answers (errors accepted), then text `asked`. |
//! | `notify_list_changed` | none | Sends `notifications/tools/list_changed`, `notifications/prompts/list_changed`, `notifications/resources/list_changed`, then text `notified`. |
//! | `add_tool` | `name: string` | Adds an echo-like tool `name` (argument `text`) at the end of `tools/list`, sends `notifications/tools/list_changed`, then text `added NAME`. |
//! | `touch` | `uri: string` | If subscribed to `uri`: sends `notifications/resources/updated {uri}` and text `touched`; else text `not subscribed`. |
//! | `cancelled_requests` | none | Text = JSON array of the `requestId`s received in `notifications/cancelled`, in order. |
//! | `client_info` | none | Text = JSON of the `initialize` params received (`null` before `initialize`). |
//! | `env` | `name: string` | Text = value of env var `name` in the server's environment, or isError `unset`. |
//! | `cwd` | none | Text = the server's current directory. |
//! | `stop_reading` | none | Text `stopping`; then the main thread never reads stdin again (parks) while the process stays alive. |
//! | `grandchild_pid` | none | Text = pid of the `--spawn-grandchild` process, or isError `no grandchild (start with --spawn-grandchild)`. |
//! | `gen_N`, added tools | `text: string` | Like `echo`. |
//!
//! Waiting threaded calls give up after 10 s without an answer with isError
//! `no answer to METHOD within 10 s`. Server-to-client requests use the ids
//! `"s-1"`, `"s-2"`, ...; answers whose id is unknown are logged and dropped.

mod args;
mod catalog;
mod dispatch;
mod job;
mod methods;
mod opts;
mod paging;
mod reply;
mod server;
mod threaded_tools;
mod tools;

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::dispatch::{handle_line, Flow};
use crate::opts::{parse_opts, Opts};
use crate::server::{lock, Output, Server, State};

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

fn end_of_input(opts: &Opts) -> ! {
    if opts.ignore_sigterm {
        eprintln!("fixture: stdin closed; staying alive on purpose (--ignore-sigterm)");
        park_forever();
    }
    std::process::exit(0);
}

fn spawn_grandchild() -> Option<Child> {
    let exe = std::env::current_exe().ok()?;
    match Command::new(exe)
        .args(["--sleep", "3600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => {
            eprintln!("fixture: grandchild pid {}", child.id());
            Some(child)
        }
        Err(e) => {
            eprintln!("fixture: cannot spawn the grandchild: {e}");
            None
        }
    }
}

fn main() {
    let opts = parse_opts();
    if let Some(secs) = opts.sleep {
        std::thread::sleep(Duration::from_secs(secs));
        return;
    }
    if opts.crash_on_start {
        eprintln!("fixture: failing at start-up on purpose");
        eprintln!("fixture: (this is the second line of the start-up error)");
        std::process::exit(2);
    }
    if opts.stderr_banner {
        eprintln!("fixture: mcp-fixture-server 0.1.0 starting");
        eprintln!("fixture: transport: stdio");
        eprintln!("fixture: ready, waiting for initialize");
    }
    if opts.ignore_sigterm {
        // SAFETY: setting the disposition of SIGTERM to SIG_IGN installs no
        // handler code and happens before any other thread is started.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let stdin = io::stdin();
    let mut reader = BufReader::with_capacity(1 << 20, stdin.lock());
    let mut line = Vec::with_capacity(64 * 1024);

    if opts.never_answer {
        let mut sink = [0u8; 64 * 1024];
        loop {
            match reader.read(&mut sink) {
                Ok(0) => end_of_input(&opts),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => end_of_input(&opts),
            }
        }
    }

    // Kept alive (never waited on) for the life of the process.
    let grandchild = if opts.spawn_grandchild {
        spawn_grandchild()
    } else {
        None
    };
    let server = Arc::new(Server {
        grandchild_pid: grandchild.as_ref().map(Child::id),
        out: Mutex::new(Output {
            w: BufWriter::with_capacity(1 << 16, io::stdout()),
            count: 0,
            broken: false,
        }),
        state: Mutex::new(State::default()),
        next_sid: AtomicU64::new(1),
        opts,
    });
    if server.opts.noise {
        let mut out = lock(&server.out);
        let _ = out
            .w
            .write_all(b"\n> fixture@0.1.0 start\n> mcp-fixture-server\n\n")
            .and_then(|()| out.w.flush());
    }

    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => end_of_input(&server.opts),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("fixture: cannot read stdin: {e}");
                end_of_input(&server.opts);
            }
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        if server.opts.verbose {
            eprintln!("fixture: <- {}", String::from_utf8_lossy(trimmed));
        }
        if let Flow::StopReading = handle_line(&server, trimmed) {
            eprintln!("fixture: no longer reading stdin, on purpose");
            park_forever();
        }
    }
}
