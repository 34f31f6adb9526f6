//! `${VAR}`, `${VAR:-default}`, `${env:VAR}` and `${input:id}` expansion in config strings.
//!
//! `$${` writes a literal `${`. `${workspaceFolder}` and `${userHome}` are taken from the variables
//! when set there, else from the config file's location and `HOME` (on Windows `USERPROFILE`,
//! else `HOME`).
//!
//! Expansion is one pass: a value or default put in is never expanded again. What one load's
//! values grow to is bounded (`InputLimits::max_file_bytes`, all values together), so a file
//! that names a large variable many times fails instead of filling memory.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::locations::Platform;
use super::{ConfigError, ConfigErrorKind};

/// Where variable values come from.
pub(crate) struct Vars<'a> {
    /// The environment; `None` reads the process environment.
    pub(crate) env: Option<&'a BTreeMap<String, String>>,
    /// Values for `${input:id}`.
    pub(crate) inputs: &'a BTreeMap<String, String>,
    /// The workspace folder for `${workspaceFolder}`.
    pub(crate) workspace: Option<PathBuf>,
    /// How many bytes the expanded values of this load may still take.
    remaining: Cell<usize>,
    /// The limit `remaining` started from, for messages.
    limit: usize,
}

/// Values shorter than this are not treated as secrets by the redaction rule (they would hide
/// noise).
pub(super) const MIN_SECRET_LEN: usize = 4;

impl<'a> Vars<'a> {
    /// Variables whose expansions, all together, take at most `limit` bytes.
    pub(crate) fn new(
        env: Option<&'a BTreeMap<String, String>>,
        inputs: &'a BTreeMap<String, String>,
        workspace: Option<PathBuf>,
        limit: usize,
    ) -> Self {
        Vars {
            env,
            inputs,
            workspace,
            remaining: Cell::new(limit),
            limit,
        }
    }

    /// Takes `out` plus `more` bytes from what is left, or fails naming the limit.
    fn fits(&self, out: &str, more: usize) -> Result<(), ConfigError> {
        if out.len().saturating_add(more) <= self.remaining.get() {
            return Ok(());
        }
        Err(ConfigError::new(
            ConfigErrorKind::TooLarge,
            format!(
                "values grow past the `max_file_bytes` input limit ({} bytes) once `${{...}}` \
                 variables are expanded",
                self.limit
            ),
        ))
    }

    /// The user's home for `${userHome}` on `platform`: `HOME`; on Windows `USERPROFILE` first
    /// (where Windows keeps it; only some shells set `HOME` there).
    fn user_home(&self, platform: Platform) -> Option<String> {
        if platform == Platform::Windows {
            if let Some(profile) = self.env_var("USERPROFILE").filter(|p| !p.is_empty()) {
                return Some(profile);
            }
        }
        self.env_var("HOME")
    }

    fn env_var(&self, name: &str) -> Option<String> {
        match self.env {
            Some(map) => map.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    /// Expands every `${...}` in `text`; values taken from variables are pushed to `secrets`.
    ///
    /// Errors carry no location; the caller adds the key path and server.
    pub(crate) fn expand(
        &self,
        text: &str,
        secrets: &mut Vec<String>,
    ) -> Result<String, ConfigError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix("${") {
                out.push_str("${");
                rest = tail;
                continue;
            }
            let Some(body_start) = after.strip_prefix('{') else {
                out.push('$');
                rest = after;
                continue;
            };
            let Some(end) = body_start.find('}') else {
                return Err(ConfigError::new(
                    ConfigErrorKind::BadInterpolation,
                    "unterminated `${` (write `$${` for a literal `${`)",
                ));
            };
            let value = self.resolve(&body_start[..end], secrets)?;
            self.fits(&out, value.len())?;
            out.push_str(&value);
            rest = &body_start[end + 1..];
        }
        self.fits(&out, rest.len())?;
        out.push_str(rest);
        self.remaining
            .set(self.remaining.get().saturating_sub(out.len()));
        Ok(out)
    }

    fn resolve(&self, expr: &str, secrets: &mut Vec<String>) -> Result<String, ConfigError> {
        if let Some(id) = expr.strip_prefix("input:") {
            return match self.inputs.get(id) {
                Some(v) => {
                    secrets.push(v.clone());
                    Ok(v.clone())
                }
                None => Err(ConfigError::new(
                    ConfigErrorKind::MissingInput,
                    format!(
                        "`${{input:{id}}}` has no value: inputs are not prompted for \
                         non-interactively; supply it with `ConfigLoader::with_inputs`"
                    ),
                )
                .found_expected(format!("${{input:{id}}}"), "a value from with_inputs")),
            };
        }
        let expr = expr.strip_prefix("env:").unwrap_or(expr);
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ConfigError::new(
                ConfigErrorKind::BadInterpolation,
                format!("unsupported expression `${{{expr}}}`"),
            )
            .found_expected(
                format!("${{{expr}}}"),
                "${VAR}, ${VAR:-default}, ${env:VAR} or ${input:id}",
            ));
        }
        match self.env_var(name) {
            Some(v) if !(v.is_empty() && default.is_some()) => {
                if v.len() >= MIN_SECRET_LEN {
                    secrets.push(v.clone());
                }
                Ok(v)
            }
            _ => match (default, name) {
                (Some(d), _) => Ok(d.to_owned()),
                (None, "workspaceFolder") if self.workspace.is_some() => Ok(self
                    .workspace
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()),
                (None, "userHome") if self.user_home(Platform::current()).is_some() => {
                    Ok(self.user_home(Platform::current()).unwrap_or_default())
                }
                (None, _) => Err(ConfigError::new(
                    ConfigErrorKind::UndefinedVariable,
                    format!(
                        "variable `{name}` is not set and has no default \
                         (write `${{{name}:-default}}` to give one)"
                    ),
                )
                .found_expected(format!("${{{name}}}"), format!("`{name}` set"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(
        env: &'a BTreeMap<String, String>,
        inputs: &'a BTreeMap<String, String>,
    ) -> Vars<'a> {
        Vars::new(Some(env), inputs, Some(PathBuf::from("/ws")), 1 << 20)
    }

    #[test]
    fn expands_all_forms() {
        let env = BTreeMap::from([("KEY".to_owned(), "secret-1".to_owned())]);
        let inputs = BTreeMap::from([("tok".to_owned(), "in".to_owned())]);
        let v = vars(&env, &inputs);
        let mut secrets = Vec::new();
        let out = v
            .expand(
                "a ${KEY} ${env:KEY} ${NOPE:-d} ${input:tok} $${x} $5 ${workspaceFolder}",
                &mut secrets,
            )
            .unwrap();
        assert_eq!(out, "a secret-1 secret-1 d in ${x} $5 /ws");
        assert!(secrets.contains(&"secret-1".to_owned()));
    }

    #[test]
    fn the_user_home_on_windows_is_the_user_profile_else_home() {
        let inputs = BTreeMap::new();
        let both = BTreeMap::from([
            ("HOME".to_owned(), "/home/a".to_owned()),
            ("USERPROFILE".to_owned(), r"C:\Users\a".to_owned()),
        ]);
        let v = vars(&both, &inputs);
        assert_eq!(
            v.user_home(Platform::Windows).as_deref(),
            Some(r"C:\Users\a")
        );
        assert_eq!(v.user_home(Platform::Unix).as_deref(), Some("/home/a"));
        let home = BTreeMap::from([("HOME".to_owned(), r"C:\h".to_owned())]);
        assert_eq!(
            vars(&home, &inputs).user_home(Platform::Windows).as_deref(),
            Some(r"C:\h")
        );
        let none = BTreeMap::new();
        assert_eq!(vars(&none, &inputs).user_home(Platform::Windows), None);
    }

    #[test]
    fn user_home_expands_to_home_here() {
        let env = BTreeMap::from([("HOME".to_owned(), "/home/a".to_owned())]);
        let inputs = BTreeMap::new();
        let out = vars(&env, &inputs)
            .expand("${userHome}/x", &mut Vec::new())
            .unwrap();
        assert_eq!(out, "/home/a/x");
    }

    #[test]
    fn undefined_is_an_error() {
        let (env, inputs) = (BTreeMap::new(), BTreeMap::new());
        let err = vars(&env, &inputs)
            .expand("${NOPE}", &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind, ConfigErrorKind::UndefinedVariable);
    }

    #[test]
    fn unterminated_is_an_error() {
        let (env, inputs) = (BTreeMap::new(), BTreeMap::new());
        let err = vars(&env, &inputs)
            .expand("${NOPE", &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind, ConfigErrorKind::BadInterpolation);
    }
}
