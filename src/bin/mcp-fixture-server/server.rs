//! The shared server: options, mutable state and the stdout writer (one
//! mutex; each message is written and flushed under it).

use std::collections::{BTreeSet, HashMap};
use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard};

use serde_json::{json, Value};

use crate::job::JobEvent;
use crate::opts::Opts;
use crate::reply::Reply;

#[derive(Default)]
pub(crate) struct State {
    pub(crate) client_init: Option<Value>,
    pub(crate) initialized: bool,
    pub(crate) min_level: usize,
    pub(crate) subscriptions: BTreeSet<String>,
    pub(crate) cancelled: Vec<Value>,
    pub(crate) added_tools: Vec<String>,
    /// Threaded requests in flight, by the JSON text of their id.
    pub(crate) running: HashMap<String, Sender<JobEvent>>,
    /// Server-to-client requests waiting for an answer, by id.
    pub(crate) waiters: HashMap<String, Sender<JobEvent>>,
}

pub(crate) struct Output {
    pub(crate) w: BufWriter<Stdout>,
    pub(crate) count: u64,
    pub(crate) broken: bool,
}

pub(crate) struct Server {
    pub(crate) opts: Opts,
    pub(crate) out: Mutex<Output>,
    pub(crate) state: Mutex<State>,
    pub(crate) next_sid: AtomicU64,
    pub(crate) grandchild_pid: Option<u32>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
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

    pub(crate) fn send_value(&self, msg: &Value) {
        self.emit(|w| serde_json::to_writer(w, msg).map_err(io::Error::from));
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send_value(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn reply(&self, id: &Value, reply: Reply) {
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
