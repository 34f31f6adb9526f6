//! [`FileTokenStore`]: tokens and client registrations in one JSON file that several processes
//! share.
//!
//! ```text
//!  load ──> read at most MAX_FILE_BYTES ──> parse ──> entries whose resource covers the URL
//!                   └ larger, unreadable or not valid JSON ──> Err naming the file (no content)
//!  save ──> read as above (a file that cannot be read is never overwritten: it may hold other
//!           sign-ins) ──> temporary file (0600; on Windows an ACL for the user alone) in the
//!           same directory, written, fsync'd
//!       ──> renamed over the file (on Windows tried again for up to 2 s while another program
//!           holds it) ──> directory fsync'd ──> read back: what is read must be what was
//!           written, else the save fails
//! ```

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{covers, private_file, StoredClient, StoredTokens, TokenStore};
use crate::sync::lock;

/// Tokens and dynamic client registrations kept in a JSON file, shared by every process that
/// names it (`{"tokens": [...], "clients": [...]}`).
///
/// The file is created with mode 0600 (owner only; on Windows, with a protected ACL whose one
/// entry gives the current user full control, and nobody else any access) and every write
/// replaces it atomically (a temporary file in the same directory, written and synced to disk,
/// then renamed over it), so a reader never sees half a file; after each write the file is read
/// back, and a save whose result does not read back as written fails. On Windows a replace
/// that finds the file held open by another program (an editor, a scanner) is tried again for
/// up to 2 seconds before the save fails. Writes from several processes are
/// last-writer-wins per file; entries are keyed by issuer, resource and client.
///
/// A file larger than [`MAX_FILE_BYTES`](Self::MAX_FILE_BYTES), or one that is not valid
/// JSON of this shape (a truncated one, say), makes every call fail with a message naming the
/// file (and never quoting it): it is not read further and never overwritten, since it may hold
/// other sign-ins. Repair it, or remove it and sign in again.
///
/// ```
/// use mcp_blocking::auth::{FileTokenStore, TokenStore};
/// let dir = std::env::temp_dir().join(format!("mcpb-doc-{}", std::process::id()));
/// let store = FileTokenStore::new(dir.join("tokens.json"));
/// assert!(store.load("https://example.com/mcp")?.is_empty());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    guard: Mutex<()>,
}

#[derive(Default, PartialEq, Serialize, Deserialize)]
struct FileContents {
    #[serde(default)]
    tokens: Vec<StoredTokens>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    clients: Vec<StoredClient>,
}

impl FileTokenStore {
    /// The largest token file read or written: 4 MiB (an entry takes a few KiB, so this holds
    /// a thousand sign-ins and more).
    pub const MAX_FILE_BYTES: u64 = 4 << 20;

    /// A store at `path` (created on the first save, with its directory).
    pub fn new(path: impl Into<PathBuf>) -> FileTokenStore {
        FileTokenStore {
            path: path.into(),
            guard: Mutex::new(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's contents (none when it does not exist).
    fn read(&self) -> Result<FileContents, String> {
        let shown = self.path.display();
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FileContents::default())
            }
            Err(e) => return Err(format!("cannot read the token file {shown}: {e}")),
        };
        let cap = Self::MAX_FILE_BYTES;
        let mut bytes = Vec::new();
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the token file {shown}: {e}"))?;
        if bytes.len() as u64 > cap {
            return Err(format!(
                "the token file {shown} is larger than {} MiB \
                 (FileTokenStore::MAX_FILE_BYTES); it is not read",
                cap >> 20
            ));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(FileContents::default());
        }
        serde_json::from_slice(&bytes).map_err(|e| self.invalid(&e))
    }

    /// Why the file does not parse, without quoting it (it holds tokens).
    fn invalid(&self, e: &serde_json::Error) -> String {
        use serde_json::error::Category;
        let what = match e.classify() {
            Category::Eof => "it ends early, as a truncated file does",
            Category::Syntax => "it is not JSON",
            Category::Data => "it is JSON, but not a token file",
            Category::Io => "it could not be read",
        };
        format!(
            "the token file {} is not valid ({what}: line {}, column {}); it is left as it \
             is: repair it, or remove it and sign in again",
            self.path.display(),
            e.line(),
            e.column()
        )
    }

    fn write(&self, contents: &FileContents) -> Result<(), String> {
        let shown = self.path.display();
        let fail = |e: std::io::Error| format!("cannot write the token file {shown}: {e}");
        let text = serde_json::to_string_pretty(contents).map_err(|e| e.to_string())?;
        if text.len() as u64 > Self::MAX_FILE_BYTES {
            return Err(format!(
                "cannot write the token file {shown}: it would be larger than {} MiB \
                 (FileTokenStore::MAX_FILE_BYTES)",
                Self::MAX_FILE_BYTES >> 20
            ));
        }
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tokens.json".into());
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            random_suffix(6)
        ));
        let written = (|| {
            use std::io::Write;
            // Owner only from creation, before the secrets are written.
            let mut f = private_file::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            // Closed before it is moved, so that no handle of ours is open on it then (Windows
            // refuses to move a file held open without delete sharing).
            drop(f);
            private_file::replace(&tmp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(e));
        }
        // The rename itself reaches the disk with the directory (not every file system can
        // sync a directory: the read-back below is the check that counts).
        if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
            log::debug!("token file {shown}: syncing its directory: {e}");
        }
        match self.read() {
            Ok(back) if back == *contents => Ok(()),
            Ok(_) => Err(format!(
                "the token file {shown} does not hold what was just written to it (another \
                 program replaced it?)"
            )),
            Err(e) => Err(format!("after writing it: {e}")),
        }
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, server_url: &str) -> Result<Vec<StoredTokens>, String> {
        let _g = lock(&self.guard);
        Ok(self
            .read()?
            .tokens
            .into_iter()
            .filter(|t| covers(&t.resource, server_url))
            .collect())
    }

    fn save(&self, tokens: &StoredTokens) -> Result<(), String> {
        let _g = lock(&self.guard);
        let mut contents = self.read()?;
        contents.tokens.retain(|t| !t.same_key(tokens));
        contents.tokens.push(tokens.clone());
        self.write(&contents)
    }

    fn remove(&self, server_url: &str) -> Result<usize, String> {
        let _g = lock(&self.guard);
        let mut contents = self.read()?;
        let before = contents.tokens.len();
        contents.tokens.retain(|t| !covers(&t.resource, server_url));
        let removed = before - contents.tokens.len();
        if removed > 0 {
            self.write(&contents)?;
        }
        Ok(removed)
    }

    fn load_clients(&self, issuer: &str) -> Result<Vec<StoredClient>, String> {
        let _g = lock(&self.guard);
        Ok(self
            .read()?
            .clients
            .into_iter()
            .filter(|c| c.issuer == issuer)
            .collect())
    }

    fn save_client(&self, client: &StoredClient) -> Result<(), String> {
        let _g = lock(&self.guard);
        let mut contents = self.read()?;
        contents.clients.retain(|c| !c.same_key(client));
        contents.clients.push(client.clone());
        self.write(&contents)
    }

    fn remove_client(&self, issuer: &str, redirect_uri: &str) -> Result<usize, String> {
        let _g = lock(&self.guard);
        let mut contents = self.read()?;
        let before = contents.clients.len();
        contents
            .clients
            .retain(|c| !(c.issuer == issuer && c.redirect_uri == redirect_uri));
        let removed = before - contents.clients.len();
        if removed > 0 {
            self.write(&contents)?;
        }
        Ok(removed)
    }
}

/// `n` random bytes, base64url-encoded: what makes a temporary file's name unique ("" when the
/// system's generator fails; the process id in the name still tells processes apart).
fn random_suffix(n: usize) -> String {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut buf = vec![0u8; n];
    match ring::rand::SystemRandom::new().fill(&mut buf) {
        Ok(()) => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buf),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::entry;
    use super::*;

    fn temp_dir() -> PathBuf {
        std::env::temp_dir().join(format!(
            "mcpb-store-{}-{}",
            std::process::id(),
            random_suffix(4)
        ))
    }

    #[test]
    fn the_file_store_replaces_by_key_with_mode_0600() {
        let dir = temp_dir();
        let store = FileTokenStore::new(dir.join("t.json"));
        store.save(&entry("https://h/mcp", "one")).unwrap();
        store.save(&entry("https://h/mcp", "two")).unwrap();
        let got = store.load("https://h/mcp").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].access_token.expose(), "two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(store.remove("https://h/mcp").unwrap(), 1);
        assert!(store.load("https://h/mcp").unwrap().is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_truncated_file_fails_every_call_naming_it_and_is_left_as_it_is() {
        let dir = temp_dir();
        let store = FileTokenStore::new(dir.join("t.json"));
        store.save(&entry("https://h/mcp", "tok-123")).unwrap();
        let full = std::fs::read_to_string(store.path()).unwrap();
        let cut = &full[..full.find("tok-123").unwrap() + 4];
        std::fs::write(store.path(), cut).unwrap();
        let errors = [
            store.load("https://h/mcp").unwrap_err(),
            store.save(&entry("https://h/other", "new")).unwrap_err(),
            store.remove("https://h/mcp").unwrap_err(),
            store.load_clients("https://as").unwrap_err(),
        ];
        for e in errors {
            assert!(e.contains(&store.path().display().to_string()), "{e}");
            assert!(e.contains("truncated"), "{e}");
            assert!(!e.contains("tok-"), "the file is not quoted: {e}");
        }
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), cut);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_malformed_value_is_not_quoted() {
        let dir = temp_dir();
        let store = FileTokenStore::new(dir.join("t.json"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            store.path(),
            r#"{"tokens": [{"issuer": "i", "resource": "https://h/mcp", "client_id": "c",
                "token_endpoint_auth_method": "none", "token_endpoint": "https://as/token",
                "access_token": "tok-123", "expires_at": "secret-in-the-wrong-place"}]}"#,
        )
        .unwrap();
        let e = store.load("https://h/mcp").unwrap_err();
        assert!(e.contains("not a token file"), "{e}");
        assert!(!e.contains("secret") && !e.contains("tok-"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_file_over_the_cap_is_not_read() {
        let dir = temp_dir();
        let store = FileTokenStore::new(dir.join("t.json"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::from("{}");
        text.push_str(&" ".repeat(FileTokenStore::MAX_FILE_BYTES as usize - 1));
        std::fs::write(store.path(), &text).unwrap();
        let e = store.load("https://h/mcp").unwrap_err();
        assert!(e.contains("MAX_FILE_BYTES") && e.contains("4 MiB"), "{e}");
        // One byte less is read.
        text.pop();
        std::fs::write(store.path(), &text).unwrap();
        assert!(store.load("https://h/mcp").unwrap().is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_file_that_would_outgrow_the_cap_is_not_written() {
        let dir = temp_dir();
        let store = FileTokenStore::new(dir.join("t.json"));
        let big = "x".repeat(FileTokenStore::MAX_FILE_BYTES as usize);
        let e = store.save(&entry("https://h/mcp", &big)).unwrap_err();
        assert!(e.contains("MAX_FILE_BYTES") && !e.contains("xxxx"), "{e}");
        assert!(!store.path().exists());
        let _ = std::fs::remove_dir_all(dir);
    }
}
