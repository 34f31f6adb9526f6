//! Ctrl-C: the requests in flight are cancelled (`notifications/cancelled`) before mcpb exits.
//!
//! The handler (on the `ctrlc` crate's thread) marks the run interrupted, cancels the agent run
//! of `run` or `chat` (its model request is closed and its tool calls are cancelled, at once),
//! asks every registered client to cancel its other pending requests, then closes them, which ends the blocked call on the main thread with an
//! error the main thread recognises as the interruption (exit 130). A second Ctrl-C, or one
//! before any client is connected, exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mcp_blocking::agent::CancelHandle;
use mcp_blocking::Client;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CLIENTS: Mutex<Vec<Arc<Client>>> = Mutex::new(Vec::new());
static RUN: Mutex<Option<CancelHandle>> = Mutex::new(None);

/// The reason sent with `notifications/cancelled`.
pub(crate) const REASON: &str = "interrupted by the user (Ctrl-C)";

/// The exit code of an interrupted run.
pub(crate) const EXIT: u8 = 130;

/// Installs the Ctrl-C handler (once per process; a failure only loses the cancellation).
pub(crate) fn install() {
    let result = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(EXIT));
        }
        let run = RUN.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let clients: Vec<Arc<Client>> = lock().clone();
        if clients.is_empty() && run.is_none() {
            std::process::exit(i32::from(EXIT));
        }
        if let Some(run) = run {
            run.cancel();
        }
        for c in &clients {
            match c.cancel_pending(REASON) {
                Ok(n) if n > 0 => log::info!(
                    "server `{}`: sent notifications/cancelled for {n} request(s)",
                    c.server_name()
                ),
                Ok(_) => {}
                Err(e) => log::debug!("cancelling: {}", c.config().redact(&e.to_string())),
            }
        }
        for c in &clients {
            let _ = c.close();
        }
    });
    if let Err(e) = result {
        log::debug!("no Ctrl-C handler: {e}");
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Arc<Client>>> {
    CLIENTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes `client` one the handler cancels and closes.
pub(crate) fn register(client: &Arc<Client>) {
    lock().push(Arc::clone(client));
}

/// Forgets `client` (it is about to be closed by its owner).
pub(crate) fn unregister(client: &Arc<Client>) {
    lock().retain(|c| !Arc::ptr_eq(c, client));
}

/// Makes `run` the agent run the handler cancels.
pub(crate) fn register_run(run: CancelHandle) {
    *RUN.lock().unwrap_or_else(|p| p.into_inner()) = Some(run);
}

/// Forgets the agent run (it has ended).
pub(crate) fn unregister_run() {
    *RUN.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Whether Ctrl-C was pressed.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
