//! The HTTP side of the built-in models: the crate's ureq agent, one deadline per model request
//! (its retries and redirects included), retries on 429 and 5xx with backoff honouring
//! `Retry-After` (bounded), redirects within the endpoint's origin only (307 and 308, by the
//! crate's one redirect rule), a cap on the answer's size, and API keys that never show. An
//! answer is read whole (JSON) or as it streams (server-sent events, see `stream.rs`), and a
//! [`CancelHandle`] that fires shuts the request's connection down.

use std::fmt;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cancel::CancelHandle;
use super::stream;
use super::types::{excerpt, ModelError};
use crate::config::{redact_url, ProxyConfig, REDACTED};
use crate::transport::web::buffered::{interruptible, Interrupt};
use crate::transport::web::{follow, Policy};

/// An API key. `Debug` and `Display` never show it.
///
/// ```
/// use mcp_blocking::agent::ApiKey;
/// let key = ApiKey::new("sk-secret");
/// assert!(!format!("{key:?}").contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key in the environment variable `var`.
    ///
    /// # Errors
    /// [`ModelError::Config`] naming the variable when it is unset, blank or not Unicode.
    pub fn from_env(var: &str) -> Result<Self, ModelError> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(ApiKey(v.trim().to_owned())),
            _ => Err(ModelError::Config(format!(
                "the environment variable {var} holds no API key"
            ))),
        }
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({REDACTED})")
    }
}

/// HTTP settings of a built-in model.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::agent::HttpOptions;
/// let o = HttpOptions::default();
/// assert_eq!((o.timeout, o.max_retries), (Duration::from_secs(120), 3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The longest one model request may take, answer included (default 120 s). Retries run
    /// under the same deadline: a retry whose wait would end past it is not made (the error
    /// status is returned), and one under way is cut off by it with [`ModelError::Timeout`].
    pub timeout: Duration,
    /// Retries after a 429 or 5xx answer (default 3), within [`timeout`](Self::timeout).
    pub max_retries: u32,
    /// The first backoff delay, doubled on each retry (default 500 ms).
    pub base_delay: Duration,
    /// The longest wait between retries, `Retry-After` included (default 30 s): a longer
    /// `Retry-After` is cut to it.
    pub max_delay: Duration,
    /// The largest answer read (default 16 MiB). A streamed answer is capped as a whole (all
    /// its events) and so is each of its events.
    pub max_response_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            timeout: Duration::from_secs(120),
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_response_bytes: 16 << 20,
        }
    }
}

/// One API endpoint: its URL, headers (secret values), and the client.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) key: Option<ApiKey>,
    pub(crate) options: HttpOptions,
    agent: std::sync::OnceLock<ureq::Agent>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), REDACTED))
            .collect();
        f.debug_struct("Endpoint")
            .field("url", &redact_url(&self.url))
            .field("headers", &headers)
            .field("key", &self.key)
            .field("options", &self.options)
            .finish()
    }
}

/// `base` and `path` joined with exactly one `/`.
pub(crate) fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

impl Endpoint {
    pub(crate) fn new(url: String) -> Self {
        Endpoint {
            url,
            headers: Vec::new(),
            key: None,
            options: HttpOptions::default(),
            agent: std::sync::OnceLock::new(),
        }
    }

    /// The `Authorization: Bearer KEY` header of OpenAI-style APIs (none without a key).
    pub(crate) fn bearer(&self) -> Vec<(&'static str, String)> {
        self.key
            .iter()
            .map(|k| ("authorization", format!("Bearer {}", k.expose())))
            .collect()
    }

    pub(crate) fn shown(&self) -> String {
        redact_url(&self.url)
    }

    /// Text with the key and header values replaced (an API may echo them in an error).
    fn scrub(&self, text: &str) -> String {
        // The URL as configured may hold a password or query values: shown redacted.
        let mut out = text.replace(&self.url, &self.shown());
        let secrets = self
            .key
            .iter()
            .map(ApiKey::expose)
            .chain(self.headers.iter().map(|(_, v)| v.as_str()));
        for secret in secrets.filter(|s| s.len() >= 4) {
            out = out.replace(secret, REDACTED);
        }
        out
    }

    /// The client, made on first use (the proxy environment is read then).
    fn agent(&self) -> Result<ureq::Agent, ModelError> {
        if let Some(a) = self.agent.get() {
            return Ok(a.clone());
        }
        if !crate::url::is_http(&self.url) {
            return Err(ModelError::Config(format!(
                "the model URL `{}` must start with http:// or https://",
                self.shown()
            )));
        }
        let proxy = crate::transport::proxy::for_ureq("model", &ProxyConfig::default(), &self.url)
            .map_err(|e| ModelError::Config(e.to_string()))?;
        let agent = crate::transport::web::agent(&[], proxy);
        let _ = self.agent.set(agent.clone());
        Ok(agent)
    }

    /// POSTs `body` and returns the JSON answer, retrying 429 and 5xx answers, all by one
    /// deadline [`HttpOptions::timeout`] away.
    pub(crate) fn post(
        &self,
        auth: &[(&str, String)],
        body: &Value,
        cancel: Option<&CancelHandle>,
    ) -> Result<Value, ModelError> {
        self.exchange(auth, body, cancel, "application/json", |resp, endpoint| {
            let text = self.read_body(resp, endpoint)?;
            serde_json::from_str(&text).map_err(|e| ModelError::BadResponse {
                endpoint: endpoint.to_owned(),
                detail: format!("not JSON: {e}"),
            })
        })
    }

    /// POSTs `body` (which asks for a streamed answer) and hands each event of the
    /// `text/event-stream` answer to `reader` as it arrives, until it has the whole answer
    /// (see [`stream::read`]). The retries, the deadline (covering the whole stream), the size
    /// cap and cancellation are [`post`](Self::post)'s.
    pub(crate) fn post_stream<T>(
        &self,
        auth: &[(&str, String)],
        body: &Value,
        cancel: Option<&CancelHandle>,
        reader: &mut dyn stream::Assembler<Output = T>,
    ) -> Result<T, ModelError> {
        self.exchange(auth, body, cancel, "text/event-stream", |resp, endpoint| {
            let limit = self.options.max_response_bytes;
            let timed_out = || ModelError::Timeout {
                endpoint: endpoint.to_owned(),
                after: self.options.timeout,
            };
            let broke = |e: &std::io::Error| ModelError::Transport {
                endpoint: endpoint.to_owned(),
                detail: format!("reading the answer: {}", self.scrub(&e.to_string())),
            };
            stream::read(
                resp.into_body().into_reader(),
                limit,
                endpoint,
                reader,
                |e| {
                    if is_deadline_io(e) {
                        timed_out()
                    } else {
                        broke(e)
                    }
                },
                |text| self.scrub(text),
            )
        })
    }

    /// One model request: sent (redirects within the origin followed), retried on 429 and 5xx,
    /// and its successful answer read by `ok`, all by one deadline and stoppable by `cancel`,
    /// which shuts the connection down (see [`CancelHandle`]).
    fn exchange<T>(
        &self,
        auth: &[(&str, String)],
        body: &Value,
        cancel: Option<&CancelHandle>,
        accept: &str,
        ok: impl FnMut(ureq::http::Response<ureq::Body>, &str) -> Result<T, ModelError>,
    ) -> Result<T, ModelError> {
        let endpoint = self.shown();
        // Every read and write of the exchange (retries included) on this thread stops when
        // `cancel` fires: the socket in use is shut down, which wakes a blocked read.
        let interrupt = Arc::new(Interrupt::default());
        let _armed = cancel.map(|c| {
            let interrupt = Arc::clone(&interrupt);
            c.on_cancel(move || interrupt.fire())
        });
        let result = interruptible(Some(&interrupt), || {
            self.exchange_once(auth, body, cancel, accept, ok)
        });
        match result {
            Err(_) if cancel.is_some_and(CancelHandle::is_cancelled) => {
                Err(ModelError::Cancelled { endpoint })
            }
            other => other,
        }
    }

    fn exchange_once<T>(
        &self,
        auth: &[(&str, String)],
        body: &Value,
        cancel: Option<&CancelHandle>,
        accept: &str,
        mut ok: impl FnMut(ureq::http::Response<ureq::Body>, &str) -> Result<T, ModelError>,
    ) -> Result<T, ModelError> {
        let endpoint = self.shown();
        let agent = self.agent()?;
        let bytes = serde_json::to_vec(body).map_err(|e| ModelError::BadResponse {
            endpoint: endpoint.clone(),
            detail: format!("the request could not be written: {e}"),
        })?;
        let o = &self.options;
        let deadline = crate::deadline::after(o.timeout);
        let timed_out = |endpoint: String| ModelError::Timeout {
            endpoint,
            after: o.timeout,
        };
        let mut attempt = 0;
        loop {
            if cancel.is_some_and(CancelHandle::is_cancelled) {
                return Err(ModelError::Cancelled { endpoint });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out(endpoint));
            }
            // Redirects within the endpoint's origin only: the key and the request go nowhere
            // else (the crate's one redirect rule, as for the authorization server's requests).
            let home = crate::url::origin(&self.url);
            let policy = Policy {
                home_url: &self.url,
                home: home.as_ref(),
                cross_origin: false,
                others_follow_301_302: false,
                elsewhere: "a model endpoint's requests are redirected within its origin only",
                shown: redact_url,
            };
            let once = |url: &str| {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(timed_out(endpoint.clone()));
                }
                // The global timeout covers the answer's body too: a streamed answer ends by
                // the same deadline.
                let mut req = agent
                    .post(url)
                    .config()
                    .timeout_global(Some(left))
                    .build()
                    .header("content-type", "application/json")
                    .header("accept", accept);
                for (k, v) in auth.iter() {
                    req = req.header(*k, v.as_str());
                }
                for (k, v) in &self.headers {
                    req = req.header(k.as_str(), v.as_str());
                }
                match req.send(&bytes[..]) {
                    Ok(r) => Ok(r),
                    Err(e) if is_deadline(&e) => Err(timed_out(endpoint.clone())),
                    Err(e) => Err(ModelError::Transport {
                        endpoint: endpoint.clone(),
                        detail: self.scrub(&e.to_string()),
                    }),
                }
            };
            let refuse = |what: &str, status, why| ModelError::Transport {
                endpoint: endpoint.clone(),
                detail: format!("{what}: HTTP {status}: {why}"),
            };
            let resp = follow(&policy, false, &self.url, redact_url, once, refuse)?.resp;
            let status = resp.status().as_u16();
            if (200..300).contains(&status) {
                return ok(resp, &endpoint);
            }
            // An error status comes whole (not as a stream), on every path: its `Retry-After`
            // (seconds or an HTTP date) sets the wait before the retry.
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after(v, std::time::SystemTime::now()));
            let text = self.read_body(resp, &endpoint)?;
            let retryable = status == 429 || (500..600).contains(&status);
            let backoff = o.base_delay.saturating_mul(1 << attempt.min(16));
            let wait = retry_after.unwrap_or(backoff).min(o.max_delay);
            // A retry that could not even start by the deadline is not made.
            let fits = wait < deadline.saturating_duration_since(Instant::now());
            if retryable && attempt < o.max_retries && fits {
                log::info!(
                    "model `{endpoint}`: HTTP {status}; retry {} of {} in {wait:?}",
                    attempt + 1,
                    o.max_retries
                );
                if CancelHandle::pause(cancel, wait) {
                    return Err(ModelError::Cancelled { endpoint });
                }
                attempt += 1;
                continue;
            }
            return Err(ModelError::Status {
                endpoint,
                status,
                // Scrubbed whole, then cut: a key quoted across the cut is hidden whole.
                message: excerpt(&self.scrub(&error_message(&text)), MAX_ERROR_MESSAGE),
            });
        }
    }

    fn read_body(
        &self,
        resp: ureq::http::Response<ureq::Body>,
        endpoint: &str,
    ) -> Result<String, ModelError> {
        let cap = self.options.max_response_bytes;
        let mut buf = Vec::new();
        let read = resp
            .into_body()
            .into_reader()
            .take(cap as u64 + 1)
            .read_to_end(&mut buf);
        match read {
            Err(e) if is_deadline_io(&e) => Err(ModelError::Timeout {
                endpoint: endpoint.to_owned(),
                after: self.options.timeout,
            }),
            Err(e) => Err(ModelError::Transport {
                endpoint: endpoint.to_owned(),
                detail: format!("reading the answer: {}", self.scrub(&e.to_string())),
            }),
            Ok(_) if buf.len() > cap => Err(ModelError::TooLarge {
                endpoint: endpoint.to_owned(),
                limit: cap,
            }),
            Ok(_) => Ok(String::from_utf8_lossy(&buf).into_owned()),
        }
    }
}

/// Whether `e` is the request's deadline expiring, whichever part of the exchange it cut
/// (resolving, connecting, sending, the head or the body): each of ureq's timeouts, or a
/// socket read or write that timed out under it.
fn is_deadline(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => is_deadline_io(io),
        _ => false,
    }
}

/// [`is_deadline`] for what reading the body fails with: ureq hands its own errors (its
/// timeouts among them) to the reader wrapped in an `io::Error`.
fn is_deadline_io(e: &std::io::Error) -> bool {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
    {
        Some(inner) => is_deadline(inner),
        None => matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ),
    }
}

/// The longest API error message quoted in [`ModelError::Status`], in bytes.
const MAX_ERROR_MESSAGE: usize = 300;

/// The API's error message: `error.message` (OpenAI, Anthropic), `error` as a string, else the
/// body; whole (the caller scrubs it, then cuts it).
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    message.unwrap_or_else(|| body.to_owned())
}

/// The builder methods every built-in model shares (it has `endpoint: Endpoint`).
macro_rules! endpoint_builders {
    ($ty:ty) => {
        impl $ty {
            /// Sets the API key.
            #[must_use]
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.endpoint.key = Some($crate::agent::ApiKey::new(key));
                self
            }

            /// Takes the API key from the environment variable `var`.
            ///
            /// # Errors
            /// [`ModelError::Config`](crate::agent::ModelError::Config) naming `var` when it
            /// holds no key.
            pub fn api_key_from_env(
                mut self,
                var: &str,
            ) -> Result<Self, $crate::agent::ModelError> {
                self.endpoint.key = Some($crate::agent::ApiKey::from_env(var)?);
                Ok(self)
            }

            /// Adds a header to every request (its value is kept out of `Debug` and errors).
            #[must_use]
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.endpoint.headers.push((name.into(), value.into()));
                self
            }

            /// Sets the HTTP options: timeout, retries, backoff, size cap.
            #[must_use]
            pub fn http_options(mut self, options: $crate::agent::HttpOptions) -> Self {
                self.endpoint.options = options;
                self
            }

            /// The model name requests use (unless a request's settings override it).
            pub fn model_name(&self) -> &str {
                &self.model
            }
        }
    };
}
pub(crate) use endpoint_builders;

/// A `Retry-After` value: delay seconds, or an HTTP date (IMF-fixdate, `Sun, 06 Nov 1994
/// 08:49:37 GMT`) turned into the time left until then (zero when it has passed); at most a day.
/// `None` for anything else.
fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    const DAY: f64 = 86_400.0;
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(DAY)));
    }
    let at = http_date(value)?;
    let now = now.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)).min(Duration::from_secs(86_400)))
}

/// Seconds since the Unix epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(value: &str) -> Option<u64> {
    let (_, rest) = value.split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT" || parts.next().is_some() || hms.next().is_some() {
        return None;
    }
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || !(1970..=9999).contains(&year) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    Some(days * 86_400 + h * 3_600 + m * 60 + sec)
}

#[cfg(test)]
mod tests {
    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        use std::time::{Duration, UNIX_EPOCH};
        let now = UNIX_EPOCH + Duration::from_secs(784_111_767); // Sun, 06 Nov 1994 08:49:27 GMT
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(951_825_600)
        );
        // A date in the past is no wait; a far one is cut to a day.
        assert_eq!(
            retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(Duration::from_secs(86_400))
        );
        for bad in [
            "",
            "-1",
            "soon",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
        ] {
            assert_eq!(retry_after(bad, now), None, "{bad}");
        }
    }

    use super::*;

    #[test]
    fn keys_and_headers_never_show() {
        let mut e = Endpoint::new("https://u:pw@api.example.com/v1?key=q".into());
        e.key = Some(ApiKey::new("sk-very-secret"));
        e.headers.push(("x-org".into(), "org-secret".into()));
        let shown = format!("{e:?}");
        assert!(!shown.contains("very-secret") && !shown.contains("org-secret"));
        assert!(!shown.contains("pw") && !shown.contains("key=q"), "{shown}");
        assert!(!e.scrub(&format!("bad uri {}", e.url)).contains("key=q"));
        assert_eq!(
            e.scrub("bad key sk-very-secret for org-secret"),
            format!("bad key {REDACTED} for {REDACTED}")
        );
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(error_message(r#"{"error":{"message":"nope"}}"#), "nope");
        assert_eq!(error_message(r#"{"error":"bad"}"#), "bad");
        assert_eq!(excerpt(&error_message("plain\ntext"), 300), "plain text");
    }

    #[test]
    fn urls_are_joined_with_one_slash() {
        assert_eq!(join("http://h/v1/", "/chat"), "http://h/v1/chat");
        assert_eq!(join("http://h/v1", "chat"), "http://h/v1/chat");
    }

    /// A loopback server answering one request per connection with `answers`, in order;
    /// returns its URL and the thread (joined by the caller) that gives back the request lines.
    fn scripted(answers: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let thread = std::thread::Builder::new()
            .name("scripted-model".into())
            .spawn(move || {
                let mut lines = Vec::new();
                for answer in answers {
                    let (stream, _) = listener.accept().unwrap();
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut head = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        reader.read_line(&mut line).unwrap();
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if head.is_empty() {
                            head = line.trim_end().to_owned();
                        }
                    }
                    reader.read_exact(&mut vec![0; length]).unwrap();
                    lines.push(head);
                    (&stream).write_all(answer.as_bytes()).unwrap();
                }
                lines
            })
            .unwrap();
        (url, thread)
    }

    fn redirect(status: u16, location: &str) -> String {
        format!(
            "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\n\
             connection: close\r\n\r\n"
        )
    }

    #[test]
    fn a_redirect_within_the_endpoints_origin_is_followed_with_the_request() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\
                  connection: close\r\n\r\n{\"ok\":true}";
        let (url, server) = scripted(vec![redirect(307, "/v2/chat"), ok.to_owned()]);
        let answer = Endpoint::new(format!("{url}/v1/chat"))
            .post(&[], &serde_json::json!({"q": 1}), None)
            .expect("the 307 is followed");
        assert_eq!(answer, serde_json::json!({"ok": true}));
        let lines = server.join().unwrap();
        assert_eq!(lines, ["POST /v1/chat HTTP/1.1", "POST /v2/chat HTTP/1.1"]);
    }

    #[test]
    fn a_redirect_to_another_origin_is_refused_and_nothing_goes_there() {
        let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        elsewhere.set_nonblocking(true).unwrap();
        let target = format!("http://{}/steal", elsewhere.local_addr().unwrap());
        let (url, server) = scripted(vec![redirect(307, &target)]);
        let mut e = Endpoint::new(format!("{url}/v1/chat"));
        e.key = Some(ApiKey::new("sk-never-elsewhere"));
        let err = e
            .post(&e.bearer(), &serde_json::json!({"q": 1}), None)
            .expect_err("another origin is refused");
        assert!(err.to_string().contains("another origin"), "{err}");
        server.join().unwrap();
        assert!(
            elsewhere.accept().is_err(),
            "the other origin was never connected to"
        );
    }
}
