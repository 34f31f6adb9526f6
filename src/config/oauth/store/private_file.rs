//! The token file on disk: created so that only its owner can read it, and replaced atomically.
//!
//! | system | owner only | replace |
//! |---|---|---|
//! | Unix | mode 0600 from creation | `rename(2)` |
//! | Windows | created with a protected DACL of one entry, full control for the current user's SID (`acl.rs`) | `std::fs::rename` (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`), tried again while another program holds the file open without sharing its deletion, for up to [`REPLACE_RETRY`] |
//!
//! The owner-only rule is in place before a byte is written: the file never exists without it.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a replace is tried again while another program holds the file (Windows only: an
/// editor, a backup or antivirus scanner reading it); the save fails after that.
pub(super) const REPLACE_RETRY: Duration = Duration::from_secs(2);

/// The longest pause between two tries of a replace.
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Creates `path`, which must not exist, for writing, readable and writable by its owner only.
///
/// # Errors
/// The system's error (an existing file is [`io::ErrorKind::AlreadyExists`]).
#[cfg(unix)]
pub(crate) fn create(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Creates `path`, which must not exist, for writing, readable and writable by its owner only.
///
/// # Errors
/// The system's error (an existing file is [`io::ErrorKind::AlreadyExists`]).
#[cfg(windows)]
pub(crate) fn create(path: &Path) -> io::Result<File> {
    super::acl::create_private(path)
}

/// Moves `from` over `to`, atomically; on Windows, tried again for up to [`REPLACE_RETRY`]
/// while `to` is held open by another program.
///
/// # Errors
/// The system's error of the last try.
pub(crate) fn replace(from: &Path, to: &Path) -> io::Result<()> {
    let deadline = crate::deadline::after(REPLACE_RETRY);
    retry_while(|| std::fs::rename(from, to), is_transient, deadline)
}

/// Runs `op` until it succeeds, fails with an error that is not `transient`, or `deadline`
/// passes; pauses between tries grow from 5 ms to [`MAX_PAUSE`]. Nothing tells when another
/// program lets go of a file, so this is the one wait here that is not on an event.
///
/// # Errors
/// `op`'s error that is not transient, or its last one at the deadline.
fn retry_while<T>(
    mut op: impl FnMut() -> io::Result<T>,
    transient: impl Fn(&io::Error) -> bool,
    deadline: Instant,
) -> io::Result<T> {
    let mut pause = Duration::from_millis(5);
    loop {
        match op() {
            Err(e) if transient(&e) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(e);
                }
                log::debug!("token file: replacing it failed ({e}); trying again");
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(MAX_PAUSE);
            }
            done => return done,
        }
    }
}

/// Whether a failed replace may succeed on a later try: never on Unix, where a file open
/// elsewhere can be replaced.
#[cfg(unix)]
fn is_transient(_: &io::Error) -> bool {
    false
}

/// Whether a failed replace may succeed on a later try: the target is open in another program
/// without `FILE_SHARE_DELETE` (a sharing violation, or access denied, which Windows also
/// answers while the file is being deleted or scanned), or a range of it is locked.
#[cfg(windows)]
fn is_transient(e: &io::Error) -> bool {
    use windows_sys::Win32::Foundation::{
        ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION,
    };
    let code = e.raw_os_error().and_then(|c| u32::try_from(c).ok());
    matches!(
        code,
        Some(ERROR_SHARING_VIOLATION | ERROR_ACCESS_DENIED | ERROR_LOCK_VIOLATION)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn busy() -> io::Error {
        io::Error::new(io::ErrorKind::ResourceBusy, "held open elsewhere")
    }

    fn is_busy(e: &io::Error) -> bool {
        e.kind() == io::ErrorKind::ResourceBusy
    }

    #[test]
    fn a_transient_failure_is_tried_again_until_it_succeeds() {
        let tries = Cell::new(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        let got = retry_while(
            || {
                tries.set(tries.get() + 1);
                if tries.get() < 3 {
                    Err(busy())
                } else {
                    Ok("replaced")
                }
            },
            is_busy,
            deadline,
        );
        assert_eq!(got.unwrap(), "replaced");
        assert_eq!(tries.get(), 3);
    }

    #[test]
    fn a_lasting_failure_is_not_tried_again() {
        let tries = Cell::new(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        let got: io::Result<()> = retry_while(
            || {
                tries.set(tries.get() + 1);
                Err(io::Error::from(io::ErrorKind::NotFound))
            },
            is_busy,
            deadline,
        );
        assert_eq!(got.unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(tries.get(), 1);
    }

    #[test]
    fn a_transient_failure_that_lasts_fails_at_the_deadline() {
        let started = Instant::now();
        let got: io::Result<()> = retry_while(
            || Err(busy()),
            is_busy,
            started + Duration::from_millis(100),
        );
        assert_eq!(got.unwrap_err().kind(), io::ErrorKind::ResourceBusy);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[cfg(unix)]
    #[test]
    fn nothing_is_transient_on_unix() {
        assert!(!is_transient(&io::Error::from_raw_os_error(
            rustix::io::Errno::BUSY.raw_os_error()
        )));
    }

    #[cfg(windows)]
    #[test]
    fn a_sharing_violation_is_transient_on_windows() {
        assert!(is_transient(&io::Error::from_raw_os_error(32)));
        assert!(is_transient(&io::Error::from_raw_os_error(33)));
        assert!(!is_transient(&io::Error::from_raw_os_error(2)));
    }

    #[cfg(windows)]
    #[test]
    fn a_file_held_open_without_sharing_is_replaced_once_it_is_let_go() {
        use std::os::windows::fs::OpenOptionsExt;
        let dir = std::env::temp_dir().join(format!("mcpb-replace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (from, to) = (dir.join("new.json"), dir.join("tokens.json"));
        std::fs::write(&from, "new").unwrap();
        std::fs::write(&to, "old").unwrap();
        // Another program reading the file, sharing nothing.
        let mut holder = Some(
            std::fs::OpenOptions::new()
                .read(true)
                .share_mode(0)
                .open(&to)
                .unwrap(),
        );
        let failures = Cell::new(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        retry_while(
            || {
                let r = std::fs::rename(&from, &to);
                if r.is_err() {
                    failures.set(failures.get() + 1);
                    // It lets go while the replace waits.
                    holder.take();
                }
                r
            },
            is_transient,
            deadline,
        )
        .unwrap();
        assert_eq!(failures.get(), 1, "the held file refused the first try");
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "new");
        let _ = std::fs::remove_dir_all(dir);
    }
}
