//! What the HTTP-based transports (Streamable HTTP, legacy SSE, WebSocket's handshake headers)
//! share, so that none of them reaches into another: the ureq client and its connection layers,
//! configured headers and the auth provider, sending with redirects, error mapping, and the
//! delivery of inbound frames. The URL rules themselves (origins, references, paths, which OAuth
//! resource covers a URL) are the crate's one URL module, `crate::url`, below `config`.
//!
//! | file | what |
//! |---|---|
//! | `pool.rs` | the shared ureq client with its DNS cache |
//! | `buffered.rs` | a connection layer that can read only what has already arrived, and spares system calls |
//! | `redirect.rs` | sending a request and following its redirects (same origin only by default) |
//! | `headers.rs` | configured headers and the auth provider, redacted in `Debug` |
//! | `errors.rs` | ureq, I/O and status failures into the crate's error |
//! | `frames.rs` | inbound delivery, reply-body helpers, oversized events |

pub(crate) mod buffered;
mod errors;
mod frames;
mod headers;
mod pool;
mod redirect;
// The URL rules sit below `config` (token stores compare resources with them); the transports
// reach them here too.
pub(crate) use crate::url;

pub(crate) use self::errors::{map_io, map_ureq, status_error};
pub(crate) use self::frames::{
    content_length, deliver_frame, drain, is_event_stream, is_response_to, read_capped,
    skip_oversized,
};
pub(crate) use self::headers::{AuthProviderFailed, RequestHeaders};
pub(crate) use self::pool::agent;
pub(crate) use self::redirect::{follow, Limit, Policy, Requester, Verb};
pub(crate) use self::url::{origin, resolve_reference};
