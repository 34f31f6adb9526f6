//! The fault matrix: every path a request can take, against a peer that stalls on it.
//!
//! Cells are generated: transport × stall point × connection state × entry point, each with its
//! own name (`transport/stall/state/entry`, say `http-sse/trickle/kept-alive/call-progress`).
//! In every cell a scripted peer (`tests/fault_support/`) answers the handshake and the listings
//! normally, then stalls at the cell's request in the cell's way. Every cell must:
//! - return [`Error::Timeout`] naming the server within its timeout + 1 s (connecting, and
//!   the opening of a legacy GET stream: the timed-out [`Error::Connect`]; the agent: the
//!   timed-out tool result the model reads, its record naming the server; `mcpb call`: exit
//!   code 4 naming the server, counted from the stalled request's arrival at the peer;
//!   `close`: return within the transport's documented grace + 1 s; a stalled standalone GET
//!   stream of Streamable HTTP: hold nothing up, connecting and a listing answering within the
//!   timeout + 1 s);
//! - leave the connection usable afterwards (a listing answers), or cleanly re-established
//!   (connecting and closing: connecting again works);
//! - close within the transport's grace, and leave nothing behind: every connection the peer
//!   accepted closed by the client, every stdio process reaped; when the whole matrix is done,
//!   no library thread and no child process of this test process remains.
//!
//! Cells that cannot exist are listed in [`IMPOSSIBLE`] with the reason, and that list is
//! checked to be exactly the cells [`plan`] cannot build.
//!
//! The authorization server's endpoints (resource metadata, its own metadata, registration,
//! token) and the model endpoint get the same stalls: each must end within its documented
//! deadline ([`OAuthConfig::timeout`], [`HttpOptions::timeout`]) with a typed error; see
//! `auth_cells` and `model_cells` below.
//!
//! The stdio peer is reached through the `fault_relay` example (a plain `cargo test` builds
//! it; a filtered run needs `cargo build --example fault_relay` first).
//!
//! `FAULT_CELLS=a,b` runs only the cells whose name contains `a` or `b`.

mod fault_support;

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fault_support::endpoint::{EndpointPeer, Handler, Reply, Req};
use fault_support::http::{HttpPeer, Kind};
use fault_support::in_process::InProcessPeer;
use fault_support::stdio::StdioPeer;
use fault_support::ws::WsPeer;
use fault_support::{pid_gone, wire, Peer, Plan, Stall};
use mcp_blocking::agent::{
    Agent, AgentError, AgentEvent, AnthropicMessages, HttpOptions, Model, ModelError, OpenAiChat,
    OpenAiResponses,
};
use mcp_blocking::auth::{OAuthConfig, RedirectHandler};
use mcp_blocking::config::ProtocolMode;
use mcp_blocking::handler::CLOSE_GRACE;
use mcp_blocking::model::Root;
use mcp_blocking::{CallOptions, Client, ClientBuilder, Error, Hub, ServerConfig};
use mcp_fixture_server::scripted_model::{call, ScriptedModel, Step};
use serde_json::{json, Value};

const MCPB: &str = env!("CARGO_BIN_EXE_mcpb");

/// The server's request timeout in most cells.
const T: Duration = Duration::from_millis(500);
/// The server's timeout where a shorter `CallOptions::timeout` (of `T`) is what must hold.
const LONG: Duration = Duration::from_secs(5);
/// `max_total_timeout` where progress may extend the timeout: much longer than `T`.
const TOTAL: Duration = Duration::from_secs(5);
/// What every bound allows on top of the promise.
const SLACK: Duration = Duration::from_secs(1);
/// Cells run at once.
const PARALLEL: usize = 12;
/// The name every cell gives its server.
const NAME: &str = "hostile";
/// 2026-07-28 input rounds before the stall, each answered after `ROUND_DELAY`: together
/// longer than `T` + 1 s, so a timeout that starts again with each round shows.
const ROUNDS: usize = 6;
const ROUND_DELAY: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    HttpJson,
    HttpSse,
    LegacySse,
    Ws,
    /// `testing::TestServer`, in this process.
    InProcess,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The stalled request is the first on a fresh connection (HTTP: every earlier reply
    /// closed its connection, so it travels on a new one; stdio and WebSocket: it comes right
    /// after the handshake).
    Fresh,
    /// After `initialize` and a listing on the same, kept-alive connection.
    KeptAlive,
    /// After the server forgot the session (HTTP 404) and the client initialised again.
    Reinit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Connect,
    ListTools,
    /// `call_tool` under the server's timeout.
    CallTool,
    /// `call_tool_with` under a shorter `CallOptions::timeout`.
    CallShort,
    /// `call_tool_with` with progress, reset-on-progress and a long `max_total_timeout`.
    CallProgress,
    /// A task-required tool (its `tasks/result` stalls), options as `CallProgress`.
    TaskTool,
    /// A 2026-07-28 call whose input rounds go on past the timeout, then stall.
    InputRound,
    HubCall,
    AgentCall,
    /// `mcpb call` (the binary).
    Mcpb,
    Close,
    /// The GET stream stalls: Streamable HTTP's standalone stream must hold nothing up
    /// (connecting and a listing answer in time); legacy HTTP+SSE's is the connection, whose
    /// opening must time out.
    GetStream,
}

const TRANSPORTS: [Transport; 6] = [
    Transport::Stdio,
    Transport::HttpJson,
    Transport::HttpSse,
    Transport::LegacySse,
    Transport::Ws,
    Transport::InProcess,
];
const STALLS: [Stall; 4] = [Stall::Silent, Stall::Head, Stall::Half, Stall::Trickle];
const STATES: [State; 3] = [State::Fresh, State::KeptAlive, State::Reinit];
const ENTRIES: [Entry; 12] = [
    Entry::Connect,
    Entry::ListTools,
    Entry::CallTool,
    Entry::CallShort,
    Entry::CallProgress,
    Entry::TaskTool,
    Entry::InputRound,
    Entry::HubCall,
    Entry::AgentCall,
    Entry::Mcpb,
    Entry::Close,
    Entry::GetStream,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    t: Transport,
    s: Stall,
    st: State,
    e: Entry,
}

impl Cell {
    fn name(&self) -> String {
        let t = match self.t {
            Transport::Stdio => "stdio",
            Transport::HttpJson => "http-json",
            Transport::HttpSse => "http-sse",
            Transport::LegacySse => "legacy-sse",
            Transport::Ws => "ws",
            Transport::InProcess => "in-process",
        };
        let s = match self.s {
            Stall::Silent => "silent",
            Stall::Head => "head",
            Stall::Half => "half",
            Stall::Trickle => "trickle",
        };
        let st = match self.st {
            State::Fresh => "fresh",
            State::KeptAlive => "kept-alive",
            State::Reinit => "reinit",
        };
        let e = match self.e {
            Entry::Connect => "connect",
            Entry::ListTools => "list-tools",
            Entry::CallTool => "call-tool",
            Entry::CallShort => "call-short",
            Entry::CallProgress => "call-progress",
            Entry::TaskTool => "task-tool",
            Entry::InputRound => "input-round",
            Entry::HubCall => "hub-call",
            Entry::AgentCall => "agent-call",
            Entry::Mcpb => "mcpb-call",
            Entry::Close => "close",
            Entry::GetStream => "get-stream",
        };
        format!("{t}/{s}/{st}/{e}")
    }

    fn http(&self) -> bool {
        matches!(
            self.t,
            Transport::HttpJson | Transport::HttpSse | Transport::LegacySse
        )
    }

    fn streamable(&self) -> bool {
        matches!(self.t, Transport::HttpJson | Transport::HttpSse)
    }

    /// The request timeout the cell's promise is about.
    fn timeout(&self) -> Duration {
        T
    }

    /// The server's configured timeout.
    fn server_timeout(&self) -> Duration {
        if self.e == Entry::CallShort {
            LONG
        } else {
            T
        }
    }
}

fn all_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for t in TRANSPORTS {
        for s in STALLS {
            for st in STATES {
                for e in ENTRIES {
                    cells.push(Cell { t, s, st, e });
                }
            }
        }
    }
    cells
}

// ---- the cells that cannot exist -------------------------------------------------------------

/// A rule of [`IMPOSSIBLE`]: an empty list matches anything.
struct Never {
    t: &'static [Transport],
    s: &'static [Stall],
    st: &'static [State],
    e: &'static [Entry],
    why: &'static str,
}

use Entry as E;
use State as S;
use Transport as Tr;

/// Every entry but connecting.
const AFTER_CONNECT: &[Entry] = &[
    E::ListTools,
    E::CallTool,
    E::CallShort,
    E::CallProgress,
    E::TaskTool,
    E::InputRound,
    E::HubCall,
    E::AgentCall,
    E::Mcpb,
    E::Close,
    E::GetStream,
];

/// The cells that cannot exist, and why.
const IMPOSSIBLE: &[Never] = &[
    Never {
        t: &[Tr::Stdio],
        s: &[Stall::Head],
        st: &[],
        e: &[],
        why: "stdio has no status line or headers: an answer is one line",
    },
    Never {
        t: &[Tr::Ws],
        s: &[Stall::Head],
        st: &[],
        e: AFTER_CONNECT,
        why: "after the upgrade a WebSocket carries frames only: its one status line and \
              headers are the upgrade's, stalled in the connect cells",
    },
    Never {
        t: &[],
        s: &[],
        st: &[S::KeptAlive, S::Reinit],
        e: &[E::Connect],
        why: "connecting opens the connection: nothing comes before it to keep alive or forget",
    },
    Never {
        t: &[Tr::InProcess],
        s: &[Stall::Head, Stall::Half, Stall::Trickle],
        st: &[],
        e: &[],
        why: "in process an answer is a value handed back: no bytes to cut short, the server \
              can only not answer",
    },
    Never {
        t: &[Tr::Stdio, Tr::Ws, Tr::LegacySse, Tr::InProcess],
        s: &[],
        st: &[S::Reinit],
        e: &[],
        why: "only Streamable HTTP has a session a server can forget (HTTP 404) and the client \
              initialises again",
    },
    Never {
        t: &[Tr::LegacySse],
        s: &[],
        st: &[],
        e: &[E::InputRound],
        why: "legacy HTTP+SSE speaks only the legacy era; input rounds are 2026-07-28's",
    },
    Never {
        t: &[],
        s: &[],
        st: &[S::Reinit],
        e: &[E::InputRound],
        why: "the 2026-07-28 era is stateless: there is no session to initialise again",
    },
    Never {
        t: &[Tr::Stdio, Tr::Ws, Tr::InProcess],
        s: &[],
        st: &[S::Fresh],
        e: &[E::TaskTool, E::HubCall, E::AgentCall, E::Mcpb],
        why: "it lists the tools before it calls: on the one stream of stdio, a WebSocket or an \
              in-process server the call is never the first request",
    },
    Never {
        t: &[Tr::LegacySse],
        s: &[],
        st: &[],
        e: &[E::Close],
        why: "closing legacy HTTP+SSE sends no request to stall: it drops the GET stream",
    },
    Never {
        t: &[Tr::Stdio, Tr::Ws, Tr::InProcess],
        s: &[],
        st: &[],
        e: &[E::GetStream],
        why: "stdio, WebSocket and in-process servers have no GET stream: everything travels \
              on the one connection",
    },
    Never {
        t: &[],
        s: &[],
        st: &[S::KeptAlive],
        e: &[E::GetStream],
        why: "the GET stream opens while connecting, before any listing (legacy HTTP+SSE: it is \
              the connection); Streamable HTTP opens it again after a re-initialisation, which \
              the reinit cells stall",
    },
    Never {
        t: &[Tr::InProcess],
        s: &[],
        st: &[],
        e: &[E::Mcpb],
        why: "the `mcpb` binary cannot reach a server inside this test process",
    },
    Never {
        t: &[Tr::InProcess],
        s: &[],
        st: &[],
        e: &[E::InputRound],
        why: "`testing::TestServer` speaks only the legacy era",
    },
    Never {
        t: &[Tr::InProcess],
        s: &[],
        st: &[],
        e: &[E::Close],
        why: "closing an in-process connection sends nothing a server could stall",
    },
];

/// Why `cell` cannot exist, if it cannot.
fn impossible(cell: &Cell) -> Option<&'static str> {
    IMPOSSIBLE
        .iter()
        .find(|n| {
            (n.t.is_empty() || n.t.contains(&cell.t))
                && (n.s.is_empty() || n.s.contains(&cell.s))
                && (n.st.is_empty() || n.st.contains(&cell.st))
                && (n.e.is_empty() || n.e.contains(&cell.e))
        })
        .map(|n| n.why)
}

// ---- what the peer does in each cell ---------------------------------------------------------

/// The listings a library cell makes before its entry point.
fn setup_lists(cell: &Cell) -> usize {
    match (cell.e, cell.st) {
        (E::HubCall | E::AgentCall | E::Mcpb | E::Connect, _) => 0,
        (E::Close, S::Reinit) => 2,
        (E::TaskTool, _) => 1,
        (_, S::Fresh) => 0,
        _ => 1,
    }
}

/// The peer's plan for `cell`, or why there is none.
fn plan(cell: &Cell) -> Result<Plan, &'static str> {
    let reinit = cell.st == S::Reinit;
    if reinit && !cell.streamable() {
        return Err("no session");
    }
    if cell.s == Stall::Head && cell.t == Tr::Stdio {
        return Err("no head on stdio");
    }
    if cell.t == Tr::InProcess {
        if cell.s != Stall::Silent {
            return Err("no bytes in process");
        }
        if matches!(cell.e, E::Mcpb | E::InputRound | E::Close) {
            return Err("not in process");
        }
    }
    if cell.s == Stall::Head && cell.t == Tr::Ws && cell.e != E::Connect {
        return Err("no head after the upgrade");
    }
    if !cell.http()
        && cell.st == S::Fresh
        && setup_lists(cell) + usize::from(lists_itself(cell)) > 0
    {
        return Err("the call is not the first request on the stream");
    }
    let lists = setup_lists(cell);
    let at = |method: &'static str,
              n: usize|
     -> ((&'static str, usize), Option<(&'static str, usize)>) {
        if reinit {
            ((method, n + 1), Some((method, n)))
        } else {
            ((method, n), None)
        }
    };
    let (stall_at, expire_at) = match cell.e {
        E::Connect if cell.st != S::Fresh => return Err("nothing before connecting"),
        E::Connect if cell.t == Tr::Ws && cell.s == Stall::Head => (("upgrade", 1), None),
        E::Connect => (("initialize", 1), None),
        E::ListTools => at("tools/list", lists + 1),
        E::CallTool | E::CallShort | E::CallProgress | E::HubCall | E::AgentCall | E::Mcpb => {
            at("tools/call", 1)
        }
        E::TaskTool => (("tasks/result", 1), reinit.then_some(("tools/call", 1))),
        E::InputRound if cell.t == Tr::LegacySse => return Err("legacy era only"),
        E::InputRound if reinit => return Err("stateless"),
        E::InputRound => (("tools/call", ROUNDS + 1), None),
        E::GetStream if !cell.http() => return Err("no GET stream"),
        E::GetStream if cell.st == S::KeptAlive => return Err("opened while connecting"),
        E::GetStream if reinit => (("GET", 2), Some(("tools/list", 2))),
        E::GetStream => (("GET", 1), None),
        E::Close => {
            let target = match cell.t {
                Tr::Stdio => "stdin-eof",
                Tr::Ws => "close",
                Tr::HttpJson | Tr::HttpSse => "DELETE",
                Tr::LegacySse | Tr::InProcess => return Err("nothing sent at close"),
            };
            ((target, 1), reinit.then_some(("tools/list", 2)))
        }
    };
    let mut p = Plan::new(stall_at, cell.s);
    p.expire_at = expire_at;
    p.close_each = cell.http() && cell.st == S::Fresh;
    if cell.e == E::InputRound {
        p.modern = true;
        p.rounds = ROUNDS;
        p.round_delay = ROUND_DELAY;
    }
    Ok(p)
}

/// Whether the entry point lists the tools itself before its call.
fn lists_itself(cell: &Cell) -> bool {
    matches!(cell.e, E::HubCall | E::AgentCall | E::Mcpb)
}

fn start_peer(cell: &Cell, plan: Plan) -> Peer {
    match cell.t {
        Tr::Stdio => Peer::Stdio(StdioPeer::start(plan)),
        Tr::HttpJson => Peer::Http(HttpPeer::start(Kind::Json, plan)),
        Tr::HttpSse => Peer::Http(HttpPeer::start(Kind::Sse, plan)),
        Tr::LegacySse => Peer::Http(HttpPeer::start(Kind::Legacy, plan)),
        Tr::Ws => Peer::Ws(WsPeer::start(plan)),
        Tr::InProcess => Peer::InProcess(InProcessPeer::start(NAME, plan)),
    }
}

fn config(cell: &Cell, peer: &Peer) -> ServerConfig {
    let cfg = match peer {
        Peer::Stdio(p) => {
            let (program, addr) = p.command();
            ServerConfig::stdio(NAME, program).args([addr])
        }
        Peer::Http(p) if cell.t == Tr::LegacySse => ServerConfig::sse(NAME, p.url()),
        Peer::Http(p) => ServerConfig::http(NAME, p.url()),
        Peer::Ws(p) => ServerConfig::websocket(NAME, p.url()),
        // The transport is replaced by the in-process server (see `builder`).
        Peer::InProcess(_) => ServerConfig::stdio(NAME, "in-process"),
    };
    let mode = if cell.e == E::InputRound {
        ProtocolMode::Modern
    } else {
        ProtocolMode::Legacy
    };
    cfg.with_timeout(cell.server_timeout()).protocol_mode(mode)
}

/// How long closing may take on `t` with request timeout `timeout`: the documented graces.
fn close_grace(t: Transport, timeout: Duration) -> Duration {
    match t {
        // `Client::disconnect`: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL, 2 s for the group.
        Tr::Stdio => Duration::from_secs(6),
        // The DELETE of the session is bounded by the request timeout, at most 5 s.
        Tr::HttpJson | Tr::HttpSse => timeout.min(Duration::from_secs(5)),
        // Nothing is sent: the GET stream is dropped.
        Tr::LegacySse => Duration::ZERO,
        // The close handshake's grace: the request timeout, at most 2 s.
        Tr::Ws => timeout.min(Duration::from_secs(2)),
        // Only the handlers' grace.
        Tr::InProcess => CLOSE_GRACE,
    }
}

// ---- running a cell --------------------------------------------------------------------------

/// What a cell observed: how long the stalled path took.
type Outcome = Result<Duration, String>;

fn progress_opts() -> CallOptions {
    CallOptions::new()
        .on_progress(|_| {})
        .reset_timeout_on_progress(true)
        .max_total_timeout(TOTAL)
}

/// The error must be the server's timeout, within `bound`.
fn timed_out(r: Result<(), Error>, took: Duration, bound: Duration) -> Outcome {
    let e = match r {
        Ok(()) => return Err(format!("returned Ok after {took:?}")),
        Err(e) => e,
    };
    match &e {
        Error::Timeout { server, .. } if server == NAME => {}
        _ => return Err(format!("not a timeout of `{NAME}` after {took:?}: {e:?}")),
    }
    if took > bound {
        return Err(format!("timed out after {took:?}, more than {bound:?}"));
    }
    Ok(took)
}

fn timed_close(cell: &Cell, close: impl FnOnce()) -> Result<(), String> {
    let started = Instant::now();
    close();
    let took = started.elapsed();
    let bound = close_grace(cell.t, cell.server_timeout()) + SLACK;
    if took > bound {
        return Err(format!("closing took {took:?}, more than {bound:?}"));
    }
    Ok(())
}

/// A client builder for `cfg` on the peer's transport.
fn builder(peer: &Peer, cfg: ServerConfig) -> ClientBuilder {
    match peer {
        Peer::InProcess(p) => p.server.client_builder_for(cfg),
        _ => Client::builder(cfg),
    }
}

fn connect(cell: &Cell, peer: &Peer, cfg: ServerConfig) -> Result<Client, Error> {
    if cell.e == E::InputRound {
        builder(peer, cfg)
            .roots(vec![Root::new("file:///work")])
            .connect()
    } else {
        builder(peer, cfg).connect()
    }
}

/// A Hub with the cell's server, connected (an in-process client is injected).
fn hub_for(cell: &Cell, peer: &Peer) -> Result<Hub, String> {
    let cfg = config(cell, peer);
    if let Peer::InProcess(_) = peer {
        // The injected client takes the place of the configured server of its name.
        let hub = Hub::new([cfg.clone()]);
        let client = builder(peer, cfg)
            .connect()
            .map_err(|e| format!("setup: connect: {e}"))?;
        let tools = client
            .list_tools()
            .map_err(|e| format!("setup: list_tools: {e}"))?;
        hub.inject(vec![Arc::new(client)], vec![(NAME.to_owned(), tools)]);
        return Ok(hub);
    }
    let hub = Hub::new([cfg]);
    let failures = hub.connect_all();
    if !failures.is_empty() {
        return Err(format!("setup: the hub did not connect: {failures:?}"));
    }
    Ok(hub)
}

fn args() -> serde_json::Value {
    json!({"text": "x"})
}

/// The library entry points on one client.
fn client_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let cfg = config(cell, peer);
    if cell.e == E::Connect || (cell.e == E::GetStream && cell.t == Tr::LegacySse) {
        return connect_times_out(cell, peer, cfg);
    }
    if cell.e == E::GetStream {
        return stream_holds_nothing(cell, cfg, peer);
    }
    let client = connect(cell, peer, cfg).map_err(|e| format!("setup: connect: {e}"))?;
    for _ in 0..setup_lists(cell) {
        client
            .list_tools()
            .map_err(|e| format!("setup: list_tools: {e}"))?;
    }
    if cell.e == E::Close {
        let started = Instant::now();
        let _ = client.close();
        let took = started.elapsed();
        let bound = close_grace(cell.t, cell.server_timeout()) + SLACK;
        if took > bound {
            return Err(format!("closing took {took:?}, more than {bound:?}"));
        }
        client
            .open()
            .map_err(|e| format!("opening again after the close failed: {e}"))?;
        client
            .list_tools()
            .map_err(|e| format!("the reopened connection does not list: {e}"))?;
        timed_close(cell, || drop(client.close()))?;
        return Ok(took);
    }
    let started = Instant::now();
    let r = match cell.e {
        E::ListTools => client.list_tools().map(drop),
        E::CallTool | E::InputRound => client.call_tool("echo", args()).map(drop),
        E::CallShort => client
            .call_tool_with("echo", args(), &CallOptions::new().timeout(T))
            .map(drop),
        E::CallProgress => client
            .call_tool_with("echo", args(), &progress_opts())
            .map(drop),
        E::TaskTool => client
            .call_tool_with("slow_task", json!({}), &progress_opts())
            .map(drop),
        _ => unreachable!("not a client entry point"),
    };
    let took = started.elapsed();
    let outcome = timed_out(r, took, cell.timeout() + SLACK);
    client
        .list_tools()
        .map_err(|e| format!("{}; then not usable: {e}", describe(&outcome)))?;
    timed_close(cell, || drop(client.close()))?;
    outcome
}

/// Connecting times out in time, naming the server, and connecting again works.
fn connect_times_out(cell: &Cell, peer: &Peer, cfg: ServerConfig) -> Outcome {
    let started = Instant::now();
    let r = builder(peer, cfg.clone()).connect();
    let took = started.elapsed();
    match r {
        Ok(_) => return Err(format!("connected after {took:?}")),
        Err(e) if e.is_timeout() && e.to_string().contains(NAME) => {}
        Err(e) => return Err(format!("not a timeout after {took:?}: {e:?}")),
    }
    if took > cell.timeout() + SLACK {
        return Err(format!(
            "timed out after {took:?}, more than {:?}",
            cell.timeout() + SLACK
        ));
    }
    let again = builder(peer, cfg)
        .connect()
        .map_err(|e| format!("connecting again after the timeout failed: {e}"))?;
    again
        .list_tools()
        .map_err(|e| format!("the new connection does not list: {e}"))?;
    timed_close(cell, || drop(again.close()))?;
    Ok(took)
}

/// A stalled standalone GET stream holds nothing up: connecting and a listing each answer
/// within the timeout + 1 s.
fn stream_holds_nothing(cell: &Cell, cfg: ServerConfig, peer: &Peer) -> Outcome {
    let bound = cell.timeout() + SLACK;
    let started = Instant::now();
    let client = Client::connect(cfg).map_err(|e| format!("connecting failed: {e}"))?;
    let connected = started.elapsed();
    for _ in 0..setup_lists(cell) {
        client
            .list_tools()
            .map_err(|e| format!("setup: list_tools: {e}"))?;
    }
    let started = Instant::now();
    let listed = client.list_tools();
    let took = started.elapsed();
    let outcome = match listed {
        _ if peer.shared().stalled_at().is_none() => Err("the GET stream never opened".into()),
        Err(e) => Err(format!("listing failed after {took:?}: {e}")),
        Ok(_) if connected > bound => Err(format!(
            "connecting took {connected:?}, more than {bound:?}"
        )),
        Ok(_) if took > bound => Err(format!("listing took {took:?}, more than {bound:?}")),
        Ok(_) => Ok(connected.max(took)),
    };
    timed_close(cell, || drop(client.close()))?;
    outcome
}

fn describe(o: &Outcome) -> String {
    match o {
        Ok(d) => format!("timed out after {d:?}"),
        Err(e) => e.clone(),
    }
}

fn hub_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let hub = hub_for(cell, peer)?;
    let started = Instant::now();
    let r = hub.call_tool("echo", args()).map(drop);
    let took = started.elapsed();
    let outcome = timed_out(r, took, cell.timeout() + SLACK);
    let after = hub.call_tool("echo", args());
    timed_close(cell, || hub.disconnect())?;
    after.map_err(|e| format!("{}; then not usable: {e}", describe(&outcome)))?;
    outcome
}

fn agent_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let hub = hub_for(cell, peer)?;
    let model = ScriptedModel::start(vec![
        Step::Call(String::new(), vec![call("echo", args())]),
        Step::Summary("got: ".into()),
    ])
    .map_err(|e| format!("setup: model: {e}"))?;
    let mut o = HttpOptions::default();
    o.timeout = Duration::from_secs(30);
    let chat = OpenAiChat::new("scripted")
        .base_url(&model.base_url())
        .api_key("sk-test-key")
        .http_options(o);
    type Times = (Option<Instant>, Option<Instant>);
    let times: Arc<Mutex<Times>> = Arc::default();
    let t2 = times.clone();
    let mut agent = Agent::new(&hub, chat).on_event(move |e| match e {
        AgentEvent::ToolCallStarted { .. } => t2.lock().unwrap().0 = Some(Instant::now()),
        AgentEvent::ToolCallFinished { .. } => t2.lock().unwrap().1 = Some(Instant::now()),
        _ => {}
    });
    let run = agent.run("go");
    drop(agent);
    let outcome = (|| {
        let out = run.map_err(|e| format!("the run failed: {e}"))?;
        let (Some(a), Some(b)) = *times.lock().unwrap() else {
            return Err(format!("no tool call ran: {:?}", out.tool_calls));
        };
        let took = b - a;
        let rec = out.tool_calls.first().ok_or("no tool call")?;
        // The model reads that the tool did not answer in time; the record names the server.
        let said = rec.output.contains("did not answer") || rec.output.contains("timed out");
        if !(rec.is_error && said && rec.server.as_deref() == Some(NAME)) {
            return Err(format!(
                "the model was not told of the timeout after {took:?}: {:?}",
                rec.output
            ));
        }
        if took > cell.timeout() + SLACK {
            return Err(format!(
                "the tool call took {took:?}, more than {:?}",
                cell.timeout() + SLACK
            ));
        }
        Ok(took)
    })();
    let after = hub.call_tool("echo", args());
    timed_close(cell, || hub.disconnect())?;
    after.map_err(|e| format!("{}; then not usable: {e}", describe(&outcome)))?;
    outcome
}

fn mcpb_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let mut cmd = Command::new(MCPB);
    match peer {
        Peer::Stdio(p) => {
            let (program, addr) = p.command();
            cmd.args(["--stdio", &format!("'{program}' {addr}")]);
        }
        Peer::Http(p) if cell.t == Tr::LegacySse => {
            cmd.args(["--url", &p.url(), "--transport", "sse"]);
        }
        Peer::Http(p) => {
            cmd.args(["--url", &p.url(), "--transport", "http"]);
        }
        Peer::Ws(p) => {
            cmd.args(["--url", &p.url()]);
        }
        Peer::InProcess(_) => return Err("no plan: mcpb cannot reach it".into()),
    }
    let secs = format!("{}", T.as_secs_f64());
    let total = format!("{}", TOTAL.as_secs_f64());
    cmd.args([
        "--timeout",
        &secs,
        "--max-time",
        &total,
        "call",
        "echo",
        "text=x",
    ])
    .env_remove("RUST_LOG")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("setup: mcpb: {e}"))?;
    let mut status = None;
    let exited = wire::wait(TOTAL + Duration::from_secs(5), &mut || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    let ended = Instant::now();
    if !exited {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let err = err.trim().to_owned();
    let Some(stalled) = peer.shared().stalled_at() else {
        return Err(format!("mcpb never reached the stall: {status:?}: {err}"));
    };
    let took = ended.saturating_duration_since(stalled);
    if !exited {
        return Err(format!(
            "mcpb still running {took:?} after the stall (killed)"
        ));
    }
    let code = status.and_then(|s| s.code());
    // 4: a request timed out after connecting (3 is a failure to connect).
    if code != Some(4) || !err.contains("timed out") || !err.contains(NAME) {
        return Err(format!("mcpb exited {code:?} after {took:?}: {err}"));
    }
    if took > cell.timeout() + SLACK {
        return Err(format!(
            "mcpb exited {took:?} after the stall, more than {:?}",
            cell.timeout() + SLACK
        ));
    }
    Ok(took)
}

/// Every connection the peer accepted is closed by the client, every relay process reaped.
fn nothing_left(cell: &Cell, peer: &Peer) -> Result<(), String> {
    let shared = peer.shared();
    let deadline = close_grace(cell.t, cell.server_timeout()) + SLACK;
    if let Peer::InProcess(_) = peer {
        // No socket, no process: the matrix's final thread count covers it.
        return Ok(());
    }
    if let Peer::Stdio(_) = peer {
        let pids = shared.pids();
        if !wire::wait(deadline, &mut || pids.iter().all(|p| pid_gone(*p))) {
            let left: Vec<_> = pids.into_iter().filter(|p| !pid_gone(*p)).collect();
            return Err(format!(
                "server processes {left:?} still there after {deadline:?}"
            ));
        }
        return Ok(());
    }
    if !wire::wait(deadline, &mut || shared.open_connections() == 0) {
        return Err(format!(
            "{} connection(s) still open {deadline:?} after closing",
            shared.open_connections()
        ));
    }
    Ok(())
}

fn run_cell(cell: &Cell) -> Outcome {
    let plan = plan(cell).map_err(|why| format!("no plan: {why}"))?;
    let peer = start_peer(cell, plan);
    let outcome = match cell.e {
        E::HubCall => hub_cell(cell, &peer),
        E::AgentCall => agent_cell(cell, &peer),
        E::Mcpb => mcpb_cell(cell, &peer),
        _ => client_cell(cell, &peer),
    };
    let left = nothing_left(cell, &peer);
    drop(peer);
    match (outcome, left) {
        (Ok(took), Ok(())) => Ok(took),
        (Ok(took), Err(e)) => Err(format!("timed out after {took:?}, but {e}")),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(l)) => Err(format!("{e}; and {l}")),
    }
}

// ---- the runner ------------------------------------------------------------------------------

/// Runs `jobs` with at most `PARALLEL` at once (a panic is the job's failure); results in order.
fn run_all<J: Send + Sync + 'static>(
    jobs: Vec<(String, J)>,
    run: fn(&J) -> Outcome,
) -> Vec<(String, Outcome)> {
    let queue: Arc<Mutex<VecDeque<(usize, String, J)>>> = Arc::new(Mutex::new(
        jobs.into_iter()
            .enumerate()
            .map(|(i, (n, j))| (i, n, j))
            .collect(),
    ));
    let results: Arc<Mutex<Vec<(usize, String, Outcome)>>> = Arc::default();
    let workers: Vec<_> = (0..PARALLEL)
        .map(|w| {
            let (queue, results) = (queue.clone(), results.clone());
            std::thread::Builder::new()
                .name(format!("fault-cell-{w}"))
                .spawn(move || loop {
                    let Some((i, name, job)) = queue.lock().unwrap().pop_front() else {
                        return;
                    };
                    let started = Instant::now();
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&job)))
                            .unwrap_or_else(|p| {
                                let msg = p
                                    .downcast_ref::<String>()
                                    .cloned()
                                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                                    .unwrap_or_default();
                                Err(format!("panicked after {:?}: {msg}", started.elapsed()))
                            });
                    results.lock().unwrap().push((i, name, outcome));
                })
                .expect("spawn a worker")
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by_key(|(i, _, _)| *i);
    results.into_iter().map(|(_, n, o)| (n, o)).collect()
}

/// The names of this process's library threads (`mcp-…`, `hub-…`), from `/proc/self/task`.
fn library_threads() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim().to_owned())
        .filter(|c| c.starts_with("mcp-") || c.starts_with("hub-"))
        .collect()
}

/// This process's child processes (any state), from `/proc/*/stat`.
fn children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|d| {
        let d = d.ok()?;
        let pid: u32 = d.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(d.path().join("stat")).ok()?;
        // The parent is the second field after the parenthesised command.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == me).then_some(pid)
    })
    .collect()
}

fn selected(name: &str) -> bool {
    match std::env::var("FAULT_CELLS") {
        Ok(f) if !f.is_empty() => f.split(',').any(|p| name.contains(p)),
        _ => true,
    }
}

/// Prints every result and panics naming every failed cell.
fn report(what: &str, results: &[(String, Outcome)], took: Duration) {
    let failed: Vec<_> = results.iter().filter(|(_, o)| o.is_err()).collect();
    for (name, o) in results {
        match o {
            Ok(d) => eprintln!("ok   {name}: {d:?}"),
            Err(e) => eprintln!("FAIL {name}: {e}"),
        }
    }
    eprintln!(
        "{what}: {} cells, {} failed, in {took:?}",
        results.len(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{what}: {} of {} cells failed:\n{}",
        failed.len(),
        results.len(),
        failed
            .iter()
            .map(|(n, o)| format!("  {n}: {}", describe(o)))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---- the authorization server's endpoints ---------------------------------------------------

/// The endpoints of an OAuth sign-in, as the authorization peer names them.
const AUTH_ENDPOINTS: [&str; 4] = ["resource-metadata", "as-metadata", "registration", "token"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grant {
    /// A person signs in (here a redirect handler that answers at once); the client registers.
    AuthorizationCode,
    /// Machine to machine, with a client id and secret: nothing registers.
    ClientCredentials,
}

#[derive(Clone, Copy, Debug)]
struct AuthCell {
    grant: Grant,
    endpoint: &'static str,
    s: Stall,
}

impl AuthCell {
    fn name(&self) -> String {
        let g = match self.grant {
            Grant::AuthorizationCode => "authorization-code",
            Grant::ClientCredentials => "client-credentials",
        };
        format!("auth/{g}/{}/{:?}", self.endpoint, self.s).to_lowercase()
    }
}

/// The authorization cells that cannot exist, and why.
fn auth_impossible(c: &AuthCell) -> Option<&'static str> {
    (c.grant == Grant::ClientCredentials && c.endpoint == "registration")
        .then_some("a client-credentials client is registered beforehand: nothing registers")
}

fn auth_route(req: &Req) -> Option<&'static str> {
    let p = req.path.as_str();
    if p.starts_with("/.well-known/oauth-protected-resource") {
        Some("resource-metadata")
    } else if p.starts_with("/.well-known/oauth-authorization-server")
        || p.starts_with("/.well-known/openid-configuration")
    {
        Some("as-metadata")
    } else if p.starts_with("/register") {
        Some("registration")
    } else if p.starts_with("/token") {
        Some("token")
    } else {
        None
    }
}

/// A protected MCP server and its authorization server on one origin.
fn auth_handler() -> Handler {
    Arc::new(|req: &Req, origin: &str| {
        let path = req.path.split('?').next().unwrap_or("");
        match (req.method.as_str(), auth_route(req)) {
            ("GET", Some("resource-metadata")) => Reply::json(
                "200 OK",
                &json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}),
            ),
            ("GET", Some("as-metadata")) => Reply::json(
                "200 OK",
                &json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported":
                        ["none", "client_secret_basic", "client_secret_post"]
                }),
            ),
            ("POST", Some("registration")) => Reply::json(
                "201 Created",
                &json!({"client_id": "client-1", "token_endpoint_auth_method": "none",
                        "redirect_uris": ["http://localhost:3000/callback"]}),
            ),
            ("POST", Some("token")) => Reply::json(
                "200 OK",
                &json!({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600}),
            ),
            ("POST", _) if path == "/mcp" => {
                if req.header("authorization") == Some("Bearer tok-1") {
                    mcp_reply(req)
                } else {
                    Reply {
                        status: "401 Unauthorized",
                        headers: vec![(
                            "WWW-Authenticate",
                            format!(
                                "Bearer resource_metadata=\"{origin}/.well-known/\
                                 oauth-protected-resource/mcp\""
                            ),
                        )],
                        body: b"unauthorized".to_vec(),
                    }
                }
            }
            ("DELETE", _) => Reply::json("200 OK", &json!({})),
            _ => Reply {
                status: "405 Method Not Allowed",
                headers: Vec::new(),
                body: Vec::new(),
            },
        }
    })
}

/// The protected server's answers, once the token is there.
fn mcp_reply(req: &Req) -> Reply {
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id") else {
        return Reply {
            status: "202 Accepted",
            headers: Vec::new(),
            body: Vec::new(),
        };
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({"protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "guarded", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        _ => json!({}),
    };
    Reply::json(
        "200 OK",
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
    )
}

/// The redirect handler of a person who signs in at once: the callback with a code and the
/// state the authorization address carries.
fn signed_in(url: &str) -> Result<String, String> {
    let state = url
        .split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("state="))
        .ok_or("no state")?;
    Ok(format!(
        "http://localhost:3000/callback?code=c0de&state={state}"
    ))
}

fn run_auth_cell(cell: &AuthCell) -> Outcome {
    let mut plan = Plan::new((cell.endpoint, 1), cell.s);
    plan.close_each = false;
    let peer = EndpointPeer::start(plan, auth_route, auth_handler());
    let oauth = match cell.grant {
        Grant::AuthorizationCode => OAuthConfig::authorization_code(RedirectHandler::custom(
            "http://localhost:3000/callback",
            signed_in,
        )),
        Grant::ClientCredentials => OAuthConfig::client_credentials("svc", "s3cret"),
    }
    .timeout(T);
    let cfg = ServerConfig::http(NAME, format!("{}/mcp", peer.origin()))
        .with_timeout(LONG)
        .protocol_mode(ProtocolMode::Legacy)
        .oauth(oauth);
    let started = Instant::now();
    let r = Client::connect(cfg);
    let took = started.elapsed();
    let shared = peer.shared.clone();
    let outcome = (|| {
        let Some(stalled) = shared.stalled_at() else {
            return Err(format!("the sign-in never reached `{}`", cell.endpoint));
        };
        // The stalled request is given up within the authorization timeout.
        let abandoned = wire::wait(T + SLACK, &mut || peer.abandoned_at().is_some());
        if !abandoned {
            return Err(format!(
                "the stalled request was still open {:?} after it began",
                stalled.elapsed()
            ));
        }
        let gave_up = peer.abandoned_at().map(|a| a - stalled).unwrap_or_default();
        if took > T + SLACK {
            return Err(format!(
                "connecting took {took:?}, more than {:?}",
                T + SLACK
            ));
        }
        match &r {
            Ok(c) => {
                // Recovered (another well-known address, or a second try): it must work.
                c.list_tools()
                    .map_err(|e| format!("recovered, then not usable: {e}"))?;
            }
            Err(e @ (Error::Connect(_) | Error::Timeout { .. } | Error::Unauthorized { .. }))
                if e.to_string().contains(NAME) => {}
            Err(e) => return Err(format!("not a typed error naming the server: {e:?}")),
        }
        Ok(gave_up)
    })();
    if let Ok(c) = r {
        let _ = c.close();
    }
    let left = wire::wait(SLACK, &mut || shared.open_connections() == 0);
    drop(peer);
    match (outcome, left) {
        (Ok(d), true) => Ok(d),
        (Ok(_), false) => Err("a connection to the authorization server is still open".into()),
        (Err(e), _) => Err(e),
    }
}

fn auth_cells() -> Vec<AuthCell> {
    let mut cells = Vec::new();
    for grant in [Grant::AuthorizationCode, Grant::ClientCredentials] {
        for endpoint in AUTH_ENDPOINTS {
            for s in STALLS {
                cells.push(AuthCell { grant, endpoint, s });
            }
        }
    }
    cells
}

// ---- the model endpoint ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
}

#[derive(Clone, Copy, Debug)]
struct ModelCell {
    api: Api,
    s: Stall,
}

impl ModelCell {
    fn name(&self) -> String {
        format!("model/{:?}/{:?}", self.api, self.s).to_lowercase()
    }
}

/// The model's request timeout in these cells.
const MODEL_TIMEOUT: Duration = Duration::from_secs(1);

fn model_handler() -> Handler {
    Arc::new(|req: &Req, _origin: &str| {
        let body = if req.path.ends_with("/chat/completions") {
            json!({"id": "c-1", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "hello there"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        } else if req.path.ends_with("/responses") {
            json!({"id": "r-1", "object": "response", "status": "completed", "model": "m",
                "output": [{"type": "message", "role": "assistant", "id": "m-1",
                            "content": [{"type": "output_text", "text": "hello there"}]}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}})
        } else {
            json!({"id": "m-1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": "hello there"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}})
        };
        Reply::json("200 OK", &body)
    })
}

fn model_route(req: &Req) -> Option<&'static str> {
    (req.method == "POST").then_some("model")
}

fn run_model_cell(cell: &ModelCell) -> Outcome {
    let mut plan = Plan::new(("model", 1), cell.s);
    // Every request stalls: a retry must not start the deadline again.
    plan.stall_every = true;
    let peer = EndpointPeer::start(plan, model_route, model_handler());
    let mut o = HttpOptions::default();
    o.timeout = MODEL_TIMEOUT;
    o.base_delay = Duration::from_millis(10);
    let base = peer.origin();
    let model: Box<dyn Model> = match cell.api {
        Api::OpenAiChat => Box::new(
            OpenAiChat::new("m")
                .base_url(&format!("{base}/v1"))
                .api_key("sk-test-key")
                .http_options(o),
        ),
        Api::OpenAiResponses => Box::new(
            OpenAiResponses::new("m")
                .base_url(&format!("{base}/v1"))
                .api_key("sk-test-key")
                .http_options(o),
        ),
        Api::Anthropic => Box::new(
            AnthropicMessages::new("m")
                .base_url(&base)
                .api_key("sk-test-key")
                .http_options(o),
        ),
    };
    let hub = Hub::new(Vec::<ServerConfig>::new());
    let started = Instant::now();
    let r = Agent::new(&hub, model).run("hello");
    let took = started.elapsed();
    hub.disconnect();
    let outcome = match r {
        Ok(out) => Err(format!("answered {:?} after {took:?}", out.text)),
        Err(AgentError::Model {
            source: ModelError::Timeout { .. },
            ..
        }) if took <= MODEL_TIMEOUT + SLACK => Ok(took),
        Err(AgentError::Model {
            source: ModelError::Timeout { .. },
            ..
        }) => Err(format!(
            "timed out after {took:?}, more than {:?}",
            MODEL_TIMEOUT + SLACK
        )),
        Err(e) => Err(format!("not a model timeout after {took:?}: {e:?}")),
    };
    let left = wire::wait(SLACK, &mut || peer.shared.open_connections() == 0);
    drop(peer);
    match (outcome, left) {
        (Ok(d), true) => Ok(d),
        (Ok(_), false) => Err("a connection to the model is still open".into()),
        (Err(e), _) => Err(e),
    }
}

fn model_cells() -> Vec<ModelCell> {
    let mut cells = Vec::new();
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic] {
        for s in STALLS {
            cells.push(ModelCell { api, s });
        }
    }
    cells
}

// ---- the tests -------------------------------------------------------------------------------

#[test]
fn the_impossible_cells_are_exactly_those_without_a_plan() {
    let mut runnable = 0;
    for cell in all_cells() {
        let why = impossible(&cell);
        let planned = plan(&cell);
        assert_eq!(
            why.is_some(),
            planned.is_err(),
            "{}: listed as impossible: {why:?}; plan: {:?}",
            cell.name(),
            planned.err()
        );
        runnable += usize::from(why.is_none());
    }
    // Every rule removes at least one cell no earlier rule removed.
    for (i, rule) in IMPOSSIBLE.iter().enumerate() {
        let own = all_cells()
            .iter()
            .filter(|c| impossible(c) == Some(rule.why))
            .count();
        assert!(own > 0, "rule {i} ({}) removes nothing", rule.why);
    }
    assert!(runnable > 300, "{runnable} runnable cells");
}

#[test]
fn every_path_times_out_in_time_and_leaves_nothing_behind() {
    let cells: Vec<_> = all_cells()
        .into_iter()
        .filter(|c| impossible(c).is_none() && selected(&c.name()))
        .map(|c| (c.name(), c))
        .collect();
    let auth: Vec<_> = auth_cells()
        .into_iter()
        .filter(|c| auth_impossible(c).is_none() && selected(&c.name()))
        .map(|c| (c.name(), c))
        .collect();
    let models: Vec<_> = model_cells()
        .into_iter()
        .filter(|c| selected(&c.name()))
        .map(|c| (c.name(), c))
        .collect();
    let started = Instant::now();
    let mut results = run_all(cells, run_cell);
    results.extend(run_all(auth, run_auth_cell));
    results.extend(run_all(models, run_model_cell));
    let took = started.elapsed();
    // Nothing of the library's is left once every client is closed and every peer dropped.
    let mut threads = Vec::new();
    let mut kids = Vec::new();
    let settled = wire::wait(Duration::from_secs(10), &mut || {
        threads = library_threads();
        kids = children();
        threads.is_empty() && kids.is_empty()
    });
    if !settled {
        results.push((
            "(after the matrix)".into(),
            Err(format!(
                "left behind: threads {threads:?}, child processes {kids:?}"
            )),
        ));
    }
    report("fault matrix", &results, took);
}
