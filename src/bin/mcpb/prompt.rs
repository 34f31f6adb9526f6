//! Asking for a value on the terminal without echoing it (`${input:ID}` values are often
//! tokens).
//!
//! | system | how echo goes off |
//! |---|---|
//! | Unix | the terminal's `ECHO` local mode cleared (termios) |
//! | Windows | the console's `ENABLE_ECHO_INPUT` mode cleared |
//!
//! Echo goes off before the prompt shows, so a value typed as soon as it appears is hidden, and
//! comes back when the guard is dropped: after the line is read, on an error, or on a panic.
//! When stdin is not a terminal (a pipe), nothing is changed and the line is read as it is.

use std::io::Stdin;

/// Asks on the terminal (stderr) for one line, without echoing it.
///
/// # Errors
/// The read's error, as a sentence.
pub(crate) fn ask(prompt: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    let quiet = EchoOff::new(&stdin);
    eprint!("{prompt}");
    let mut line = String::new();
    let read = stdin.read_line(&mut line);
    if let Some(quiet) = quiet {
        drop(quiet);
        // The typed newline was not echoed either.
        eprintln!();
    }
    read.map_err(|e| format!("cannot read the terminal: {e}"))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Echo turned off on the terminal of stdin until dropped.
#[cfg(unix)]
struct EchoOff<'a> {
    stdin: &'a Stdin,
    saved: rustix::termios::Termios,
}

#[cfg(unix)]
impl<'a> EchoOff<'a> {
    /// Turns echo off; `None` when stdin is not a terminal.
    fn new(stdin: &'a Stdin) -> Option<EchoOff<'a>> {
        use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
        let saved = tcgetattr(stdin).ok()?;
        let mut quiet = saved.clone();
        quiet.local_modes.remove(LocalModes::ECHO);
        let _ = tcsetattr(stdin, OptionalActions::Now, &quiet);
        Some(EchoOff { stdin, saved })
    }
}

#[cfg(unix)]
impl Drop for EchoOff<'_> {
    fn drop(&mut self) {
        use rustix::termios::{tcsetattr, OptionalActions};
        let _ = tcsetattr(self.stdin, OptionalActions::Now, &self.saved);
    }
}

/// Echo turned off on the console of stdin until dropped.
#[cfg(windows)]
struct EchoOff<'a> {
    stdin: &'a Stdin,
    saved: u32,
}

#[cfg(windows)]
impl<'a> EchoOff<'a> {
    /// Turns echo off; `None` when stdin is not a console.
    fn new(stdin: &'a Stdin) -> Option<EchoOff<'a>> {
        let saved = console_mode(stdin)?;
        set_console_mode(stdin, quiet_mode(saved));
        Some(EchoOff { stdin, saved })
    }
}

#[cfg(windows)]
impl Drop for EchoOff<'_> {
    fn drop(&mut self) {
        set_console_mode(self.stdin, self.saved);
    }
}

/// The console mode `mode` without echo.
#[cfg(any(windows, test))]
fn quiet_mode(mode: u32) -> u32 {
    /// `ENABLE_ECHO_INPUT` (the same value in windows-sys's `Win32::System::Console`).
    const ENABLE_ECHO_INPUT: u32 = 0x0004;
    mode & !ENABLE_ECHO_INPUT
}

/// The console mode of stdin; `None` when it is not a console.
#[cfg(windows)]
fn console_mode(stdin: &Stdin) -> Option<u32> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::System::Console::GetConsoleMode;
    let mut mode = 0u32;
    // SAFETY: the handle is stdin's, valid while `stdin` is borrowed; `mode` is a live u32
    // the call writes.
    #[allow(unsafe_code)]
    let ok = unsafe { GetConsoleMode(stdin.as_raw_handle(), &mut mode) };
    (ok != 0).then_some(mode)
}

/// Sets the console mode of stdin (a failure leaves it as it was: nothing to do about it).
#[cfg(windows)]
fn set_console_mode(stdin: &Stdin, mode: u32) {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::System::Console::SetConsoleMode;
    // SAFETY: the handle is stdin's, valid while `stdin` is borrowed; no pointer is passed.
    #[allow(unsafe_code)]
    unsafe {
        SetConsoleMode(stdin.as_raw_handle(), mode);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quiet_console_mode_clears_echo_only() {
        // ENABLE_PROCESSED_INPUT | ENABLE_LINE_INPUT | ENABLE_ECHO_INPUT | ENABLE_INSERT_MODE
        let cooked = 0x0001 | 0x0002 | 0x0004 | 0x0020;
        assert_eq!(quiet_mode(cooked), 0x0001 | 0x0002 | 0x0020);
        assert_eq!(quiet_mode(quiet_mode(cooked)), quiet_mode(cooked));
    }

    #[cfg(windows)]
    #[test]
    fn the_echo_flag_is_the_consoles() {
        use windows_sys::Win32::System::Console::ENABLE_ECHO_INPUT;
        assert_eq!(quiet_mode(ENABLE_ECHO_INPUT), 0);
    }
}
