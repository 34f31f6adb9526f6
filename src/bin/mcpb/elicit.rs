//! Answering a server's `elicitation/create`: the server asks the user for input.
//!
//! | situation | what happens |
//! |---|---|
//! | `--input FIELD=VALUE` answers every required field | accepted with those values (checked against the schema), without asking; a line on stderr says so |
//! | a terminal (stderr is one, and the terminal device opens) | the form, on the terminal: the server's message, then each field (Enter leaves it out, or takes its default), then accept / decline / cancel |
//! | no terminal | declined; a line on stderr names the fields `--input` could answer |
//!
//! A form field is one of the flat schema's properties: a string (`format` email, uri, date,
//! date-time; `minLength`, `maxLength`), a number or integer (`minimum`, `maximum`), a boolean,
//! a single choice (`enum`, with `enumNames`, or `oneOf` of `const`/`title`), or a multiple
//! choice (an array whose `items` are such an enum; `minItems`, `maxItems`). A value typed that
//! does not fit is explained and asked again, at most [`MAX_TRIES`] times; then the form is
//! cancelled. A schema mcpb cannot show (another type, more than [`MAX_FIELDS`] fields, more
//! than [`MAX_OPTIONS`] choices) is answered with an error (-32602) naming the field.
//!
//! A URL-mode request (`mode: "url"`) shows the message and the address, and asks whether the
//! user will open it; mcpb never opens it, nor fetches it.
//!
//! Everything the server chose (message, titles, descriptions, choices) is shown escaped
//! ([`terminal::escaped`]) and cut at a length, so it can neither drive the terminal nor
//! flood it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use mcp_blocking::error::ErrorCode;
use mcp_blocking::handler::{close_signal, HandlerError};
use mcp_blocking::model::{ElicitParams, ElicitResult};
use serde_json::{Map, Value};

use crate::terminal;
use crate::tty::{Line, Lines, Tty, MAX_LINE};

/// The most fields a form may have.
pub(crate) const MAX_FIELDS: usize = 64;
/// The most choices a single or multiple choice field may offer.
pub(crate) const MAX_OPTIONS: usize = 100;
/// The most characters of the server's message shown.
pub(crate) const MAX_MESSAGE: usize = 2000;
/// The most characters of a field's title or description, or of a choice's title, shown.
const MAX_LABEL: usize = 300;
/// How many unusable answers a question takes before the form is cancelled.
pub(crate) const MAX_TRIES: usize = 3;

/// A `format` of a string field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

/// One choice: the value sent, and the title shown.
#[derive(Debug, Clone, PartialEq)]
struct Choice {
    value: String,
    title: Option<String>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text {
        format: Option<Format>,
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Bool,
    One(Vec<Choice>),
    Many {
        choices: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

/// The fields of a `requestedSchema`, in its order.
fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err("`properties` is not an object".into()),
    };
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "the form has {} fields; mcpb shows at most {MAX_FIELDS}",
            properties.len()
        ));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, p)| {
            let kind = kind_of(p).map_err(|e| format!("field `{name}`: {e}"))?;
            let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
            Ok(Field {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
                kind,
            })
        })
        .collect()
}

fn kind_of(p: &Value) -> Result<Kind, String> {
    let num = |key: &str| p.get(key).and_then(Value::as_f64);
    let count = |key: &str| p.get(key).and_then(Value::as_u64);
    match p.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(choices) = choices_of(p)? {
                return Ok(Kind::One(choices));
            }
            let format = match p.get("format").and_then(Value::as_str) {
                None => None,
                Some("email") => Some(Format::Email),
                Some("uri") => Some(Format::Uri),
                Some("date") => Some(Format::Date),
                Some("date-time") => Some(Format::DateTime),
                // An unknown format is a hint mcpb cannot check: the text is taken as typed.
                Some(_) => None,
            };
            Ok(Kind::Text {
                format,
                min_length: count("minLength"),
                max_length: count("maxLength"),
            })
        }
        Some(t @ ("number" | "integer")) => Ok(Kind::Number {
            integer: t == "integer",
            minimum: num("minimum"),
            maximum: num("maximum"),
        }),
        Some("boolean") => Ok(Kind::Bool),
        Some("array") => {
            let items = p.get("items").unwrap_or(&Value::Null);
            match choices_of(items)? {
                Some(choices) => Ok(Kind::Many {
                    choices,
                    min_items: count("minItems"),
                    max_items: count("maxItems"),
                }),
                None => Err("an array whose items are not an enum".into()),
            }
        }
        Some(other) => Err(format!("type `{other}` is not a form field")),
        None => Err("no type".into()),
    }
}

/// The choices of an enum schema (`enum` with optional `enumNames`, or `oneOf`/`anyOf` of
/// `const` and `title`); `None` when it is not one.
fn choices_of(p: &Value) -> Result<Option<Vec<Choice>>, String> {
    let choices: Vec<Choice> = if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names = p.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Choice {
                value: scalar_text(v),
                title: names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            })
            .collect()
    } else if let Some(options) = p
        .get("oneOf")
        .or_else(|| p.get("anyOf"))
        .and_then(Value::as_array)
    {
        options
            .iter()
            .map(|o| match o.get("const") {
                Some(v) => Ok(Choice {
                    value: scalar_text(v),
                    title: o.get("title").and_then(Value::as_str).map(str::to_owned),
                }),
                None => Err("a choice without `const`".to_owned()),
            })
            .collect::<Result<_, _>>()?
    } else {
        return Ok(None);
    };
    if choices.is_empty() {
        return Err("an enum without choices".into());
    }
    if choices.len() > MAX_OPTIONS {
        return Err(format!(
            "{} choices; mcpb shows at most {MAX_OPTIONS}",
            choices.len()
        ));
    }
    Ok(Some(choices))
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text` cut at `max` characters (with `...` when cut), then escaped.
fn shown(text: &str, max: usize) -> String {
    let cut: String = text.chars().take(max).collect();
    let more = if cut.len() < text.len() { "..." } else { "" };
    format!("{}{more}", terminal::escaped(&cut))
}

impl Field {
    /// The line that asks for this field: its name, title, kind and default.
    fn question(&self) -> String {
        let mut q = format!("  {}", shown(&self.name, MAX_LABEL));
        if let Some(t) = &self.title {
            let _ = write!(q, " ({})", shown(t, MAX_LABEL));
        }
        let _ = write!(q, " [{}", self.kind.describe());
        if self.required {
            q.push_str(", required");
        }
        if let Some(d) = &self.default {
            let d = match d {
                Value::Array(a) => a.iter().map(scalar_text).collect::<Vec<_>>().join(","),
                v => scalar_text(v),
            };
            let _ = write!(q, ", Enter for {}", shown(&d, MAX_LABEL));
        } else if !self.required {
            q.push_str(", Enter to leave out");
        }
        q.push_str("]: ");
        q
    }

    /// `text` as this field's value, or why it is not one.
    fn parse(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        match &self.kind {
            Kind::Text {
                format,
                min_length,
                max_length,
            } => {
                let n = text.chars().count() as u64;
                if let Some(min) = min_length.filter(|m| n < *m) {
                    return Err(format!("at least {min} characters"));
                }
                if let Some(max) = max_length.filter(|m| n > *m) {
                    return Err(format!("at most {max} characters"));
                }
                if let Some(f) = format {
                    check_format(*f, text)?;
                }
                Ok(Value::String(text.to_owned()))
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let value: Value = if *integer {
                    text.parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| "a whole number".to_owned())?
                } else {
                    let v = text
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| "a number".to_owned())?;
                    serde_json::Number::from_f64(v)
                        .map(Value::Number)
                        .ok_or_else(|| "a number".to_owned())?
                };
                let v = value.as_f64().unwrap_or(f64::NAN);
                if let Some(min) = minimum.filter(|m| v < *m) {
                    return Err(format!("at least {min}"));
                }
                if let Some(max) = maximum.filter(|m| v > *m) {
                    return Err(format!("at most {max}"));
                }
                Ok(value)
            }
            Kind::Bool => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
                "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
                _ => Err("yes or no".into()),
            },
            Kind::One(choices) => pick(choices, text).map(Value::String),
            Kind::Many {
                choices,
                min_items,
                max_items,
            } => {
                let mut picked: Vec<String> = Vec::new();
                for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let v = pick(choices, part)?;
                    if !picked.contains(&v) {
                        picked.push(v);
                    }
                }
                let n = picked.len() as u64;
                if let Some(min) = min_items.filter(|m| n < *m) {
                    return Err(format!("at least {min} of the choices"));
                }
                if let Some(max) = max_items.filter(|m| n > *m) {
                    return Err(format!("at most {max} of the choices"));
                }
                Ok(Value::Array(
                    picked.into_iter().map(Value::String).collect(),
                ))
            }
        }
    }
}

impl Kind {
    fn describe(&self) -> String {
        match self {
            Kind::Text {
                format,
                min_length,
                max_length,
            } => {
                let mut d = match format {
                    Some(Format::Email) => "email address".to_owned(),
                    Some(Format::Uri) => "URI".to_owned(),
                    Some(Format::Date) => "date YYYY-MM-DD".to_owned(),
                    Some(Format::DateTime) => "date-time YYYY-MM-DDTHH:MM:SSZ".to_owned(),
                    None => "text".to_owned(),
                };
                match (min_length, max_length) {
                    (Some(a), Some(b)) => {
                        let _ = write!(d, ", {a} to {b} characters");
                    }
                    (Some(a), None) => {
                        let _ = write!(d, ", at least {a} characters");
                    }
                    (None, Some(b)) => {
                        let _ = write!(d, ", at most {b} characters");
                    }
                    (None, None) => {}
                }
                d
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let mut d = if *integer { "integer" } else { "number" }.to_owned();
                if let Some(m) = minimum {
                    let _ = write!(d, " >= {m}");
                }
                if let Some(m) = maximum {
                    let _ = write!(d, " <= {m}");
                }
                d
            }
            Kind::Bool => "y/n".to_owned(),
            Kind::One(choices) => format!("one of: {}", list(choices)),
            Kind::Many { choices, .. } => format!("some of, comma-separated: {}", list(choices)),
        }
    }
}

/// The choices as `1 value (title), 2 ...`.
fn list(choices: &[Choice]) -> String {
    choices
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.title {
            Some(t) => format!(
                "{} {} ({})",
                i + 1,
                shown(&c.value, MAX_LABEL),
                shown(t, MAX_LABEL)
            ),
            None => format!("{} {}", i + 1, shown(&c.value, MAX_LABEL)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The choice `text` names: its value, its title (any case) or its number from 1.
fn pick(choices: &[Choice], text: &str) -> Result<String, String> {
    let found = choices
        .iter()
        .find(|c| c.value == text)
        .or_else(|| {
            choices.iter().find(|c| {
                c.title
                    .as_deref()
                    .is_some_and(|t| t.eq_ignore_ascii_case(text))
            })
        })
        .or_else(|| {
            text.parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| choices.get(i))
        });
    found
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("one of the choices, not `{}`", shown(text, MAX_LABEL)))
}

fn check_format(format: Format, text: &str) -> Result<(), String> {
    let ok = match format {
        Format::Email => is_email(text),
        Format::Uri => is_uri(text),
        Format::Date => is_date(text),
        Format::DateTime => is_date_time(text),
    };
    if ok {
        return Ok(());
    }
    Err(match format {
        Format::Email => "an email address (name@example.com)",
        Format::Uri => "a URI (https://example.com/)",
        Format::Date => "a date, YYYY-MM-DD",
        Format::DateTime => "a date and time, YYYY-MM-DDTHH:MM:SSZ or with an offset (+01:00)",
    }
    .to_owned())
}

fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `YYYY-MM-DD`, a day that exists.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| {
        text.get(r)
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse::<u32>().ok())
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339: `YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)`.
fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (clock, zone) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, None)
    } else {
        match time.rfind(['+', '-']) {
            Some(i) => (&time[..i], Some(&time[i + 1..])),
            None => return false,
        }
    };
    let two = |s: &str, max: u32| {
        s.len() == 2
            && s.bytes().all(|c| c.is_ascii_digit())
            && s.parse::<u32>().unwrap_or(99) <= max
    };
    let (whole, frac) = match clock.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let clock_ok = parts.len() == 3
        && two(parts[0], 23)
        && two(parts[1], 59)
        && two(parts[2], 60)
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()));
    let zone_ok = zone.is_none_or(|z| {
        z.split_once(':')
            .is_some_and(|(h, m)| two(h, 23) && two(m, 59))
    });
    clock_ok && zone_ok
}

/// What the user did with a question of three answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choose {
    Yes,
    No,
    Cancel,
}

/// `y`/`yes`, `n`/`no`, `c`/`cancel` (any case); `None` for anything else.
pub(crate) fn parse_choose(line: &str) -> Option<Choose> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "a" | "accept" => Some(Choose::Yes),
        "n" | "no" | "d" | "decline" => Some(Choose::No),
        "c" | "cancel" => Some(Choose::Cancel),
        _ => None,
    }
}

/// How a form ended.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Outcome {
    fn into_result(self) -> ElicitResult {
        match self {
            Outcome::Accept(content) => ElicitResult::accept(content),
            Outcome::Decline => ElicitResult::decline(),
            Outcome::Cancel => ElicitResult::cancel(),
        }
    }
}

/// A line that could not be used as an answer, and what to do about it.
enum Unread {
    /// Stop asking: the form is cancelled.
    Stop,
    /// Ask again (a line too long).
    Again,
}

/// The next usable line, or what ended the questions.
fn read(lines: &mut dyn Lines, out: &mut dyn Write) -> Result<String, Unread> {
    match lines.next_line() {
        Line::Text(t) => Ok(t),
        Line::TooLong => {
            let _ = writeln!(out, "  (more than {MAX_LINE} bytes: not taken)");
            Err(Unread::Again)
        }
        Line::End | Line::Closed => Err(Unread::Stop),
        Line::TimedOut => {
            let _ = writeln!(out, "  (no answer in time: cancelled)");
            Err(Unread::Stop)
        }
    }
}

/// Asks `question` until it gets `y`, `n` or `c` (at most [`MAX_TRIES`] times: then cancel).
pub(crate) fn ask_choose(lines: &mut dyn Lines, out: &mut dyn Write, question: &str) -> Choose {
    for _ in 0..MAX_TRIES {
        let _ = write!(out, "{question}");
        let _ = out.flush();
        match read(lines, out) {
            Ok(line) => {
                if let Some(c) = parse_choose(&line) {
                    return c;
                }
            }
            Err(Unread::Again) => {}
            Err(Unread::Stop) => return Choose::Cancel,
        }
    }
    Choose::Cancel
}

/// The form on the terminal: `given` holds the fields `--input` answered already.
fn fill(
    server: &str,
    message: &str,
    fields: &[Field],
    mut given: Map<String, Value>,
    lines: &mut dyn Lines,
    out: &mut dyn Write,
) -> Outcome {
    let _ = writeln!(
        out,
        "mcpb: server `{}` asks for input:\n  {}",
        terminal::escaped(server),
        shown(message, MAX_MESSAGE).replace('\n', "\n  ")
    );
    match ask_choose(
        lines,
        out,
        "  fill in the form? [y]es / [n]o (decline) / [c]ancel: ",
    ) {
        Choose::Yes => {}
        Choose::No => return Outcome::Decline,
        Choose::Cancel => return Outcome::Cancel,
    }
    for field in fields {
        if given.contains_key(&field.name) {
            continue;
        }
        if let Some(d) = &field.description {
            let _ = writeln!(out, "  {}", shown(d, MAX_LABEL));
        }
        let mut answered = false;
        for _ in 0..MAX_TRIES {
            let _ = write!(out, "{}", field.question());
            let _ = out.flush();
            let line = match read(lines, out) {
                Ok(l) => l,
                Err(Unread::Again) => continue,
                Err(Unread::Stop) => return Outcome::Cancel,
            };
            if line.trim().is_empty() {
                if field.required && field.default.is_none() {
                    let _ = writeln!(out, "  (required)");
                    continue;
                }
                // Left out: the library fills the schema's default, if any, when accepting.
                answered = true;
                break;
            }
            match field.parse(&line) {
                Ok(v) => {
                    given.insert(field.name.clone(), v);
                    answered = true;
                    break;
                }
                Err(why) => {
                    let _ = writeln!(out, "  (expected {why})");
                }
            }
        }
        if !answered {
            let _ = writeln!(
                out,
                "mcpb: no usable value for `{}`: the form is cancelled",
                shown(&field.name, MAX_LABEL)
            );
            return Outcome::Cancel;
        }
    }
    let summary = Value::Object(given.clone()).to_string();
    let _ = writeln!(out, "  values: {}", shown(&summary, MAX_MESSAGE));
    match ask_choose(
        lines,
        out,
        "  send them? [y]es (accept) / [n]o (decline) / [c]ancel: ",
    ) {
        Choose::Yes => Outcome::Accept(given),
        Choose::No => Outcome::Decline,
        Choose::Cancel => Outcome::Cancel,
    }
}

/// The values of `inputs` for the fields of the form, checked; the problems of those that do
/// not fit.
fn from_inputs(
    fields: &[Field],
    inputs: &BTreeMap<String, String>,
) -> (Map<String, Value>, Vec<String>) {
    let mut given = Map::new();
    let mut problems = Vec::new();
    for field in fields {
        if let Some(text) = inputs.get(&field.name) {
            match field.parse(text) {
                Ok(v) => {
                    given.insert(field.name.clone(), v);
                }
                Err(why) => problems.push(format!(
                    "--input {}: expected {why}",
                    shown(&field.name, MAX_LABEL)
                )),
            }
        }
    }
    (given, problems)
}

/// The required fields without a value in `given` nor a default.
fn missing<'f>(fields: &'f [Field], given: &Map<String, Value>) -> Vec<&'f str> {
    fields
        .iter()
        .filter(|f| f.required && f.default.is_none() && !given.contains_key(&f.name))
        .map(|f| f.name.as_str())
        .collect()
}

/// The elicitation handler of a connection: `inputs` are the `--input` values.
pub(crate) struct Elicitor {
    inputs: BTreeMap<String, String>,
}

impl Elicitor {
    pub(crate) fn new(inputs: &[(String, String)]) -> Self {
        Elicitor {
            inputs: inputs.iter().cloned().collect(),
        }
    }

    /// Answers one request (on the connection's request thread).
    pub(crate) fn elicit(
        &self,
        server: &str,
        params: &ElicitParams,
    ) -> Result<ElicitResult, HandlerError> {
        crate::clear_progress();
        let open = || Tty::open(close_signal());
        if params.is_url_mode() {
            return Ok(match open() {
                Some(mut tty) => url_mode(server, params, &mut tty),
                None => {
                    eprintln!(
                        "mcpb: server `{}` asks you to open an address; there is no terminal to \
                         ask on: declined",
                        terminal::escaped(server)
                    );
                    ElicitResult::decline()
                }
            });
        }
        let schema = params.requested_schema.clone().unwrap_or(Value::Null);
        let fields = fields(&schema).map_err(|e| {
            eprintln!(
                "mcpb: server `{}` asks for input with a form mcpb cannot show: {}",
                terminal::escaped(server),
                shown(&e, MAX_MESSAGE)
            );
            HandlerError::new(ErrorCode::INVALID_PARAMS, format!("requestedSchema: {e}"))
        })?;
        let (given, problems) = from_inputs(&fields, &self.inputs);
        let unanswered = missing(&fields, &given);
        if !given.is_empty() && problems.is_empty() && unanswered.is_empty() {
            eprintln!(
                "mcpb: server `{}` asks for input: answered from --input ({})",
                terminal::escaped(server),
                terminal::escaped(&given.keys().cloned().collect::<Vec<_>>().join(", "))
            );
            return Ok(ElicitResult::accept(given));
        }
        for p in &problems {
            eprintln!("mcpb: server `{}`: {p}", terminal::escaped(server));
        }
        match open() {
            Some(mut tty) => {
                let mut err = std::io::stderr();
                let outcome = fill(server, &params.message, &fields, given, &mut tty, &mut err);
                Ok(outcome.into_result())
            }
            None => {
                eprintln!(
                    "{}",
                    declined(server, &params.message, &fields, &unanswered)
                );
                Ok(ElicitResult::decline())
            }
        }
    }
}

/// The line that says a form was declined for want of a terminal, naming the fields
/// `--input` could answer (the server chose them: escaped, and cut like its message).
fn declined(server: &str, message: &str, fields: &[Field], unanswered: &[&str]) -> String {
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    format!(
        "mcpb: server `{}` asks for input ({}); there is no terminal to ask on: declined \
         (answer its fields with --input FIELD=VALUE: {}{})",
        terminal::escaped(server),
        shown(message, 200),
        shown(&names.join(", "), MAX_MESSAGE),
        if unanswered.is_empty() {
            String::new()
        } else {
            format!("; required: {}", shown(&unanswered.join(", "), MAX_MESSAGE))
        }
    )
}

/// URL mode: the message and the address, and whether the user will open it (mcpb never does).
fn url_mode(server: &str, params: &ElicitParams, tty: &mut Tty) -> ElicitResult {
    url_mode_on(server, params, tty, &mut std::io::stderr())
}

/// Shows a URL-mode request (escaped, the address in full) and asks whether the user will open
/// it; mcpb never opens it.
fn url_mode_on(
    server: &str,
    params: &ElicitParams,
    tty: &mut dyn Lines,
    out: &mut dyn Write,
) -> ElicitResult {
    let url = params.url.as_deref().unwrap_or("");
    let _ = writeln!(
        out,
        "mcpb: server `{}` asks you to open an address:\n  {}\n  address: {}\n  (mcpb does not \
         open it; open it yourself in a browser only if you trust it)",
        terminal::escaped(server),
        shown(&params.message, MAX_MESSAGE).replace('\n', "\n  "),
        shown(url, MAX_LINE)
    );
    match ask_choose(
        tty,
        out,
        "  will you open it? [y]es (accept) / [n]o (decline) / [c]ancel: ",
    ) {
        Choose::Yes => ElicitResult::accept(Map::new()),
        Choose::No => ElicitResult::decline(),
        Choose::Cancel => ElicitResult::cancel(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tty::Script;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "ok": {"type": "boolean", "default": false},
            "when": {"type": "string", "format": "date-time"},
            "pet": {"type": "string", "oneOf": [{"const": "c", "title": "Cat"}, {"const": "d", "title": "Dog"}]},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2}
        }, "required": ["name"]})
    }

    fn field<'f>(fields: &'f [Field], name: &str) -> &'f Field {
        fields.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn values_are_checked_against_the_schema() {
        let fields = fields(&schema()).unwrap();
        let name = field(&fields, "name");
        assert!(name.required);
        assert!(name.parse("a").unwrap_err().contains("at least 2"));
        assert!(name.parse("abcdef").unwrap_err().contains("at most 5"));
        assert_eq!(name.parse(" Ada ").unwrap(), json!("Ada"));
        let age = field(&fields, "age");
        assert_eq!(age.parse("42").unwrap(), json!(42));
        assert!(age.parse("4.5").is_err() && age.parse("151").is_err());
        assert_eq!(field(&fields, "ok").parse("Yes").unwrap(), json!(true));
        let when = field(&fields, "when");
        assert!(when.parse("2025-01-31T10:00:00Z").is_ok());
        assert!(when.parse("2025-01-31T10:00:00.5+01:00").is_ok());
        assert!(when.parse("2025-02-30T10:00:00Z").is_err());
        assert!(when.parse("2025-01-31 10:00").is_err());
        let pet = field(&fields, "pet");
        assert_eq!(pet.parse("dog").unwrap(), json!("d"));
        assert_eq!(pet.parse("1").unwrap(), json!("c"));
        assert!(pet.parse("3").is_err());
        let tags = field(&fields, "tags");
        assert_eq!(tags.parse("a, c, a").unwrap(), json!(["a", "c"]));
        assert!(tags.parse("a,b,c").unwrap_err().contains("at most 2"));
        assert!(is_email("a@b.co") && !is_email("a@b") && !is_email("a b@c.d"));
        assert!(is_uri("https://x.y/") && !is_uri("x y:z") && !is_uri("1http://x"));
        assert!(is_date("2024-02-29") && !is_date("2023-02-29") && !is_date("2024-13-01"));
    }

    #[test]
    fn schemas_mcpb_cannot_show_are_refused_with_their_field() {
        let nested = json!({"properties": {"x": {"type": "object"}}});
        assert!(fields(&nested).unwrap_err().contains("field `x`"));
        let many: Map<String, Value> = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let err = fields(&json!({ "properties": many })).unwrap_err();
        assert!(err.contains(&MAX_FIELDS.to_string()), "{err}");
        let choices: Vec<String> = (0..=MAX_OPTIONS).map(|i| i.to_string()).collect();
        let big = json!({"properties": {"e": {"type": "string", "enum": choices}}});
        assert!(fields(&big).unwrap_err().contains("choices"));
    }

    #[test]
    fn the_unattended_decline_names_the_fields_escaped_and_cut() {
        let fields = fields(&schema()).unwrap();
        let line = declined("srv", "Tell us", &fields, &["name"]);
        assert!(
            line.contains("--input FIELD=VALUE: name, age, ok, when, pet, tags; required: name"),
            "{line}"
        );
        // Names the server chose: as many as a form may have, each as long as it likes.
        let long: Map<String, Value> = (0..MAX_FIELDS)
            .map(|i| {
                (
                    format!("{i}\x1b[2J{}", "n".repeat(10_000)),
                    json!({"type": "string"}),
                )
            })
            .collect();
        let many = super::fields(&json!({ "properties": long })).unwrap();
        let names: Vec<&str> = many.iter().map(|f| f.name.as_str()).collect();
        let line = declined("srv", "Tell us", &many, &names);
        assert!(line.len() < 3 * MAX_MESSAGE + 1000, "{} bytes", line.len());
        assert!(!line.contains('\x1b'), "{line:?}");
    }

    #[test]
    fn a_url_request_is_shown_escaped_and_only_consent_is_asked() {
        let params: ElicitParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in\x1b[2J", "url": "https://auth.example.com/x?s=1",
            "elicitationId": "e1"}))
        .unwrap();
        for (typed, action) in [("y", "accept"), ("n", "decline"), ("c", "cancel")] {
            let mut out = Vec::new();
            let r = url_mode_on("srv", &params, &mut Script::of(&[typed]), &mut out);
            let shown = String::from_utf8(out).unwrap();
            assert_eq!(
                serde_json::to_value(&r).unwrap()["action"],
                action,
                "{shown}"
            );
            assert!(shown.contains("https://auth.example.com/x?s=1"), "{shown}");
            assert!(shown.contains("mcpb does not open it"), "{shown}");
            assert!(!shown.contains('\x1b'), "{shown:?}");
        }
        // No answer (end of input) is a cancel, never an accept.
        let r = url_mode_on("srv", &params, &mut Script::of(&[]), &mut Vec::new());
        assert_eq!(serde_json::to_value(&r).unwrap()["action"], "cancel");
    }

    fn run(lines: &[&str], given: Map<String, Value>) -> (Outcome, String) {
        let fields = fields(&schema()).unwrap();
        let mut out = Vec::new();
        let outcome = fill(
            "srv",
            "Tell us\x1b[2J",
            &fields,
            given,
            &mut Script::of(lines),
            &mut out,
        );
        (outcome, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_form_is_filled_asked_again_on_bad_values_and_accepted() {
        let (outcome, shown) = run(
            &["y", "", "x", "Ada", "200", "36", "", "", "Cat", "", "yes"],
            Map::new(),
        );
        let Outcome::Accept(content) = outcome else {
            panic!("{outcome:?}\n{shown}")
        };
        assert_eq!(
            json!(content),
            json!({"name": "Ada", "age": 36, "pet": "c"})
        );
        assert!(shown.contains("Tell us\\u{1b}[2J"), "{shown}");
        assert!(shown.contains("(required)") && shown.contains("(expected at most 150)"));
    }

    #[test]
    fn fields_given_by_input_are_not_asked_and_answers_end_the_form() {
        let mut given = Map::new();
        given.insert("name".into(), json!("Bob"));
        let (outcome, shown) = run(&["y", "", "", "", "", "", "y"], given);
        assert_eq!(
            outcome,
            Outcome::Accept(serde_json::from_value(json!({"name": "Bob"})).unwrap())
        );
        assert!(!shown.contains("  name ["), "{shown}");
        assert_eq!(run(&["n"], Map::new()).0, Outcome::Decline);
        assert_eq!(run(&["c"], Map::new()).0, Outcome::Cancel);
        // The end of input, and a value that never fits, cancel.
        assert_eq!(run(&["y"], Map::new()).0, Outcome::Cancel);
        assert_eq!(run(&["y", "x", "y", "z"], Map::new()).0, Outcome::Cancel);
        // A line too long is asked again; the third unusable answer cancels.
        let mut script = Script(
            [
                Line::Text("y".into()),
                Line::TooLong,
                Line::TooLong,
                Line::TooLong,
            ]
            .into(),
        );
        let fields = fields(&schema()).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            fill("s", "m", &fields, Map::new(), &mut script, &mut out),
            Outcome::Cancel
        );
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("more than 4096 bytes"));
    }

    #[test]
    fn input_values_are_checked_and_required_fields_counted() {
        let fields = fields(&schema()).unwrap();
        let inputs: BTreeMap<String, String> = [
            ("age".to_owned(), "x".to_owned()),
            ("other".to_owned(), "1".to_owned()),
        ]
        .into();
        let (given, problems) = from_inputs(&fields, &inputs);
        assert!(given.is_empty());
        assert_eq!(
            problems,
            vec!["--input age: expected a whole number".to_owned()]
        );
        assert_eq!(missing(&fields, &given), vec!["name"]);
    }
}
