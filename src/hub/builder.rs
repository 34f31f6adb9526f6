//! [`HubBuilder`]: the three outer levels of both settings, and the Hub's policies.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::degrade::{check_delay, Degradation};
use super::discovery::ServerDiscovery;
use super::registry::{CollisionPolicy, Registry};
use super::settings::Setting;
use super::state::State;
use super::{Hub, Inner};
use crate::config::{ConfigError, LoadReport, ServerConfig, Template};
use crate::handler::{ElicitationHandler, HandlerError, SamplingHandler};
use crate::model::{CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Root};
use crate::transport::stdio::ConnectionPoller;

/// Builds a [`Hub`].
#[derive(Debug, Clone)]
#[must_use]
pub struct HubBuilder {
    options: Options,
    poller: Option<ConnectionPoller>,
    /// A template's host level, used where the builder was given none (see `template`).
    from_template: FromTemplate,
}

/// What a template's front matter gives the host level, and whether the builder itself set it.
#[derive(Debug, Clone, Default)]
struct FromTemplate {
    servers: Option<Setting<ServerConfig>>,
    tools: Option<Setting<String>>,
    servers_given: bool,
    tools_given: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) servers: [Setting<ServerConfig>; 3],
    pub(crate) tools: [Setting<String>; 3],
    pub(crate) discovery: bool,
    pub(crate) threshold: f64,
    pub(crate) collisions: CollisionPolicy,
    pub(crate) separator: String,
    pub(crate) degradation: Degradation,
    pub(crate) connect_base: Duration,
    pub(crate) connect_max: Duration,
    pub(crate) answers: Answers,
}

/// What every client of the Hub answers its server with: sampling, elicitation, roots.
#[derive(Clone, Default)]
pub(crate) struct Answers {
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) elicitation_url: bool,
    pub(crate) roots: Option<Vec<Root>>,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("elicitation_url", &self.elicitation_url)
            .field("roots", &self.roots)
            .finish()
    }
}

const GLOBAL: usize = 0;
const GROUP: usize = 1;
const HOST: usize = 2;

impl HubBuilder {
    pub(crate) fn new() -> Self {
        HubBuilder {
            options: Options {
                servers: [Setting::Inherit, Setting::Inherit, Setting::Inherit],
                tools: [Setting::Inherit, Setting::Inherit, Setting::Inherit],
                discovery: false,
                threshold: ServerDiscovery::DEFAULT_THRESHOLD,
                collisions: CollisionPolicy::default(),
                separator: "__".into(),
                degradation: Degradation::default(),
                connect_base: Duration::from_millis(500),
                connect_max: Duration::from_secs(30),
                answers: Answers::default(),
            },
            poller: None,
            from_template: FromTemplate::default(),
        }
    }

    /// A sampling handler for every server of the Hub (each client declares the `sampling`
    /// capability), as [`ClientBuilder::sampling`](crate::ClientBuilder::sampling); the first
    /// argument is the server's name. Clients already connected keep what they had: set it
    /// before the first run.
    ///
    /// ```
    /// use mcp_blocking::Hub;
    /// use mcp_blocking::handler::HandlerError;
    /// let hub = Hub::builder()
    ///     .sampling(|server, _params| Err(HandlerError::rejected(format!("{server}: no model here"))))
    ///     .build();
    /// # drop(hub);
    /// ```
    pub fn sampling<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, CreateMessageParams) -> Result<CreateMessageResult, HandlerError>
            + Send
            + Sync
            + 'static,
    {
        self.options.answers.sampling = Some(Arc::new(handler));
        self
    }

    /// An elicitation handler for every server of the Hub, as
    /// [`ClientBuilder::elicitation`](crate::ClientBuilder::elicitation); the first argument is
    /// the server's name, so one form can say which server asks.
    ///
    /// ```
    /// use mcp_blocking::Hub;
    /// use mcp_blocking::model::ElicitResult;
    /// let hub = Hub::builder().elicitation(|_server, _params| Ok(ElicitResult::decline())).build();
    /// # drop(hub);
    /// ```
    pub fn elicitation<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, ElicitParams) -> Result<ElicitResult, HandlerError> + Send + Sync + 'static,
    {
        self.options.answers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Hands URL-mode elicitation requests to the [`elicitation`](Self::elicitation) handler
    /// too, as [`ClientBuilder::elicitation_url_mode`](crate::ClientBuilder::elicitation_url_mode).
    pub fn elicitation_url_mode(mut self, on: bool) -> Self {
        self.options.answers.elicitation_url = on;
        self
    }

    /// The roots every server of the Hub is offered (each client declares the `roots`
    /// capability), as [`ClientBuilder::roots`](crate::ClientBuilder::roots).
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.options.answers.roots = Some(roots);
        self
    }

    /// The global level of the server setting: the servers every host may use.
    pub fn global_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[GLOBAL] = s;
        self
    }

    /// The group level of the server setting: what a family of hosts (a task, a team) uses.
    pub fn group_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[GROUP] = s;
        self
    }

    /// The host level of the server setting: what this one host program uses. It wins over a
    /// [template](Self::template)'s servers, whichever is called first.
    pub fn host_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[HOST] = s;
        self.from_template.servers_given = true;
        self
    }

    /// Takes the host level from a template's front matter: its `mcp:` servers (when it lists
    /// any) and its `tools:` allow-list (when it has one).
    ///
    /// What the builder is given itself always wins over the front matter, whatever the order
    /// of the calls (as RobotLab's constructor arguments win over a template's): servers given
    /// with [`servers`](Self::servers), [`host_servers`](Self::host_servers) or
    /// [`config_report`](Self::config_report) replace the template's `mcp:` servers, and
    /// [`host_tools`](Self::host_tools) replaces its `tools:`. Of two templates, the later one's
    /// front matter is used.
    ///
    /// ```
    /// use mcp_blocking::Hub;
    /// use mcp_blocking::config::Template;
    /// let t = Template::parse(
    ///     "---\nmcp: [{name: gh, transport: {type: stdio, command: mcp-github}}]\ntools: [search]\n---\nHi.\n",
    /// )?;
    /// let hub = Hub::builder().template(&t).build();
    /// # drop(hub);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn template(mut self, template: &Template) -> Self {
        if !template.mcp.is_empty() {
            self.from_template.servers = Some(Setting::List(template.mcp.clone()));
        }
        if let Some(tools) = &template.tools {
            self.from_template.tools = Some(Setting::List(tools.clone()));
        }
        self
    }

    /// A loaded config file's servers as the host level (as [`servers`](Self::servers)), and its
    /// `mcp` options block (`gracefulDegradation`, `extraRetries`, `baseDelayMs`, `maxDelayMs`),
    /// when it has one, as the [degradation](Self::degradation) policy. A later call of
    /// [`degradation`](Self::degradation) replaces the file's.
    ///
    /// ```
    /// use mcp_blocking::{ConfigLoader, Hub};
    /// let report = ConfigLoader::new().load_str(
    ///     r#"{"mcpServers": {"fs": {"command": "mcp-server-filesystem", "args": ["/data"]}}}"#,
    /// )?;
    /// let hub = Hub::builder().config_report(&report).build();
    /// # drop(hub);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn config_report(mut self, report: &LoadReport) -> Self {
        if let Some(d) = &report.degradation {
            self.options.degradation = d.clone();
        }
        self.servers(report.servers.iter().cloned())
    }

    /// Shorthand for `host_servers(Setting::List(servers))`.
    pub fn servers(self, servers: impl IntoIterator<Item = ServerConfig>) -> Self {
        self.host_servers(Setting::List(servers.into_iter().collect()))
    }

    /// The global level of the tool allow-list.
    pub fn global_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[GLOBAL] = s;
        self
    }

    /// The group level of the tool allow-list.
    pub fn group_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[GROUP] = s;
        self
    }

    /// The host level of the tool allow-list. It wins over a [template](Self::template)'s
    /// `tools:`, whichever is called first.
    pub fn host_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[HOST] = s;
        self.from_template.tools_given = true;
        self
    }

    /// Turns on server discovery for the first resolving run (default off).
    pub fn discovery(mut self, on: bool) -> Self {
        self.options.discovery = on;
        self
    }

    /// The discovery threshold (default [`ServerDiscovery::DEFAULT_THRESHOLD`]).
    pub fn discovery_threshold(mut self, threshold: f64) -> Self {
        self.options.threshold = threshold;
        self
    }

    /// What to do with tool names offered by several servers (default
    /// [`CollisionPolicy::PrefixColliding`]).
    pub fn collisions(mut self, policy: CollisionPolicy) -> Self {
        self.options.collisions = policy;
        self
    }

    /// The separator of prefixed names (default `"__"`, as in `server__tool`).
    pub fn name_separator(mut self, separator: impl Into<String>) -> Self {
        self.options.separator = separator.into();
        self
    }

    /// The degradation policy for calls (default [`Degradation::default`]).
    pub fn degradation(mut self, d: Degradation) -> Self {
        self.options.degradation = d;
        self
    }

    /// The backoff between connection attempts of a failed server: a server that failed `n`
    /// times in a row is retried by a run no sooner than `base · 2^(n-1)` (at most `max`) after
    /// its last attempt (default 500 ms, 30 s). [`Hub::connect_all`] ignores it.
    ///
    /// Each is at most [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT) (24 h):
    /// [`try_build`](Self::try_build) refuses a longer one; [`build`](Self::build) keeps it as it
    /// is (a failed server then waits that long, in practice until `connect_all`).
    pub fn connect_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.options.connect_base = base;
        self.options.connect_max = max;
        self
    }

    /// Serves the stdio servers from this poller instead of one the Hub creates. The Hub does not
    /// stop a poller it was given.
    pub fn poller(mut self, poller: &ConnectionPoller) -> Self {
        self.poller = Some(poller.clone());
        self
    }

    /// [`build`](Self::build), after checking the Hub's delays: the
    /// [degradation](Degradation::validate) delays and the
    /// [connect backoff](Self::connect_backoff), each at most [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_blocking::Hub;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let err = Hub::builder()
    ///     .connect_backoff(Duration::from_secs(1), Duration::MAX)
    ///     .try_build()
    ///     .unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// assert_eq!(err.path, "connect_backoff.max");
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::InvalidValue`](crate::config::ConfigErrorKind) naming
    /// the delay (`degradation.base_delay`, `degradation.max_delay`, `connect_backoff.base`,
    /// `connect_backoff.max`), for the server `hub`.
    ///
    /// # Panics
    /// As [`build`](Self::build).
    #[allow(clippy::result_large_err, reason = "a cold path, once per Hub")]
    pub fn try_build(self) -> Result<Hub, ConfigError> {
        self.options.degradation.validate()?;
        check_delay("connect_backoff.base", self.options.connect_base)?;
        check_delay("connect_backoff.max", self.options.connect_max)?;
        Ok(self.build())
    }

    /// Builds the Hub. Nothing connects until [`Hub::resolve`] or [`Hub::connect_all`].
    ///
    /// The delays are not checked here: [`try_build`](Self::try_build) does. A degradation delay
    /// out of range makes each [`Hub::call_tool`] return its [`ConfigError`].
    ///
    /// # Panics
    /// If the OS refuses to create a poller (out of file descriptors), as
    /// [`ConnectionPoller::new`].
    pub fn build(mut self) -> Hub {
        let t = std::mem::take(&mut self.from_template);
        if let (false, Some(servers)) = (t.servers_given, t.servers) {
            self.options.servers[HOST] = servers;
        }
        if let (false, Some(tools)) = (t.tools_given, t.tools) {
            self.options.tools[HOST] = tools;
        }
        let (poller, owns_poller) = match self.poller {
            Some(p) => (p, false),
            None => (ConnectionPoller::new(), true),
        };
        Hub {
            inner: Arc::new(Inner {
                options: self.options,
                poller,
                owns_poller,
                state: Mutex::new(State::default()),
                registry: RwLock::new(Arc::new(Registry::default())),
                connecting: Mutex::new(()),
                events: Default::default(),
            }),
        }
    }
}
