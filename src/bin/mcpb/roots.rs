//! The roots mcpb offers a server: `--root DIR` (repeatable), as `file://` URIs.
//!
//! Opt-in: without `--root` mcpb declares no `roots` capability (a server then does not ask,
//! and a `roots/list` that comes anyway gets -32601), except in `mcpb shell`, which always
//! declares it so that `roots add DIR` and `roots remove DIR` can change the list during the
//! session (each change sends `notifications/roots/list_changed`).
//!
//! A directory is made absolute and canonical (symbolic links resolved, so the server sees
//! where the files really are), and must exist. Its URI percent-encodes every byte but the
//! unreserved characters and `/` (a space is `%20`, `#` is `%23`); a Windows path `C:\work` is
//! `file:///C:/work`, a share `\\host\share\dir` is `file://host/share/dir`.

use std::path::{Path, PathBuf};

use mcp_blocking::model::Root;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// The characters written as they are in a file URI's path: the unreserved ones and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The root for `dir`: canonical, as a `file://` URI, named after its last component.
///
/// # Errors
/// A sentence naming the directory when it cannot be resolved (it does not exist, or cannot be
/// read).
pub(crate) fn root_of(dir: &str) -> Result<Root, String> {
    let path = std::fs::canonicalize(dir).map_err(|e| format!("--root `{dir}`: {e}"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| path.to_string_lossy().into_owned());
    Ok(Root::new(file_uri(&path)).with_name(name))
}

/// Every `--root`, in order, without repeats.
///
/// # Errors
/// As [`root_of`], for the first one that fails.
pub(crate) fn roots_of(dirs: &[String]) -> Result<Vec<Root>, String> {
    let mut roots: Vec<Root> = Vec::new();
    for d in dirs {
        let root = root_of(d)?;
        if !roots.iter().any(|r| r.uri == root.uri) {
            roots.push(root);
        }
    }
    Ok(roots)
}

/// The `file://` URI of an absolute path.
pub(crate) fn file_uri(path: &Path) -> String {
    uri_of_text(&path.to_string_lossy(), cfg!(windows))
}

/// The URI of an absolute path written as text, read as a Windows path when `windows` (so
/// that both forms are tested on every system).
fn uri_of_text(path: &str, windows: bool) -> String {
    if !windows {
        return format!("file://{}", utf8_percent_encode(path, PATH));
    }
    // canonicalize gives the verbatim forms `\\?\C:\dir` and `\\?\UNC\host\share\dir`.
    let path = path.strip_prefix(r"\\?\").map_or(path.to_owned(), |rest| {
        match rest.strip_prefix(r"UNC\") {
            Some(unc) => format!(r"\\{unc}"),
            None => rest.to_owned(),
        }
    });
    let slashed = path.replace('\\', "/");
    match slashed.strip_prefix("//") {
        // A share: its host is the URI's authority.
        Some(share) => {
            let (host, rest) = share.split_once('/').unwrap_or((share, ""));
            format!(
                "file://{}/{}",
                utf8_percent_encode(host, PATH),
                utf8_percent_encode(rest, PATH)
            )
        }
        None => {
            // `C:/dir`: the drive letter and its colon stay as they are.
            let (drive, rest) = match slashed.as_bytes() {
                [d, b':', ..] if d.is_ascii_alphabetic() => slashed.split_at(2),
                _ => ("", slashed.as_str()),
            };
            let rest = utf8_percent_encode(rest.trim_start_matches('/'), PATH);
            if drive.is_empty() {
                format!("file:///{rest}")
            } else {
                format!("file:///{drive}/{rest}")
            }
        }
    }
}

/// The roots after `roots add DIR` or `roots remove DIR|URI` on `current`; the sentence to
/// show.
///
/// # Errors
/// A usage sentence: an unknown action, a directory that cannot be resolved, a root not in
/// the list.
pub(crate) fn edit(current: &[Root], words: &[&str]) -> Result<(Vec<Root>, String), String> {
    let mut roots = current.to_vec();
    match words {
        ["add", dir] => {
            let root = root_of(dir)?;
            if roots.iter().any(|r| r.uri == root.uri) {
                return Err(format!("{} is a root already", root.uri));
            }
            let text = format!("added {}", root.uri);
            roots.push(root);
            Ok((roots, text))
        }
        ["remove", what] => {
            let uri = if what.starts_with("file:") {
                (*what).to_owned()
            } else {
                let path: PathBuf = std::fs::canonicalize(what).unwrap_or_else(|_| what.into());
                file_uri(&path)
            };
            let before = roots.len();
            roots.retain(|r| r.uri != uri);
            if roots.len() == before {
                return Err(format!("{uri} is not a root (`roots` lists them)"));
            }
            Ok((roots, format!("removed {uri}")))
        }
        _ => Err("roots, roots add DIR, roots remove DIR|URI".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_paths_are_percent_encoded() {
        assert_eq!(
            uri_of_text("/home/a b/#1%", false),
            "file:///home/a%20b/%231%25"
        );
        assert_eq!(uri_of_text("/tmp/été", false), "file:///tmp/%C3%A9t%C3%A9");
        assert_eq!(uri_of_text("/", false), "file:///");
    }

    #[test]
    fn windows_paths_are_drive_uris_and_shares_name_their_host() {
        assert_eq!(
            uri_of_text(r"\\?\C:\work\a b", true),
            "file:///C:/work/a%20b"
        );
        assert_eq!(uri_of_text(r"C:\", true), "file:///C:/");
        assert_eq!(
            uri_of_text(r"\\?\UNC\host\share\d", true),
            "file://host/share/d"
        );
        assert_eq!(uri_of_text(r"\\host\share", true), "file://host/share");
    }

    #[test]
    fn a_root_is_canonical_and_named_after_its_directory() {
        let dir = std::env::temp_dir().join(format!("mcpb roots {}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = root_of(&dir.to_string_lossy()).unwrap();
        let canonical = std::fs::canonicalize(&dir).unwrap();
        assert_eq!(root.uri, file_uri(&canonical));
        assert!(root.uri.starts_with("file:///"), "{}", root.uri);
        assert!(root.uri.contains("mcpb%20roots%20"), "{}", root.uri);
        assert_eq!(
            root.name.as_deref(),
            Some(dir.file_name().unwrap().to_str().unwrap())
        );
        let (added, _) = edit(&[], &["add", &dir.to_string_lossy()]).unwrap();
        assert_eq!(added.len(), 1);
        assert!(edit(&added, &["add", &dir.to_string_lossy()]).is_err());
        let (removed, text) = edit(&added, &["remove", &root.uri]).unwrap();
        assert!(removed.is_empty() && text.contains("removed"));
        assert!(edit(&removed, &["remove", &root.uri]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(root_of(&dir.to_string_lossy())
            .unwrap_err()
            .contains("--root"));
    }
}
