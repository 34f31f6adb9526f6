//! The agent tests' shared pieces: an OpenAI-compatible model at the scripted endpoint, the
//! check that the endpoint saw no protocol violation, and a recorder of a run's events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_blocking::agent::{AgentEvent, HttpOptions, OpenAiChat};
use mcp_fixture_server::scripted_model::ScriptedModel;

/// `OpenAiChat` at `model`, with a test key, quick retries and a generous timeout.
pub fn chat(model: &ScriptedModel) -> OpenAiChat {
    let mut o = HttpOptions::default();
    o.base_delay = Duration::from_millis(10);
    o.timeout = Duration::from_secs(60);
    OpenAiChat::new("scripted")
        .base_url(&model.base_url())
        .api_key("sk-test-key")
        .http_options(o)
}

/// Asserts the scripted endpoint found nothing wrong in what it received.
pub fn no_violations(model: &ScriptedModel) {
    assert_eq!(model.violations(), Vec::<String>::new());
}

/// A list of the events of a run, and the `on_event` hook that fills it.
pub fn events() -> (
    Arc<Mutex<Vec<AgentEvent>>>,
    impl Fn(&AgentEvent) + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    (seen, move |e: &AgentEvent| {
        s.lock().unwrap().push(e.clone())
    })
}

/// Runs `agent` on `message` while a thread named `canceller` waits for `ready` (the moment
/// the test wants to cancel at) and then cancels the run: the run's result, and when it was
/// cancelled.
pub fn run_cancelled_when(
    agent: &mut mcp_blocking::agent::Agent<'_>,
    message: &str,
    ready: impl FnOnce() + Send,
) -> (
    Result<mcp_blocking::agent::RunOutput, mcp_blocking::agent::AgentError>,
    std::time::Instant,
) {
    let cancel = agent.cancel_handle();
    std::thread::scope(|s| {
        let watcher = std::thread::Builder::new()
            .name("canceller".into())
            .spawn_scoped(s, move || {
                ready();
                let at = std::time::Instant::now();
                cancel.cancel();
                at
            })
            .expect("the canceller thread");
        let ran = agent.run(message);
        let at = watcher.join().expect("the canceller");
        (ran, at)
    })
}
