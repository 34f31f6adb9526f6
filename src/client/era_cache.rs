//! What a transport's probe found, remembered for the life of the process, and one probe for
//! connections that start together.
//!
//! In [`ProtocolMode::Auto`](crate::config::ProtocolMode::Auto) a connection first probes with
//! `server/discover`; a legacy server answers with an error (one more round trip) or not at all
//! (up to [`AUTO_PROBE_TIMEOUT`](crate::config::AUTO_PROBE_TIMEOUT)). Once a probe has fallen
//! back, connecting again to the same transport (a stdio command line with its arguments,
//! environment and directory, or a Streamable HTTP URL) skips the probe. A handshake that then
//! fails forgets the entry, so the next connection probes again.
//!
//! ```text
//!   plan(key): known legacy ──────────────────────────────> Legacy (initialize at once)
//!              known modern, or no key ───────────────────> Probe (as it always does)
//!              unknown, nobody probing ──> it probes first: Probe ──fell_back()──> legacy
//!                                                              ──answered()───> modern
//!                                                              ──dropped──> unknown again
//!              unknown, another probing ──> waits for what that probe finds, at most as long
//!                                           as its own probe could take, then as above
//! ```
//!
//! So servers of one command connected at once (a `Hub`, a fan-out) cost one probe, not one
//! each: the others wait for its finding instead of sending `server/discover` as well. A probe
//! that ends without a finding (its connection failed) lets the waiting ones probe for
//! themselves.
//!
//! Only a 64-bit keyed hash of the transport is kept (no command line, environment value or URL),
//! and at most [`CAPACITY`] of them: past that the table starts over.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::config::{TransportConfig, AUTO_PROBE_TIMEOUT};
use crate::sync::lock;

/// Most transports remembered at once.
const CAPACITY: usize = 256;

/// What a probe found of a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// The probe fell back to `initialize`.
    Legacy,
    /// The server answered `server/discover`.
    Modern,
}

struct Remembered {
    hasher: RandomState,
    table: Mutex<Table>,
    /// Notified when a first probe ends (found something, or its connection failed).
    settled: Condvar,
}

#[derive(Default)]
struct Table {
    found: HashMap<u64, Era>,
    /// Transports whose first probe is under way.
    probing: HashSet<u64>,
}

fn remembered() -> &'static Remembered {
    static CELL: OnceLock<Remembered> = OnceLock::new();
    CELL.get_or_init(|| Remembered {
        hasher: RandomState::new(),
        table: Mutex::new(Table::default()),
        settled: Condvar::new(),
    })
}

fn table() -> MutexGuard<'static, Table> {
    lock(&remembered().table)
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

/// What an Auto-mode connection does about the probe.
pub(super) enum Plan {
    /// The transport was found to speak only the legacy era: `initialize` at once (and
    /// [`forget`] it when that fails).
    Legacy,
    /// Probe, and report what the probe finds through this.
    Probe(Probe),
}

/// One connection's probe. The first probe of a transport holds back the connections to it
/// that start meanwhile; dropped without a finding, it lets them probe for themselves.
pub(super) struct Probe {
    key: Option<u64>,
    first: bool,
}

impl Probe {
    /// The probe fell back to `initialize`: the transport speaks only the legacy era (the
    /// waiting connections skip their probes; [`forget`] it when the handshake fails).
    pub(super) fn fell_back(&self) {
        self.found(Era::Legacy);
    }

    /// The server answered the probe: connections to it probe at once, without waiting.
    pub(super) fn answered(&self) {
        self.found(Era::Modern);
    }

    /// The handshake after the probe failed: the finding is forgotten.
    pub(super) fn forget(&self) {
        forget(self.key);
    }

    fn found(&self, era: Era) {
        let Some(k) = self.key else { return };
        let mut t = table();
        if t.found.len() >= CAPACITY && !t.found.contains_key(&k) {
            t.found.clear();
        }
        t.found.insert(k, era);
        drop(t);
        // Whoever found it: a connection whose wait for a stalled first probe ended, and that
        // probed for itself, ends the waits of the others too.
        remembered().settled.notify_all();
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let Some(k) = self.key.filter(|_| self.first) else {
            return;
        };
        table().probing.remove(&k);
        remembered().settled.notify_all();
    }
}

/// Decides whether a connection to transport `key`, which has until `deadline` to connect,
/// probes. When another connection is probing the transport for the first time, waits for
/// what it finds, at most as long as this connection's own probe could take.
pub(super) fn plan(key: Option<u64>, deadline: Instant) -> Plan {
    let Some(k) = key else {
        return Plan::Probe(Probe {
            key: None,
            first: false,
        });
    };
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    plan_waiting_until(k, crate::deadline::add(now, probe_share(left)))
}

/// The part of what is left of connecting a probe may take (see `AUTO_PROBE_TIMEOUT`): half at
/// most, so that `initialize` still has the other half when the probe goes unanswered.
pub(super) fn probe_share(left: Duration) -> Duration {
    AUTO_PROBE_TIMEOUT.min(left / 2)
}

fn plan_waiting_until(k: u64, until: Instant) -> Plan {
    let r = remembered();
    let mut t = table();
    loop {
        match t.found.get(&k) {
            Some(Era::Legacy) => return Plan::Legacy,
            Some(Era::Modern) => break,
            None => {}
        }
        if t.probing.insert(k) {
            return Plan::Probe(Probe {
                key: Some(k),
                first: true,
            });
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        t = r
            .settled
            .wait_timeout(t, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Plan::Probe(Probe {
        key: Some(k),
        first: false,
    })
}

/// Forgets what was found for the transport.
pub(super) fn forget(key: Option<u64>) {
    if let Some(k) = key {
        table().found.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn stdio(command: &str, arg: &str) -> TransportConfig {
        crate::ServerConfig::stdio("cached", command)
            .with_args([arg])
            .transport()
            .clone()
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn probes(plan: &Plan) -> bool {
        matches!(plan, Plan::Probe(_))
    }

    #[test]
    fn a_transport_is_remembered_by_its_whole_identity_and_forgotten() {
        let a = key(&stdio("/nonexistent/era-cache-a", "--x"));
        let b = key(&stdio("/nonexistent/era-cache-a", "--y"));
        assert_ne!(a, b);
        let Plan::Probe(probe) = plan(a, soon()) else {
            panic!("an unknown transport is probed");
        };
        probe.fell_back();
        drop(probe);
        assert!(matches!(plan(a, soon()), Plan::Legacy));
        assert!(
            probes(&plan(b, soon())),
            "other arguments are another server"
        );
        forget(a);
        assert!(probes(&plan(a, soon())));
    }

    /// Runs `plan` for `k` on another thread; its plan arrives on the returned channel.
    fn plan_on_thread<'scope>(
        s: &'scope std::thread::Scope<'scope, '_>,
        k: Option<u64>,
        until: Instant,
    ) -> mpsc::Receiver<bool> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("era-cache-test".into())
            .spawn_scoped(s, move || {
                let legacy = matches!(plan(k, until), Plan::Legacy);
                let _ = tx.send(legacy);
            })
            .unwrap();
        rx
    }

    #[test]
    fn connections_starting_together_share_the_first_probe_when_it_falls_back() {
        let k = key(&stdio("/nonexistent/era-cache-together", "--x"));
        let Plan::Probe(first) = plan(k, soon()) else {
            panic!("the first connection probes");
        };
        std::thread::scope(|s| {
            let second = plan_on_thread(s, k, soon());
            assert_eq!(
                second.recv_timeout(Duration::from_millis(50)),
                Err(mpsc::RecvTimeoutError::Timeout),
                "the second waits while the first probes"
            );
            first.fell_back();
            assert_eq!(
                second.recv_timeout(Duration::from_secs(10)),
                Ok(true),
                "the second skips its probe"
            );
        });
        drop(first);
        forget(k);
    }

    #[test]
    fn a_first_probe_that_ends_without_a_finding_lets_the_waiting_ones_probe() {
        let k = key(&stdio("/nonexistent/era-cache-failed", "--x"));
        let Plan::Probe(first) = plan(k, soon()) else {
            panic!("the first connection probes");
        };
        std::thread::scope(|s| {
            let second = plan_on_thread(s, k, soon());
            drop(first);
            assert_eq!(second.recv_timeout(Duration::from_secs(10)), Ok(false));
        });
    }

    #[test]
    fn a_finding_while_the_first_probe_stalls_ends_the_waits() {
        let k = key(&stdio("/nonexistent/era-cache-stalled", "--x"));
        let Plan::Probe(first) = plan(k, soon()) else {
            panic!("the first connection probes");
        };
        std::thread::scope(|s| {
            let waiting = plan_on_thread(s, k, soon());
            // A connection with little time left stops waiting and probes for itself.
            let Plan::Probe(own) = plan(k, Instant::now() + Duration::from_millis(60)) else {
                panic!("unknown while the first probes");
            };
            assert!(!own.first);
            own.fell_back();
            assert_eq!(
                waiting.recv_timeout(Duration::from_secs(2)),
                Ok(true),
                "the waiting connection skips its probe without waiting out its share"
            );
        });
        drop(first);
        forget(k);
    }

    #[test]
    fn a_modern_transport_is_probed_at_once_and_a_wait_ends_with_the_probe_share() {
        let k = key(&stdio("/nonexistent/era-cache-modern", "--x"));
        let Plan::Probe(first) = plan(k, soon()) else {
            panic!("the first connection probes");
        };
        let started = Instant::now();
        let Plan::Probe(waited) = plan(k, Instant::now() + Duration::from_millis(60)) else {
            panic!("unknown while the first probes");
        };
        assert!(!waited.first, "it probes without holding others back");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "it waited half of what was left at most"
        );
        first.answered();
        drop(first);
        let Plan::Probe(later) = plan(k, soon()) else {
            panic!("a modern transport is probed");
        };
        assert!(!later.first, "and nobody waits for it");
        forget(k);
    }
}
