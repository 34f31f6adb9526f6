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

use std::collections::{BTreeSet, HashMap};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Stdout, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
const CLIENT_WAIT: Duration = Duration::from_secs(10);
const THREADED_TOOLS: [&str; 7] = [
    "slow",
    "progress",
    "ping_client",
    "roots",
    "sample",
    "elicit",
    "ask_first",
];
const LOGO_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const README_TEXT: &str = "# Fixture\nThis is the fixture server's readme.\n";
const CONFIG_TEXT: &str = r#"{"debug":false,"retries":3}"#;
const NAMES: [&str; 4] = ["alice", "albert", "bob", "carol"];
const ITEM_IDS: [&str; 3] = ["1", "2", "3"];

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Opts {
    protocol_version: Option<String>,
    page_size: usize,
    extra_tools: usize,
    noise: bool,
    ignore_sigterm: bool,
    spawn_grandchild: bool,
    crash_on_start: bool,
    never_answer: bool,
    exit_on_initialized: bool,
    stderr_banner: bool,
    verbose: bool,
    sleep: Option<u64>,
}

fn usage_exit(msg: &str) -> ! {
    eprintln!("fixture: {msg}");
    eprintln!(
        "usage: mcp-fixture-server [--protocol-version V] [--page-size N] [--extra-tools N] \
         [--noise] [--ignore-sigterm] [--spawn-grandchild] [--crash-on-start] [--never-answer] \
         [--exit-on-initialized] [--stderr-banner] [--verbose] [--sleep SECS]"
    );
    std::process::exit(64);
}

fn parse_opts() -> Opts {
    let mut opts = Opts::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> String {
            args.next()
                .unwrap_or_else(|| usage_exit(&format!("{name} needs a value")))
        };
        let number = |name: &str, v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage_exit(&format!("{name}: not a number: {v}")))
        };
        match arg.as_str() {
            "--protocol-version" => opts.protocol_version = Some(value(&arg)),
            "--page-size" => opts.page_size = number(&arg, value(&arg)) as usize,
            "--extra-tools" => opts.extra_tools = number(&arg, value(&arg)) as usize,
            "--sleep" => opts.sleep = Some(number(&arg, value(&arg))),
            "--noise" => opts.noise = true,
            "--ignore-sigterm" => opts.ignore_sigterm = true,
            "--spawn-grandchild" => opts.spawn_grandchild = true,
            "--crash-on-start" => opts.crash_on_start = true,
            "--never-answer" => opts.never_answer = true,
            "--exit-on-initialized" => opts.exit_on_initialized = true,
            "--stderr-banner" => opts.stderr_banner = true,
            "--verbose" => opts.verbose = true,
            "-h" | "--help" => usage_exit("MCP fixture server (see the source's doc comment)"),
            other => usage_exit(&format!("unknown argument: {other}")),
        }
    }
    opts
}

// ---------------------------------------------------------------------------
// Errors and replies
// ---------------------------------------------------------------------------

struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(-32602, message)
    }
}

/// What to send back for a request.
enum Reply {
    /// A full `result` object.
    Result(Value),
    /// A tool result with one text block (written without building a `Value`).
    Text(String),
    /// A JSON-RPC error.
    Error(RpcError),
    /// Nothing (crash, cancelled).
    Nothing,
}

type RpcResult<T> = Result<T, RpcError>;

fn tool_error(text: impl Into<String>) -> Reply {
    Reply::Result(json!({
        "content": [{"type": "text", "text": text.into()}],
        "isError": true,
    }))
}

// ---------------------------------------------------------------------------
// Shared state
// ---------------------------------------------------------------------------

/// An event delivered to a threaded request.
enum JobEvent {
    Cancelled,
    /// The client's answer (the whole message) to the server request `sid`.
    Answer(String, Value),
}

#[derive(Default)]
struct State {
    client_init: Option<Value>,
    initialized: bool,
    min_level: usize,
    subscriptions: BTreeSet<String>,
    cancelled: Vec<Value>,
    added_tools: Vec<String>,
    /// Threaded requests in flight, by the JSON text of their id.
    running: HashMap<String, Sender<JobEvent>>,
    /// Server-to-client requests waiting for an answer, by id.
    waiters: HashMap<String, Sender<JobEvent>>,
}

struct Output {
    w: BufWriter<Stdout>,
    count: u64,
    broken: bool,
}

struct Server {
    opts: Opts,
    out: Mutex<Output>,
    state: Mutex<State>,
    next_sid: AtomicU64,
    grandchild_pid: Option<u32>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Writes one message (produced by `body`) plus its line ending and
    /// flushes, all under the output lock.
    fn emit(&self, body: impl FnOnce(&mut BufWriter<Stdout>) -> io::Result<()>) {
        let mut out = lock(&self.out);
        if out.broken {
            return;
        }
        let n = out.count;
        out.count += 1;
        let noise = self.opts.noise;
        let res = (|| {
            if noise {
                match n % 3 {
                    0 => out
                        .w
                        .write_all(b"npm WARN deprecated fixture@0.1.0: not JSON\n")?,
                    1 => out.w.write_all(b"\n")?,
                    _ => out.w.write_all(b"   \r\n")?,
                }
            }
            body(&mut out.w)?;
            if noise && n % 2 == 1 {
                out.w.write_all(b"\r\n")?;
            } else {
                out.w.write_all(b"\n")?;
            }
            if noise && n % 4 == 2 {
                out.w.write_all(b"[fixture] handled a message\n")?;
            }
            out.w.flush()
        })();
        if let Err(e) = res {
            out.broken = true;
            eprintln!("fixture: cannot write to stdout: {e}");
        }
    }

    fn send_value(&self, msg: &Value) {
        self.emit(|w| serde_json::to_writer(w, msg).map_err(io::Error::from));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send_value(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn reply(&self, id: &Value, reply: Reply) {
        match reply {
            Reply::Nothing => {}
            Reply::Text(text) => self.emit(|w| {
                w.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
                serde_json::to_writer(&mut *w, id)?;
                w.write_all(br#","result":{"content":[{"type":"text","text":"#)?;
                serde_json::to_writer(&mut *w, &text)?;
                w.write_all(b"}]}}")
            }),
            Reply::Result(result) => {
                self.send_value(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            Reply::Error(e) => {
                let mut error = json!({"code": e.code, "message": e.message});
                if let Some(data) = e.data {
                    error["data"] = data;
                }
                self.send_value(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Threaded requests
// ---------------------------------------------------------------------------

/// A request running on its own thread; it can be cancelled and receives the
/// client's answers to the requests it sends.
struct Job {
    server: Arc<Server>,
    key: String,
    tx: Sender<JobEvent>,
    rx: Receiver<JobEvent>,
}

enum Abort {
    Cancelled,
    Timeout(String),
}

impl Job {
    /// Sleeps for `d`; returns false if the request was cancelled meanwhile.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Err(RecvTimeoutError::Timeout) => return true,
                Ok(JobEvent::Cancelled) | Err(RecvTimeoutError::Disconnected) => return false,
                // A late answer to an abandoned request: ignore it.
                Ok(JobEvent::Answer(..)) => {}
            }
        }
    }

    /// Sends all `requests` to the client, then waits for all the answers.
    /// Each answer is `Ok(result)` or `Err(error object)`.
    fn ask(&self, requests: &[(&str, Option<Value>)]) -> Result<Vec<Result<Value, Value>>, Abort> {
        let mut sids = Vec::with_capacity(requests.len());
        let mut messages = Vec::with_capacity(requests.len());
        {
            let mut st = self.server.state();
            for (method, params) in requests {
                let sid = format!("s-{}", self.server.next_sid.fetch_add(1, Ordering::Relaxed));
                st.waiters.insert(sid.clone(), self.tx.clone());
                let mut msg = json!({"jsonrpc": "2.0", "id": sid, "method": method});
                if let Some(p) = params {
                    msg["params"] = p.clone();
                }
                sids.push(sid);
                messages.push(msg);
            }
        }
        for msg in &messages {
            self.server.send_value(msg);
        }
        let mut answers: Vec<Option<Result<Value, Value>>> = vec![None; requests.len()];
        let deadline = Instant::now() + CLIENT_WAIT;
        let outcome = loop {
            if let Some(first_missing) = answers.iter().position(Option::is_none) {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(JobEvent::Answer(sid, mut msg)) => {
                        if let Some(i) = sids.iter().position(|s| *s == sid) {
                            answers[i] = Some(match msg.get_mut("error") {
                                Some(e) => Err(e.take()),
                                None => Ok(msg
                                    .get_mut("result")
                                    .map(Value::take)
                                    .unwrap_or(Value::Null)),
                            });
                        }
                    }
                    Ok(JobEvent::Cancelled) | Err(RecvTimeoutError::Disconnected) => {
                        break Err(Abort::Cancelled)
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        break Err(Abort::Timeout(requests[first_missing].0.to_string()))
                    }
                }
            } else {
                break Ok(answers.into_iter().flatten().collect());
            }
        };
        if outcome.is_err() {
            let mut st = self.server.state();
            for sid in &sids {
                st.waiters.remove(sid);
            }
        }
        outcome
    }

    /// Asks one request; maps errors and timeouts to tool results.
    fn ask_one(&self, method: &str, params: Option<Value>) -> Result<Value, Reply> {
        match self.ask(&[(method, params)]) {
            Ok(mut answers) => match answers.pop() {
                Some(Ok(result)) => Ok(result),
                Some(Err(e)) => Err(tool_error(format!(
                    "{method} error {}: {}",
                    e.get("code").unwrap_or(&Value::Null),
                    e.get("message").and_then(Value::as_str).unwrap_or("")
                ))),
                None => Err(Reply::Nothing),
            },
            Err(abort) => Err(abort_reply(abort)),
        }
    }
}

fn abort_reply(abort: Abort) -> Reply {
    match abort {
        Abort::Cancelled => Reply::Nothing,
        Abort::Timeout(method) => tool_error(format!(
            "no answer to {method} within {} s",
            CLIENT_WAIT.as_secs()
        )),
    }
}

fn id_key(id: &Value) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn spawn_job(server: &Arc<Server>, id: Value, name: String, args: Value, meta: Option<Value>) {
    let key = id_key(&id);
    let (tx, rx) = mpsc::channel();
    server.state().running.insert(key.clone(), tx.clone());
    let job = Job {
        server: Arc::clone(server),
        key,
        tx,
        rx,
    };
    let spawned = std::thread::Builder::new()
        .name(format!("fixture-{name}"))
        .spawn(move || {
            let reply =
                run_threaded_tool(&job, &name, &args, meta.as_ref()).unwrap_or_else(Reply::Error);
            let still_running = job.server.state().running.remove(&job.key).is_some();
            if still_running {
                job.server.reply(&id, reply);
            }
        });
    if let Err(e) = spawned {
        eprintln!("fixture: cannot spawn a thread: {e}");
    }
}

fn run_threaded_tool(
    job: &Job,
    name: &str,
    args: &Value,
    meta: Option<&Value>,
) -> RpcResult<Reply> {
    Ok(match name {
        "slow" => {
            let ms = arg_u64(args, "ms")?;
            if job.sleep(Duration::from_millis(ms)) {
                Reply::Text(format!("done after {ms} ms"))
            } else {
                Reply::Nothing
            }
        }
        "progress" => {
            let steps = arg_u64(args, "steps")?;
            let ms = opt_u64(args, "ms")?.unwrap_or(0);
            let token = meta.and_then(|m| m.get("progressToken")).cloned();
            for i in 1..=steps {
                if ms > 0 && !job.sleep(Duration::from_millis(ms)) {
                    return Ok(Reply::Nothing);
                }
                if let Some(token) = &token {
                    job.server.notify(
                        "notifications/progress",
                        json!({"progressToken": token, "progress": i, "total": steps, "message": format!("step {i}")}),
                    );
                }
            }
            Reply::Text(format!("progressed {steps}"))
        }
        "ping_client" => match job.ask_one("ping", None) {
            Ok(result) => Reply::Text(format!("client answered ping: {}", to_json(&result))),
            Err(reply) => reply,
        },
        "roots" => match job.ask_one("roots/list", None) {
            Ok(result) => Reply::Text(to_json(&result)),
            Err(reply) => reply,
        },
        "sample" => {
            let prompt = arg_str(args, "prompt")?;
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100,
            });
            match job.ask_one("sampling/createMessage", Some(params)) {
                Ok(result) => Reply::Text(to_json(&result)),
                Err(reply) => reply,
            }
        }
        "elicit" => {
            let message = arg_str(args, "message")?;
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "anon"},
                        "age": {"type": "integer"},
                    },
                },
            });
            match job.ask_one("elicitation/create", Some(params)) {
                Ok(result) => Reply::Text(to_json(&result)),
                Err(reply) => reply,
            }
        }
        "ask_first" => match job.ask(&[("ping", None), ("roots/list", None)]) {
            Ok(_) => Reply::Text("asked".to_string()),
            Err(abort) => abort_reply(abort),
        },
        other => Reply::Error(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    })
}

fn to_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

fn arg_str<'a>(args: &'a Value, name: &str) -> RpcResult<&'a str> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params(format!("Invalid arguments: `{name}` must be a string"))
    })
}

fn opt_u64(args: &Value, name: &str) -> RpcResult<Option<u64>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid arguments: `{name}` must be a non-negative integer"
                ))
            }),
    }
}

fn arg_u64(args: &Value, name: &str) -> RpcResult<u64> {
    opt_u64(args, name)?
        .ok_or_else(|| RpcError::invalid_params(format!("Invalid arguments: `{name}` is required")))
}

fn arg_number(args: &Value, name: &str) -> RpcResult<serde_json::Number> {
    match args.get(name) {
        Some(Value::Number(n)) => Ok(n.clone()),
        _ => Err(RpcError::invalid_params(format!(
            "Invalid arguments: `{name}` must be a number"
        ))),
    }
}

fn take_string(args: &mut Value, name: &str) -> RpcResult<String> {
    match args.get_mut(name).map(Value::take) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(RpcError::invalid_params(format!(
            "Invalid arguments: `{name}` must be a string"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Catalogues and pagination
// ---------------------------------------------------------------------------

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

fn tool(name: &str, description: &str, input: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input})
}

fn echo_like_tool(name: &str, description: &str) -> Value {
    tool(
        name,
        description,
        schema(json!({"text": {"type": "string"}}), &["text"]),
    )
}

fn builtin_tools() -> Vec<Value> {
    let none = || schema(json!({}), &[]);
    let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    let string = |d: &str| json!({"type": "string", "description": d});
    let mut add = tool(
        "add",
        "Adds two numbers.",
        schema(
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        ),
    );
    add["outputSchema"] = schema(json!({"sum": {"type": "number"}}), &["sum"]);
    add["annotations"] =
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
    let mut echo = echo_like_tool("echo", "Returns its `text` argument.");
    echo["annotations"] = json!({"title": "Echo", "readOnlyHint": true});
    vec![
        echo,
        add,
        tool(
            "slow",
            "Sleeps `ms` milliseconds (cancellable).",
            schema(json!({"ms": int("milliseconds")}), &["ms"]),
        ),
        tool(
            "large",
            "Returns exactly `bytes` ASCII characters.",
            schema(json!({"bytes": int("length")}), &["bytes"]),
        ),
        tool("fail", "Returns a tool error (isError).", none()),
        tool("rpc_error", "Answers with a JSON-RPC error -32000.", none()),
        tool(
            "crash",
            "Exits with status `code` (default 3) without replying.",
            schema(json!({"code": int("exit status")}), &[]),
        ),
        tool(
            "stderr_flood",
            "Writes `bytes` bytes to stderr.",
            schema(json!({"bytes": int("byte count")}), &["bytes"]),
        ),
        tool(
            "progress",
            "Sends `steps` progress notifications, `ms` apart.",
            schema(
                json!({"steps": int("number of steps"), "ms": int("delay per step")}),
                &["steps"],
            ),
        ),
        tool(
            "log",
            "Sends a log message notification.",
            schema(
                json!({"level": {"type": "string", "enum": LEVELS}, "message": string("the message")}),
                &["level", "message"],
            ),
        ),
        tool("ping_client", "Pings the client.", none()),
        tool("roots", "Asks the client for its roots.", none()),
        tool(
            "sample",
            "Asks the client to sample an LLM.",
            schema(json!({"prompt": string("user prompt")}), &["prompt"]),
        ),
        tool(
            "elicit",
            "Asks the client to elicit user input.",
            schema(json!({"message": string("question")}), &["message"]),
        ),
        tool(
            "ask_first",
            "Sends ping and roots/list to the client before replying.",
            none(),
        ),
        tool(
            "notify_list_changed",
            "Sends the three list_changed notifications.",
            none(),
        ),
        tool(
            "add_tool",
            "Adds an echo-like tool named `name`.",
            schema(json!({"name": string("tool name")}), &["name"]),
        ),
        tool(
            "touch",
            "Sends resources/updated for `uri` if subscribed.",
            schema(json!({"uri": string("resource URI")}), &["uri"]),
        ),
        tool(
            "cancelled_requests",
            "Lists the request ids received in notifications/cancelled.",
            none(),
        ),
        tool(
            "client_info",
            "Returns the initialize params received.",
            none(),
        ),
        tool(
            "env",
            "Returns an environment variable of the server.",
            schema(json!({"name": string("variable name")}), &["name"]),
        ),
        tool("cwd", "Returns the server's current directory.", none()),
        tool(
            "stop_reading",
            "Replies, then stops reading stdin for good.",
            none(),
        ),
        tool(
            "grandchild_pid",
            "Returns the pid of the --spawn-grandchild process.",
            none(),
        ),
    ]
}

fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "fixture://readme", "name": "readme", "title": "Read me", "mimeType": "text/plain"}),
        json!({"uri": "fixture://logo", "name": "logo", "mimeType": "image/png"}),
        json!({"uri": "fixture://config", "name": "config", "mimeType": "application/json"}),
    ]
}

fn resource_templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "fixture://items/{id}",
        "name": "item",
        "description": "An item by id.",
        "mimeType": "text/plain",
    })]
}

fn prompts() -> Vec<Value> {
    vec![
        json!({
            "name": "greeting",
            "description": "Greets someone.",
            "arguments": [{"name": "name", "description": "Who to greet", "required": true}],
        }),
        json!({
            "name": "summarize",
            "description": "Asks for a summary.",
            "arguments": [{"name": "style", "description": "Summary style", "required": false}],
        }),
    ]
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Cuts `items` into a page starting at `params.cursor`; returns the page and
/// the next cursor.
fn paginate(
    mut items: Vec<Value>,
    params: &Value,
    page_size: usize,
) -> RpcResult<(Vec<Value>, Option<String>)> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => b64_decode(c)
            .and_then(|raw| String::from_utf8(raw).ok())
            .and_then(|s| {
                s.strip_prefix("offset=")
                    .and_then(|n| n.parse::<usize>().ok())
            })
            .filter(|&n| n > 0 && n < items.len())
            .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {c}")))?,
        Some(_) => return Err(RpcError::invalid_params("Invalid cursor: not a string")),
    };
    if page_size == 0 {
        return Ok((items, None));
    }
    let end = start.saturating_add(page_size).min(items.len());
    let next = (end < items.len()).then(|| b64_encode(format!("offset={end}").as_bytes()));
    items.truncate(end);
    items.drain(..start);
    Ok((items, next))
}

fn list_result(key: &str, page: (Vec<Value>, Option<String>)) -> Reply {
    let mut result = Map::new();
    result.insert(key.to_string(), Value::Array(page.0));
    if let Some(next) = page.1 {
        result.insert("nextCursor".to_string(), Value::String(next));
    }
    Reply::Result(Value::Object(result))
}

// ---------------------------------------------------------------------------
// Request handling
// ---------------------------------------------------------------------------

/// What the reader loop does after a message.
enum Flow {
    Continue,
    StopReading,
}

fn handle_line(server: &Arc<Server>, line: &[u8]) -> Flow {
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fixture: parse error: {e}");
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32700, format!("Parse error: {e}"))),
            );
            return Flow::Continue;
        }
    };
    let mut msg = match msg {
        Value::Object(m) => m,
        Value::Array(_) => {
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32600, "Batches are not supported")),
            );
            return Flow::Continue;
        }
        _ => {
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32600, "Invalid Request")),
            );
            return Flow::Continue;
        }
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    let method = match msg.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => {
            let id = msg.remove("id").unwrap_or(Value::Null);
            server.reply(&id, Reply::Error(RpcError::new(-32600, "Invalid Request")));
            return Flow::Continue;
        }
        None => {
            handle_answer(server, msg);
            return Flow::Continue;
        }
    };
    match msg.remove("id") {
        None => {
            handle_notification(server, &method, params);
            Flow::Continue
        }
        Some(id) => handle_request(server, &method, id, params),
    }
}

/// Routes the client's answer to a server-to-client request.
fn handle_answer(server: &Server, msg: Map<String, Value>) {
    let sid = match msg.get("id") {
        Some(Value::String(s)) => s.clone(),
        other => {
            eprintln!("fixture: dropping a message with no method and id {other:?}");
            return;
        }
    };
    let waiter = server.state().waiters.remove(&sid);
    match waiter {
        Some(tx) => {
            let _ = tx.send(JobEvent::Answer(sid, Value::Object(msg)));
        }
        None => eprintln!("fixture: dropping an answer to unknown request {sid}"),
    }
}

fn handle_notification(server: &Server, method: &str, params: Value) {
    match method {
        "notifications/initialized" => {
            server.state().initialized = true;
            if server.opts.exit_on_initialized {
                eprintln!("fixture: exiting after notifications/initialized on purpose");
                std::process::exit(0);
            }
        }
        "notifications/cancelled" => {
            let request_id = params.get("requestId").cloned().unwrap_or(Value::Null);
            let key = id_key(&request_id);
            let mut st = server.state();
            if let Some(tx) = st.running.remove(&key) {
                let _ = tx.send(JobEvent::Cancelled);
            }
            st.cancelled.push(request_id);
        }
        _ => {}
    }
}

fn handle_request(server: &Arc<Server>, method: &str, id: Value, mut params: Value) -> Flow {
    let reply = match method {
        "tools/call" => {
            let name = match params.get_mut("name").map(Value::take) {
                Some(Value::String(n)) => n,
                _ => {
                    server.reply(
                        &id,
                        Reply::Error(RpcError::invalid_params("Missing tool name")),
                    );
                    return Flow::Continue;
                }
            };
            let mut args = params
                .get_mut("arguments")
                .map(Value::take)
                .unwrap_or(Value::Null);
            if THREADED_TOOLS.contains(&name.as_str()) {
                let meta = params.get_mut("_meta").map(Value::take);
                spawn_job(server, id, name, args, meta);
                return Flow::Continue;
            }
            let reply = call_tool(server, &name, &mut args).unwrap_or_else(Reply::Error);
            if name == "stop_reading" {
                server.reply(&id, reply);
                return Flow::StopReading;
            }
            reply
        }
        "ping" => Reply::Result(json!({})),
        "initialize" => initialize(server, params),
        other => other_request(server, other, &params).unwrap_or_else(Reply::Error),
    };
    server.reply(&id, reply);
    Flow::Continue
}

fn initialize(server: &Server, params: Value) -> Reply {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match (&server.opts.protocol_version, requested) {
        (Some(forced), _) => forced.clone(),
        (None, Some(v)) if SUPPORTED_VERSIONS.contains(&v) => v.to_string(),
        _ => SUPPORTED_VERSIONS[0].to_string(),
    };
    server.state().client_init = Some(params);
    Reply::Result(json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
        },
        "serverInfo": {"name": "mcp-fixture-server", "version": "0.1.0"},
        "instructions": "Fixture server for mcp-blocking tests.",
    }))
}

fn other_request(server: &Server, method: &str, params: &Value) -> RpcResult<Reply> {
    let page_size = server.opts.page_size;
    Ok(match method {
        "tools/list" => {
            let mut tools = builtin_tools();
            tools.reserve(server.opts.extra_tools);
            for i in 0..server.opts.extra_tools {
                tools.push(echo_like_tool(&format!("gen_{i}"), "Generated echo tool."));
            }
            for name in &server.state().added_tools {
                tools.push(echo_like_tool(name, "Added echo tool."));
            }
            list_result("tools", paginate(tools, params, page_size)?)
        }
        "resources/list" => list_result("resources", paginate(resources(), params, page_size)?),
        "resources/templates/list" => list_result(
            "resourceTemplates",
            paginate(resource_templates(), params, page_size)?,
        ),
        "prompts/list" => list_result("prompts", paginate(prompts(), params, page_size)?),
        "resources/read" => read_resource(arg_str(params, "uri")?)?,
        "resources/subscribe" => {
            let uri = arg_str(params, "uri")?;
            server.state().subscriptions.insert(uri.to_string());
            Reply::Result(json!({}))
        }
        "resources/unsubscribe" => {
            let uri = arg_str(params, "uri")?;
            server.state().subscriptions.remove(uri);
            Reply::Result(json!({}))
        }
        "prompts/get" => get_prompt(params)?,
        "completion/complete" => complete(params),
        "logging/setLevel" => {
            let level = arg_str(params, "level")?;
            server.state().min_level = level_index(level)?;
            Reply::Result(json!({}))
        }
        other => Reply::Error(RpcError::new(-32601, format!("Method not found: {other}"))),
    })
}

fn level_index(level: &str) -> RpcResult<usize> {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .ok_or_else(|| RpcError::invalid_params(format!("Invalid log level: {level}")))
}

fn read_resource(uri: &str) -> RpcResult<Reply> {
    let content = match uri {
        "fixture://readme" => json!({"uri": uri, "mimeType": "text/plain", "text": README_TEXT}),
        "fixture://logo" => json!({"uri": uri, "mimeType": "image/png", "blob": LOGO_PNG_BASE64}),
        "fixture://config" => {
            json!({"uri": uri, "mimeType": "application/json", "text": CONFIG_TEXT})
        }
        _ => match uri.strip_prefix("fixture://items/") {
            Some(item) if !item.is_empty() && !item.contains('/') => {
                json!({"uri": uri, "mimeType": "text/plain", "text": format!("item {item}")})
            }
            _ => {
                return Err(RpcError {
                    code: -32002,
                    message: "Resource not found".to_string(),
                    data: Some(json!({"uri": uri})),
                })
            }
        },
    };
    Ok(Reply::Result(json!({"contents": [content]})))
}

fn get_prompt(params: &Value) -> RpcResult<Reply> {
    let name = arg_str(params, "name")?;
    let args = params.get("arguments").unwrap_or(&Value::Null);
    let user_text = |text: String| {
        Reply::Result(json!({
            "description": format!("The {name} prompt"),
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }))
    };
    match name {
        "greeting" => {
            let who = args
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("Missing required argument: name"))?;
            Ok(user_text(format!("Hello, {who}!")))
        }
        "summarize" => {
            let style = args
                .get("style")
                .and_then(Value::as_str)
                .unwrap_or("concise");
            Ok(user_text(format!(
                "Summarize the conversation in a {style} style."
            )))
        }
        other => Err(RpcError::invalid_params(format!("Unknown prompt: {other}"))),
    }
}

fn complete(params: &Value) -> Reply {
    let r = params.get("ref").unwrap_or(&Value::Null);
    let kind = r.get("type").and_then(Value::as_str).unwrap_or("");
    let arg = params.get("argument").unwrap_or(&Value::Null);
    let arg_name = arg.get("name").and_then(Value::as_str).unwrap_or("");
    let prefix = arg.get("value").and_then(Value::as_str).unwrap_or("");
    let candidates: &[&str] = match (kind, arg_name) {
        ("ref/prompt", "name") if r.get("name").and_then(Value::as_str) == Some("greeting") => {
            &NAMES
        }
        ("ref/resource", "id")
            if r.get("uri").and_then(Value::as_str) == Some("fixture://items/{id}") =>
        {
            &ITEM_IDS
        }
        _ => &[],
    };
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.starts_with(prefix))
        .collect();
    Reply::Result(json!({
        "completion": {"values": values, "total": values.len(), "hasMore": false},
    }))
}

fn is_known_echo_like(server: &Server, name: &str) -> bool {
    if let Some(n) = name.strip_prefix("gen_") {
        if n.parse::<usize>()
            .is_ok_and(|i| i < server.opts.extra_tools && i.to_string() == n)
        {
            return true;
        }
    }
    server.state().added_tools.iter().any(|t| t == name)
}

/// Tools answered inline on the reader thread.
fn call_tool(server: &Server, name: &str, args: &mut Value) -> RpcResult<Reply> {
    Ok(match name {
        "echo" => Reply::Text(take_string(args, "text")?),
        "add" => {
            let (a, b) = (arg_number(args, "a")?, arg_number(args, "b")?);
            let sum = match (a.as_i64(), b.as_i64()) {
                (Some(x), Some(y)) if x.checked_add(y).is_some() => json!(x + y),
                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            };
            Reply::Result(json!({
                "content": [{"type": "text", "text": sum.to_string()}],
                "structuredContent": {"sum": sum},
            }))
        }
        "large" => Reply::Text(large_text(arg_u64(args, "bytes")? as usize)),
        "fail" => tool_error("the tool failed on purpose"),
        "rpc_error" => Reply::Error(RpcError {
            code: -32000,
            message: "deliberate error".to_string(),
            data: Some(json!({"hint": "fixture"})),
        }),
        "crash" => {
            let code = opt_u64(args, "code")?.unwrap_or(3);
            eprintln!("fixture: crashing now on purpose");
            std::process::exit(code as i32);
        }
        "stderr_flood" => {
            flood_stderr(arg_u64(args, "bytes")? as usize);
            Reply::Text("flooded".to_string())
        }
        "log" => {
            let level = arg_str(args, "level")?;
            let message = args.get("message").cloned().ok_or_else(|| {
                RpcError::invalid_params("Invalid arguments: `message` is required")
            })?;
            if level_index(level)? >= server.state().min_level {
                server.notify(
                    "notifications/message",
                    json!({"level": level, "logger": "fixture", "data": message}),
                );
                Reply::Text("logged".to_string())
            } else {
                Reply::Text("filtered".to_string())
            }
        }
        "notify_list_changed" => {
            for kind in ["tools", "prompts", "resources"] {
                server.notify(&format!("notifications/{kind}/list_changed"), json!({}));
            }
            Reply::Text("notified".to_string())
        }
        "add_tool" => {
            let name = arg_str(args, "name")?.to_string();
            {
                let mut st = server.state();
                if !st.added_tools.contains(&name) {
                    st.added_tools.push(name.clone());
                }
            }
            server.notify("notifications/tools/list_changed", json!({}));
            Reply::Text(format!("added {name}"))
        }
        "touch" => {
            let uri = arg_str(args, "uri")?;
            let subscribed = server.state().subscriptions.contains(uri);
            if subscribed {
                server.notify("notifications/resources/updated", json!({"uri": uri}));
                Reply::Text("touched".to_string())
            } else {
                Reply::Text("not subscribed".to_string())
            }
        }
        "cancelled_requests" => {
            Reply::Text(to_json(&Value::Array(server.state().cancelled.clone())))
        }
        "client_info" => Reply::Text(to_json(
            server.state().client_init.as_ref().unwrap_or(&Value::Null),
        )),
        "env" => match std::env::var_os(arg_str(args, "name")?) {
            Some(v) => Reply::Text(v.to_string_lossy().into_owned()),
            None => tool_error("unset"),
        },
        "cwd" => match std::env::current_dir() {
            Ok(d) => Reply::Text(d.display().to_string()),
            Err(e) => tool_error(format!("cannot get the current directory: {e}")),
        },
        "stop_reading" => Reply::Text("stopping".to_string()),
        "grandchild_pid" => match server.grandchild_pid {
            Some(pid) => Reply::Text(pid.to_string()),
            None => tool_error("no grandchild (start with --spawn-grandchild)"),
        },
        other if is_known_echo_like(server, other) => Reply::Text(take_string(args, "text")?),
        other => Reply::Error(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    })
}

fn large_text(len: usize) -> String {
    const PATTERN: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.";
    let mut s = String::with_capacity(len);
    let pattern = std::str::from_utf8(PATTERN).unwrap_or_default();
    for _ in 0..len / PATTERN.len() {
        s.push_str(pattern);
    }
    s.push_str(&pattern[..len % PATTERN.len()]);
    s
}

fn flood_stderr(bytes: usize) {
    const LINE: &str = "fixture: flooding stderr on purpose, line of exactly one hundred bytes ............................";
    const _: () = assert!(LINE.len() == 99);
    let mut err = BufWriter::with_capacity(64 * 1024, io::stderr().lock());
    let mut left = bytes;
    let res = (|| {
        while left > 0 {
            let n = left.min(LINE.len() + 1);
            if n == LINE.len() + 1 {
                err.write_all(LINE.as_bytes())?;
            } else {
                err.write_all(&LINE.as_bytes()[..n - 1])?;
            }
            err.write_all(b"\n")?;
            left -= n;
        }
        err.flush()
    })();
    if let Err(e) = res {
        eprintln!("fixture: stderr flood failed: {e}");
    }
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

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
