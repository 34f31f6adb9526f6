//! The in-process peer: a `testing::TestServer` whose every message goes to the same brain as
//! the other peers. A stall is the only fault an in-process server can make: its handler does
//! not return (until the client gives up, which releases it, or the hold ends).

use std::sync::Arc;

use mcp_blocking::testing::TestServer;

use super::brain::{decide, Decision};
use super::wire::wait;
use super::{Plan, Shared};

/// The longest a stalled handler holds the call's thread when nothing releases it.
pub const HOLD: std::time::Duration = std::time::Duration::from_secs(5);

pub struct InProcessPeer {
    pub shared: Arc<Shared>,
    pub server: TestServer,
}

impl InProcessPeer {
    pub fn start(name: &str, plan: Plan) -> InProcessPeer {
        let shared = Shared::new(plan);
        let sh = shared.clone();
        let server = TestServer::from_fn(name, move |msg| match decide(&sh, msg) {
            Decision::Ignore | Decision::Expire => Vec::new(),
            Decision::Answer(v) => vec![v],
            Decision::Later(d, v) => {
                std::thread::sleep(d);
                vec![v]
            }
            Decision::Stall(v) => {
                wait(HOLD, &mut || sh.released() || sh.stopping());
                vec![v]
            }
        });
        InProcessPeer { shared, server }
    }
}

impl Drop for InProcessPeer {
    fn drop(&mut self) {
        self.shared.shut_down();
    }
}
