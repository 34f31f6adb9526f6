//! [`InputLimits`]: how much a config file can make the loader read and build, and the bounded
//! reads and errors that enforce them.

use std::io::Read;
use std::path::Path;

use super::{ConfigError, ConfigErrorKind};

/// The deepest nesting [`InputLimits::max_depth`] can allow: the JSON parser reads no deeper.
pub(crate) const DEPTH_CAP: usize = 127;

/// How much a config file (or text, or template, or env file) can make the loader read and
/// build. Config files are data from wherever they came from: a file that is too big, too
/// deep, or that expands without end through YAML aliases or `${...}` variables is a typed
/// [`ConfigError`] of kind [`ConfigErrorKind::TooLarge`] or [`ConfigErrorKind::TooDeep`] whose
/// message names the limit, found before the memory is spent.
///
/// Set them with [`ConfigLoader::with_input_limits`](crate::ConfigLoader::with_input_limits); the
/// defaults fit any real configuration by orders of magnitude.
///
/// ```
/// use mcp_blocking::config::{ConfigErrorKind, InputLimits};
/// use mcp_blocking::ConfigLoader;
/// assert_eq!(InputLimits::default().max_file_bytes, 4 * 1024 * 1024);
/// assert_eq!(InputLimits::default().max_nodes, 100_000);
/// assert_eq!(InputLimits::default().max_depth, 64);
///
/// // Ten levels of nine aliases each: a billion nodes once expanded, stopped at the limit.
/// let mut laughs = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
/// for i in 1..10 {
///     laughs += &format!("l{i}: &l{i} [{}]\n", vec![format!("*l{}", i - 1); 9].join(", "));
/// }
/// let err = ConfigLoader::new().load_str(&laughs).unwrap_err();
/// assert_eq!(err.kind, ConfigErrorKind::TooLarge);
/// assert!(err.message.contains("`max_nodes` input limit (100000)"));
///
/// let small = InputLimits::default().with_max_file_bytes(64);
/// let err = ConfigLoader::new().with_input_limits(small).load_str(&laughs).unwrap_err();
/// assert_eq!(err.to_string(), "text is larger than the `max_file_bytes` input limit (64 bytes)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputLimits {
    /// The largest config file, text, template or env file read, in bytes; a file is read up to
    /// one byte past it, never further. It also bounds growth: a YAML document may hold at most
    /// this much text (keys and values) once its aliases are expanded, and the values of one
    /// load at most this much once their `${...}` variables are expanded. Default: 4 MiB.
    pub max_file_bytes: usize,
    /// The most nodes a document may have (every value, key, list and mapping counts one),
    /// counted with YAML aliases expanded, as they are read: an alias costs the size of what it
    /// names, and the count stops at the limit before anything is expanded. Default: 100,000.
    pub max_nodes: usize,
    /// The deepest nesting of lists and mappings, in JSON, YAML (aliases expanded) and template
    /// front matter; the top-level mapping is depth 1. At most 127, the deepest the JSON parser
    /// reads (a larger value acts as 127). Default: 64.
    pub max_depth: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_file_bytes: 4 * 1024 * 1024,
            max_nodes: 100_000,
            max_depth: 64,
        }
    }
}

impl InputLimits {
    /// Sets [`max_file_bytes`](InputLimits::max_file_bytes).
    #[must_use]
    pub fn with_max_file_bytes(mut self, bytes: usize) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Sets [`max_nodes`](InputLimits::max_nodes).
    #[must_use]
    pub fn with_max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = nodes;
        self
    }

    /// Sets [`max_depth`](InputLimits::max_depth).
    #[must_use]
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// The depth limit in force (`max_depth`, at most [`DEPTH_CAP`]).
    pub(crate) fn depth(&self) -> usize {
        self.max_depth.min(DEPTH_CAP)
    }

    /// Checks the length of text handed over as a string.
    pub(crate) fn check_text(&self, text: &str) -> Result<(), ConfigError> {
        if text.len() > self.max_file_bytes {
            return Err(ConfigError::new(
                ConfigErrorKind::TooLarge,
                format!(
                    "text is larger than the `max_file_bytes` input limit ({} bytes)",
                    self.max_file_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Reads the UTF-8 file at `path`, at most `max_file_bytes` of it. `what` names it in the
    /// messages (`file`, ``env file `x.env` ``); a read error is of kind `io_kind`.
    pub(crate) fn read(
        &self,
        path: &Path,
        what: &str,
        io_kind: ConfigErrorKind,
    ) -> Result<String, ConfigError> {
        let io = |e: std::io::Error| {
            let message = if what == "file" {
                format!("cannot read: {e}")
            } else {
                format!("cannot read {what}: {e}")
            };
            ConfigError::new(io_kind, message)
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let cap = u64::try_from(self.max_file_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let mut bytes = Vec::new();
        file.take(cap).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() > self.max_file_bytes {
            return Err(ConfigError::new(
                ConfigErrorKind::TooLarge,
                format!(
                    "{what} is larger than the `max_file_bytes` input limit ({} bytes)",
                    self.max_file_bytes
                ),
            ));
        }
        String::from_utf8(bytes).map_err(|_| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ))
        })
    }
}

/// Which limit a document went over while it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Over {
    Nodes,
    Text,
    Depth,
}

/// The error for a document over `limit`, stopped at `line` and `column` (1-based).
pub(crate) fn over_limit(
    limits: &InputLimits,
    over: Over,
    line: usize,
    column: usize,
) -> ConfigError {
    let (kind, message) = match over {
        Over::Nodes => (
            ConfigErrorKind::TooLarge,
            format!(
                "document has more nodes than the `max_nodes` input limit ({}), counting keys \
                 and YAML aliases expanded",
                limits.max_nodes
            ),
        ),
        Over::Text => (
            ConfigErrorKind::TooLarge,
            format!(
                "document holds more text than the `max_file_bytes` input limit ({} bytes) once \
                 YAML aliases are expanded",
                limits.max_file_bytes
            ),
        ),
        Over::Depth => (
            ConfigErrorKind::TooDeep,
            format!(
                "document is nested deeper than the `max_depth` input limit ({} levels)",
                limits.depth()
            ),
        ),
    };
    ConfigError::new(kind, format!("{message}, at line {line} column {column}"))
}
