//! Property tests of the parsers that read config bytes: the JSON-with-comments stripper and
//! parser, `${...}` interpolation and the YAML loader. Each runs `MCP_FUZZ_CASES` cases (default
//! 2,000) from the seed `MCP_FUZZ_SEED` (default fixed); a failure names its seed and case.
//! `tests/config_untrusted.rs` does the same for the whole loader.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use super::input::InputLimits;
use super::interpolate::Vars;
use super::{jsonc, yaml, ConfigErrorKind};

use crate::test_rng::{cases, seed, Rng};

/// Runs `cases(2_000)` cases: `one` makes an input, `check` tests it within `per_case`.
fn fuzz<T: std::fmt::Debug>(
    target: &str,
    per_case: Duration,
    mut one: impl FnMut(&mut Rng) -> T,
    mut check: impl FnMut(&T),
) {
    let seed = seed(0x5eed_0000_c0ff_ee01);
    let mut rng = Rng::new(seed);
    for case in 0..cases(2_000) {
        let input = one(&mut rng);
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
        let took = start.elapsed();
        if outcome.is_err() || took > per_case {
            panic!(
                "{target}: case {case} (seed {seed}) {} after {took:?}; input: {input:?}",
                if outcome.is_err() {
                    "failed"
                } else {
                    "was too slow"
                },
            );
        }
    }
}

/// A random JSON value: strings full of what the stripper must leave alone.
fn value(rng: &mut Rng, depth: usize) -> Value {
    const STRS: &[&str] = &[
        "",
        "a",
        "//",
        "/*",
        "*/",
        "\"",
        "\\",
        ",",
        "]",
        "}",
        "é",
        "\u{1F600}",
        "\n",
        "\t",
        "${X}",
        " ",
        "\u{0}",
        "\u{7f}",
        "true",
        "1",
        "-",
        "#",
    ];
    match rng.below(if depth == 0 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => Value::Number((rng.next() as i64 >> rng.below(64)).into()),
        // Eighths: exact in binary, so they print and parse back the same.
        3 => Number::from_f64((rng.next() >> 20) as f64 / 8.0).map_or(Value::Null, Value::Number),
        4 => Value::String((0..rng.below(5)).map(|_| *rng.pick(STRS)).collect()),
        5 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth - 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(4) {
                let key: String = (0..rng.below(3)).map(|_| *rng.pick(STRS)).collect();
                m.insert(key, value(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// Whitespace, comments, or nothing.
fn filler(rng: &mut Rng) -> String {
    const COMMENT: &[&str] = &[
        "x", " ", "\"", "'", "/", "*", "{", "]", ",", "é", "//", "/ *",
    ];
    match rng.below(6) {
        0 => " ".into(),
        1 => "\n\t".into(),
        2 => format!(
            "//{}\n",
            (0..rng.below(5))
                .map(|_| *rng.pick(COMMENT))
                .collect::<String>()
        ),
        3 => format!(
            "/*{}*/",
            (0..rng.below(5))
                .map(|_| *rng.pick(COMMENT))
                .collect::<String>()
                .replace("*/", "* /")
        ),
        _ => String::new(),
    }
}

/// `v` as JSONC: comments and whitespace between tokens, and trailing commas.
fn jsonc_text(rng: &mut Rng, v: &Value, out: &mut String) {
    out.push_str(&filler(rng));
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                jsonc_text(rng, item, out);
            }
            if !items.is_empty() && rng.below(2) == 0 {
                out.push(',');
            }
            out.push_str(&filler(rng));
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&filler(rng));
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(&filler(rng));
                out.push(':');
                jsonc_text(rng, item, out);
            }
            if !m.is_empty() && rng.below(2) == 0 {
                out.push(',');
            }
            out.push_str(&filler(rng));
            out.push('}');
        }
        scalar => out.push_str(&serde_json::to_string(scalar).unwrap()),
    }
    out.push_str(&filler(rng));
}

/// Text from pieces that mean something to a parser, and random characters.
fn soup(rng: &mut Rng, pieces: &[&str], len: usize) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(len) {
        if rng.below(10) == 0 {
            out.push(char::from_u32(rng.below(0x800) as u32).unwrap_or('?'));
        } else {
            let piece: &&str = rng.pick(pieces);
            out.push_str(piece);
        }
    }
    out
}

const JSON_PIECES: &[&str] = &[
    "{", "}", "[", "]", ":", ",", "\"", "\\", "\\\"", "/", "*", "//", "/*", "*/", "\n", " ", "1",
    "-2.5e3", "true", "null", "\"a\"", "é", "\u{feff}",
];

#[test]
fn jsonc_values_survive_comments_and_trailing_commas() {
    fuzz(
        "jsonc-roundtrip",
        Duration::from_millis(200),
        |rng| {
            let v = value(rng, 4);
            let mut text = String::new();
            jsonc_text(rng, &v, &mut text);
            (v, text)
        },
        |(v, text)| {
            let parsed = jsonc::parse(text, &InputLimits::default()).unwrap();
            assert_eq!(&parsed, v);
        },
    );
}

#[test]
fn jsonc_stripper_keeps_offsets_and_never_panics() {
    fuzz(
        "jsonc-soup",
        Duration::from_millis(200),
        |rng| soup(rng, JSON_PIECES, 60),
        |text| {
            let out = jsonc::strip(text);
            assert_eq!(out.len(), text.len());
            let newlines = |s: &str| s.match_indices('\n').map(|(i, _)| i).collect::<Vec<_>>();
            assert_eq!(newlines(&out), newlines(text));
            if !text.contains('/') && !text.contains(',') {
                assert_eq!(&out, text);
            }
            let limits = InputLimits::default().with_max_nodes(20).with_max_depth(4);
            if let Err(e) = jsonc::parse(text, &limits) {
                assert!(
                    matches!(
                        e.kind,
                        ConfigErrorKind::Syntax
                            | ConfigErrorKind::TooLarge
                            | ConfigErrorKind::TooDeep
                    ),
                    "{e}"
                );
            }
        },
    );
}

const INTERPOLATION_PIECES: &[&str] = &[
    "$",
    "{",
    "}",
    "${",
    "$${",
    ":-",
    "env:",
    "input:",
    "${A}",
    "${BIG}",
    "${EMPTY:-d}",
    "${NOPE:-${BIG}}",
    "${A:-${B:-${C}}}",
    "${env:BIG}",
    "${input:i}",
    "${input:nope}",
    "${workspaceFolder}",
    "${userHome}",
    "${1}",
    "${}",
    "${ A}",
    "x",
    "é",
    "\u{0}",
];

#[test]
fn interpolation_is_linear_and_bounded() {
    let big = "b".repeat(1000);
    let env = BTreeMap::from([
        ("A".to_owned(), "value-a".to_owned()),
        ("BIG".to_owned(), big.clone()),
        ("EMPTY".to_owned(), String::new()),
        ("HOME".to_owned(), "/home/u".to_owned()),
    ]);
    let inputs = BTreeMap::from([("i".to_owned(), "input-value".to_owned())]);
    let longest = big.len();
    fuzz(
        "interpolation",
        Duration::from_millis(200),
        |rng| soup(rng, INTERPOLATION_PIECES, 40),
        |text| {
            let limit = 4000;
            let vars = Vars::new(Some(&env), &inputs, Some(PathBuf::from("/ws")), limit);
            let mut secrets = Vec::new();
            let mut total = 0;
            // The same text again and again: the budget is shared, so this ends.
            for _ in 0..1000 {
                match vars.expand(text, &mut secrets) {
                    Ok(out) => {
                        // Each `${` brings at most one value (or its own default text).
                        let refs = text.matches("${").count();
                        assert!(out.len() <= text.len() + refs * longest, "{out:?}");
                        if !text.contains('$') {
                            assert_eq!(&out, text);
                        }
                        total += out.len();
                        assert!(total <= limit);
                        if out.is_empty() {
                            break;
                        }
                    }
                    Err(e) => {
                        assert!(
                            matches!(
                                e.kind,
                                ConfigErrorKind::BadInterpolation
                                    | ConfigErrorKind::UndefinedVariable
                                    | ConfigErrorKind::MissingInput
                                    | ConfigErrorKind::TooLarge
                            ),
                            "{e}"
                        );
                        break;
                    }
                }
            }
        },
    );
}

/// The YAML loader this crate used before it counted nodes: `YamlLoader` and a conversion.
fn reference_yaml(text: &str) -> Option<Value> {
    fn convert(y: Yaml) -> Option<Value> {
        Some(match y {
            Yaml::Null | Yaml::BadValue => Value::Null,
            Yaml::Boolean(b) => Value::Bool(b),
            Yaml::Integer(i) => Value::Number(i.into()),
            Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(s),
            },
            Yaml::String(s) => Value::String(s),
            Yaml::Array(items) => {
                Value::Array(items.into_iter().map(convert).collect::<Option<_>>()?)
            }
            Yaml::Hash(h) => {
                let mut m = Map::new();
                for (k, v) in h {
                    let k = match k {
                        Yaml::String(s) | Yaml::Real(s) => s,
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        Yaml::Null => "null".to_owned(),
                        _ => return None,
                    };
                    m.insert(k, convert(v)?);
                }
                Value::Object(m)
            }
            Yaml::Alias(_) => return None,
        })
    }
    let docs = YamlLoader::load_from_str(text).ok()?;
    match docs.into_iter().next() {
        Some(doc) => convert(doc),
        None => Some(Value::Null),
    }
}

/// Nodes (values and keys), text bytes and depth of `v`.
fn measure(v: &Value) -> (usize, usize, usize) {
    match v {
        Value::String(s) => (1, s.len(), 0),
        Value::Array(items) => items
            .iter()
            .map(measure)
            .fold((1, 0, 1), |(n, b, d), (n2, b2, d2)| {
                (n + n2, b + b2, d.max(d2 + 1))
            }),
        Value::Object(m) => m.iter().fold((1, 0, 1), |(n, b, d), (k, v)| {
            let (n2, b2, d2) = measure(v);
            (n + 1 + n2, b + k.len() + b2, d.max(d2 + 1))
        }),
        _ => (1, 0, 0),
    }
}

const YAML_PIECES: &[&str] = &[
    "a", "b: ", "- ", "? ", ": ", "[", "]", "{", "}", ",", "\n", "\n  ", "\n    ", "\"", "'",
    "&x ", "&y ", "*x", "*y", "!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!t ", "|\n",
    ">\n", "#", "1", "0x1f", ".inf", "~", "true", "\t", "\\", "%", "@", "`",
];

#[test]
fn yaml_loader_is_bounded_typed_and_matches_the_reference() {
    let limits = InputLimits::default()
        .with_max_nodes(500)
        .with_max_depth(10)
        .with_max_file_bytes(4096);
    fuzz(
        "yaml",
        Duration::from_millis(200),
        |rng| {
            let mut text = soup(rng, YAML_PIECES, 50);
            if rng.below(4) == 0 {
                text = format!(
                    "{}{text}",
                    *rng.pick(&["---\n", "%YAML 1.2\n---\n", "--- "])
                );
            }
            text
        },
        |text| match yaml::parse(text, &limits) {
            Ok(v) => {
                let (nodes, bytes, depth) = measure(&v);
                assert!(nodes <= limits.max_nodes && bytes <= limits.max_file_bytes);
                assert!(depth <= limits.max_depth, "{v}");
                // One document within the limits: the old loader agrees (it reads every
                // document, so only when there is one; and it takes a key that a tag makes
                // invalid, `!!int x: v`, for no key, so not with tags).
                let one_doc = !text.contains("---") && !text.contains("...") && !text.contains('%');
                if one_doc && !text.contains("!!") {
                    assert_eq!(reference_yaml(text), Some(v));
                }
            }
            Err(e) => assert!(
                matches!(
                    e.kind,
                    ConfigErrorKind::Syntax | ConfigErrorKind::TooLarge | ConfigErrorKind::TooDeep
                ),
                "{e}"
            ),
        },
    );
}

/// `v` with every float made an integer.
fn without_floats(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => Value::Number((n.as_f64().unwrap_or(0.0) as i64).into()),
        Value::Array(items) => Value::Array(items.into_iter().map(without_floats).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, without_floats(v))).collect())
        }
        other => other,
    }
}

/// `v` as YAML.
fn to_yaml(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Array(items.iter().map(to_yaml).collect()),
        Value::Object(m) => Yaml::Hash(
            m.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), to_yaml(v)))
                .collect(),
        ),
    }
}

#[test]
fn yaml_values_round_trip() {
    fuzz(
        "yaml-roundtrip",
        Duration::from_millis(200),
        |rng| {
            // Integers, strings and the like: floats print in forms YAML reads back differently.
            let v = without_floats(value(rng, 4));
            let mut text = String::new();
            YamlEmitter::new(&mut text).dump(&to_yaml(&v)).unwrap();
            (v, text)
        },
        |(v, text)| {
            let parsed = yaml::parse(text, &InputLimits::default()).unwrap();
            assert_eq!(&parsed, v, "{text}");
        },
    );
}
