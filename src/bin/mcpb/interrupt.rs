//! Ctrl-C: the requests in flight are cancelled (`notifications/cancelled`) before mcpb exits.
//!
//! The handler (on the `ctrlc` crate's thread) marks the run interrupted, cancels the agent run
//! of `run` or `chat` (its model request is closed and its tool calls are cancelled, at once),
//! lets the run end on its own for up to half a second (each cancelled tool call tells its server
//! on its way out), asks every registered client to cancel its other pending requests, then
//! closes them, which ends any call still blocked on the main thread with an error the main
//! thread recognises as the interruption (exit 130). A second Ctrl-C, or one
//! before any client is connected, exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::agent::CancelHandle;
use mcp_blocking::Client;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CLIENTS: Mutex<Vec<Arc<Client>>> = Mutex::new(Vec::new());
static RUN: Mutex<Option<CancelHandle>> = Mutex::new(None);
/// Told when the run is forgotten (it has ended).
static RUN_ENDED: Condvar = Condvar::new();

/// How long the handler lets a cancelled run end on its own (its tool calls telling their
/// servers) before it closes the clients.
const RUN_GRACE: Duration = Duration::from_millis(500);

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
            // The run's tool calls end at once and each tells its server on its way out: let
            // them, before the connections are closed under them.
            let deadline = Instant::now() + RUN_GRACE;
            let mut current = RUN.lock().unwrap_or_else(|p| p.into_inner());
            while current.is_some() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                current = match RUN_ENDED.wait_timeout(current, left) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
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
    RUN_ENDED.notify_all();
}

/// Whether Ctrl-C was pressed.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
