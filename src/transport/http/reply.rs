//! Reading a request's reply: a JSON body, or SSE events until our response. An SSE reply that
//! ends after an event id is resumed with GET + `Last-Event-ID` after the server's `retry` delay;
//! the response may also turn up on the standalone stream meanwhile.

use crate::sync::lock;
use std::io::BufReader;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

use super::post::Call;
use super::stream::reconnect_delay;
use super::Inner;
use crate::error::{Error, ProtocolErrorKind};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::session::{Event, Failure, TransportError};
use crate::transport::sse_parser::{EventTooLarge, SseParser, SseReader};
use crate::transport::web::buffered::{interrupted, interruptible, within, Interrupt};
use crate::transport::web::{
    content_length, deliver_frame, is_event_stream, is_response_to, read_capped, status_error,
};
use crate::transport::web::{Limit, Verb};
use crate::transport::{Caller, Leaving};

/// An SSE reply being read.
pub(super) type ReplyStream = SseReader<BufReader<ureq::BodyReader<'static>>>;

/// How many times a response stream is resumed without progress before giving up.
const MAX_RESUMES: u32 = 5;

/// Where a reply being read is: the request that brought its events (POST, then GET after a
/// resumption) and how many resumptions in a row brought nothing new.
pub(super) struct Resume {
    verb: &'static str,
    stalled: u32,
}

impl Default for Resume {
    fn default() -> Self {
        Resume {
            verb: "POST",
            stalled: 0,
        }
    }
}

/// An event-stream reply whose caller reads it in `Transport::wait` (see
/// `Outgoing::caller_waits`), kept between its waits.
pub(super) struct Unread {
    reader: ReplyStream,
    method: String,
    started: Instant,
    limit: Instant,
    resumable: bool,
    at: Resume,
}

/// How reading a reply's events stopped.
enum Read {
    /// Our response arrived (and was delivered).
    Answered,
    /// Something for the waiting caller arrived first (its progress): the rest is read in its
    /// next wait.
    Paused(Box<ReplyStream>),
}

impl Inner {
    /// Reads a request's reply (JSON or SSE) until the response to `call.want`. An event-stream
    /// reply whose caller reads it in `wait` is kept for that (see [`Inner::read_in_wait`]).
    pub(super) fn read_reply(
        &self,
        resp: ureq::http::Response<ureq::Body>,
        call: &Call<'_>,
    ) -> Result<(), Error> {
        // Only errors name the request (built then: this is every call's path).
        let what = || format!("POST {}", self.shown_url());
        if is_event_stream(&resp) {
            let reader = SseReader::new(
                BufReader::new(resp.into_body().into_reader()),
                self.max_message,
            );
            let id = match call.want {
                Some(RequestId::Number(id)) if call.read_in_wait && call.deliver => Some(*id),
                _ => None,
            };
            if let Some(id) = id {
                self.keep_unread(
                    id,
                    Unread {
                        reader,
                        method: call.method.to_owned(),
                        started: call.started,
                        limit: call.limit,
                        resumable: call.resumable,
                        at: Resume::default(),
                    },
                );
                return Ok(());
            }
            return match self.read_events(reader, call, &mut Resume::default(), None)? {
                Read::Answered => Ok(()),
                Read::Paused(_) => unreachable!("no caller to pause for"),
            };
        }
        let too_large = || {
            self.too_large(&format!(
                "{}: the JSON reply to `{}` exceeds the {} byte limit (`max_message_bytes`); \
                 it was not read further",
                what(),
                call.method,
                self.max_message
            ))
        };
        let length = content_length(&resp);
        if length.is_some_and(|n| n > self.max_message as u64) {
            return Err(too_large());
        }
        let reader = resp.into_body().into_reader();
        let body = read_capped(reader, self.max_message, length)
            .map_err(|e| call.io_error(&self.server, &what(), e))?
            .ok_or_else(too_large)?;
        let found = if call.deliver {
            deliver_frame(&self.server, &*self.sink, &body, call.want)
        } else {
            !body.is_empty()
        };
        if found {
            Ok(())
        } else {
            Err(Error::Protocol {
                server: self.server.clone(),
                kind: ProtocolErrorKind::Unexpected,
                detail: format!(
                    "{}: the reply did not contain the response to `{}`",
                    what(),
                    call.method
                ),
            })
        }
    }

    /// Keeps a reply for its caller's `wait` (dropped, which closes its connection, when the
    /// transport closed meanwhile).
    fn keep_unread(&self, id: i64, unread: Unread) {
        let mut kept = lock(&self.unread);
        if !self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            kept.insert(id, unread);
        }
    }

    /// Keeps a reply for `caller`'s next wait, and enlists the caller: should it stop waiting
    /// first, the reply is dropped unread (see [`Leaving`]).
    fn keep_for<'a>(&'a self, caller: &Caller<'a>, unread: Unread) {
        self.keep_unread(caller.id, unread);
        caller.enlist(self);
    }

    /// The caller of request `caller.id` reads its event-stream reply until an event of its own
    /// (progress or the answer) is routed to it, or until `deadline`: every read is bounded by
    /// it, so progress that moves the caller's deadline on moves this one too. `None`: what
    /// was routed (if anything) is on the caller's slot; otherwise how the wait ended.
    pub(super) fn read_in_wait<'a>(
        &'a self,
        caller: &Caller<'a>,
        deadline: Instant,
    ) -> Option<Result<Event, RecvTimeoutError>> {
        let unread = lock(&self.unread).remove(&caller.id)?;
        // Another thread may give the request up (`Transport::interrupt`) while this one reads:
        // registered before the slot is looked at, so an abandonment is either seen there or
        // interrupts the read.
        let interrupt = Arc::new(Interrupt::default());
        lock(&self.reading).insert(caller.id, Arc::clone(&interrupt));
        if !caller.rx.is_empty() || Instant::now() >= deadline {
            lock(&self.reading).remove(&caller.id);
            self.keep_for(caller, unread);
            return None;
        }
        let Unread {
            reader,
            method,
            started,
            limit,
            resumable,
            mut at,
        } = unread;
        // Kept by its request id, which is the response it waits for.
        let want = RequestId::Number(caller.id);
        let call = Call {
            want: Some(&want),
            method: &method,
            started,
            deadline,
            limit,
            read_in_wait: true,
            deliver: true,
            resumable,
        };
        let read = interruptible(Some(&interrupt), || {
            within(deadline, || {
                self.read_events(reader, &call, &mut at, Some(caller))
            })
        });
        lock(&self.reading).remove(&caller.id);
        match read {
            Ok(Read::Answered) => None,
            // What ended the wait (its abandonment) is on the slot.
            Err(_) if !caller.rx.is_empty() => None,
            Ok(Read::Paused(reader)) => {
                self.keep_for(
                    caller,
                    Unread {
                        reader: *reader,
                        method,
                        started,
                        limit,
                        resumable,
                        at,
                    },
                );
                None
            }
            Err(Error::Timeout { .. }) => Some(Err(RecvTimeoutError::Timeout)),
            Err(e) => {
                let e = if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                    self.closed_error("the client closed the connection")
                } else {
                    e
                };
                Some(Ok(Event::Done(Err(Failure::Transport(TransportError(
                    Arc::new(e),
                ))))))
            }
        }
    }

    /// Reads SSE events until our response. A stream that ends (or breaks) after an event id is
    /// resumed with GET + `Last-Event-ID` after the server's `retry` delay, as often as it makes
    /// progress; the response may arrive on the resumed stream. With a `caller`, reading pauses
    /// as soon as something is routed to it (its progress).
    fn read_events(
        &self,
        mut reader: ReplyStream,
        call: &Call<'_>,
        at: &mut Resume,
        caller: Option<&Caller<'_>>,
    ) -> Result<Read, Error> {
        // Only errors name the request (built then: this is every SSE reply's path).
        let what = |verb: &str| format!("{verb} {}", self.shown_url());
        loop {
            let before = reader.parser().last_event_id().map(str::to_owned);
            let ended = loop {
                match reader.next_event() {
                    Ok(Some(ev)) if ev.is_message() => {
                        let data = ev.data.as_bytes();
                        let found = if call.deliver {
                            deliver_frame(&self.server, &*self.sink, data, call.want)
                        } else {
                            is_response_to(data, call.want)
                        };
                        if found {
                            self.hand_off(reader);
                            return Ok(Read::Answered);
                        }
                        if caller.is_some_and(|c| !c.rx.is_empty()) {
                            return Ok(Read::Paused(Box::new(reader)));
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break None,
                    Err(e) => {
                        if let Some(t) = EventTooLarge::find(&e) {
                            // The reply is dropped unread: its connection closes.
                            return Err(self.too_large(&format!(
                                "{}: an event of the reply to `{}` exceeds the {} byte \
                                 limit (`max_message_bytes`); the reply was abandoned",
                                what(at.verb),
                                call.method,
                                t.limit
                            )));
                        }
                        break Some(call.io_error(&self.server, &what(at.verb), e));
                    }
                }
            };
            let parser = reader.into_parser();
            if parser.last_event_id().is_none() || !call.resumable {
                return Err(ended.unwrap_or_else(|| {
                    self.closed_error(&format!(
                        "the server ended the response stream of `{}` before answering",
                        call.method
                    ))
                }));
            }
            if let Some(err) = ended {
                if matches!(err, Error::Timeout { .. }) {
                    return Err(err);
                }
                log::debug!("server `{}`: response stream broke: {err}", self.server);
            }
            at.stalled = if parser.last_event_id() == before.as_deref() {
                at.stalled + 1
            } else {
                1
            };
            if at.stalled > MAX_RESUMES {
                return Err(self.closed_error(&format!(
                    "the response stream of `{}` could not be resumed",
                    call.method
                )));
            }
            if self.wait_retry(&parser, at.stalled, call)? {
                return Ok(Read::Answered);
            }
            at.verb = "GET";
            reader = self.resume(parser, call, &what(at.verb))?;
        }
    }

    /// Waits before resuming (the server's `retry` delay, at least 250 ms, doubled for each
    /// resumption in a row that brought nothing new); `Ok(true)` when the response arrived on
    /// the standalone stream meanwhile.
    fn wait_retry(&self, parser: &SseParser, stalled: u32, call: &Call<'_>) -> Result<bool, Error> {
        let delay = reconnect_delay(parser.retry(), stalled);
        if crate::deadline::after(delay) >= call.deadline {
            // Waiting would outlast the caller's deadline.
            self.wait(call.deadline.saturating_duration_since(Instant::now()))?;
            return Err(call.timeout(&self.server));
        }
        self.wait(delay)?;
        Ok(self.take_answered(call.want))
    }

    /// GET with `Last-Event-ID`: the continuation of a response stream.
    fn resume(&self, parser: SseParser, call: &Call<'_>, what: &str) -> Result<ReplyStream, Error> {
        let last_id = parser.last_event_id().unwrap_or_default().to_owned();
        log::debug!(
            "server `{}`: resuming the `{}` stream after event {last_id:?}",
            self.server,
            call.method
        );
        let resp = self.request(
            Verb::Get,
            &[
                ("Accept", "text/event-stream"),
                ("Last-Event-ID", last_id.as_str()),
            ],
            Limit::Until(call.limit),
            |what, e| call.ureq_error(&self.server, what, e),
        )?;
        if resp.status() != 200 || !is_event_stream(&resp) {
            return Err(status_error(&self.server, what, resp));
        }
        Ok(SseReader::with_parser(
            BufReader::new(resp.into_body().into_reader()),
            parser,
        ))
    }

    /// Whether the response to `want` already arrived on the standalone stream (forgets it).
    fn take_answered(&self, want: Option<&RequestId>) -> bool {
        let Some(want) = want else { return false };
        let mut seen = lock(&self.answered_elsewhere);
        match seen.iter().position(|id| id == want) {
            Some(i) => {
                seen.remove(i);
                true
            }
            None => false,
        }
    }

    /// The error for a message over the cap.
    fn too_large(&self, detail: &str) -> Error {
        log::error!("server `{}`: {detail}", self.server);
        Error::Protocol {
            server: self.server.clone(),
            kind: ProtocolErrorKind::TooLarge,
            detail: detail.to_owned(),
        }
    }

    /// Waits `delay`, or less when the transport is closed meanwhile or the caller's request is
    /// given up (`Transport::interrupt`: its reading thread is interruptible, see
    /// `buffered::interrupted`).
    fn wait(&self, delay: Duration) -> Result<(), Error> {
        let given_up = interrupted();
        crossbeam_channel::select! {
            recv(self.stop_rx) -> _ => Err(self.closed_error("the client closed the connection")),
            // Its caller looks at its slot, which holds why, not at this error.
            recv(given_up) -> _ => Err(Error::Transport {
                server: self.server.clone(),
                status: None,
                detail: "the request was given up".to_owned(),
                source: None,
            }),
            default(delay) => Ok(()),
        }
    }
}

/// A reply its caller no longer reads is dropped unread, which closes its connection.
impl Leaving for Inner {
    fn leave(&self, caller: &Caller<'_>) {
        let unread = lock(&self.unread).remove(&caller.id);
        drop(unread);
    }
}

#[cfg(test)]
mod tests {
    //! Replies read to our response: SSE events in order, a JSON body that must hold it.

    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::transport::Closing;

    use serde_json::json;

    use crate::error::Error;
    use crate::transport::http::test_support::{result, HttpServer};
    use crate::transport::http::tests::{call_frame, transport, Recorder};
    use crate::transport::Outgoing;

    #[test]
    fn an_sse_reply_delivers_server_messages_before_the_response() {
        let srv = HttpServer::start(|req, conn| {
            let id = req.json()["id"].clone();
            conn.sse_start(&[]);
            let ping = json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"});
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            let _ = conn.event(None, &ping);
            let _ = conn.chunk("retry: 10\n: keep-alive\n\n");
            let _ = conn.event(Some("e1"), &note);
            let _ = conn.event(Some("e2"), &result(&id, json!({"content": []})));
            conn.sse_end();
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        t.send(Outgoing::parse(call_frame(1)).by(Instant::now() + Duration::from_secs(5)))
            .expect("send");
        t.close(Closing::Graceful).expect("close");
        assert_eq!(
            *sink.seen.lock().unwrap(),
            [
                "request ping",
                "notification notifications/message",
                "response 1"
            ]
        );
        assert!(sink.closed.lock().unwrap().is_empty());
    }

    /// A caller whose wait ends before it reads its event-stream reply is enlisted, and the
    /// reply (with its connection) goes when the caller stops waiting, not at close.
    #[test]
    fn a_reply_kept_for_a_caller_is_dropped_when_the_caller_stops_waiting() {
        use crate::protocol::slot::slot;
        use crate::sync::lock;
        use crate::transport::{Caller, Transport};

        let srv = HttpServer::start(|_req, conn| {
            conn.sse_start(&[]);
            conn.sse_end();
        });
        let sink = Arc::new(Recorder::default());
        let cfg = crate::config::ServerConfig::http("t", srv.url("/mcp"));
        let crate::config::TransportConfig::StreamableHttp(http) = cfg.transport() else {
            unreachable!("an http config")
        };
        let t = crate::transport::http::open("t", http, Duration::from_secs(5), cfg.limits(), sink)
            .expect("open");
        let deadline = Instant::now() + Duration::from_secs(5);
        t.send(
            Outgoing::parse(call_frame(1))
                .by(deadline)
                .answered_in_wait(),
        )
        .expect("send");
        assert!(lock(&t.inner.unread).contains_key(&1), "kept for the wait");
        let (tx, rx) = slot(2);
        let caller = Caller::new(1, &rx, &tx);
        assert!(matches!(
            t.wait(&caller, Instant::now()),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        ));
        assert!(
            lock(&t.inner.unread).contains_key(&1),
            "kept for its next wait"
        );
        drop(caller);
        assert!(lock(&t.inner.unread).is_empty(), "dropped with its caller");
        t.close(Closing::Graceful).expect("close");
    }

    /// Tells each notification delivered (the caller has read the event before it).
    struct Noted(crossbeam_channel::Sender<()>);

    impl crate::transport::Sink for Noted {
        fn deliver(&self, msg: crate::protocol::jsonrpc::Inbound) {
            if matches!(msg, crate::protocol::jsonrpc::Inbound::Notification(_)) {
                let _ = self.0.send(());
            }
        }
        fn closed(&self, _detail: String, _stderr_tail: String) {}
    }

    /// A request given up by another thread while its caller reads its reply stops at once:
    /// while it reads (the reply held open), also when the reply is resumable (an event with
    /// an id came, and a long `retry`: the read it was stopped in is no broken stream to wait
    /// out the resumption delay for), and while it waits to resume one the server ended.
    #[test]
    fn a_caller_given_up_while_it_reads_its_reply_stops_at_once() {
        given_up_while_reading(None, false);
        given_up_while_reading(Some("e1"), false);
        given_up_while_reading(Some("e1"), true);
    }

    /// The reply: a notification (with `event_id`) and a `retry` of 30 s, then the end of the
    /// stream (`ends`) or nothing more; the request is given up once the notification is read.
    fn given_up_while_reading(event_id: Option<&'static str>, ends: bool) {
        use crate::protocol::session::{Event, Failure};
        use crate::protocol::slot::slot;
        use crate::transport::{Caller, Transport};

        let srv = HttpServer::start(move |_req, conn| {
            conn.sse_start(&[]);
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            let _ = conn.chunk("retry: 30000\n\n");
            let _ = conn.event(event_id, &note);
            if ends {
                conn.sse_end();
            } else {
                conn.wait_for_peer_close();
            }
        });
        let (noted_tx, noted) = crossbeam_channel::unbounded();
        let cfg = crate::config::ServerConfig::http("t", srv.url("/mcp"));
        let crate::config::TransportConfig::StreamableHttp(http) = cfg.transport() else {
            unreachable!("an http config")
        };
        let t = crate::transport::http::open(
            "t",
            http,
            Duration::from_secs(30),
            cfg.limits(),
            Arc::new(Noted(noted_tx)),
        )
        .expect("open");
        let deadline = Instant::now() + Duration::from_secs(30);
        t.send(
            Outgoing::parse(call_frame(1))
                .by(deadline)
                .answered_in_wait(),
        )
        .expect("send");
        let (tx, rx) = slot(2);
        let (ended, took) = std::thread::scope(|s| {
            let waiting = std::thread::Builder::new()
                .name("caller".into())
                .spawn_scoped(s, || {
                    let caller = Caller::new(1, &rx, &tx);
                    let started = Instant::now();
                    let ended = t.wait(&caller, deadline);
                    (ended, started.elapsed())
                })
                .expect("spawn");
            noted
                .recv_timeout(Duration::from_secs(10))
                .expect("the caller read the event");
            let given_up = Failure::Unusable("given up".into());
            assert!(tx.try_send(Event::Done(Err(given_up))).is_ok());
            t.interrupt(1);
            waiting.join().expect("the caller")
        });
        let case = format!("event id {event_id:?}, stream ends: {ends}");
        assert!(
            matches!(ended, Ok(Event::Done(Err(Failure::Unusable(_))))),
            "{case}: {ended:?}"
        );
        assert!(
            took < Duration::from_secs(10),
            "{case}: stopped after {took:?}"
        );
        t.close(Closing::Graceful).expect("close");
    }

    #[test]
    fn a_json_reply_without_our_response_is_a_protocol_error() {
        let srv = HttpServer::start(|_req, conn| {
            conn.json(200, &[], &json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        let err = t
            .send(Outgoing::parse(call_frame(1)).by(Instant::now() + Duration::from_secs(5)))
            .expect_err("no response to id 1");
        assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
        t.close(Closing::Graceful).expect("close");
    }
}
