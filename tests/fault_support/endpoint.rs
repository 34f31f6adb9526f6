//! A plain HTTP peer for the endpoints around MCP: an authorization server (protected-resource
//! metadata, its own metadata, registration, token, and the protected MCP server itself) and a
//! model endpoint. A `route` names the endpoint a request is for; the one the plan names
//! stalls (the first time, or every time), and the peer notes when the client abandoned the
//! stalled connection.

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::wire::{client_gone, stalled, Bytes};
use crate::support_remote::read_request;
pub use crate::support_remote::Req;

use super::{Acceptor, Plan, Shared};

/// One answer.
pub struct Reply {
    pub status: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: &'static str, v: &serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type", "application/json".into())],
            body: v.to_string().into_bytes(),
        }
    }

    fn bytes(&self) -> Bytes {
        let mut head = format!(
            "HTTP/1.1 {}\r\nContent-Length: {}\r\n",
            self.status,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        Bytes {
            head: head.into_bytes(),
            body: self.body.clone(),
            chunked: false,
        }
    }
}

/// Names the endpoint of a request (`None`: never stalled).
pub type Route = fn(&Req) -> Option<&'static str>;
/// Answers a request; gets the peer's origin (`http://127.0.0.1:PORT`).
pub type Handler = Arc<dyn Fn(&Req, &str) -> Reply + Send + Sync>;

pub struct EndpointPeer {
    pub shared: Arc<Shared>,
    acceptor: Acceptor,
    abandoned: Arc<Mutex<Option<Instant>>>,
}

impl EndpointPeer {
    pub fn start(plan: Plan, route: Route, handler: Handler) -> EndpointPeer {
        let shared = Shared::new(plan);
        let abandoned = Arc::new(Mutex::new(None));
        let (sh, ab) = (shared.clone(), abandoned.clone());
        let acceptor = Acceptor::start("ep", &shared, move |_, stream| {
            // The connection's own address is the peer's.
            let origin = stream.local_addr().map(|a| format!("http://{a}"));
            serve(
                &sh,
                &ab,
                route,
                &handler,
                &origin.unwrap_or_default(),
                stream,
            );
        });
        EndpointPeer {
            shared,
            acceptor,
            abandoned,
        }
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.acceptor.addr)
    }

    /// When the client closed the stalled connection, if it did.
    pub fn abandoned_at(&self) -> Option<Instant> {
        *self.abandoned.lock().unwrap()
    }
}

fn serve(
    shared: &Shared,
    abandoned: &Mutex<Option<Instant>>,
    route: Route,
    handler: &Handler,
    origin: &str,
    stream: TcpStream,
) {
    let (Ok(read), Ok(mut probe)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let mut reader = BufReader::new(read);
    let mut w = stream;
    while let Some(req) = read_request(0, &mut reader) {
        let reply = handler(&req, origin);
        if route(&req).is_some_and(|name| shared.pseudo(name)) {
            stalled(
                &mut w,
                &reply.bytes(),
                shared.plan.stall,
                &mut || client_gone(&mut probe, shared),
                &|| false,
            );
            if !shared.stopping() {
                *abandoned.lock().unwrap() = Some(Instant::now());
            }
            return;
        }
        let b = reply.bytes();
        let mut out = b.head;
        out.extend_from_slice(&b.body);
        if w.write_all(&out).and_then(|()| w.flush()).is_err() {
            return;
        }
    }
}
