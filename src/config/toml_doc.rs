//! TOML text (Codex's `config.toml`) to `serde_json::Value`, keeping key order, so that TOML
//! shares the one code path of JSON and YAML.
//!
//! The parser bounds its own nesting (80 levels of arrays, inline tables and dotted keys); the
//! document is then built within [`InputLimits`]: every node is counted and the depth checked
//! as it is converted. A parse error names its line and column and never quotes the file's
//! text, which may hold a secret.

use serde_json::{Map, Number, Value};
use toml::de::{DeTable, DeValue};

use super::input::{over_limit, InputLimits, Over};
use super::{ConfigError, ConfigErrorKind};

/// Parses a TOML document into a mapping. A byte order mark at the start is not content.
pub(crate) fn parse(text: &str, limits: &InputLimits) -> Result<Value, ConfigError> {
    let text = text.trim_start_matches('\u{feff}');
    let doc = DeTable::parse(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| position(text, s.start));
        ConfigError::new(
            ConfigErrorKind::Syntax,
            format!(
                "invalid TOML: {} at line {line} column {column}",
                e.message().trim_end()
            ),
        )
    })?;
    let mut build = Build {
        text,
        limits,
        nodes: 0,
    };
    build.table(doc.get_ref(), 1, doc.span().start)
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

struct Build<'a> {
    text: &'a str,
    limits: &'a InputLimits,
    nodes: usize,
}

impl Build<'_> {
    /// Counts one node at `depth` (the top-level table is depth 1), found at byte `at`.
    fn take(&mut self, depth: usize, at: usize) -> Result<(), ConfigError> {
        self.nodes += 1;
        let over = if self.nodes > self.limits.max_nodes {
            Over::Nodes
        } else if depth > self.limits.depth() {
            Over::Depth
        } else {
            return Ok(());
        };
        let (line, column) = position(self.text, at);
        Err(over_limit(self.limits, over, line, column))
    }

    fn table(&mut self, t: &DeTable<'_>, depth: usize, at: usize) -> Result<Value, ConfigError> {
        self.take(depth, at)?;
        let mut m = Map::new();
        for (k, v) in t {
            // A key counts one node, as in JSON and YAML.
            self.take(depth, k.span().start)?;
            let value = self.value(v.get_ref(), depth + 1, v.span().start)?;
            m.insert(k.get_ref().to_string(), value);
        }
        Ok(Value::Object(m))
    }

    fn value(&mut self, v: &DeValue<'_>, depth: usize, at: usize) -> Result<Value, ConfigError> {
        Ok(match v {
            DeValue::Table(t) => return self.table(t, depth, at),
            DeValue::Array(items) => {
                self.take(depth, at)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items.iter() {
                    out.push(self.value(item.get_ref(), depth + 1, item.span().start)?);
                }
                Value::Array(out)
            }
            scalar => {
                self.take(depth.saturating_sub(1), at)?;
                match scalar {
                    DeValue::String(s) => Value::String(s.to_string()),
                    DeValue::Boolean(b) => Value::Bool(*b),
                    DeValue::Integer(i) => {
                        let digits = i.as_str().replace('_', "");
                        match i64::from_str_radix(&digits, i.radix()) {
                            Ok(n) => Value::Number(n.into()),
                            // Past i64: a number too large for any of our keys, kept as text
                            // so that its key reports it with its type.
                            Err(_) => Value::String(i.to_string()),
                        }
                    }
                    DeValue::Float(f) => {
                        let text = f.as_str().replace('_', "");
                        match text.parse::<f64>().ok().and_then(Number::from_f64) {
                            Some(n) => Value::Number(n),
                            // `inf` and `nan`, as YAML's `.inf`: not a JSON number.
                            None => Value::String(text),
                        }
                    }
                    DeValue::Datetime(d) => Value::String(d.to_string()),
                    DeValue::Table(_) | DeValue::Array(_) => Value::Null,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Value, ConfigError> {
        parse(text, &InputLimits::default())
    }

    #[test]
    fn keeps_key_order_and_types() {
        let v = p("b = 1\na = [\"x\", 2.5, true, 0x1f, 1_000]\n[t]\nz = 1979-05-27\n").unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"b":1,"a":["x",2.5,true,31,1000],"t":{"z":"1979-05-27"}}"#
        );
        assert_eq!(p("x = inf\n").unwrap(), serde_json::json!({"x": "inf"}));
    }

    #[test]
    fn tables_and_dotted_keys_nest() {
        let v = p("[mcp_servers.docs]\ncommand = \"npx\"\n[mcp_servers.docs.env]\nK = \"v\"\n")
            .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mcp_servers": {"docs": {"command": "npx", "env": {"K": "v"}}}})
        );
    }

    #[test]
    fn a_syntax_error_names_line_and_column_without_the_text() {
        let e =
            p("[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", s3cret-token]\n").unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Syntax);
        assert!(
            e.message.starts_with("invalid TOML: ") && e.message.ends_with(" at line 3 column 15"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("s3cret"), "{}", e.message);
        // A key defined twice.
        let e = p("a = 1\na = 2\n").unwrap_err();
        assert!(e.message.ends_with("at line 2 column 1"), "{}", e.message);
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_endings_are_not_content() {
        let text = "[mcp_servers.a]\ncommand = \"x\"\n";
        let windows = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        assert_eq!(p(&windows).unwrap(), p(text).unwrap());
    }

    #[test]
    fn the_input_limits_hold() {
        let limits = InputLimits::default().with_max_nodes(4);
        // The table, key `a`, the list and its first item: 4; the second is one too many.
        assert!(parse("a = [1]\n", &limits).is_ok());
        let e = parse("a = [1, 2]\n", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooLarge);
        assert!(e.message.ends_with("at line 1 column 9"), "{}", e.message);
        let limits = InputLimits::default().with_max_depth(3);
        assert!(parse("a = [[1]]\n", &limits).is_ok());
        let e = parse("a = [[[1]]]\n", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep);
        let e = parse("[a.b.c]\nd = 1\n", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep);
    }

    #[test]
    fn nesting_past_the_parser_bound_is_an_error_not_a_crash() {
        let deep = format!("a = {}1{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(p(&deep).unwrap_err().kind, ConfigErrorKind::Syntax);
        let dotted = format!("{} = 1\n", vec!["k"; 10_000].join("."));
        assert_eq!(p(&dotted).unwrap_err().kind, ConfigErrorKind::Syntax);
    }
}
