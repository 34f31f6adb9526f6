//! Per-call options and the handlers a client is built with.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{show_duration, timeout_in_range, TIMEOUT_RANGE};
use crate::error::{Error, InvalidArgumentKind};
use crate::handler::{ElicitationHandler, NotificationHandler, SamplingHandler};
use crate::model::{Progress, Task};

/// A progress callback.
pub(crate) type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// A task status callback.
pub(crate) type TaskStatusCallback = Arc<dyn Fn(&Task) + Send + Sync>;

/// Options for one call: timeout override, progress callback, timeout reset on progress.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::CallOptions;
/// let opts = CallOptions::new()
///     .timeout(Duration::from_secs(5))
///     .on_progress(|p| eprintln!("{} of {:?}", p.progress, p.total))
///     .reset_timeout_on_progress(true)
///     .max_total_timeout(Duration::from_secs(60));
/// # let _ = opts;
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) on_progress: Option<ProgressCallback>,
    pub(crate) reset_timeout_on_progress: bool,
    pub(crate) max_total_timeout: Option<Duration>,
    pub(crate) on_task_status: Option<TaskStatusCallback>,
    pub(crate) task_ttl: Option<Duration>,
    /// Keep routing this call's progress here once it is answered (a task's progress).
    pub(crate) progress_watch: Option<crossbeam_channel::Sender<Progress>>,
    /// Told the request's id as soon as it is registered (so another thread may abandon it).
    pub(crate) on_begin: Option<crossbeam_channel::Sender<i64>>,
    /// Gives the call up when it fires: each of its requests in flight is cancelled
    /// (`notifications/cancelled`) and stops waiting at once (an agent run's cancellation).
    pub(crate) cancel: Option<crate::agent::CancelHandle>,
    /// A later request of one call (an input round): when the call began (its maximum total
    /// counts from then) and its deadline now (moved on by the progress of earlier requests),
    /// which is this request's first deadline.
    pub(crate) call_deadline: Option<(Instant, Instant)>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("on_task_status", &self.on_task_status.is_some())
            .field("task_ttl", &self.task_ttl)
            .finish()
    }
}

impl CallOptions {
    /// Default options: the server's configured timeout, no progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// Overrides the server's timeout for this call.
    ///
    /// It must be more than zero and at most [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT) (24 h); the call
    /// otherwise returns [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming this
    /// option, before anything is sent (see [timeouts](crate::ServerConfig#timeouts)).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for progress: a progress token is sent and each `notifications/progress` for this call
    /// is passed to `f`, on the calling thread.
    pub fn on_progress(mut self, f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Restarts the timeout whenever progress for this call arrives (needs
    /// [`on_progress`](Self::on_progress)).
    ///
    /// On every transport the call's timeout holds between progress updates: a server that
    /// goes quiet ends the call one timeout after its last update (or after the request, when
    /// none came), each update gives it one timeout more, and
    /// [`max_total_timeout`](Self::max_total_timeout), when set, caps the whole call. On
    /// Streamable HTTP an answer that comes as an event stream is read by the calling thread
    /// between its progress updates, under the same deadline.
    pub fn reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.reset_timeout_on_progress = reset;
        self
    }

    /// The longest a call may take in total when progress keeps resetting its timeout.
    ///
    /// Like [`timeout`](Self::timeout), it must be more than zero and at most
    /// [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT); the call otherwise returns
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming this option.
    pub fn max_total_timeout(mut self, max: Duration) -> Self {
        self.max_total_timeout = Some(max);
        self
    }

    /// For a tool that runs as a task (see [`Client::call_tool`](crate::Client::call_tool)):
    /// `f` is given the task each time its status is read (`tasks/get`), on the calling thread.
    pub fn on_task_status(mut self, f: impl Fn(&Task) + Send + Sync + 'static) -> Self {
        self.on_task_status = Some(Arc::new(f));
        self
    }

    /// How long the server should keep a task this call creates, and its result (the `ttl` the
    /// server is asked for; it may choose another). Without it, a tool that
    /// [`Client::call_tool`](crate::Client::call_tool) runs as a task asks for the call's
    /// timeout (its maximum total, when longer), and
    /// [`Client::call_tool_as_task`](crate::Client::call_tool_as_task) leaves it to the server.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = Some(ttl);
        self
    }

    /// Refuses a duration out of range, naming the option and the server.
    pub(crate) fn check(&self, server: &str) -> Result<(), Error> {
        for (option, value) in [
            ("timeout", self.timeout),
            ("max_total_timeout", self.max_total_timeout),
        ] {
            if let Some(d) = value.filter(|d| !timeout_in_range(*d)) {
                return Err(Error::InvalidArgument {
                    server: server.to_owned(),
                    kind: InvalidArgumentKind::OutOfRange,
                    detail: format!(
                        "CallOptions::{option} must be {TIMEOUT_RANGE}, found {}",
                        show_duration(d)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The user's handlers for server-initiated traffic.
#[derive(Default, Clone)]
pub(crate) struct Handlers {
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Whether the elicitation handler takes URL-mode requests too (declared as `url: {}`).
    pub(crate) elicitation_url: bool,
    pub(crate) notifications: Vec<Arc<dyn NotificationHandler>>,
    /// Notifications dropped because a [`notification_channel`] was full (shared by a
    /// client's channels, which count here from its dispatcher threads).
    ///
    /// [`notification_channel`]: crate::handler::notification_channel
    pub(crate) channel_dropped: Arc<std::sync::atomic::AtomicU64>,
}
