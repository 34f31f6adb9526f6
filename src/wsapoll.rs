//! Waiting on sockets on Windows: `WSAPoll`, the Winsock form of `poll(2)`.
//!
//! The WebSocket transport and the OAuth loopback listener wait on a few sockets at a time with
//! a deadline; on Unix they call `poll(2)` through rustix, here `WSAPoll` through windows-sys.
//! Both are level-triggered and need no registration, so the callers keep one shape on both
//! systems.

use std::io;
use std::os::windows::io::AsRawSocket;
use std::time::Duration;

use windows_sys::Win32::Networking::WinSock::{
    WSAGetLastError, WSAPoll, POLLIN, POLLOUT, SOCKET, WSAPOLLFD,
};

/// The longest single wait: an hour (the callers wait again until their deadline). `WSAPoll`
/// takes its timeout as milliseconds in an `i32`.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// What to wait for on one socket.
#[derive(Clone, Copy)]
pub(crate) struct Interest {
    socket: SOCKET,
    read: bool,
    write: bool,
}

impl Interest {
    /// Input (or, on a listener, a connection to accept).
    pub(crate) fn read(socket: &impl AsRawSocket) -> Interest {
        Interest {
            socket: socket.as_raw_socket() as SOCKET,
            read: true,
            write: false,
        }
    }

    /// Input, and room to write when `write`.
    pub(crate) fn read_write(socket: &impl AsRawSocket, write: bool) -> Interest {
        Interest {
            write,
            ..Interest::read(socket)
        }
    }
}

/// Waits until one of `sockets` is ready or `timeout` (`None`: no limit; at most an hour at a
/// time) passes; returns, for each, whether it is ready (an error or a hang-up counts as ready:
/// the next read or write reports it).
///
/// # Errors
/// The error `WSAPoll` reports (not an interruption: `WSAPoll` has none).
pub(crate) fn poll(sockets: &[Interest], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut fds: Vec<WSAPOLLFD> = sockets
        .iter()
        .map(|s| WSAPOLLFD {
            fd: s.socket,
            events: (if s.read { POLLIN } else { 0 }) | (if s.write { POLLOUT } else { 0 }),
            revents: 0,
        })
        .collect();
    let millis = timeout.map_or(-1, timeout_millis);
    let count = u32::try_from(fds.len()).unwrap_or(u32::MAX);
    // SAFETY: `fds` is a live, exclusively borrowed array of `count` WSAPOLLFD entries for the
    // whole call (WSAPoll writes only their `revents`); the sockets are borrowed by the caller
    // for as long, so none is closed while it is waited on.
    #[allow(unsafe_code)]
    let n = unsafe { WSAPoll(fds.as_mut_ptr(), count, millis) };
    if n < 0 {
        // SAFETY: reads the calling thread's last Winsock error; no pointer is involved.
        #[allow(unsafe_code)]
        let code = unsafe { WSAGetLastError() };
        return Err(io::Error::from_raw_os_error(code));
    }
    Ok(fds.iter().map(|fd| fd.revents != 0).collect())
}

/// `timeout` as `WSAPoll` takes it: whole milliseconds rounded up (a wait never ends before
/// its deadline only to spin), at most [`MAX_WAIT`].
fn timeout_millis(timeout: Duration) -> i32 {
    let ms = timeout.min(MAX_WAIT).as_nanos().div_ceil(1_000_000);
    i32::try_from(ms).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    use std::time::Instant;

    #[test]
    fn a_timeout_is_rounded_up_to_whole_milliseconds_and_capped_at_an_hour() {
        assert_eq!(timeout_millis(Duration::ZERO), 0);
        assert_eq!(timeout_millis(Duration::from_micros(1)), 1);
        assert_eq!(timeout_millis(Duration::from_millis(1500)), 1500);
        assert_eq!(timeout_millis(Duration::from_secs(u64::MAX)), 3_600_000);
    }

    #[test]
    fn poll_reports_input_and_a_timeout() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        let started = Instant::now();
        let ready = poll(&[Interest::read(&b)], Some(Duration::from_millis(50))).unwrap();
        assert_eq!(ready, [false]);
        assert!(started.elapsed() < Duration::from_secs(5));
        a.write_all(b"x").unwrap();
        let ready = poll(&[Interest::read(&b)], Some(Duration::from_secs(30))).unwrap();
        assert_eq!(ready, [true]);
    }
}
