//! The fault matrix: every path a request can take, against a peer that stalls on it.
//!
//! Cells are generated: transport × stall point × connection state × entry point, each with its
//! own name (`transport/stall/state/entry`, say `http-sse/trickle/kept-alive/call-progress`).
//! In every cell a scripted peer (`tests/fault_support/`) answers the handshake and the listings
//! normally, then stalls at the cell's request in the cell's way. Every cell must:
//! - return [`Error::Timeout`] naming the server within its timeout + 1 s (connecting, and
//!   the opening of a legacy GET stream: the timed-out [`Error::Connect`], in `Auto` mode too,
//!   where the `server/discover` probe and `initialize` share the one timeout; the agent: the
//!   timed-out tool result the model reads, its record naming the server; `mcpb call`: exit
//!   code 4 naming the server, counted from the stalled request's arrival at the peer;
//!   `close`: return within the transport's documented grace + 1 s; a stalled standalone GET
//!   stream of Streamable HTTP: hold nothing up, connecting, a listing and another once the
//!   stalled GET has arrived each answering within the timeout + 1 s);
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
//! `FAULT_CELLS=a,b` runs only the cells whose name contains `a` or `b`. Every cell runs on
//! Windows too (under Wine in CI).
//!
//! | file | what |
//! |---|---|
//! | `fault_matrix.rs` | the dimensions, the impossible cells, each cell's plan, the tests |
//! | `fault_matrix/cells.rs` | running one cell of the transport matrix, and its checks |
//! | `fault_matrix/auth.rs` | the authorization server's endpoints |
//! | `fault_matrix/model.rs` | the model endpoint |
//! | `fault_matrix/runner.rs` | bounded parallelism, what is left behind, the report |
//! | `fault_support/` | the hostile peers |

mod fault_support;
mod support_remote;

// This process's threads and child processes, read as the other test files read them.
#[allow(dead_code)]
#[path = "common/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "common/threads.rs"]
mod threads;

// The parts of this test, in `tests/fault_matrix/`.
#[path = "fault_matrix/auth.rs"]
mod auth;
#[path = "fault_matrix/cells.rs"]
mod cells;
#[path = "fault_matrix/model.rs"]
mod model;
#[path = "fault_matrix/runner.rs"]
mod runner;

use std::time::{Duration, Instant};

use fault_support::http::{HttpPeer, Kind};
use fault_support::in_process::InProcessPeer;
use fault_support::stdio::StdioPeer;
use fault_support::ws::WsPeer;
use fault_support::{wire, Peer, Plan, Stall};
use mcp_blocking::config::ProtocolMode;
use mcp_blocking::handler::CLOSE_GRACE;
use mcp_blocking::ServerConfig;

use auth::{auth_cells, auth_impossible, run_auth_cell};
use cells::run_cell;
use model::{model_cells, run_model_cell};
use runner::{children, library_threads, report, run_all, selected};

const MCPB: &str = env!("CARGO_BIN_EXE_mcpb");

/// The server's request timeout in most cells: longer than [`SLACK`], so that a wait which
/// starts again (a second timeout, a close grace added to a failed handshake) overshoots the
/// bound instead of hiding in it.
const T: Duration = Duration::from_millis(1200);
/// The server's timeout in the `Auto` connect cells: half of it (the most the probe may take)
/// is longer than [`SLACK`], so that an `initialize` which starts the timeout again after the
/// probe overshoots the bound.
const AUTO_T: Duration = Duration::from_millis(2500);
/// The server's timeout where a shorter `CallOptions::timeout` (of `T`) is what must hold.
const LONG: Duration = Duration::from_secs(5);
/// `max_total_timeout` where progress may extend the timeout: much longer than `T`.
const TOTAL: Duration = Duration::from_secs(5);
/// What every bound allows on top of the promise.
const SLACK: Duration = Duration::from_secs(1);
/// Cells run at once.
const PARALLEL: usize = 16;
/// The name every cell gives its server.
const NAME: &str = "hostile";
/// 2026-07-28 input rounds before the stall, each answered after `ROUND_DELAY`: together
/// longer than `T` + 1 s, so a timeout that starts again with each round shows.
const ROUNDS: usize = 6;
const ROUND_DELAY: Duration = Duration::from_millis(250);

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
    /// Connecting in `ProtocolMode::Auto`: the `server/discover` probe and then `initialize`
    /// both stall, under the one connect deadline.
    AutoProbe,
    /// Connecting in `ProtocolMode::Auto`: the probe is refused (a legacy server), then
    /// `initialize` stalls.
    AutoInitialize,
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
    /// The agent's model reads an offered skill's file (`read_skill_file`): its
    /// `resources/read` stalls, under the agent's tool timeout.
    SkillRead,
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
const ENTRIES: [Entry; 15] = [
    Entry::Connect,
    Entry::AutoProbe,
    Entry::AutoInitialize,
    Entry::ListTools,
    Entry::CallTool,
    Entry::CallShort,
    Entry::CallProgress,
    Entry::TaskTool,
    Entry::InputRound,
    Entry::HubCall,
    Entry::AgentCall,
    Entry::SkillRead,
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
            Entry::AutoProbe => "auto-probe",
            Entry::AutoInitialize => "auto-initialize",
            Entry::ListTools => "list-tools",
            Entry::CallTool => "call-tool",
            Entry::CallShort => "call-short",
            Entry::CallProgress => "call-progress",
            Entry::TaskTool => "task-tool",
            Entry::InputRound => "input-round",
            Entry::HubCall => "hub-call",
            Entry::AgentCall => "agent-call",
            Entry::SkillRead => "skill-read",
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

    /// Whether the cell connects in `ProtocolMode::Auto`.
    fn auto(&self) -> bool {
        matches!(self.e, Entry::AutoProbe | Entry::AutoInitialize)
    }

    fn streamable(&self) -> bool {
        matches!(self.t, Transport::HttpJson | Transport::HttpSse)
    }

    /// The request timeout the cell's promise is about.
    fn timeout(&self) -> Duration {
        if self.auto() {
            AUTO_T
        } else {
            T
        }
    }

    /// The server's configured timeout.
    fn server_timeout(&self) -> Duration {
        match self.e {
            Entry::CallShort => LONG,
            Entry::AutoProbe | Entry::AutoInitialize => AUTO_T,
            _ => T,
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
    E::SkillRead,
    E::Mcpb,
    E::Close,
    E::GetStream,
];

/// The entries that connect.
const CONNECTING: &[Entry] = &[E::Connect, E::AutoProbe, E::AutoInitialize];

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
        e: CONNECTING,
        why: "connecting opens the connection: nothing comes before it to keep alive or forget",
    },
    Never {
        t: &[Tr::LegacySse, Tr::Ws, Tr::InProcess],
        s: &[],
        st: &[],
        e: &[E::AutoProbe, E::AutoInitialize],
        why: "`Auto` probes only stdio and Streamable HTTP servers (legacy HTTP+SSE and \
              WebSocket connect as configured; an in-process server is made legacy)",
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
        e: &[E::TaskTool, E::HubCall, E::AgentCall, E::SkillRead, E::Mcpb],
        why: "it lists the tools (and loads the skill) before it calls: on the one stream of \
              stdio, a WebSocket or an in-process server the call is never the first request",
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
        (E::HubCall | E::AgentCall | E::SkillRead | E::Mcpb, _) => 0,
        (E::Connect | E::AutoProbe | E::AutoInitialize, _) => 0,
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
    if cell.auto() && !matches!(cell.t, Tr::Stdio | Tr::HttpJson | Tr::HttpSse) {
        return Err("not probed");
    }
    let (stall_at, expire_at) = match cell.e {
        E::Connect | E::AutoProbe | E::AutoInitialize if cell.st != S::Fresh => {
            return Err("nothing before connecting")
        }
        E::AutoProbe => (("server/discover", 1), None),
        E::Connect if cell.t == Tr::Ws && cell.s == Stall::Head => (("upgrade", 1), None),
        E::Connect | E::AutoInitialize => (("initialize", 1), None),
        E::ListTools => at("tools/list", lists + 1),
        E::CallTool | E::CallShort | E::CallProgress | E::HubCall | E::AgentCall | E::Mcpb => {
            at("tools/call", 1)
        }
        // The first read is the skill's SKILL.md, loaded before the run.
        E::SkillRead => at("resources/read", 2),
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
    if cell.e == E::AutoProbe {
        p.stall_too = Some(("initialize", 1));
    }
    if cell.e == E::InputRound {
        p.modern = true;
        p.rounds = ROUNDS;
        p.round_delay = ROUND_DELAY;
    }
    Ok(p)
}

/// Whether the entry point lists the tools itself before its call.
fn lists_itself(cell: &Cell) -> bool {
    matches!(cell.e, E::HubCall | E::AgentCall | E::SkillRead | E::Mcpb)
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
            ServerConfig::stdio(NAME, program).with_args([addr])
        }
        Peer::Http(p) if cell.t == Tr::LegacySse => ServerConfig::sse(NAME, p.url()),
        Peer::Http(p) => ServerConfig::http(NAME, p.url()),
        Peer::Ws(p) => ServerConfig::websocket(NAME, p.url()),
        // The transport is replaced by the in-process server (see `builder`).
        Peer::InProcess(_) => ServerConfig::stdio(NAME, "in-process"),
    };
    let mode = match cell.e {
        E::InputRound => ProtocolMode::Modern,
        E::AutoProbe | E::AutoInitialize => ProtocolMode::Auto,
        _ => ProtocolMode::Legacy,
    };
    cfg.with_timeout(cell.server_timeout()).with_protocol(mode)
}

/// How long closing may take on `t` with request timeout `timeout`: the documented graces.
fn close_grace(t: Transport, timeout: Duration) -> Duration {
    match t {
        // `Client::close`: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL, 2 s for the group.
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

/// What a cell observed: how long the stalled path took.
type Outcome = Result<Duration, String>;

fn describe(o: &Outcome) -> String {
    match o {
        Ok(d) => format!("timed out after {d:?}"),
        Err(e) => e.clone(),
    }
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
