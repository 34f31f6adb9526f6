//! Which project config files the user has approved: [`TrustStore`], keyed by a file's canonical
//! path and the SHA-256 of its contents ([`FileDigest`]).
//!
//! A project file (`.mcp.json`, `.vscode/mcp.json`, ... found in the current folder or its
//! parents) came with the folder: when the folder was cloned, it is someone else's code, and its
//! servers are commands that would run as the user. So they do not start until the user has
//! approved the file as it is now: an approval names the contents' hash, and a changed file
//! needs approval again (as Claude Code approves project servers and VS Code trusts workspaces).
//!
//! ```text
//!  open ──> read at most MAX_FILE_BYTES ──> parse ──> at most MAX_ENTRIES approvals
//!                └ larger, unreadable, not this shape ──> Err naming the file
//!  approve(digest) ──> in memory (the oldest approval goes past MAX_ENTRIES)
//!  save ──> read the file again, merge (ours win by path) ──> temporary file (owner only)
//!           in the same directory ──> renamed over the file
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::oauth::private_file;

/// A file as approved: its canonical path and the SHA-256 of its contents.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct FileDigest {
    /// The file's canonical path (symbolic links and `..` resolved).
    pub path: PathBuf,
    /// The SHA-256 of its contents, in lowercase hex.
    pub sha256: String,
}

impl FileDigest {
    /// The largest file [`of`](Self::of) hashes: 16 MiB (far above any config file; the loader
    /// refuses larger ones anyway).
    pub const MAX_HASHED_BYTES: u64 = 16 << 20;

    /// The digest of the file at `path` as it is now.
    ///
    /// # Errors
    /// The system's error for a file that cannot be resolved or read, and
    /// [`io::ErrorKind::InvalidData`] for one larger than
    /// [`MAX_HASHED_BYTES`](Self::MAX_HASHED_BYTES).
    pub fn of(path: &Path) -> io::Result<FileDigest> {
        let canonical = std::fs::canonicalize(path)?;
        let mut bytes = Vec::new();
        std::fs::File::open(&canonical)?
            .take(Self::MAX_HASHED_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > Self::MAX_HASHED_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is larger than {} MiB; it is not hashed",
                    path.display(),
                    Self::MAX_HASHED_BYTES >> 20
                ),
            ));
        }
        Ok(FileDigest::of_bytes(canonical, &bytes))
    }

    /// The digest of `bytes`, read from the file at the canonical path `path`.
    pub(crate) fn of_bytes(path: PathBuf, bytes: &[u8]) -> FileDigest {
        let hash = ring::digest::digest(&ring::digest::SHA256, bytes);
        let mut sha256 = String::with_capacity(64);
        for b in hash.as_ref() {
            let _ = write!(sha256, "{b:02x}");
        }
        FileDigest { path, sha256 }
    }

    /// The key of the file in a store: its path as text (a path that is not Unicode is keyed
    /// by its lossy form; the hash must match as well).
    fn key(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// One approval, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Approved {
    path: String,
    sha256: String,
    /// When, in seconds since the Unix epoch (which approval goes first past the cap).
    #[serde(rename = "approvedAt", default)]
    approved_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileContents {
    #[serde(default)]
    approved: Vec<Approved>,
}

/// The project files the user has approved, in memory or kept in a JSON file
/// (`{"approved": [{"path", "sha256", "approvedAt"}]}`).
///
/// A file is trusted when an approval names its canonical path *and* the hash of its current
/// contents ([`is_trusted`](Self::is_trusted)). The file is written atomically and readable by
/// its owner only, like a [`FileTokenStore`](crate::auth::FileTokenStore)'s; a store file
/// larger than [`MAX_FILE_BYTES`](Self::MAX_FILE_BYTES), holding more than
/// [`MAX_ENTRIES`](Self::MAX_ENTRIES) approvals, or not of this shape is refused whole (and
/// never overwritten), so that nothing is trusted by mistake.
///
/// ```
/// use mcp_blocking::config::{FileDigest, TrustStore};
/// let dir = std::env::temp_dir().join(format!("mcpb-trust-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let file = dir.join(".mcp.json");
/// std::fs::write(&file, r#"{"mcpServers": {}}"#).unwrap();
///
/// let mut store = TrustStore::new();
/// let digest = FileDigest::of(&file).unwrap();
/// assert!(!store.is_trusted(&digest));
/// store.approve(&digest);
/// assert!(store.is_trusted(&digest));
///
/// // A changed file needs approval again.
/// std::fs::write(&file, r#"{"mcpServers": {"x": {"command": "rm"}}}"#).unwrap();
/// assert!(!store.is_trusted(&FileDigest::of(&file).unwrap()));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct TrustStore {
    path: Option<PathBuf>,
    approved: BTreeMap<String, Approved>,
}

impl TrustStore {
    /// The largest store file read or written: 1 MiB (an approval takes about 200 bytes).
    pub const MAX_FILE_BYTES: u64 = 1 << 20;

    /// The most approvals kept: 4096. Past it, the oldest approval is forgotten (that file
    /// asks again).
    pub const MAX_ENTRIES: usize = 4096;

    /// An empty store in memory: nothing is approved, and [`save`](Self::save) keeps nothing.
    pub fn new() -> TrustStore {
        TrustStore::default()
    }

    /// The store kept in the file at `path` (none yet when it does not exist; it is created,
    /// with its directory, by [`save`](Self::save)).
    ///
    /// # Errors
    /// The system's error (its kind kept) for a file that cannot be read, and
    /// [`io::ErrorKind::InvalidData`] for one over [`MAX_FILE_BYTES`](Self::MAX_FILE_BYTES) or
    /// [`MAX_ENTRIES`](Self::MAX_ENTRIES), or not a store file; the message names the file.
    pub fn open(path: impl Into<PathBuf>) -> io::Result<TrustStore> {
        let path = path.into();
        let approved = read(&path)?
            .approved
            .into_iter()
            .map(|a| (a.path.clone(), a))
            .collect();
        Ok(TrustStore {
            path: Some(path),
            approved,
        })
    }

    /// The file the store is kept in, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the file `digest` describes was approved with these very contents.
    pub fn is_trusted(&self, digest: &FileDigest) -> bool {
        self.approved
            .get(&digest.key())
            .is_some_and(|a| a.sha256 == digest.sha256)
    }

    /// Approves the file `digest` describes, with these contents (an earlier approval of the
    /// same path is replaced). Kept in memory until [`save`](Self::save).
    pub fn approve(&mut self, digest: &FileDigest) {
        let approved_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.approved.insert(
            digest.key(),
            Approved {
                path: digest.key(),
                sha256: digest.sha256.clone(),
                approved_at,
            },
        );
        cap(&mut self.approved);
    }

    /// Writes the approvals to the store's file (nothing for a store in memory): the file is
    /// read again first and the approvals of other processes since kept, this store's winning
    /// for the same path.
    ///
    /// # Errors
    /// As [`open`](Self::open) for the file read again (a file that cannot be read is never
    /// overwritten), or the system's error writing it; the message names the file.
    pub fn save(&self) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut merged: BTreeMap<String, Approved> = read(path)?
            .approved
            .into_iter()
            .map(|a| (a.path.clone(), a))
            .collect();
        merged.extend(self.approved.clone());
        cap(&mut merged);
        let contents = FileContents {
            approved: merged.into_values().collect(),
        };
        let text = serde_json::to_string_pretty(&contents).map_err(io::Error::other)?;
        if text.len() as u64 > Self::MAX_FILE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the trust file {} would be larger than {} MiB; it is not written",
                    path.display(),
                    Self::MAX_FILE_BYTES >> 20
                ),
            ));
        }
        write_private(path, text.as_bytes()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot write the trust file {}: {e}", path.display()),
            )
        })
    }
}

/// Drops the oldest approvals past [`TrustStore::MAX_ENTRIES`].
fn cap(approved: &mut BTreeMap<String, Approved>) {
    while approved.len() > TrustStore::MAX_ENTRIES {
        let oldest = approved
            .values()
            .min_by_key(|a| a.approved_at)
            .map(|a| a.path.clone());
        match oldest {
            Some(key) => approved.remove(&key),
            None => break,
        };
    }
}

/// The store file's contents (none when it does not exist), within the caps.
fn read(path: &Path) -> io::Result<FileContents> {
    let shown = path.display();
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(FileContents::default()),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read the trust file {shown}: {e}"),
            ))
        }
    };
    let mut bytes = Vec::new();
    file.take(TrustStore::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            io::Error::new(e.kind(), format!("cannot read the trust file {shown}: {e}"))
        })?;
    if bytes.len() as u64 > TrustStore::MAX_FILE_BYTES {
        return Err(invalid(format!(
            "the trust file {shown} is larger than {} MiB (TrustStore::MAX_FILE_BYTES); it is \
             not read",
            TrustStore::MAX_FILE_BYTES >> 20
        )));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(FileContents::default());
    }
    let contents: FileContents = serde_json::from_slice(&bytes).map_err(|e| {
        invalid(format!(
            "the trust file {shown} is not valid (line {}, column {}): repair it or remove it \
             (and approve the project files again)",
            e.line(),
            e.column()
        ))
    })?;
    if contents.approved.len() > TrustStore::MAX_ENTRIES {
        return Err(invalid(format!(
            "the trust file {shown} holds more than {} approvals (TrustStore::MAX_ENTRIES); it \
             is not read",
            TrustStore::MAX_ENTRIES
        )));
    }
    Ok(contents)
}

/// Replaces `path` with `bytes`, atomically, the new file readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map_or_else(|| "trust.json".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        use std::io::Write;
        let mut f = private_file::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        // Closed before it is moved: Windows refuses to move a file held open.
        drop(f);
        private_file::replace(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mcpb-trust-{name}-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
    static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

    #[test]
    fn the_digest_is_the_sha256_of_the_contents() {
        let d = FileDigest::of_bytes(PathBuf::from("x"), b"abc");
        assert_eq!(
            d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn an_approval_is_kept_in_the_file_and_holds_for_those_contents_only() {
        let dir = temp_dir("keep");
        let project = dir.join("mcp.json");
        std::fs::write(&project, "{}").unwrap();
        let store_path = dir.join("state").join("trust.json");
        let mut store = TrustStore::open(&store_path).unwrap();
        let digest = FileDigest::of(&project).unwrap();
        store.approve(&digest);
        store.save().unwrap();

        let again = TrustStore::open(&store_path).unwrap();
        assert!(again.is_trusted(&digest));
        std::fs::write(&project, "{ }").unwrap();
        assert!(!again.is_trusted(&FileDigest::of(&project).unwrap()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&store_path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn saving_keeps_the_approvals_another_process_made() {
        let dir = temp_dir("merge");
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let store_path = dir.join("trust.json");
        let mut first = TrustStore::open(&store_path).unwrap();
        let mut second = TrustStore::open(&store_path).unwrap();
        first.approve(&FileDigest::of(&a).unwrap());
        first.save().unwrap();
        second.approve(&FileDigest::of(&b).unwrap());
        second.save().unwrap();
        let read = TrustStore::open(&store_path).unwrap();
        assert!(read.is_trusted(&FileDigest::of(&a).unwrap()));
        assert!(read.is_trusted(&FileDigest::of(&b).unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_store_file_over_a_cap_or_malformed_is_refused_and_left_alone() {
        let dir = temp_dir("caps");
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; TrustStore::MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = TrustStore::open(&big).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");

        let many = dir.join("many.json");
        let entries: Vec<Approved> = (0..=TrustStore::MAX_ENTRIES)
            .map(|i| Approved {
                path: format!("/p{i}"),
                sha256: "0".into(),
                approved_at: 0,
            })
            .collect();
        let text = serde_json::to_string(&FileContents { approved: entries }).unwrap();
        std::fs::write(&many, text).unwrap();
        let e = TrustStore::open(&many).unwrap_err();
        assert!(e.to_string().contains("more than 4096 approvals"), "{e}");

        let broken = dir.join("broken.json");
        std::fs::write(&broken, r#"{"approved": [{"path": "/x""#).unwrap();
        let e = TrustStore::open(&broken).unwrap_err();
        assert!(e.to_string().contains("is not valid"), "{e}");
        let mut store = TrustStore {
            path: Some(broken.clone()),
            approved: BTreeMap::new(),
        };
        store.approve(&FileDigest::of_bytes(PathBuf::from("/y"), b"y"));
        assert!(store.save().is_err());
        assert_eq!(
            std::fs::read_to_string(&broken).unwrap(),
            r#"{"approved": [{"path": "/x""#
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // A dangling symbolic link as the store's folder: nothing to read, and no folder to create.
    #[cfg(unix)]
    #[test]
    fn a_store_that_cannot_be_written_says_which_file() {
        let dir = temp_dir("unwritable");
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        let path = dangling.join("trust.json");
        let mut store = TrustStore {
            path: Some(path.clone()),
            approved: BTreeMap::new(),
        };
        store.approve(&FileDigest::of_bytes(PathBuf::from("/y"), b"y"));
        let e = store.save().unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot write the trust file {}: ", path.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn past_the_cap_the_oldest_approval_is_forgotten() {
        let mut store = TrustStore::new();
        for i in 0..TrustStore::MAX_ENTRIES {
            store.approved.insert(
                format!("/p{i}"),
                Approved {
                    path: format!("/p{i}"),
                    sha256: "0".into(),
                    approved_at: 10 + i as u64,
                },
            );
        }
        let newest = FileDigest::of_bytes(PathBuf::from("/new"), b"n");
        store.approve(&newest);
        assert_eq!(store.approved.len(), TrustStore::MAX_ENTRIES);
        assert!(store.is_trusted(&newest));
        assert!(!store.approved.contains_key("/p0"));
        assert!(store.approved.contains_key("/p1"));
    }
}
