//! Running one cell of the transport matrix: each entry point against its peer, then the
//! checks that nothing is left behind.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::agent::{Agent, AgentEvent, HttpOptions, OpenAiChat};
use mcp_blocking::model::Root;
use mcp_blocking::{CallOptions, Client, ClientBuilder, Error, Hub, ServerConfig};
use mcp_fixture_server::scripted_model::{call, ScriptedModel, Step};
use serde_json::json;

use super::fault_support::brain::SKILL_FILE;
use super::fault_support::{pid_gone, wire, Peer};
use super::{
    close_grace, config, describe, plan, setup_lists, start_peer, Cell, Outcome, Tr, E, MCPB, NAME,
    SLACK, T, TOTAL,
};

pub(super) fn progress_opts() -> CallOptions {
    CallOptions::new()
        .on_progress(|_| {})
        .reset_timeout_on_progress(true)
        .max_total_timeout(TOTAL)
}

/// The error must be the server's timeout, within `bound`.
pub(super) fn timed_out(r: Result<(), Error>, took: Duration, bound: Duration) -> Outcome {
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

pub(super) fn timed_close(cell: &Cell, close: impl FnOnce()) -> Result<(), String> {
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
pub(super) fn builder(peer: &Peer, cfg: ServerConfig) -> ClientBuilder {
    match peer {
        Peer::InProcess(p) => p.server.client_builder_for(cfg),
        _ => Client::builder(cfg),
    }
}

pub(super) fn connect(cell: &Cell, peer: &Peer, cfg: ServerConfig) -> Result<Client, Error> {
    let once = || {
        if cell.e == E::InputRound {
            builder(peer, cfg.clone())
                .roots(vec![Root::new("file:///work")])
                .connect()
        } else {
            builder(peer, cfg.clone()).connect()
        }
    };
    // A setup connect, not the path the cell measures.
    not_measured(once)
}

/// Runs a connect that is not the path a cell measures (a setup, or the reconnect that shows
/// the client recovered): on a loaded machine (and under Wine, where starting the relay's
/// process is slow) a handshake can take longer than a cell's short timeout, and that is not
/// the stall under test. Up to three more tries on a timeout (the measured path is timed on its
/// own; a peer that stalls every handshake still fails every try).
pub(super) fn not_measured<T>(mut connect: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
    let mut result = connect();
    for _ in 1..4 {
        match &result {
            Err(e) if e.is_timeout() => {
                log::info!("connecting again after a slow handshake: {e}");
                result = connect();
            }
            _ => break,
        }
    }
    result
}

/// A Hub with the cell's server, connected (an in-process client is injected).
pub(super) fn hub_for(cell: &Cell, peer: &Peer) -> Result<Hub, String> {
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
    let mut hub = Hub::new([cfg.clone()]);
    let mut failures = hub.connect_all();
    // As in `connect`: a slow handshake on a loaded machine or under Wine is not the stall
    // under test; a new Hub tries again, up to three times.
    let mut tries = 0;
    while !failures.is_empty() && tries < 3 {
        tries += 1;
        hub.disconnect();
        hub = Hub::new([cfg.clone()]);
        failures = hub.connect_all();
    }
    if !failures.is_empty() {
        return Err(format!("setup: the hub did not connect: {failures:?}"));
    }
    Ok(hub)
}

pub(super) fn args() -> serde_json::Value {
    json!({"text": "x"})
}

/// The library entry points on one client.
pub(super) fn client_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let cfg = config(cell, peer);
    if matches!(cell.e, E::Connect | E::AutoProbe | E::AutoInitialize)
        || (cell.e == E::GetStream && cell.t == Tr::LegacySse)
    {
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
        not_measured(|| client.open())
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
pub(super) fn connect_times_out(cell: &Cell, peer: &Peer, cfg: ServerConfig) -> Outcome {
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
    let again = not_measured(|| builder(peer, cfg.clone()).connect())
        .map_err(|e| format!("connecting again after the timeout failed: {e}"))?;
    again
        .list_tools()
        .map_err(|e| format!("the new connection does not list: {e}"))?;
    timed_close(cell, || drop(again.close()))?;
    Ok(took)
}

/// A stalled standalone GET stream holds nothing up: connecting and a listing each answer
/// within the timeout + 1 s, and so does a listing while the stalled GET is held.
pub(super) fn stream_holds_nothing(cell: &Cell, cfg: ServerConfig, peer: &Peer) -> Outcome {
    let bound = cell.timeout() + SLACK;
    let started = Instant::now();
    let client = Client::connect(cfg).map_err(|e| format!("connecting failed: {e}"))?;
    let connected = started.elapsed();
    for _ in 0..setup_lists(cell) {
        client
            .list_tools()
            .map_err(|e| format!("setup: list_tools: {e}"))?;
    }
    let list = |what: &str| {
        let started = Instant::now();
        let listed = client.list_tools();
        let took = started.elapsed();
        match listed {
            Err(e) => Err(format!("{what} failed after {took:?}: {e}")),
            Ok(_) if took > bound => Err(format!("{what} took {took:?}, more than {bound:?}")),
            Ok(_) => Ok(took),
        }
    };
    let outcome = (|| {
        if connected > bound {
            return Err(format!(
                "connecting took {connected:?}, more than {bound:?}"
            ));
        }
        // Reinit: this listing meets the 404, and the GET stream opens again in the background
        // (connecting waits for it, a request re-sent after a re-initialisation does not).
        let took = list("listing")?;
        if !wire::wait(bound, &mut || peer.shared().stalled_at().is_some()) {
            return Err("the GET stream never opened".into());
        }
        let held = list("listing while the GET stream is held")?;
        Ok(connected.max(took).max(held))
    })();
    timed_close(cell, || drop(client.close()))?;
    outcome
}

pub(super) fn hub_cell(cell: &Cell, peer: &Peer) -> Outcome {
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

/// An agent run whose one tool call stalls: a call of the server's `echo` (`AgentCall`), or
/// (`SkillRead`) the model's read of the file of a skill the program loaded and offered.
pub(super) fn agent_cell(cell: &Cell, peer: &Peer) -> Outcome {
    let hub = hub_for(cell, peer)?;
    let skill = match cell.e {
        E::SkillRead => Some(
            hub.load_skill(Some(NAME), "check")
                .map_err(|e| format!("setup: load_skill: {e}"))?,
        ),
        _ => None,
    };
    let planned = match &skill {
        Some(_) => call("read_skill_file", json!({"uri": SKILL_FILE})),
        None => call("echo", args()),
    };
    let model = ScriptedModel::start(vec![
        Step::Call(String::new(), vec![planned]),
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
    if let Some(skill) = &skill {
        agent
            .add_skill(skill)
            .map_err(|e| format!("setup: add_skill: {e}"))?;
    }
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

pub(super) fn mcpb_cell(cell: &Cell, peer: &Peer) -> Outcome {
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
pub(super) fn nothing_left(cell: &Cell, peer: &Peer) -> Result<(), String> {
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

pub(super) fn run_cell(cell: &Cell) -> Outcome {
    let plan = plan(cell).map_err(|why| format!("no plan: {why}"))?;
    let peer = start_peer(cell, plan);
    let outcome = match cell.e {
        E::HubCall => hub_cell(cell, &peer),
        E::AgentCall | E::SkillRead => agent_cell(cell, &peer),
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
