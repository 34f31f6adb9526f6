//! The one redaction rule: what of a server's configuration never reaches a message, a log
//! line, `Debug` output or `mcpb`'s output, and how it is hidden.
//!
//! ```text
//!   text ──every URL: password and query──> <redacted>      (redact_url on each `scheme://…`)
//!        ──every secret of the server, longest first──> <redacted>
//!             secrets: values that came from a `${VAR}` (or `${input:id}`), header values (and
//!             the credential after `Bearer `), env values, a URL's password and query values,
//!             a configured session id; values shorter than 4 characters are left alone
//!        ──the start of a secret right before a cut mark `…`──> <redacted>
//!             (text cut before it was redacted keeps a secret's first characters only)
//! ```
//!
//! Redact first, then cut: where the crate holds a secret and the whole text, it redacts
//! before it cuts. The last step covers text cut where no secret is at hand (an HTTP error
//! body's excerpt, a stderr line that is never held whole): every cut ends in the mark
//! [`CUT`], and redacting such text later still hides what a cut left of a secret.
//!
//! `Error::redact` applies it to every string of an error (the client does so to every error it
//! returns), `ServerConfig`'s `Debug` to its transport, transports to the log lines that quote
//! what a server wrote, and [`ServerConfig::redact`] offers it to programs (`mcpb` uses it).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::interpolate::MIN_SECRET_LEN;
use super::limits::CUT;
use super::{redact_url, ConfigError, ServerConfig, TransportConfig, REDACTED};

/// The secret values of one server, longest first (so a secret that contains another is hidden
/// whole). Cheap to clone. `Debug` shows how many there are, never what they are.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<[String]>);

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({})", self.0.len())
    }
}

impl Secrets {
    /// The given values, without those too short to be worth hiding, longest first.
    pub(crate) fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut v: Vec<String> = values
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
            .collect();
        v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        v.dedup();
        Secrets(v.into())
    }

    /// `text` with every URL's password and query, every secret, and the start of a secret
    /// that a cut left right before a cut mark, replaced by `<redacted>`. Borrowed when nothing
    /// had to be hidden.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = redact_urls(text);
        for s in self.0.iter() {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        if out.contains(CUT) {
            if let Some(hidden) = self.hide_cut_starts(&out) {
                out = Cow::Owned(hidden);
            }
        }
        out
    }

    /// `text` with the start of a secret right before each cut mark [`CUT`] hidden (the longest
    /// start of any secret that the text before the mark ends with, however short: a cut may
    /// fall anywhere in a secret). `None` when there is none.
    fn hide_cut_starts(&self, text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        for piece in text.split_inclusive(CUT) {
            let Some(kept) = piece.strip_suffix(CUT) else {
                out.push_str(piece);
                continue;
            };
            // A start no longer than the text before the mark: the work per mark is bounded
            // by that text, so text of many marks costs no more than its length.
            let dangling = self
                .0
                .iter()
                .filter_map(|s| {
                    (1..s.len().min(kept.len() + 1))
                        .rev()
                        .filter(|&k| s.is_char_boundary(k))
                        .find(|&k| kept.ends_with(&s[..k]))
                })
                .max();
            match dangling {
                Some(k) => {
                    out.push_str(&kept[..kept.len() - k]);
                    out.push_str(REDACTED);
                    changed = true;
                }
                None => out.push_str(kept),
            }
            out.push(CUT);
        }
        changed.then_some(out)
    }

    /// [`redact`](Self::redact) for an owned string.
    pub(crate) fn redact_string(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }

    /// Whether [`redact`](Self::redact) would change `text`.
    pub(crate) fn hides_something_in(&self, text: &str) -> bool {
        matches!(self.redact(text), Cow::Owned(_))
    }

    /// A config error with its texts redacted (its file and server name kept).
    pub(crate) fn redact_config_error(&self, mut e: ConfigError) -> ConfigError {
        let r = |s: String| self.redact_string(s);
        e.message = r(e.message);
        e.path = r(e.path);
        e.found = e.found.map(r);
        e.expected = e.expected.map(r);
        e.suggestion = e.suggestion.map(r);
        e
    }

    /// Redacts every string (and object key) of a JSON value in place.
    pub(crate) fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(shown) = self.redact(s) {
                    *s = shown;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.hides_something_in(k)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.redact_string(k), v);
                    }
                }
                map.values_mut().for_each(|v| self.redact_value(v));
            }
            _ => {}
        }
    }
}

/// Every `scheme://…` in `text` without its password and query (see [`redact_url`]). A URL ends
/// at white space, a quote, a backquote or `<` (where an earlier redaction left its marker).
fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find("://") {
        let sep = from + at;
        let start = text[..sep]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .last()
            .map_or(sep, |(i, _)| i);
        let end = text[sep..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
            .map_or(text.len(), |i| sep + i);
        from = end.max(sep + 3);
        if start == sep {
            continue;
        }
        // A `?` right before the end is the start of a query already hidden.
        let url = text[start..end].trim_end_matches('?');
        let shown = redact_url(url);
        if shown != url {
            out.push_str(&text[copied..start]);
            out.push_str(&shown);
            copied = start + url.len();
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The password of a URL's user info and the values of its query.
fn url_secrets(url: &str, out: &mut Vec<String>) {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q.split('#').next().unwrap_or(q))),
        None => (url.split('#').next().unwrap_or(url), None),
    };
    if let Some((_, rest)) = base.split_once("://") {
        let authority = rest.split('/').next().unwrap_or(rest);
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if let Some((_, password)) = userinfo.split_once(':') {
                out.push(password.to_owned());
            }
        }
    }
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        let value = pair.split_once('=').map_or(pair, |(_, v)| v);
        out.push(value.to_owned());
    }
}

/// A header value, and the credential alone when it is `Scheme credential` (`Bearer abc`).
fn header_secrets(value: &str, out: &mut Vec<String>) {
    out.push(value.to_owned());
    if let Some((_, credential)) = value.trim().split_once(' ') {
        out.push(credential.trim().to_owned());
    }
}

impl ServerConfig {
    /// The values of this server that the redaction rule hides (see the module documentation).
    pub(crate) fn secret_values(&self) -> Secrets {
        let mut all = self.secrets.clone();
        match &self.transport {
            TransportConfig::Stdio(s) => all.extend(s.env.values().cloned()),
            TransportConfig::StreamableHttp(h) => all.extend(h.session_id.iter().cloned()),
            TransportConfig::Sse(_) | TransportConfig::WebSocket(_) => {}
        }
        for (_, value) in self.transport.headers() {
            header_secrets(value, &mut all);
        }
        if let Some(url) = self.transport.url() {
            url_secrets(url, &mut all);
        }
        Secrets::new(all)
    }

    /// `text` as messages, logs and `Debug` show it for this server: every URL's password and
    /// query, and every secret of this server, replaced by `<redacted>`. The secrets are the
    /// values that came from a variable (`${VAR}`, `${input:id}`) when the config was loaded,
    /// header values (and the credential after `Bearer `), env values, the url's password and
    /// query values, and a session id. Values shorter than 4 characters are not hidden (they
    /// would hide noise).
    ///
    /// The crate applies this rule itself to every error a [`Client`](crate::Client) returns,
    /// to `Debug` output and to its log lines; use it for text of your own that quotes a
    /// command line, a url or what a server said.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let api = ServerConfig::http("api", "https://ada:pw-1234@api.example/mcp?key=k-5678")
    ///     .with_bearer_token("tok-9012");
    /// assert_eq!(
    ///     api.redact("GET https://ada:pw-1234@api.example/mcp?key=k-5678 sent tok-9012"),
    ///     "GET https://ada:<redacted>@api.example/mcp?<redacted> sent <redacted>"
    /// );
    /// let fs = ServerConfig::stdio("fs", "mcp-fs").with_env("TOKEN", "t-3456");
    /// assert_eq!(fs.redact("bad token t-3456"), "bad token <redacted>");
    /// ```
    pub fn redact(&self, text: &str) -> String {
        self.secret_values().redact(text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_password_and_query_wherever_they_are() {
        let s = Secrets::default();
        assert_eq!(
            s.redact("POST http://u:p@h:1/mcp?k=v: refused"),
            "POST http://u:<redacted>@h:1/mcp?<redacted> refused"
        );
        assert_eq!(
            s.redact("`wss://h/x?token=abc` and https://h/y"),
            "`wss://h/x?<redacted>` and https://h/y"
        );
        assert!(matches!(s.redact("no url here"), Cow::Borrowed(_)));
        assert!(matches!(s.redact("http://h/p and ://x"), Cow::Borrowed(_)));
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let s = Secrets::new(["sekrit-1".to_owned()]);
        let once = s
            .redact("see https://a:b@h/p?x=1 and sekrit-1, http://h/?q")
            .into_owned();
        assert_eq!(
            once,
            "see https://a:<redacted>@h/p?<redacted> and <redacted>, http://h/?<redacted>"
        );
        assert_eq!(s.redact(&once), once);
    }

    #[test]
    fn a_secret_cut_before_it_was_redacted_loses_its_start_too() {
        let s = Secrets::new(["tok-abcdef".into(), "other-1234".into()]);
        let cut = crate::config::echo("key tok-abcdef here", 8);
        assert_eq!(cut, "key tok-… (11 bytes cut)");
        assert_eq!(s.redact(&cut), "key <redacted>… (11 bytes cut)");
        // A cut after a single character of it, and an excerpt's bare mark.
        assert_eq!(s.redact("a t… b o…"), "a <redacted>… b <redacted>…");
        // Text that does not end with a secret's start is left, and so is text with no mark.
        assert_eq!(s.redact("abc… (3 bytes cut)"), "abc… (3 bytes cut)");
        assert!(matches!(s.redact("ends tok-abc"), Cow::Borrowed(_)));
        // Redacting again changes nothing more.
        let once = s.redact("x tok-ab…").into_owned();
        assert_eq!(s.redact(&once), once);
    }

    #[test]
    fn text_of_many_cut_marks_is_redacted_in_time_linear_in_its_length() {
        // A server's text may hold any number of marks; a long secret (a token) must not make
        // each mark cost the secret's length.
        let s = Secrets::new(["t".repeat(4096)]);
        let text = "x…".repeat(1_000_000);
        let started = std::time::Instant::now();
        assert!(matches!(s.redact(&text), Cow::Borrowed(_)));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn longer_secrets_go_first_and_short_ones_are_left() {
        let s = Secrets::new(["abcd".into(), "abcdefgh".into(), "ab".into()]);
        assert_eq!(s.redact("abcdefgh abcd ab"), "<redacted> <redacted> ab");
    }

    #[test]
    fn json_strings_and_keys_are_redacted() {
        let s = Secrets::new(["tok-1234".into()]);
        let mut v = serde_json::json!({"a": ["x tok-1234"], "tok-1234": 1, "n": 2});
        s.redact_value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["x <redacted>"], "<redacted>": 1, "n": 2})
        );
    }

    #[test]
    fn a_config_knows_its_secrets() {
        let http = ServerConfig::http("h", "https://u:pass-1@h/mcp?api_key=key-2&x=y")
            .with_header("X-Api", "hdr-3")
            .with_bearer_token("bear-4");
        let shown = http.redact("pass-1 key-2 hdr-3 Bearer bear-4 bear-4 y");
        assert_eq!(
            shown,
            "<redacted> <redacted> <redacted> <redacted> <redacted> y"
        );
        let stdio = ServerConfig::stdio("s", "srv").with_env("K", "env-5");
        assert_eq!(stdio.redact("got env-5"), "got <redacted>");
        assert!(!format!("{:?}", stdio.secret_values()).contains("env-5"));
    }
}
