//! YAML text to `serde_json::Value`, keeping key order, so that JSON and YAML share one code path.
//!
//! The document is built from the parser's events, within [`InputLimits`]: every node is counted
//! as it arrives, an alias counting the nodes and text of what it names, so a document that
//! would expand past a limit ("billion laughs") stops there, before anything is expanded. Until
//! the end, an alias is a shared reference to its anchor's node; only a document within the
//! limits is expanded into a `Value`.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};
use yaml_rust2::Yaml;

use super::input::{over_limit, InputLimits, Over};
use super::{ConfigError, ConfigErrorKind};

/// Parses the first YAML document of `text` (an empty text is `null`). The later documents of
/// the stream are checked for syntax but not built. A byte order mark at the start (Windows
/// editors write one) is not content, as in JSON: the parser would count it as a column and
/// find the first line's indentation wrong.
pub(crate) fn parse(text: &str, limits: &InputLimits) -> Result<Value, ConfigError> {
    let text = text.trim_start_matches('\u{feff}');
    let mut parser = Parser::new_from_str(text);
    let mut b = Builder {
        limits,
        max_depth: limits.depth(),
        nodes: 0,
        bytes: 0,
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
    };
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| syntax(&e.to_string()))?;
        match ev {
            Event::StreamEnd => break,
            Event::DocumentEnd if b.root.is_none() => b.root = Some(Built::scalar(Yaml::Null)),
            Event::DocumentEnd => {}
            ev if b.root.is_none() => b.event(ev, mark)?,
            // A later document: read on for syntax errors only.
            _ => {}
        }
    }
    match b.root {
        Some(root) => to_value(&root.node),
        None => Ok(Value::Null),
    }
}

fn syntax(message: &str) -> ConfigError {
    ConfigError::new(ConfigErrorKind::Syntax, format!("invalid YAML: {message}"))
}

/// A syntax error at `mark`, worded as the parser's own.
fn syntax_at(info: String, mark: Marker) -> ConfigError {
    syntax(&ScanError::new_string(mark, info).to_string())
}

/// A node of the document being read; an alias shares its anchor's node.
enum Node {
    /// A scalar as YAML resolves it (never a list, mapping or alias).
    Scalar(Yaml),
    List(Vec<Rc<Node>>),
    Mapping(Vec<(String, Rc<Node>)>),
}

/// A complete node and its size with aliases expanded.
#[derive(Clone)]
struct Built {
    node: Rc<Node>,
    /// Nodes, itself included.
    nodes: usize,
    /// Bytes of scalar text (keys and values).
    bytes: usize,
    /// Levels of lists and mappings (0 for a scalar).
    height: usize,
}

impl Built {
    fn scalar(y: Yaml) -> Built {
        Built {
            node: Rc::new(Node::Scalar(y)),
            nodes: 1,
            bytes: 0,
            height: 0,
        }
    }
}

/// A list or mapping whose end has not been read yet.
struct Open {
    anchor: usize,
    /// `Some` for a mapping: its entries and the key read last, waiting for its value.
    mapping: Option<OpenMapping>,
    items: Vec<Rc<Node>>,
    nodes: usize,
    bytes: usize,
    height: usize,
}

#[derive(Default)]
struct OpenMapping {
    entries: Vec<(String, Rc<Node>)>,
    keys: HashSet<String>,
    /// The key read last, waiting for its value.
    key: Option<String>,
}

struct Builder<'a> {
    limits: &'a InputLimits,
    max_depth: usize,
    /// Nodes and text so far, aliases expanded.
    nodes: usize,
    bytes: usize,
    stack: Vec<Open>,
    anchors: HashMap<usize, Built>,
    root: Option<Built>,
}

impl Builder<'_> {
    /// Counts `nodes` nodes and `bytes` bytes nested `height` levels below the current depth;
    /// an error naming the limit once one is passed.
    fn take(
        &mut self,
        nodes: usize,
        bytes: usize,
        height: usize,
        mark: Marker,
    ) -> Result<(), ConfigError> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.bytes = self.bytes.saturating_add(bytes);
        let over = if self.nodes > self.limits.max_nodes {
            Over::Nodes
        } else if self.bytes > self.limits.max_file_bytes {
            Over::Text
        } else if self.stack.len() + height > self.max_depth {
            Over::Depth
        } else {
            return Ok(());
        };
        Err(over_limit(self.limits, over, mark.line(), mark.col() + 1))
    }

    fn event(&mut self, ev: Event, mark: Marker) -> Result<(), ConfigError> {
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                self.take(1, text.len(), 0, mark)?;
                let bytes = text.len();
                let built = Built {
                    bytes,
                    ..Built::scalar(resolve(text, style, tag))
                };
                self.complete(built, anchor, mark)
            }
            Event::Alias(id) => {
                let Some(target) = self.anchors.get(&id).cloned() else {
                    return Err(syntax_at(
                        "an alias refers to a node that contains it".into(),
                        mark,
                    ));
                };
                self.take(target.nodes, target.bytes, target.height, mark)?;
                self.complete(target, 0, mark)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let mapping = matches!(ev, Event::MappingStart(..)).then(OpenMapping::default);
                self.take(1, 0, 1, mark)?;
                self.stack.push(Open {
                    anchor,
                    mapping,
                    items: Vec::new(),
                    nodes: 1,
                    bytes: 0,
                    height: 1,
                });
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(open) = self.stack.pop() else {
                    return Err(syntax("unbalanced end of a list or mapping"));
                };
                let node = match open.mapping {
                    Some(m) => Node::Mapping(m.entries),
                    None => Node::List(open.items),
                };
                let built = Built {
                    node: Rc::new(node),
                    nodes: open.nodes,
                    bytes: open.bytes,
                    height: open.height,
                };
                self.complete(built, open.anchor, mark)
            }
            Event::Nothing | Event::StreamStart | Event::DocumentStart => Ok(()),
            Event::StreamEnd | Event::DocumentEnd => Ok(()),
        }
    }

    /// Files a complete node under its anchor and in its parent (or as the root).
    fn complete(&mut self, built: Built, anchor: usize, mark: Marker) -> Result<(), ConfigError> {
        if anchor > 0 {
            self.anchors.insert(anchor, built.clone());
        }
        let Some(parent) = self.stack.last_mut() else {
            self.root = Some(built);
            return Ok(());
        };
        parent.nodes = parent.nodes.saturating_add(built.nodes);
        parent.bytes = parent.bytes.saturating_add(built.bytes);
        parent.height = parent.height.max(built.height + 1);
        match &mut parent.mapping {
            None => parent.items.push(built.node),
            Some(m) => match m.key.take() {
                Some(k) if m.keys.contains(&k) => {
                    return Err(syntax_at(format!("duplicated key `{k}` in mapping"), mark))
                }
                Some(k) => {
                    m.keys.insert(k.clone());
                    m.entries.push((k, built.node));
                }
                None => m.key = Some(key_string(&built.node, mark)?),
            },
        }
        Ok(())
    }
}

/// A plain scalar resolved as YAML 1.2's core schema does (and `!!bool`, `!!int`, `!!float`,
/// `!!null`, `!!str` tags); a quoted one is a string.
fn resolve(text: String, style: TScalarStyle, tag: Option<Tag>) -> Yaml {
    if style != TScalarStyle::Plain {
        return Yaml::String(text);
    }
    let Some(tag) = tag else {
        return Yaml::from_str(&text);
    };
    if tag.handle != "tag:yaml.org,2002:" {
        return Yaml::String(text);
    }
    match tag.suffix.as_str() {
        "bool" => match text.as_str() {
            "true" | "True" | "TRUE" => Yaml::Boolean(true),
            "false" | "False" | "FALSE" => Yaml::Boolean(false),
            _ => Yaml::BadValue,
        },
        "int" => text.parse::<i64>().map_or(Yaml::BadValue, Yaml::Integer),
        "float" => match Yaml::from_str(&text) {
            Yaml::Real(_) | Yaml::Integer(_) => Yaml::Real(text),
            _ => Yaml::BadValue,
        },
        "null" => match text.as_str() {
            "~" | "null" => Yaml::Null,
            _ => Yaml::BadValue,
        },
        _ => Yaml::String(text),
    }
}

fn key_string(key: &Node, mark: Marker) -> Result<String, ConfigError> {
    match key {
        Node::Scalar(Yaml::String(s) | Yaml::Real(s)) => Ok(s.clone()),
        Node::Scalar(Yaml::Integer(i)) => Ok(i.to_string()),
        Node::Scalar(Yaml::Boolean(b)) => Ok(b.to_string()),
        Node::Scalar(Yaml::Null | Yaml::BadValue) => Ok("null".to_owned()),
        _ => Err(syntax_at(
            "a mapping key must be a plain value".into(),
            mark,
        )),
    }
}

/// The expanded value: called only on a document within the limits, whose depth is at most
/// [`DEPTH_CAP`](super::input::DEPTH_CAP).
fn to_value(node: &Node) -> Result<Value, ConfigError> {
    Ok(match node {
        Node::Scalar(y) => match y {
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Integer(i) => Value::Number((*i).into()),
            Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(s.clone()),
            },
            Yaml::String(s) => Value::String(s.clone()),
            _ => Value::Null,
        },
        Node::List(items) => Value::Array(
            items
                .iter()
                .map(|n| to_value(n))
                .collect::<Result<_, _>>()?,
        ),
        Node::Mapping(entries) => {
            let mut m = Map::new();
            for (k, v) in entries {
                m.insert(k.clone(), to_value(v)?);
            }
            Value::Object(m)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Value, ConfigError> {
        parse(text, &InputLimits::default())
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_endings_are_not_content() {
        let text = "- name: files\n  transport:\n    type: stdio\n";
        let windows = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        assert_eq!(p(&windows).unwrap(), p(text).unwrap());
    }

    #[test]
    fn keeps_key_order_and_types() {
        let v = p("b: 1\na: [x, 2.5, true, ~]\n").unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"b":1,"a":["x",2.5,true,null]}"#
        );
    }

    #[test]
    fn aliases_expand_and_count() {
        let v = p("a: &x [1, {k: v}]\nb: *x\n*x : 2\n").unwrap_err();
        assert_eq!(v.kind, ConfigErrorKind::Syntax, "{v}");
        let v = p("a: &x [1, {k: v}]\nb: *x\nc: &s key\n*s : 2\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": [1, {"k": "v"}], "b": [1, {"k": "v"}], "c": "key", "key": 2})
        );
        // The mapping, keys `a` and `b`, and twice the 5 nodes of `[1, {k: v}]`: 13.
        let limits = InputLimits::default().with_max_nodes(12);
        let e = parse("a: &x [1, {k: v}]\nb: *x\n", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooLarge);
        assert!(parse("a: &x [1, {k: v}]\nb: *x\n", &limits.with_max_nodes(13)).is_ok());
    }

    #[test]
    fn an_alias_counts_its_depth() {
        let limits = InputLimits::default().with_max_depth(3);
        assert!(parse("a: &x [[1]]\n", &limits).is_ok());
        let e = parse("a: &x [[1]]\nb: [*x]\n", &limits).unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::TooDeep);
        assert_eq!(
            e.message,
            "document is nested deeper than the `max_depth` input limit (3 levels), at line 2 column 5"
        );
    }

    #[test]
    fn tags_and_odd_scalars() {
        let v = p("a: !!str 12\nb: !!int x\nc: .inf\nd: !!float 1\ne: 0x1f\nf: ''\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "12", "b": null, "c": ".inf", "d": 1.0, "e": 31, "f": ""})
        );
    }

    #[test]
    fn a_duplicated_key_is_an_error() {
        let e = p("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::Syntax);
        assert_eq!(
            e.message,
            "invalid YAML: duplicated key `a` in mapping at byte 13 line 3 column 4"
        );
        // Also when the keys differ only in type (`1` and `"1"` are both the key "1").
        assert!(p("1: a\n'1': b\n").is_err());
    }

    #[test]
    fn only_the_first_document_is_built() {
        assert_eq!(p("a: 1\n---\nb: 2\n").unwrap(), serde_json::json!({"a": 1}));
        assert_eq!(p("").unwrap(), Value::Null);
        assert_eq!(p("---\n").unwrap(), Value::Null);
        assert_eq!(p("a: 1\n---\n[").unwrap_err().kind, ConfigErrorKind::Syntax);
    }
}
