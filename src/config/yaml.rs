//! YAML text to `serde_json::Value`, keeping key order, so that JSON and YAML share one code path.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::{ConfigError, ConfigErrorKind};

/// Parses the first YAML document of `text` (an empty text is `null`).
pub(crate) fn parse(text: &str) -> Result<Value, ConfigError> {
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| ConfigError::new(ConfigErrorKind::Syntax, format!("invalid YAML: {e}")))?;
    match docs.into_iter().next() {
        Some(doc) => convert(doc),
        None => Ok(Value::Null),
    }
}

fn key_string(key: Yaml) -> Result<String, ConfigError> {
    match key {
        Yaml::String(s) | Yaml::Real(s) => Ok(s),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        Yaml::Null => Ok("null".to_owned()),
        _ => Err(ConfigError::new(
            ConfigErrorKind::Syntax,
            "invalid YAML: a mapping key must be a plain value",
        )),
    }
}

fn convert(y: Yaml) -> Result<Value, ConfigError> {
    Ok(match y {
        Yaml::Null | Yaml::BadValue => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(s),
        },
        Yaml::String(s) => Value::String(s),
        Yaml::Array(items) => {
            Value::Array(items.into_iter().map(convert).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                m.insert(key_string(k)?, convert(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) => {
            return Err(ConfigError::new(
                ConfigErrorKind::Syntax,
                "invalid YAML: aliases are not supported",
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_types() {
        let v = parse("b: 1\na: [x, 2.5, true, ~]\n").unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"b":1,"a":["x",2.5,true,null]}"#
        );
    }
}
