//! Questions a server makes mcpb ask the user, answered on the terminal device: a form of an
//! elicitation, the confirmation of a sampling request. The questions themselves go to stderr.
//!
//! The terminal is the device (`/dev/tty`, `CONIN$`), not stdin, which may be a pipe (a `shell`
//! script, a `chat` conversation). It is used only when stderr is a terminal too: a run whose
//! stderr goes to a file or a pipe is unattended, and its questions get the unattended answer
//! (declined) instead of waiting on a terminal nobody watches.
//!
//! Every read waits with a deadline and in short slices, so that a question whose connection
//! closes (the server went away, the user pressed Ctrl-C) or that nobody answers ends instead of
//! holding its handler's thread. A typed line longer than [`MAX_LINE`] bytes is refused whole.

use std::fs::File;
use std::io::{IsTerminal, Read as _};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mcp_blocking::handler::CloseSignal;

/// The longest line a user may type in answer, in bytes (a longer one is refused and asked
/// again).
pub(crate) const MAX_LINE: usize = 4096;

/// How long a question waits for its answer before it counts as unanswered (cancelled).
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// How often a read checks whether its connection closed.
const SLICE: Duration = Duration::from_millis(100);

/// One question on the terminal at a time: servers ask from their own threads.
static ASKING: Mutex<()> = Mutex::new(());

/// What reading one line gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line, without its line ending.
    Text(String),
    /// More than [`MAX_LINE`] bytes before the line ended (the whole line was read and dropped).
    TooLong,
    /// The end of input (Ctrl-D), or the terminal could not be read.
    End,
    /// The connection of the question was closed while waiting.
    Closed,
    /// Nobody answered before the deadline.
    TimedOut,
}

/// A source of answer lines: the terminal, or a script in the unit tests.
pub(crate) trait Lines {
    /// The next line typed.
    fn next_line(&mut self) -> Line;
}

/// The terminal device, held for one question at a time.
pub(crate) struct Tty {
    file: File,
    /// Bytes read past the last line returned.
    pending: Vec<u8>,
    deadline: Instant,
    closing: Option<CloseSignal>,
    _turn: MutexGuard<'static, ()>,
}

impl Tty {
    /// The terminal, for a question that may wait until `ANSWER_WAIT` from now or until
    /// `closing` fires; `None` when stderr is not a terminal or the device does not open.
    /// Waits for another question to be answered first.
    pub(crate) fn open(closing: Option<CloseSignal>) -> Option<Tty> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let file = open_device()?;
        let turn = ASKING.lock().unwrap_or_else(|p| p.into_inner());
        Some(Tty {
            file,
            pending: Vec::new(),
            deadline: Instant::now() + ANSWER_WAIT,
            closing,
            _turn: turn,
        })
    }

    /// Whether the question's connection has closed.
    fn closed(&self) -> bool {
        self.closing.as_ref().is_some_and(CloseSignal::is_closed)
    }

    /// The line in `pending` up to its newline, if one is there.
    fn take_line(&mut self) -> Option<Vec<u8>> {
        let end = self.pending.iter().position(|b| *b == b'\n')?;
        let mut line: Vec<u8> = self.pending.drain(..=end).collect();
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(line)
    }
}

impl Lines for Tty {
    fn next_line(&mut self) -> Line {
        let mut too_long = false;
        loop {
            if let Some(line) = self.take_line() {
                if too_long || line.len() > MAX_LINE {
                    return Line::TooLong;
                }
                return Line::Text(String::from_utf8_lossy(&line).into_owned());
            }
            if self.pending.len() > MAX_LINE {
                // Keep reading to the line's end, but not its bytes.
                too_long = true;
                self.pending.clear();
            }
            if self.closed() {
                return Line::Closed;
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Line::TimedOut;
            }
            match wait_readable(&self.file, SLICE.min(self.deadline - now)) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(_) => return Line::End,
            }
            let mut buf = [0u8; 512];
            match self.file.read(&mut buf) {
                Ok(0) => return Line::End,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Line::End,
            }
        }
    }
}

/// The terminal device, for reading.
#[cfg(unix)]
fn open_device() -> Option<File> {
    File::open("/dev/tty").ok()
}

/// The console's input.
#[cfg(windows)]
fn open_device() -> Option<File> {
    File::open("CONIN$").ok()
}

/// Waits up to `wait` for the terminal to have input; whether it has.
#[cfg(unix)]
fn wait_readable(file: &File, wait: Duration) -> std::io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(file, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: wait.as_secs() as _,
        tv_nsec: wait.subsec_nanos() as _,
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Waits up to `wait` for the console to have input events; whether it has. (A console signals
/// any input event, a mouse move too; the read that follows then waits for a whole line, so
/// on Windows a question only notices its connection closing between lines.)
#[cfg(windows)]
fn wait_readable(file: &File, wait: Duration) -> std::io::Result<bool> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::WAIT_OBJECT_0;
    use windows_sys::Win32::System::Threading::WaitForSingleObject;
    let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
    // SAFETY: the handle is the console input's, valid while `file` is borrowed.
    #[allow(unsafe_code)]
    let r = unsafe { WaitForSingleObject(file.as_raw_handle(), ms) };
    Ok(r == WAIT_OBJECT_0)
}

/// Lines given in advance, for the unit tests of what asks.
#[cfg(test)]
pub(crate) struct Script(pub(crate) std::collections::VecDeque<Line>);

#[cfg(test)]
impl Script {
    pub(crate) fn of(lines: &[&str]) -> Script {
        Script(lines.iter().map(|l| Line::Text((*l).to_owned())).collect())
    }
}

#[cfg(test)]
impl Lines for Script {
    fn next_line(&mut self) -> Line {
        self.0.pop_front().unwrap_or(Line::End)
    }
}
