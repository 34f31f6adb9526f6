//! The servers found to speak only the legacy era, remembered for the life of the process.
//!
//! In [`ProtocolMode::Auto`](crate::config::ProtocolMode::Auto) a connection first probes with
//! `server/discover`; a legacy server answers with an error (one more round trip) or not at all
//! (up to [`AUTO_PROBE_TIMEOUT`](crate::config::AUTO_PROBE_TIMEOUT)). Once a probe has fallen
//! back and `initialize` succeeded, connecting again to the same transport (a stdio command line
//! with its arguments, environment and directory, or a Streamable HTTP URL) skips the probe. A
//! handshake that then fails forgets the entry, so the next connection probes again.
//!
//! Only a 64-bit keyed hash of the transport is kept (no command line, environment value or URL),
//! and at most [`CAPACITY`] of them: past that the set starts over.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Mutex, OnceLock};

use crate::config::TransportConfig;
use crate::sync::lock;

/// Most transports remembered at once.
const CAPACITY: usize = 256;

struct Remembered {
    hasher: RandomState,
    legacy: Mutex<HashSet<u64>>,
}

fn remembered() -> &'static Remembered {
    static CELL: OnceLock<Remembered> = OnceLock::new();
    CELL.get_or_init(|| Remembered {
        hasher: RandomState::new(),
        legacy: Mutex::new(HashSet::new()),
    })
}

/// The identity of a transport that is probed (stdio, Streamable HTTP); `None` for the others.
pub(super) fn key(transport: &TransportConfig) -> Option<u64> {
    let mut h = remembered().hasher.build_hasher();
    match transport {
        TransportConfig::Stdio(cfg) => {
            "stdio".hash(&mut h);
            cfg.command.hash(&mut h);
            cfg.args.hash(&mut h);
            cfg.env.hash(&mut h);
            cfg.cwd.hash(&mut h);
            cfg.inherit_env.hash(&mut h);
        }
        TransportConfig::StreamableHttp(cfg) => {
            "http".hash(&mut h);
            cfg.url.hash(&mut h);
        }
        _ => return None,
    }
    Some(h.finish())
}

/// Whether the transport was found to speak only the legacy era.
pub(super) fn is_legacy(key: Option<u64>) -> bool {
    key.is_some_and(|k| lock(&remembered().legacy).contains(&k))
}

/// Remembers that the transport speaks only the legacy era.
pub(super) fn remember_legacy(key: Option<u64>) {
    let Some(k) = key else { return };
    let mut set = lock(&remembered().legacy);
    if set.len() >= CAPACITY && !set.contains(&k) {
        set.clear();
    }
    set.insert(k);
}

/// Forgets what was found for the transport.
pub(super) fn forget(key: Option<u64>) {
    if let Some(k) = key {
        lock(&remembered().legacy).remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, arg: &str) -> TransportConfig {
        crate::ServerConfig::stdio("cached", command)
            .with_args([arg])
            .transport()
            .clone()
    }

    #[test]
    fn a_transport_is_remembered_by_its_whole_identity_and_forgotten() {
        let a = key(&stdio("/nonexistent/era-cache-a", "--x"));
        let b = key(&stdio("/nonexistent/era-cache-a", "--y"));
        assert_ne!(a, b);
        assert!(!is_legacy(a));
        remember_legacy(a);
        assert!(is_legacy(a));
        assert!(!is_legacy(b), "other arguments are another server");
        forget(a);
        assert!(!is_legacy(a));
    }
}
