//! Requests that run on their own thread: cancellation bookkeeping and
//! server-to-client requests (ids `"s-1"`, `"s-2"`, ...) with their answers.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::reply::{tool_error, Reply};
use crate::server::Server;
use crate::threaded_tools::run_threaded_tool;

const CLIENT_WAIT: Duration = Duration::from_secs(10);

/// An event delivered to a threaded request.
pub(crate) enum JobEvent {
    Cancelled,
    /// The client's answer (the whole message) to the server request `sid`.
    Answer(String, Value),
}

/// A request running on its own thread; it can be cancelled and receives the
/// client's answers to the requests it sends.
pub(crate) struct Job {
    pub(crate) server: Arc<Server>,
    key: String,
    tx: Sender<JobEvent>,
    rx: Receiver<JobEvent>,
}

pub(crate) enum Abort {
    Cancelled,
    Timeout(String),
}

impl Job {
    /// Sleeps for `d`; returns false if the request was cancelled meanwhile.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
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
    pub(crate) fn ask(
        &self,
        requests: &[(&str, Option<Value>)],
    ) -> Result<Vec<Result<Value, Value>>, Abort> {
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
    pub(crate) fn ask_one(&self, method: &str, params: Option<Value>) -> Result<Value, Reply> {
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

pub(crate) fn abort_reply(abort: Abort) -> Reply {
    match abort {
        Abort::Cancelled => Reply::Nothing,
        Abort::Timeout(method) => tool_error(format!(
            "no answer to {method} within {} s",
            CLIENT_WAIT.as_secs()
        )),
    }
}

pub(crate) fn id_key(id: &Value) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

pub(crate) fn spawn_job(
    server: &Arc<Server>,
    id: Value,
    name: String,
    args: Value,
    meta: Option<Value>,
) {
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
