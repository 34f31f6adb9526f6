//! The `mcp` options block of @robojs/ai (`gracefulDegradation`, `extraRetries`, `baseDelayMs`,
//! `maxDelayMs`): how a [`Hub`](crate::Hub) loaded from the file degrades, read into
//! [`Degradation`](crate::hub::Degradation), each key checked with its path.

use std::time::Duration;

use serde_json::{Map, Value};

use super::fields::join;
use super::suggest::nearest;
use super::{ConfigError, ConfigErrorKind};
use crate::hub::Degradation;

/// The option keys of the block.
pub(crate) const OPTION_KEYS: [&str; 4] = [
    "gracefulDegradation",
    "extraRetries",
    "baseDelayMs",
    "maxDelayMs",
];

/// The most retries a file may ask for: each one may wait up to `maxDelayMs`, and a file is
/// data, so it cannot make a call retry without end.
pub(crate) const MAX_EXTRA_RETRIES: u64 = 10;

/// Reads the block `map` at `path` (`mcp`), where `servers` may sit too; `None` when it holds
/// no option.
///
/// # Errors
/// [`ConfigErrorKind::UnknownKey`] (with the nearest key), [`ConfigErrorKind::WrongType`], or
/// [`ConfigErrorKind::InvalidValue`] for a value out of range, at the key's path.
pub(crate) fn parse(
    map: &Map<String, Value>,
    path: &str,
) -> Result<Option<Degradation>, ConfigError> {
    let known = || std::iter::once("servers").chain(OPTION_KEYS);
    for key in map.keys() {
        if !known().any(|k| k == key) {
            let expected = format!("one of: {}", known().collect::<Vec<_>>().join(", "));
            return Err(ConfigError::new(
                ConfigErrorKind::UnknownKey,
                format!("unknown key `{key}`"),
            )
            .at(join(path, key))
            .found_expected(key.clone(), expected)
            .suggest(nearest(key, known())));
        }
    }
    if !OPTION_KEYS.iter().any(|k| map.contains_key(*k)) {
        return Ok(None);
    }
    let mut d = Degradation::default();
    if let Some(v) = map.get("gracefulDegradation") {
        d.graceful = match v {
            Value::Bool(b) => *b,
            other => {
                return Err(ConfigError::wrong_type(
                    &join(path, "gracefulDegradation"),
                    "a boolean",
                    other,
                ))
            }
        };
    }
    if let Some(v) = map.get("extraRetries") {
        let key = join(path, "extraRetries");
        let n = whole(v, &key)?;
        if n > MAX_EXTRA_RETRIES {
            return Err(ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("`extraRetries` is at most {MAX_EXTRA_RETRIES}, found {n}"),
            )
            .at(key)
            .found_expected(n.to_string(), format!("0 to {MAX_EXTRA_RETRIES}")));
        }
        d.extra_retries = u32::try_from(n).unwrap_or(u32::MAX);
    }
    for (name, field) in [
        ("baseDelayMs", &mut d.base_delay),
        ("maxDelayMs", &mut d.max_delay),
    ] {
        if let Some(v) = map.get(name) {
            *field = Duration::from_millis(whole(v, &join(path, name))?);
        }
    }
    // The delays' range is the Hub's own rule; its error is put at the file's key.
    if let Err(mut e) = d.validate() {
        let key = if e.path.contains("max_delay") {
            "maxDelayMs"
        } else {
            "baseDelayMs"
        };
        e.path = join(path, key);
        e.server = None;
        return Err(e);
    }
    Ok(Some(d))
}

/// A whole number of at least zero.
fn whole(v: &Value, path: &str) -> Result<u64, ConfigError> {
    match v {
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or_default()),
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f >= 0.0) => {
            // A whole number written as a float (`500.0`), or one past u64.
            Ok(n.as_f64().map_or(u64::MAX, |f| f as u64))
        }
        other => Err(ConfigError::wrong_type(
            path,
            "a whole number of at least 0",
            other,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Result<Option<Degradation>, ConfigError> {
        parse(v.as_object().unwrap(), "mcp")
    }

    #[test]
    fn the_documented_block_is_read() {
        let d = p(json!({"gracefulDegradation": false, "extraRetries": 3,
                         "baseDelayMs": 250, "maxDelayMs": 4000}))
        .unwrap()
        .unwrap();
        assert!(!d.graceful);
        assert_eq!(d.extra_retries, 3);
        assert_eq!(d.base_delay, Duration::from_millis(250));
        assert_eq!(d.max_delay, Duration::from_secs(4));
        // Unset keys keep the defaults.
        let d = p(json!({"extraRetries": 0})).unwrap().unwrap();
        assert_eq!(d.base_delay, Degradation::default().base_delay);
        assert_eq!(p(json!({"servers": {}})).unwrap(), None);
    }

    #[test]
    fn each_key_is_checked_at_its_path() {
        let e = p(json!({"extraRetrys": 1})).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::UnknownKey);
        assert_eq!(e.path, "mcp.extraRetrys");
        assert_eq!(e.suggestion.as_deref(), Some("extraRetries"));
        let e = p(json!({"gracefulDegradation": "yes"})).unwrap_err();
        assert_eq!(
            (e.kind, e.path.as_str()),
            (ConfigErrorKind::WrongType, "mcp.gracefulDegradation")
        );
        let e = p(json!({"baseDelayMs": -5})).unwrap_err();
        assert_eq!(
            (e.kind, e.path.as_str()),
            (ConfigErrorKind::WrongType, "mcp.baseDelayMs")
        );
        let e = p(json!({"extraRetries": 1000})).unwrap_err();
        assert_eq!(
            (e.kind, e.path.as_str()),
            (ConfigErrorKind::InvalidValue, "mcp.extraRetries")
        );
        let e = p(json!({"maxDelayMs": 1e15})).unwrap_err();
        assert_eq!(e.path, "mcp.maxDelayMs", "{e}");
    }
}
