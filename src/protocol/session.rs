//! The I/O-free protocol core: request ids, pending requests, routing, version negotiation.
//!
//! ```text
//!   begin() ──> pending[id] ──route(Response)──> slot gets Done ──> caller returns
//!                   │  └────route(progress)────> slot gets Progress (caller keeps waiting)
//!                   └─forget(id) on timeout ──> a late answer is an Orphan (logged, dropped)
//!   fail_all() ──> every slot gets Closed; later begin() calls fail at once
//! ```
//!
//! Nothing here touches a thread or a socket; transports feed it parsed messages and callers wait
//! on the one-shot channels it hands out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::jsonrpc::{
    encode_request, Fault, FrameError, InNotification, InRequest, Inbound, Malformed, Payload,
    RequestId, RpcError,
};
use super::slot::{slot, Refused, SlotRx, SlotTx};
use crate::error::ProtocolErrorKind;
use crate::model::{
    ClientCapabilities, Implementation, InitializeResult, Progress, LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
};

/// Why a pending request ended without an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The connection ended.
    Closed { detail: String, stderr_tail: String },
    /// The answer can no longer be used: its wait was given up (its caller stops waiting).
    Unusable(String),
    /// The answer exceeded the message size cap and was discarded.
    TooLarge(String),
    /// The answer breaks JSON-RPC 2.0.
    Malformed(Malformed),
    /// The transport failed while the caller read its answer (a Streamable HTTP reply read in
    /// `Transport::wait`): the error as the transport made it.
    Transport(TransportError),
}

/// An error a transport met reading a caller's answer, carried to that caller.
#[derive(Debug, Clone)]
pub(crate) struct TransportError(pub(crate) std::sync::Arc<crate::error::Error>);

impl PartialEq for TransportError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl TransportError {
    /// The error (a copy of its text when another holder shares it).
    pub(crate) fn into_error(self, server: &str) -> crate::error::Error {
        std::sync::Arc::try_unwrap(self.0).unwrap_or_else(|shared| crate::error::Error::Protocol {
            server: server.to_owned(),
            kind: ProtocolErrorKind::Other,
            detail: shared.to_string(),
        })
    }
}

impl From<Fault> for Failure {
    fn from(f: Fault) -> Self {
        match f {
            Fault::Rpc(e) => Failure::Rpc(e),
            Fault::Malformed(m) => Failure::Malformed(m),
        }
    }
}

/// What a waiting caller receives on its slot.
#[derive(Debug)]
pub(crate) enum Event {
    /// A `notifications/progress` for this request.
    Progress(Progress),
    /// The final answer.
    Done(Result<Payload, Failure>),
    /// The transport asks the waiting caller to call its `wait` again (stdio: to take over
    /// reading the connection). Sent by the transport, never by the session; at most one is
    /// outstanding per request.
    #[cfg_attr(
        windows,
        allow(
            dead_code,
            reason = "the Unix stdio transport's leader/follower reading uses it"
        )
    )]
    Wake,
}

/// What `route` did with a message.
#[derive(Debug)]
pub(crate) enum Routed {
    /// A response or progress reached its waiting caller.
    Delivered,
    /// A response for no pending request (late after a timeout, or bogus): dropped.
    Orphan(Option<RequestId>),
    /// An error response without an id (`"id": null`, as servers answer a request they could
    /// not read): see [`Session::route`] for what it fails.
    Unattributed(Unattributed),
    /// A batch element that is not a usable message: dropped.
    Invalid(FrameError),
    /// A request from the server, for the dispatcher.
    Request(InRequest),
    /// A notification from the server, for the dispatcher.
    Notification(InNotification),
}

/// What an error response without an id said, and what it did.
#[derive(Debug)]
pub(crate) struct Unattributed {
    /// The server's error (`code: message`, the message cut to the echo limit), or what was
    /// malformed about it.
    pub(crate) what: String,
    /// The request it failed: the only one pending when it arrived.
    pub(crate) failed: Option<i64>,
    /// How many requests were pending (when more than one, none is failed).
    pub(crate) pending: usize,
    /// How many such responses this session has had, this one included.
    pub(crate) count: u64,
}

struct Slot {
    tx: SlotTx,
    /// Whether progress was asked for (the channel then has room for the progress cap too).
    progress: bool,
}

/// A request just begun: its id and frame, the slot its caller waits on, and a sender to that
/// slot for the transport (which may need to wake the caller, see [`Event::Wake`]).
pub(crate) struct Begun {
    pub(crate) id: i64,
    pub(crate) frame: Vec<u8>,
    pub(crate) rx: SlotRx,
    pub(crate) tx: SlotTx,
}

/// Request ids are small sequential integers we chose ourselves: a multiplicative hash spreads
/// them well and costs a fraction of the default SipHash (which guards against keys chosen by an
/// adversary, and these are not).
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[derive(Default)]
struct Pending {
    slots: HashMap<i64, Slot, std::hash::BuildHasherDefault<IdHasher>>,
    /// Progress tokens still listened to after their request was answered (a task's progress
    /// continues after the `CreateTaskResult`): the token's id and where its updates go.
    watches: HashMap<i64, Sender<Progress>>,
    closed: Option<(String, String)>,
}

/// The progress updates of one call that may wait for its caller to read them.
const MAX_QUEUED_PROGRESS: usize = 64;

/// One connection's protocol state.
pub(crate) struct Session {
    next_id: AtomicI64,
    pending: Mutex<Pending>,
    /// Longest server text quoted in an error or log line (`Limits::max_echo_bytes`).
    max_echo_bytes: usize,
    /// Error responses without an id.
    unattributed: AtomicU64,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    pub(crate) fn new() -> Self {
        Session {
            next_id: AtomicI64::new(0),
            pending: Mutex::new(Pending::default()),
            max_echo_bytes: crate::config::Limits::default().max_echo_bytes,
            unattributed: AtomicU64::new(0),
        }
    }

    /// Sets the longest server text quoted in errors and log lines (`Limits::max_echo_bytes`).
    pub(crate) fn with_max_echo_bytes(mut self, bytes: usize) -> Self {
        self.max_echo_bytes = bytes;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        crate::sync::lock(&self.pending)
    }

    /// Registers a request and returns its id, its serialised frame and the slot to wait on.
    /// With `progress`, the request id is sent as `params._meta.progressToken`.
    /// Fails at once with `Failure::Closed` when the connection has ended.
    #[cfg(test)]
    pub(crate) fn begin(
        &self,
        method: &str,
        params: Option<Value>,
        progress: bool,
    ) -> Result<(i64, Vec<u8>, SlotRx), Failure> {
        self.begin_request(method, params, progress)
            .map(|b| (b.id, b.frame, b.rx))
    }

    /// Registers a request: see [`Begun`]. With `progress`, the request id is sent as
    /// `params._meta.progressToken`. Fails at once with `Failure::Closed` when the connection
    /// has ended.
    pub(crate) fn begin_request(
        &self,
        method: &str,
        params: Option<Value>,
        progress: bool,
    ) -> Result<Begun, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = if progress {
            Some(with_progress_token(params, id))
        } else {
            params
        };
        let frame = encode_request(&RequestId::Number(id), method, params.as_ref());
        // At most one `Wake` and the answer arrive, plus, when progress was asked for, at most
        // `MAX_QUEUED_PROGRESS` unread updates (`route` drops the rest): the channel always has
        // room for the answer, and the router never blocks.
        let capacity = if progress { MAX_QUEUED_PROGRESS + 2 } else { 2 };
        let (tx, rx) = slot(capacity);
        let mut pending = self.lock();
        if let Some((detail, stderr_tail)) = &pending.closed {
            return Err(Failure::Closed {
                detail: detail.clone(),
                stderr_tail: stderr_tail.clone(),
            });
        }
        pending.slots.insert(
            id,
            Slot {
                tx: tx.clone(),
                progress,
            },
        );
        Ok(Begun { id, frame, rx, tx })
    }

    /// Forgets a pending request (timeout, or its send failed). Returns whether it was pending.
    /// Only for the request's own caller: its waiter keeps a sender to its slot (for wakes), so
    /// removing the slot does not end a wait on another thread; use [`abandon`](Self::abandon).
    pub(crate) fn forget(&self, id: i64) -> bool {
        self.lock().slots.remove(&id).is_some()
    }

    /// The ids of the requests waiting for an answer, in increasing order.
    pub(crate) fn pending_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.lock().slots.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Keeps routing progress for `token` (a request id sent as a progress token) to `to` once
    /// that request has been answered, until [`unwatch_progress`](Self::unwatch_progress).
    /// Updates that find `to` full are dropped.
    pub(crate) fn watch_progress(&self, token: i64, to: Sender<Progress>) {
        self.lock().watches.insert(token, to);
    }

    /// Stops [`watch_progress`](Self::watch_progress) for `token`.
    pub(crate) fn unwatch_progress(&self, token: i64) {
        self.lock().watches.remove(&token);
    }

    /// Ends the pending request `id` at once with `detail` (its caller stops waiting); `false`
    /// when it was not pending.
    pub(crate) fn abandon(&self, id: i64, detail: &str) -> bool {
        let slot = self.lock().slots.remove(&id);
        match slot {
            Some(slot) => {
                Self::finish(slot, Err(Failure::Unusable(detail.to_owned())));
                true
            }
            None => false,
        }
    }

    /// How many requests are waiting for an answer.
    #[cfg(test)]
    pub(crate) fn pending_count(&self) -> usize {
        self.lock().slots.len()
    }

    /// Whether the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }

    /// Routes one inbound message: responses and progress to their slots, the rest out.
    ///
    /// A response whose id matches a pending request ends it, a malformed one with
    /// [`Failure::Malformed`]. A response whose id matches nothing is an [`Routed::Orphan`].
    /// An error response without an id (`"id": null`: the server could not read a request) is
    /// pinned on a request only when that is certain enough to be useful: when exactly one
    /// request is pending, it fails with the server's error (its message cut to the echo limit);
    /// when several are, none fails (the server did not say which one it means, and failing all
    /// would end calls it is still serving) and they keep their timeouts.
    pub(crate) fn route(&self, msg: Inbound) -> Routed {
        match msg {
            Inbound::Response(resp) => {
                let slot = match &resp.id {
                    Some(RequestId::Number(n)) => self.lock().slots.remove(n),
                    // We only ever send integer ids; a string that spells one is tolerated.
                    Some(RequestId::String(s)) => match s.parse::<i64>() {
                        Ok(n) => self.lock().slots.remove(&n),
                        Err(_) => None,
                    },
                    None => match resp.outcome {
                        Err(fault) => return self.unattributed(fault),
                        Ok(_) => None,
                    },
                };
                match slot {
                    Some(slot) => {
                        Self::finish(slot, resp.outcome.map_err(Failure::from));
                        Routed::Delivered
                    }
                    None => Routed::Orphan(resp.id),
                }
            }
            Inbound::Invalid(e) => Routed::Invalid(e),
            Inbound::Notification(n) if n.method == "notifications/progress" => {
                if let Some(mut progress) = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Progress>(p.get()).ok())
                {
                    if let Some(token) = progress_token_id(&progress) {
                        let pending = self.lock();
                        if let Some(slot) = pending.slots.get(&token).filter(|s| s.progress) {
                            // A server cannot make a call hold more than a few progress
                            // updates its caller has not read yet, nor large ones: the newest
                            // beyond the queue are dropped (progress only grows, so the next one
                            // says as much), and the text is cut.
                            if slot.tx.len() < MAX_QUEUED_PROGRESS {
                                self.trim(&mut progress);
                                let _ = slot.tx.try_send(Event::Progress(progress));
                            }
                            return Routed::Delivered;
                        }
                        if let Some(to) = pending.watches.get(&token) {
                            self.trim(&mut progress);
                            let _ = to.try_send(progress);
                            return Routed::Delivered;
                        }
                    }
                }
                Routed::Notification(n)
            }
            Inbound::Notification(n) => Routed::Notification(n),
            Inbound::Request(r) => Routed::Request(r),
        }
    }

    /// Cuts a progress update's text to the echo limit and drops its large unknown members.
    fn trim(&self, progress: &mut Progress) {
        if let Some(m) = &progress.message {
            if m.len() > self.max_echo_bytes {
                let cut = crate::config::echo(m, self.max_echo_bytes);
                progress.message = Some(cut.into_owned());
            }
        }
        progress
            .extra
            .retain(|_, v| v.to_string().len() <= self.max_echo_bytes);
    }

    /// Hands a waiting caller its answer.
    fn finish(slot: Slot, outcome: Result<Payload, Failure>) {
        // The caller may have given up between our remove and this send; then the answer is
        // simply dropped, like any late answer.
        if let Err(Refused) = slot.tx.try_send(Event::Done(outcome)) {
            // Or full, which cannot happen: a slot holds at most one `Wake` besides its answer.
            log::error!("a response found its caller's slot full; it is dropped");
        }
    }

    /// An error response without an id: fails the only pending request, if there is exactly one.
    fn unattributed(&self, fault: Fault) -> Routed {
        let count = self.unattributed.fetch_add(1, Ordering::Relaxed) + 1;
        let (failure, what) = match fault {
            Fault::Rpc(e) => {
                // Only the log line is cut here: the error's message is cut where it leaves the
                // client, as every server error message is.
                let shown = crate::config::echo(&e.message, self.max_echo_bytes);
                let what = format!("error {}: {shown:?}", e.code);
                (Failure::Rpc(e), what)
            }
            Fault::Malformed(m) => {
                let what = format!("malformed: {m}");
                (Failure::Malformed(m), what)
            }
        };
        let (failed, pending) = {
            let mut pending = self.lock();
            let n = pending.slots.len();
            let only = match pending.slots.keys().next() {
                Some(&id) if n == 1 => pending.slots.remove(&id).map(|slot| (id, slot)),
                _ => None,
            };
            (only, n)
        };
        let failed = failed.map(|(id, slot)| {
            Self::finish(slot, Err(failure));
            id
        });
        Routed::Unattributed(Unattributed {
            what,
            failed,
            pending,
            count,
        })
    }

    /// Fails one pending request whose answer arrived over the message size cap and was
    /// discarded.
    pub(crate) fn reject(&self, id: &RequestId, detail: String) -> bool {
        let slot = match id {
            RequestId::Number(n) => self.lock().slots.remove(n),
            RequestId::String(s) => s
                .parse::<i64>()
                .ok()
                .and_then(|n| self.lock().slots.remove(&n)),
        };
        match slot {
            Some(slot) => {
                let _ = slot
                    .tx
                    .try_send(Event::Done(Err(Failure::TooLarge(detail))));
                true
            }
            None => false,
        }
    }

    /// Ends the session: every pending request fails with `Closed`, and so will every later one.
    /// Only the first call's reason is kept.
    pub(crate) fn fail_all(&self, detail: &str, stderr_tail: &str) {
        let slots = {
            let mut pending = self.lock();
            if pending.closed.is_none() {
                pending.closed = Some((detail.to_owned(), stderr_tail.to_owned()));
            }
            std::mem::take(&mut pending.slots)
        };
        let (detail, stderr_tail) = self.closed_reason().unwrap_or_default();
        for (_, slot) in slots {
            let _ = slot.tx.try_send(Event::Done(Err(Failure::Closed {
                detail: detail.clone(),
                stderr_tail: stderr_tail.clone(),
            })));
        }
    }

    /// Why the session ended, if it has.
    pub(crate) fn closed_reason(&self) -> Option<(String, String)> {
        self.lock().closed.clone()
    }
}

/// Adds `_meta.progressToken` to a request's params, keeping any other `_meta` keys.
fn with_progress_token(params: Option<Value>, id: i64) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("progressToken".to_owned(), Value::from(id));
    }
    Value::Object(params)
}

fn progress_token_id(p: &Progress) -> Option<i64> {
    use crate::model::ProgressToken;
    match &p.progress_token {
        ProgressToken::Number(n) => Some(*n),
        ProgressToken::String(s) => s.parse().ok(),
    }
}

/// The params of our `initialize` request.
pub(crate) fn initialize_params(
    capabilities: &ClientCapabilities,
    client_info: &Implementation,
) -> Value {
    json!({
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": capabilities,
        "clientInfo": client_info,
    })
}

/// Checks the server's `initialize` result: the version it chose must be one we speak.
pub(crate) fn negotiate(result: &InitializeResult) -> Result<(), String> {
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&result.protocol_version.as_str()) {
        Ok(())
    } else {
        Err(format!(
            "the server chose protocol version `{}`, but this client requested `{}` and supports only {}",
            result.protocol_version,
            LATEST_PROTOCOL_VERSION,
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::ErrorCode;

    fn parse(s: &str) -> Inbound {
        Inbound::parse(s.as_bytes()).unwrap().pop().unwrap()
    }

    fn done(rx: &SlotRx) -> Result<Payload, Failure> {
        match rx.try_recv().expect("an event") {
            Event::Done(d) => d,
            other => panic!("expected Done, got {other:?}"),
        }
    }

    #[test]
    fn ids_are_fresh_integers() {
        let s = Session::new();
        let (a, fa, _) = s.begin("ping", None, false).unwrap();
        let (b, _, _) = s.begin("ping", None, false).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            std::str::from_utf8(&fa).unwrap(),
            format!(r#"{{"jsonrpc":"2.0","id":{a},"method":"ping"}}"#)
        );
    }

    #[test]
    fn responses_reach_their_own_caller_out_of_order() {
        let s = Session::new();
        let (a, _, ra) = s.begin("tools/list", None, false).unwrap();
        let (b, _, rb) = s.begin("tools/call", None, false).unwrap();
        assert!(matches!(
            s.route(parse(&format!(
                r#"{{"jsonrpc":"2.0","id":{b},"result":{{"b":1}}}}"#
            ))),
            Routed::Delivered
        ));
        assert!(matches!(
            s.route(parse(&format!(
                r#"{{"jsonrpc":"2.0","id":{a},"result":{{"a":1}}}}"#
            ))),
            Routed::Delivered
        ));
        assert_eq!(
            done(&ra).unwrap().parse::<Value>().unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            done(&rb).unwrap().parse::<Value>().unwrap(),
            json!({"b": 1})
        );
        assert_eq!(s.pending_count(), 0);
    }

    #[test]
    fn rpc_errors_are_failures_not_values() {
        let s = Session::new();
        let (a, _, ra) = s.begin("tools/call", None, false).unwrap();
        s.route(parse(&format!(r#"{{"jsonrpc":"2.0","id":{a},"error":{{"code":-32602,"message":"bad","data":{{"x":1}}}}}}"#)));
        match done(&ra) {
            Err(Failure::Rpc(e)) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
                assert_eq!(e.message, "bad");
                assert_eq!(e.data, Some(json!({"x":1})));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_late_answer_after_forget_is_an_orphan() {
        let s = Session::new();
        let (a, _, ra) = s.begin("tools/call", None, false).unwrap();
        assert!(s.forget(a));
        let r = s.route(parse(&format!(
            r#"{{"jsonrpc":"2.0","id":{a},"result":{{}}}}"#
        )));
        assert!(matches!(r, Routed::Orphan(Some(RequestId::Number(n))) if n == a));
        assert!(ra.try_recv().is_err());
    }

    #[test]
    fn a_malformed_answer_ends_its_request_with_what_was_wrong() {
        let s = Session::new();
        let (a, _, ra) = s.begin("tools/call", None, false).unwrap();
        let r = s.route(parse(&format!(
            r#"{{"jsonrpc":"2.0","id":{a},"result":{{}},"error":{{"code":1,"message":"m"}}}}"#
        )));
        assert!(matches!(r, Routed::Delivered));
        assert_eq!(
            done(&ra).unwrap_err(),
            Failure::Malformed(Malformed::ResultAndError)
        );
        // Matching nothing, the same frame is an orphan.
        let r = s.route(parse(r#"{"jsonrpc":"1.0","id":99,"result":{}}"#));
        assert!(matches!(r, Routed::Orphan(Some(RequestId::Number(99)))));
    }

    fn null_id_error(message: &str) -> Inbound {
        parse(
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": message}})
                .to_string(),
        )
    }

    #[test]
    fn an_error_without_an_id_fails_the_only_pending_request() {
        let s = Session::new().with_max_echo_bytes(8);
        let (a, _, ra) = s.begin("tools/call", None, false).unwrap();
        match s.route(null_id_error("Parse error: what a long message")) {
            Routed::Unattributed(u) => {
                assert_eq!(u.failed, Some(a));
                assert_eq!((u.pending, u.count), (1, 1));
                assert_eq!(u.what, r#"error -32700: "Parse er… (24 bytes cut)""#);
            }
            other => panic!("{other:?}"),
        }
        match done(&ra) {
            Err(Failure::Rpc(e)) => {
                assert_eq!(e.code, ErrorCode::PARSE_ERROR);
                assert_eq!(e.message, "Parse error: what a long message");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.pending_count(), 0);
    }

    #[test]
    fn an_error_without_an_id_fails_nothing_when_several_or_none_are_pending() {
        let s = Session::new();
        match s.route(null_id_error("early")) {
            Routed::Unattributed(u) => assert_eq!((u.failed, u.pending), (None, 0)),
            other => panic!("{other:?}"),
        }
        let (_, _, ra) = s.begin("tools/call", None, false).unwrap();
        let (_, _, rb) = s.begin("tools/call", None, false).unwrap();
        match s.route(null_id_error("which one?")) {
            Routed::Unattributed(u) => {
                assert_eq!((u.failed, u.pending, u.count), (None, 2, 2));
            }
            other => panic!("{other:?}"),
        }
        assert!(ra.try_recv().is_err() && rb.try_recv().is_err());
        assert_eq!(s.pending_count(), 2);
        // A success without an id is an orphan, whatever is pending.
        let r = s.route(parse(r#"{"jsonrpc":"2.0","id":null,"result":{}}"#));
        assert!(matches!(r, Routed::Orphan(None)));
        assert_eq!(s.pending_count(), 2);
    }

    #[test]
    fn a_malformed_error_without_an_id_fails_the_only_pending_request_as_malformed() {
        let s = Session::new();
        let (_, _, ra) = s.begin("ping", None, false).unwrap();
        let r = s.route(parse(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":"x","message":"m"}}"#,
        ));
        assert!(
            matches!(&r, Routed::Unattributed(u) if u.what.starts_with("malformed: ")),
            "{r:?}"
        );
        assert!(matches!(
            done(&ra),
            Err(Failure::Malformed(Malformed::BadError(_)))
        ));
    }

    #[test]
    fn server_requests_and_notifications_are_passed_on() {
        let s = Session::new();
        assert!(
            matches!(s.route(parse(r#"{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}"#)), Routed::Request(r) if r.method == "roots/list")
        );
        assert!(matches!(s.route(parse(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#)), Routed::Notification(_)));
    }

    #[test]
    fn progress_token_is_the_request_id() {
        let s = Session::new();
        let (a, frame, _) = s
            .begin(
                "tools/call",
                Some(json!({"name":"x","_meta":{"k":1}})),
                true,
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(v["params"]["_meta"]["progressToken"], json!(a));
        assert_eq!(v["params"]["_meta"]["k"], json!(1));
        assert_eq!(v["params"]["name"], json!("x"));
    }

    #[test]
    fn progress_goes_to_the_request_it_belongs_to() {
        let s = Session::new();
        let (a, _, ra) = s.begin("tools/call", None, true).unwrap();
        // A request that did not ask for progress never gets any, even with a matching token.
        let (b, _, rb) = s.begin("tools/call", None, false).unwrap();
        let r = s.route(parse(&format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{b},"progress":1}}}}"#)));
        assert!(matches!(r, Routed::Notification(_)));
        assert!(rb.try_recv().is_err());
        let r = s.route(parse(&format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{a},"progress":1,"total":3}}}}"#)));
        assert!(matches!(r, Routed::Delivered));
        match ra.try_recv().unwrap() {
            Event::Progress(p) => assert_eq!(p.progress, 1.0),
            other => panic!("{other:?}"),
        }
        // Progress for an unknown token is an ordinary notification.
        let r = s.route(parse(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":999,"progress":1}}"#));
        assert!(matches!(r, Routed::Notification(_)));
    }

    #[test]
    fn a_progress_flood_holds_a_bounded_number_of_short_updates_and_the_answer_still_arrives() {
        let s = Session::new().with_max_echo_bytes(16);
        let (a, _, ra) = s.begin("tools/call", None, true).unwrap();
        let long = "m".repeat(10_000);
        for i in 0..10_000 {
            let r = s.route(parse(&format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{a},"progress":{i},"message":"{long}","junk":"{long}"}}}}"#
            )));
            assert!(matches!(r, Routed::Delivered));
        }
        assert_eq!(ra.len(), MAX_QUEUED_PROGRESS);
        let r = s.route(parse(&format!(
            r#"{{"jsonrpc":"2.0","id":{a},"result":{{}}}}"#
        )));
        assert!(matches!(r, Routed::Delivered));
        let mut updates = 0;
        loop {
            match ra.try_recv().unwrap() {
                Event::Progress(p) => {
                    updates += 1;
                    assert!(p.message.as_deref().unwrap().len() < 64, "{p:?}");
                    assert!(p.extra.is_empty(), "{p:?}");
                }
                Event::Done(outcome) => {
                    assert!(outcome.is_ok());
                    break;
                }
                Event::Wake => {}
            }
        }
        assert_eq!(updates, MAX_QUEUED_PROGRESS);
    }

    #[test]
    fn fail_all_fails_pending_and_later_requests() {
        let s = Session::new();
        let (_, _, ra) = s.begin("tools/call", None, false).unwrap();
        s.fail_all("exited with status 3", "boom");
        match done(&ra) {
            Err(Failure::Closed {
                detail,
                stderr_tail,
            }) => {
                assert_eq!(detail, "exited with status 3");
                assert_eq!(stderr_tail, "boom");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.begin("ping", None, false),
            Err(Failure::Closed { .. })
        ));
        s.fail_all("second reason", "");
        assert_eq!(s.closed_reason().unwrap().0, "exited with status 3");
    }

    #[test]
    fn negotiation_accepts_the_four_legacy_versions_only() {
        for v in SUPPORTED_PROTOCOL_VERSIONS {
            let r: InitializeResult = serde_json::from_value(json!({"protocolVersion": v, "capabilities": {}, "serverInfo": {"name":"s","version":"1"}})).unwrap();
            assert!(negotiate(&r).is_ok(), "{v}");
        }
        let r: InitializeResult = serde_json::from_value(json!({"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name":"s","version":"1"}})).unwrap();
        let e = negotiate(&r).unwrap_err();
        assert!(e.contains("1999-01-01") && e.contains("2025-11-25"), "{e}");
    }

    #[test]
    fn initialize_params_request_the_latest_version() {
        let p = initialize_params(
            &ClientCapabilities::default(),
            &Implementation::new("c", "1"),
        );
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["clientInfo"]["name"], "c");
        assert_eq!(p["capabilities"], json!({}));
    }
}
