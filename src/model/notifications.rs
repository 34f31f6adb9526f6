//! Parameters of notifications: logging, progress, resource updates, cancellation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Map;

/// A log severity, as in syslog (RFC 5424). Ordered from `Debug` (lowest) to `Emergency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LoggingLevel {
    /// `"debug"`.
    Debug,
    /// `"info"`.
    Info,
    /// `"notice"`.
    Notice,
    /// `"warning"`.
    Warning,
    /// `"error"`.
    Error,
    /// `"critical"`.
    Critical,
    /// `"alert"`.
    Alert,
    /// `"emergency"`.
    Emergency,
}

impl LoggingLevel {
    /// Every level, lowest first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The wire name, such as `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }

    /// The `log` crate level to report this at: notice becomes info, and everything from error
    /// up becomes error.
    pub fn to_log_level(self) -> log::Level {
        match self {
            LoggingLevel::Debug => log::Level::Debug,
            LoggingLevel::Info | LoggingLevel::Notice => log::Level::Info,
            LoggingLevel::Warning => log::Level::Warn,
            LoggingLevel::Error
            | LoggingLevel::Critical
            | LoggingLevel::Alert
            | LoggingLevel::Emergency => log::Level::Error,
        }
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`LoggingLevel`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseLoggingLevelError {
    /// The string that was given.
    pub input: String,
}

impl fmt::Display for ParseLoggingLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown logging level `{}` (expected debug, info, notice, warning, error, critical, \
             alert or emergency)",
            self.input
        )
    }
}

impl std::error::Error for ParseLoggingLevelError {}

impl FromStr for LoggingLevel {
    type Err = ParseLoggingLevelError;

    /// Parses a wire name, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LoggingLevel::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseLoggingLevelError {
                input: s.to_owned(),
            })
    }
}

/// The params of `notifications/message`: one log entry from the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoggingMessage {
    /// Severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The entry: a string or any JSON value.
    pub data: Value,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(LoggingMessage {
    level: "level" required,
    logger: "logger" optional,
    data: "data" required,
});

impl LoggingMessage {
    /// An entry at `level` holding `data`.
    pub fn new(level: LoggingLevel, data: impl Into<Value>) -> Self {
        Self {
            level,
            logger: None,
            data: data.into(),
            extra: Map::new(),
        }
    }
}

setters!(LoggingMessage { with_logger => logger: String });

/// A token tying progress notifications to a request: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::Number(n) => write!(f, "{n}"),
            ProgressToken::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Number(n)
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

/// The params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Progress {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; it only grows.
    #[serde(serialize_with = "super::number::serialize")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::number::serialize_opt"
    )]
    pub total: Option<f64>,
    /// What is happening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Progress {
    progress_token: "progressToken" required,
    progress: "progress" required,
    total: "total" optional,
    message: "message" optional,
});

impl Progress {
    /// Progress `progress` for the request that sent `progress_token`.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: f64) -> Self {
        Self {
            progress_token: progress_token.into(),
            progress,
            total: None,
            message: None,
            extra: Map::new(),
        }
    }
}

setters!(Progress { with_total => total: f64, with_message => message: String });

/// The params of `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceUpdated {
    /// The URI of the resource that changed.
    pub uri: String,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ResourceUpdated {
    uri: "uri" required,
});

impl ResourceUpdated {
    /// The resource at `uri` changed.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            extra: Map::new(),
        }
    }
}

/// The params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cancelled {
    /// The id of the request to cancel, as sent (`null` when absent).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub request_id: Value,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Cancelled {
    request_id: "requestId" default,
    reason: "reason" optional,
});

impl Cancelled {
    /// Cancels the request with id `request_id`.
    pub fn new(request_id: impl Into<Value>) -> Self {
        Self {
            request_id: request_id.into(),
            reason: None,
            extra: Map::new(),
        }
    }
}

setters!(Cancelled { with_reason => reason: String });

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn logging_levels_are_ordered_by_severity() {
        let mut shuffled = LoggingLevel::ALL;
        shuffled.reverse();
        shuffled.sort();
        assert_eq!(shuffled, LoggingLevel::ALL);
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Warning < LoggingLevel::Error);
        assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
    }

    #[test]
    fn logging_levels_map_to_log_levels() {
        let mapped: Vec<log::Level> = LoggingLevel::ALL.map(LoggingLevel::to_log_level).to_vec();
        use log::Level::{Debug, Error, Info, Warn};
        assert_eq!(
            mapped,
            [Debug, Info, Info, Warn, Error, Error, Error, Error]
        );
    }

    #[test]
    fn logging_level_text_forms_agree() {
        for level in LoggingLevel::ALL {
            let wire = serde_json::to_value(level).expect("ser");
            assert_eq!(wire, json!(level.to_string()));
            assert_eq!(level.as_str().parse::<LoggingLevel>(), Ok(level));
        }
        assert_eq!("WARNING".parse::<LoggingLevel>(), Ok(LoggingLevel::Warning));
        let err = "warn".parse::<LoggingLevel>().expect_err("not a wire name");
        assert_eq!(err.input, "warn");
    }

    #[test]
    fn logging_message_round_trips() {
        let wire = json!({
            "level": "error",
            "logger": "database",
            "data": {"error": "Connection failed", "details": {"host": "localhost", "port": 5432}},
            "_meta": {"seq": 4}
        });
        let message: LoggingMessage = round_trip(&wire);
        assert_eq!(message.level, LoggingLevel::Error);
        assert!(message.extra.contains_key("_meta"));
        let _: LoggingMessage = round_trip(&json!({"level": "notice", "data": "plain text"}));
    }

    #[test]
    fn progress_round_trips_integers_and_fractions() {
        let whole: Progress =
            round_trip(&json!({"progressToken": 7, "progress": 50, "total": 100}));
        assert_eq!(whole.progress_token, ProgressToken::Number(7));
        assert_eq!(whole.total, Some(100.0));
        let fraction: Progress = round_trip(&json!({
            "progressToken": "abc-123", "progress": 0.25, "message": "Reticulating splines"
        }));
        assert_eq!(fraction.progress_token, ProgressToken::from("abc-123"));
        assert_eq!(fraction.total, None);
    }

    #[test]
    fn resource_updated_and_cancelled_round_trip() {
        let updated: ResourceUpdated =
            round_trip(&json!({"uri": "file:///project/src/main.rs", "title": "main.rs"}));
        assert_eq!(updated.uri, "file:///project/src/main.rs");
        let cancelled: Cancelled =
            round_trip(&json!({"requestId": "123", "reason": "User requested"}));
        assert_eq!(cancelled.request_id, json!("123"));
        let numeric: Cancelled = round_trip(&json!({"requestId": 9}));
        assert_eq!(numeric, Cancelled::new(9));
        let _: Cancelled = round_trip(&json!({"reason": "task cancelled"}));
    }
}
