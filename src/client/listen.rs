//! `subscriptions/listen` (modern era): a listen opened on its own thread (`mcp-listen-NAME`)
//! and acknowledged by the server, for a resource's updates ([`Client::subscribe`]) or for the
//! list changes the server announces (right after connecting, when notification handlers are
//! installed); ended by `unsubscribe`, by the server, or when the client closes. The era
//! decides when a listen is wanted (see `protocol/wire.rs`); this file opens and ends them.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use super::connection::Connection;
use super::options::CallOptions;
use super::subscriptions::{Listen, ListenEvent};
use super::Client;
use crate::config::MAX_TIMEOUT;
use crate::error::{Error, ErrorCode, ProtocolErrorKind};
use crate::protocol::era;
use crate::protocol::wire::Grant;
use crate::sync::lock;

impl Client {
    /// Right after connecting, when notification handlers are installed: the listen for the
    /// list changes the server announces, when the era wants one, so the handlers hear of them
    /// as the legacy era's GET stream tells them. A failure is logged; the connection is usable
    /// without it.
    pub(super) fn listen_for_list_changes(&self, conn: &Arc<Connection>) {
        let Some(init) = conn.init.as_ref() else {
            return;
        };
        if !conn.sink.ctx.has_notification_handlers() {
            return;
        }
        let Some(action) = conn.wire.list_changes(&init.capabilities) else {
            return;
        };
        if let Err(e) = self.act(conn, action) {
            log::warn!(
                "server `{}`: could not listen for list changes: {e}",
                self.server_name()
            );
        }
    }

    /// Opens a `subscriptions/listen` for `notifications` (kept under `key`), waits for its
    /// acknowledgement and checks that it grants `grant`.
    pub(super) fn listen(
        &self,
        conn: &Arc<Connection>,
        key: &str,
        notifications: Value,
        grant: &Grant,
    ) -> Result<(), Error> {
        let listens = &conn.listens;
        let _one = lock(&listens.subscribing);
        if lock(&listens.open).iter().any(|l| l.key == key) {
            return Ok(());
        }
        let subs = &conn.sink.ctx.subscriptions;
        let (tx, rx): (Sender<ListenEvent>, Receiver<ListenEvent>) = crossbeam_channel::bounded(4);
        *lock(&subs.waiter) = Some(tx.clone());
        let params = json!({ "notifications": notifications });
        let listener = Arc::clone(conn);
        // The listen request's id, to end it when it is not acknowledged as it should be.
        let (begun_tx, begun) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name(format!("mcp-listen-{}", self.server_name()))
            .spawn(move || {
                let mut opts = CallOptions::new().timeout(MAX_TIMEOUT);
                opts.on_begin = Some(begun_tx);
                let r = listener
                    .request("subscriptions/listen", Some(params), &opts)
                    .map(|_| ());
                let _ = tx.try_send(ListenEvent::Ended(r));
            })
            .map_err(|e| Error::Protocol {
                server: self.server_name().to_owned(),
                kind: ProtocolErrorKind::Other,
                detail: format!("could not start the subscription thread: {e}"),
            })?;
        let outcome = rx.recv_timeout(self.config.timeout());
        *lock(&subs.waiter) = None;
        // A listen that failed to open is ended at once: without it, the request stays pending
        // and its thread waits until the client closes, one more for each failed `subscribe`.
        let fail = |thread: JoinHandle<()>, e: Error| {
            if let Ok(id) = begun.try_recv() {
                conn.abandon(id, "the subscription was not opened");
            }
            lock(&listens.ended).push(thread);
            Err(e)
        };
        let ack = match outcome {
            Ok(ListenEvent::Ack(ack)) => ack,
            Ok(ListenEvent::Ended(r)) => {
                let _ = thread.join();
                return Err(r.err().unwrap_or_else(|| Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::Ended,
                    detail: "`subscriptions/listen` ended before it was acknowledged".into(),
                }));
            }
            Err(_) => {
                return fail(
                    thread,
                    Error::Timeout {
                        server: self.server_name().to_owned(),
                        method: "subscriptions/listen".into(),
                        after: self.config.timeout(),
                    },
                )
            }
        };
        let id = ack
            .get("_meta")
            .and_then(|m| m.get(era::META_SUBSCRIPTION_ID))
            .and_then(Value::as_i64);
        let Some(id) = id else {
            return fail(
                thread,
                Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::Unexpected,
                    detail: "the subscription acknowledgement has no subscription id".into(),
                },
            );
        };
        lock(&subs.opened).insert(id);
        if !grant.granted(&ack) {
            self.cancel_listen(conn, id, "not granted");
            return fail(
                thread,
                Error::Rpc {
                    server: self.server_name().to_owned(),
                    code: ErrorCode::INVALID_PARAMS,
                    message: format!(
                        "the server did not grant a subscription to `{}`",
                        conn.sink.ctx.limits.echo(key)
                    ),
                    data: None,
                },
            );
        }
        lock(&subs.active).insert(id);
        lock(&listens.open).push(Listen {
            key: key.to_owned(),
            id,
            thread,
        });
        Ok(())
    }

    /// Ends the listen kept under `key` (`unsubscribe` in the modern era): its messages are
    /// dropped from now on and its request is cancelled (`notifications/cancelled`; over HTTP
    /// its stream ends when the connection does). Nothing when there is none.
    pub(super) fn end_listen(&self, conn: &Connection, key: &str) {
        let found = {
            let mut open = lock(&conn.listens.open);
            open.iter()
                .position(|l| l.key == key)
                .map(|i| open.remove(i))
        };
        let Some(listen) = found else {
            return;
        };
        lock(&conn.sink.ctx.subscriptions.active).remove(&listen.id);
        self.cancel_listen(conn, listen.id, "unsubscribed");
        lock(&conn.listens.ended).push(listen.thread);
    }

    /// Ends a listen request on our side. On stdio (and in-process) the server is told with
    /// `notifications/cancelled` and the request stops waiting, which ends its thread; over HTTP
    /// the spec ends a listen by closing its stream, which this transport does when the
    /// connection closes (its messages are dropped meanwhile).
    fn cancel_listen(&self, conn: &Connection, id: i64, reason: &str) {
        if self.config.url().is_some() {
            return;
        }
        if let Err(e) = conn.notify(
            "notifications/cancelled",
            Some(json!({ "requestId": id, "reason": reason })),
        ) {
            log::debug!(
                "server `{}`: could not cancel a subscription: {e}",
                self.server_name()
            );
        }
        // Its thread waits for the request's end: end it now (the server sends no answer to a
        // cancelled request).
        conn.abandon(id, "the subscription ended");
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use crate::config::ProtocolMode;
    use crate::testing::TestServer;
    use crate::{Error, ServerConfig};

    /// Whether a thread of this process has the name `name` (as the kernel keeps it: 15 bytes).
    fn thread_named(name: &str) -> bool {
        std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .any(|comm| comm.trim_end() == name)
    }

    #[test]
    fn a_listen_that_is_never_acknowledged_ends_with_its_subscribe() {
        // A modern server that offers subscriptions and never acknowledges a listen.
        let server = TestServer::from_fn("dl", |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result":
                {"supportedVersions": ["2026-07-28"],
                 "capabilities": {"resources": {"subscribe": true}}}})],
            _ => vec![],
        });
        let config = ServerConfig::stdio("dl", "unused")
            .with_protocol(ProtocolMode::Modern)
            .with_timeout(Duration::from_millis(500));
        let client = server
            .client_builder_for(config)
            .connect()
            .expect("connect");
        match client.subscribe("file:///x") {
            Err(Error::Timeout { method, .. }) => assert_eq!(method, "subscriptions/listen"),
            other => panic!("{other:?}"),
        }
        // Its thread ends now, not when the client closes.
        let until = Instant::now() + Duration::from_secs(5);
        while thread_named("mcp-listen-dl") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!thread_named("mcp-listen-dl"), "the listen still runs");
        client.close().expect("close");
    }
}
