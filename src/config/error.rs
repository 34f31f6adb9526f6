use std::fmt;
use std::path::PathBuf;

/// A configuration problem, with where it was found and what was meant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file, when the configuration came from one.
    pub file: Option<PathBuf>,
    /// The server the problem concerns, when known.
    pub server: Option<String>,
    /// The key path, e.g. `mcpServers.github.transport.type`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// The nearest valid alternative, when there is one.
    pub suggestion: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(server) = &self.server {
            write!(f, "server `{server}`: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}
