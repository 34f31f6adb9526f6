//! Schema-aware arguments: `k=v` values converted by a tool's `inputSchema`, required arguments
//! checked before anything is sent, a tool's help, and "did you mean".
//!
//! | schema type | `k=v` value |
//! |---|---|
//! | `string` (or a string `enum`) | the text as typed (`message=3` sends `"3"`) |
//! | `integer` | a whole number (`n=3`; `3.5` and `x` are refused) |
//! | `number` | a number (`x=2.5`) |
//! | `boolean` | `true`/`false` (also `yes`/`no`, `1`/`0`) |
//! | `array` | a JSON array (`xs=[1,2]`), or comma-separated items converted by `items` (`xs=1,2`) |
//! | `object` | a JSON object (`o={"a":1}`) |
//! | `null` | `null` |
//! | several types, `anyOf`/`oneOf` | the first that fits, a string last |
//! | none | JSON when it parses, else the text (`name=Ada`) |
//!
//! An `enum` is checked after the conversion.

use std::fmt::Write;

use serde_json::{Map, Number, Value};

use crate::args::RawArgs;

/// What is wrong with the arguments, as sentences (one per argument).
pub(crate) type Problems = Vec<String>;

/// The JSON types a property schema accepts, in the order to try them (a string last).
fn types_of(schema: &Value) -> Vec<String> {
    let mut types: Vec<String> = match &schema["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    for key in ["anyOf", "oneOf"] {
        for alt in schema[key].as_array().into_iter().flatten() {
            for t in types_of(alt) {
                if !types.contains(&t) {
                    types.push(t);
                }
            }
        }
    }
    if types.is_empty() {
        if let Some(values) = schema["enum"].as_array() {
            if values.iter().all(Value::is_string) {
                types.push("string".into());
            }
        }
    }
    // A string accepts anything: try it last.
    if let Some(i) = types.iter().position(|t| t == "string") {
        let s = types.remove(i);
        types.push(s);
    }
    types
}

/// A short type name for messages and help: `string`, `integer`, `"a" | "b"`, `array of number`.
pub(crate) fn type_name(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let shown: Vec<String> = values.iter().map(Value::to_string).collect();
        return shown.join(" | ");
    }
    let types = types_of(schema);
    if types.is_empty() {
        return "any".into();
    }
    types
        .iter()
        .map(|t| {
            if t == "array" {
                let items = &schema["items"];
                if items.is_object() && !types_of(items).is_empty() {
                    return format!("array of {}", type_name(items));
                }
            }
            t.clone()
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Converts one typed value by its property schema.
pub(crate) fn convert(key: &str, raw: &str, schema: &Value) -> Result<Value, String> {
    let types = types_of(schema);
    let value = if types.is_empty() {
        serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
    } else {
        types
            .iter()
            .find_map(|t| convert_as(t, raw, schema))
            .ok_or_else(|| {
                format!(
                    "argument `{key}` must be {}, not `{raw}`",
                    with_article(&type_name(schema))
                )
            })?
    };
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(&value) {
            let shown: Vec<String> = allowed.iter().map(Value::to_string).collect();
            let hint = closest(raw, allowed.iter().filter_map(Value::as_str))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "argument `{key}` must be one of {}, not `{raw}`{hint}",
                shown.join(", ")
            ));
        }
    }
    Ok(value)
}

fn with_article(t: &str) -> String {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {t}")
    } else if t.starts_with('"') || t.starts_with("any") {
        t.to_owned()
    } else {
        format!("a {t}")
    }
}

fn convert_as(t: &str, raw: &str, schema: &Value) -> Option<Value> {
    let text = raw.trim();
    match t {
        "string" => Some(Value::String(raw.to_owned())),
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok(),
        "number" => text.parse::<i64>().map(Value::from).ok().or_else(|| {
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        }),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => (text == "null").then_some(Value::Null),
        "array" => {
            if text.starts_with('[') {
                return serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(Value::is_array);
            }
            if text.is_empty() {
                return Some(Value::Array(Vec::new()));
            }
            let items = &schema["items"];
            text.split(',')
                .map(|item| {
                    if items.is_object() {
                        convert("item", item.trim(), items).ok()
                    } else {
                        Some(
                            serde_json::from_str(item.trim())
                                .unwrap_or_else(|_| Value::String(item.trim().to_owned())),
                        )
                    }
                })
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)
        }
        "object" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object),
        _ => None,
    }
}

/// The names of the required properties of an object schema.
fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Tool arguments converted by `schema` (the tool's `inputSchema`), or every problem found:
/// values that do not fit, unknown names (when the schema allows no others), missing required
/// arguments with their types.
pub(crate) fn tool_arguments(raw: &RawArgs, schema: &Value) -> Result<Value, Problems> {
    let props = schema["properties"].as_object();
    let closed = schema["additionalProperties"] == Value::Bool(false);
    let mut problems = Vec::new();
    let map: Map<String, Value> = match raw {
        RawArgs::Object(m) => m.clone(),
        RawArgs::Pairs(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                match props.and_then(|p| p.get(k)) {
                    Some(prop) => match convert(k, v, prop) {
                        Ok(value) => {
                            map.insert(k.clone(), value);
                        }
                        Err(e) => problems.push(e),
                    },
                    None if closed => {
                        problems.push(unknown_argument(k, props));
                    }
                    None => {
                        if let Some(p) = props.filter(|p| !p.is_empty()) {
                            if let Some(near) = closest(k, p.keys().map(String::as_str)) {
                                log::warn!(
                                    "argument `{k}` is not in the tool's schema \
                                     (did you mean `{near}`?); sent as it is"
                                );
                            }
                        }
                        let value = serde_json::from_str::<Value>(v)
                            .unwrap_or_else(|_| Value::String(v.clone()));
                        map.insert(k.clone(), value);
                    }
                }
            }
            map
        }
    };
    let missing: Vec<String> = required(schema)
        .into_iter()
        .filter(|name| !map.contains_key(*name) && !given(raw, name))
        .map(|name| {
            let t = props
                .and_then(|p| p.get(name))
                .map(type_name)
                .unwrap_or_else(|| "any".into());
            format!("{name} ({t})")
        })
        .collect();
    problems.extend(missing_arguments(&missing));
    if problems.is_empty() {
        Ok(if map.is_empty() && raw.is_empty() {
            Value::Null
        } else {
            Value::Object(map)
        })
    } else {
        Err(problems)
    }
}

/// Whether `name` was typed (even with a value that did not fit).
fn given(raw: &RawArgs, name: &str) -> bool {
    match raw {
        RawArgs::Object(m) => m.contains_key(name),
        RawArgs::Pairs(p) => p.iter().any(|(k, _)| k == name),
    }
}

fn unknown_argument(k: &str, props: Option<&Map<String, Value>>) -> String {
    let names = props.map(|p| p.keys().map(String::as_str).collect::<Vec<_>>());
    let hint = names
        .as_ref()
        .and_then(|n| closest(k, n.iter().copied()))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!("the tool takes no argument `{k}`{hint}")
}

/// The help of one tool: its description, then one line per argument.
pub(crate) fn tool_help(tool: &mcp_blocking::model::Tool, server: &str) -> String {
    let mut text = String::new();
    let schema = &tool.input_schema;
    let req = required(schema);
    let props = schema["properties"].as_object();
    let mut usage = format!("mcpb call {}", tool.name);
    for (name, _) in props.into_iter().flatten() {
        if req.contains(&name.as_str()) {
            let _ = write!(usage, " {name}=VALUE");
        } else {
            let _ = write!(usage, " [{name}=VALUE]");
        }
    }
    let _ = writeln!(text, "{usage}");
    let _ = writeln!(text, "  tool `{}` of server `{server}`", tool.name);
    let description = tool.description();
    if !description.is_empty() {
        let _ = writeln!(text);
        for line in description.lines() {
            let _ = writeln!(text, "{line}");
        }
    }
    let _ = writeln!(text);
    match props.filter(|p| !p.is_empty()) {
        None => {
            let _ = writeln!(text, "Arguments: none");
        }
        Some(props) => {
            let _ = writeln!(text, "Arguments:");
            let width = props.keys().map(String::len).max().unwrap_or(0);
            for (name, prop) in props {
                let flag = if req.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let mut line = format!("  {name:width$}  {} ({flag})", type_name(prop));
                if let Some(d) = prop["default"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| (!prop["default"].is_null()).then(|| prop["default"].to_string()))
                {
                    let _ = write!(line, " [default: {d}]");
                }
                let _ = writeln!(text, "{line}");
                if let Some(d) = prop["description"].as_str() {
                    for l in d.lines() {
                        let _ = writeln!(text, "  {:width$}    {l}", "");
                    }
                }
            }
        }
    }
    text
}

/// The candidate nearest to `word` by edit distance, when it is near enough to be a typo.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| {
            let d = distance(&lower, &c.to_lowercase());
            // A candidate that contains the word, or is contained in it, counts as near.
            let contained = c.to_lowercase().contains(&lower) || lower.contains(&c.to_lowercase());
            (if contained { d.min(2) } else { d }, c)
        })
        .filter(|(d, c)| {
            *d <= c
                .chars()
                .count()
                .max(word.chars().count())
                .div_ceil(3)
                .clamp(1, 4)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_owned())
}

/// The Levenshtein distance between two strings, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = here;
        }
    }
    row[b.len()]
}

/// The problem of missing required arguments (`NAME (TYPE)` each), if any are missing.
pub(crate) fn missing_arguments(missing: &[String]) -> Option<String> {
    (!missing.is_empty()).then(|| {
        format!(
            "missing required argument{}: {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(v: &[(&str, &str)]) -> RawArgs {
        RawArgs::Pairs(
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn values_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "message": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "on": {"type": "boolean"},
            "xs": {"type": "array", "items": {"type": "number"}},
            "o": {"type": "object"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "any": {}
        }});
        let args = pairs(&[
            ("message", "3"),
            ("n", "42"),
            ("x", "2.5"),
            ("on", "true"),
            ("xs", "1,2.5"),
            ("o", r#"{"a":1}"#),
            ("mode", "slow"),
            ("any", "7"),
        ]);
        assert_eq!(
            tool_arguments(&args, &schema).unwrap(),
            json!({"message": "3", "n": 42, "x": 2.5, "on": true, "xs": [1, 2.5],
                   "o": {"a": 1}, "mode": "slow", "any": 7})
        );
    }

    #[test]
    fn bad_values_and_missing_arguments_are_all_listed() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer"},
            "mode": {"enum": ["fast", "slow"]}, "s": {"type": "string"}
        }, "required": ["a", "b", "s"]});
        let problems =
            tool_arguments(&pairs(&[("a", "x"), ("mode", "fsat")]), &schema).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(problems[0], "argument `a` must be a number, not `x`");
        assert!(
            problems[1].contains("one of \"fast\", \"slow\""),
            "{}",
            problems[1]
        );
        assert!(
            problems[1].contains("did you mean `fast`"),
            "{}",
            problems[1]
        );
        assert_eq!(
            problems[2],
            "missing required arguments: b (integer), s (string)"
        );
        let problems = tool_arguments(&pairs(&[("b", "1.5")]), &schema).unwrap_err();
        assert!(
            problems[0].contains("must be an integer, not `1.5`"),
            "{problems:?}"
        );
    }

    #[test]
    fn unions_try_strings_last() {
        let schema = json!({"type": ["string", "integer"]});
        assert_eq!(convert("k", "5", &schema).unwrap(), json!(5));
        assert_eq!(convert("k", "five", &schema).unwrap(), json!("five"));
        let schema = json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]});
        assert_eq!(convert("k", "null", &schema).unwrap(), Value::Null);
        assert!(convert("k", "maybe", &schema).is_err());
    }

    #[test]
    fn closed_schemas_refuse_unknown_names() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}},
                            "additionalProperties": false});
        let problems = tool_arguments(&pairs(&[("txt", "hi")]), &schema).unwrap_err();
        assert_eq!(
            problems,
            ["the tool takes no argument `txt` (did you mean `text`?)"]
        );
    }

    #[test]
    fn near_names_are_suggested() {
        let names = ["echo", "add", "get-sum", "printEnv"];
        assert_eq!(closest("ecko", names).as_deref(), Some("echo"));
        assert_eq!(closest("getsum", names).as_deref(), Some("get-sum"));
        assert_eq!(closest("printenv", names).as_deref(), Some("printEnv"));
        assert_eq!(closest("zzzzzz", names), None);
    }
}
