//! JSON with comments and trailing commas (VS Code's JSONC) to a `serde_json::Value`, within
//! [`InputLimits`]: nodes are counted and the depth checked as the value is built.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::input::{over_limit, InputLimits, Over};
use super::{ConfigError, ConfigErrorKind};

/// Parses JSON with `//` and `/* */` comments and trailing commas allowed.
pub(crate) fn parse(text: &str, limits: &InputLimits) -> Result<Value, ConfigError> {
    let clean = strip(text.trim_start_matches('\u{feff}'));
    let mut budget = Budget {
        nodes: 0,
        max_nodes: limits.max_nodes,
        max_depth: limits.depth(),
        over: None,
    };
    let mut de = serde_json::Deserializer::from_str(&clean);
    let result = Node {
        budget: &mut budget,
        depth: 0,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    result.map_err(|e| {
        let over = budget.over.or_else(|| {
            // serde_json's own nesting limit, for a `max_depth` at the cap.
            e.to_string()
                .starts_with("recursion limit exceeded")
                .then_some(Over::Depth)
        });
        match over {
            Some(over) => over_limit(limits, over, e.line(), e.column()),
            None => ConfigError::new(ConfigErrorKind::Syntax, format!("invalid JSON: {e}")),
        }
    })
}

/// Blanks out comments (keeping line breaks, and every byte's offset, so that error positions
/// stay right) and trailing commas. The output has the length of the input.
pub(crate) fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let (mut i, mut in_str) = (0, false);
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
            out.push(c);
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
            continue;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            out.extend([b' ', b' ']);
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                out.push(if bytes[i] == b'\n' { b'\n' } else { b' ' });
                i += 1;
            }
            if i < bytes.len() {
                // The closing `*/`.
                out.extend([b' ', b' ']);
                i += 2;
            }
            continue;
        } else if c == b'}' || c == b']' {
            if let Some(j) = out.iter().rposition(|x| !x.is_ascii_whitespace()) {
                if out[j] == b',' {
                    out[j] = b' ';
                }
            }
            out.push(c);
        } else {
            out.push(c);
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, and only by ASCII, so this is still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// What a document has used of its limits, and which one it went over.
struct Budget {
    nodes: usize,
    max_nodes: usize,
    max_depth: usize,
    over: Option<Over>,
}

impl Budget {
    /// Counts one node at `depth`; an error once a limit is passed.
    fn take<E: de::Error>(&mut self, depth: usize) -> Result<(), E> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            self.over = Some(Over::Nodes);
        } else if depth > self.max_depth {
            self.over = Some(Over::Depth);
        } else {
            return Ok(());
        }
        Err(E::custom("input limit"))
    }
}

/// One value at `depth` (a list or mapping inside it is at `depth + 1`).
struct Node<'b> {
    budget: &'b mut Budget,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.budget.take(self.depth)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.depth + 1;
        self.budget.take(depth)?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Node {
            budget: &mut *self.budget,
            depth,
        })? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.depth + 1;
        self.budget.take(depth)?;
        let mut m = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.budget.take(depth)?;
            let v = map.next_value_seed(Node {
                budget: &mut *self.budget,
                depth,
            })?;
            m.insert(key, v);
        }
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas() {
        let v = parse(
            "{\n // c\n \"a\": [1, 2,], /* x */ \"b\": \"//not\",\n}",
            &InputLimits::default(),
        )
        .unwrap();
        assert_eq!(v, serde_json::json!({"a": [1, 2], "b": "//not"}));
    }

    #[test]
    fn stripping_keeps_every_offset() {
        for text in [
            "/* open",
            "a /* x */ b",
            "\"é\" // ü\n1",
            "[1,/*\n*/]",
            "/*/",
        ] {
            let out = strip(text);
            assert_eq!(out.len(), text.len(), "{text:?} -> {out:?}");
            let lines = |s: &str| s.match_indices('\n').map(|(i, _)| i).collect::<Vec<_>>();
            assert_eq!(lines(&out), lines(text), "{text:?}");
        }
    }

    #[test]
    fn nodes_and_depth_are_counted() {
        let limits = InputLimits::default().with_max_nodes(4).with_max_depth(2);
        assert!(parse(r#"{"a": [1]}"#, &limits).is_ok()); // map, key, list, 1
        let e = parse(r#"{"a": [1, 2]}"#, &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooLarge);
        let e = parse("[[[]]]", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep);
        assert_eq!(
            e.message,
            "document is nested deeper than the `max_depth` input limit (2 levels), at line 1 column 4"
        );
    }

    #[test]
    fn the_cap_is_the_parsers_limit() {
        let limits = InputLimits::default().with_max_depth(usize::MAX);
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep(127), &limits).is_ok());
        let e = parse(&deep(128), &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep, "{e}");
    }
}
