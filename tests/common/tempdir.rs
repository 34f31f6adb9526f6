//! A temporary directory of one test, removed when dropped.

use std::io::Write;
use std::path::PathBuf;

/// A fresh directory under the system's temp dir, unique to this process and call.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<tmp>/mcp-test-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// The directory.
    #[allow(dead_code)]
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Writes `text` to the file `name` in this directory and returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        let mut f = std::fs::File::create(&path).expect("create file");
        f.write_all(text.as_bytes()).expect("write file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
