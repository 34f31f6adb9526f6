//! The I/O thread's one wait: for its socket (input, or room to write), a wake-up from a caller,
//! or a deadline, whichever comes first.
//!
//! | system | wake-up | wait |
//! |---|---|---|
//! | Unix | a `UnixStream` pair | `poll(2)` (rustix) |
//! | Windows | a connected pair of loopback TCP sockets | `WSAPoll` |
//!
//! Both ends of a pair are non-blocking: a wake-up that finds the buffer full is not needed (the
//! thread is awake anyway), and the thread drains every wake-up byte after its wait.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[cfg(unix)]
type WakeSocket = std::os::unix::net::UnixStream;
#[cfg(windows)]
type WakeSocket = TcpStream;

/// The end callers write to, to wake the I/O thread.
#[derive(Debug)]
pub(super) struct Waker(WakeSocket);

/// The end the I/O thread waits on.
#[derive(Debug)]
pub(super) struct WakeReceiver(WakeSocket);

/// A connected, non-blocking wake-up pair.
///
/// # Errors
/// The system's error when the pair cannot be made.
pub(super) fn pair() -> io::Result<(Waker, WakeReceiver)> {
    let (wake, wake_rx) = socket_pair()?;
    wake.set_nonblocking(true)?;
    wake_rx.set_nonblocking(true)?;
    Ok((Waker(wake), WakeReceiver(wake_rx)))
}

#[cfg(unix)]
fn socket_pair() -> io::Result<(WakeSocket, WakeSocket)> {
    WakeSocket::pair()
}

/// Two connected loopback TCP sockets (Windows has no `socketpair`): a listener on a random
/// loopback port, a connection to it, and the accepted end whose peer is that connection (one
/// from another local program that got in first is dropped).
#[cfg(windows)]
fn socket_pair() -> io::Result<(WakeSocket, WakeSocket)> {
    use std::net::{Ipv4Addr, TcpListener};
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let ours = TcpStream::connect(listener.local_addr()?)?;
    let ours_addr = ours.local_addr()?;
    // Ours is in the backlog already, so each accept returns at once; a few strangers ahead of
    // it are dropped, more fail the pair rather than keep the connect waiting.
    for _ in 0..16 {
        let (theirs, peer) = listener.accept()?;
        if peer == ours_addr {
            theirs.set_nodelay(true)?;
            ours.set_nodelay(true)?;
            return Ok((ours, theirs));
        }
    }
    Err(io::Error::other(
        "the wake-up socket pair kept being connected to by another program",
    ))
}

impl Waker {
    /// Wakes the I/O thread (a full buffer means it has a wake-up waiting already).
    pub(super) fn wake(&self) {
        let _ = (&self.0).write(&[1]);
    }
}

impl WakeReceiver {
    /// Waits for `sock` to have input (or room to write, when `write`), for a wake-up, or until
    /// `until` (`None`: no limit), then drains the wake-ups.
    pub(super) fn wait(&self, sock: &TcpStream, write: bool, until: Option<Instant>) {
        let left =
            until.map(|t| t.saturating_duration_since(Instant::now()) + Duration::from_millis(1));
        if self.poll(sock, write, left) {
            let mut sink = [0u8; 64];
            while matches!((&self.0).read(&mut sink), Ok(n) if n > 0) {}
        }
    }

    /// Waits as [`wait`](Self::wait) says; returns whether a wake-up may be waiting (a failed
    /// wait counts as one, so the thread looks at its state again).
    #[cfg(unix)]
    fn poll(&self, sock: &TcpStream, write: bool, left: Option<Duration>) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec};
        let timeout = left.map(|left| {
            Timespec::try_from(left).unwrap_or(Timespec {
                tv_sec: i64::from(i32::MAX),
                tv_nsec: 0,
            })
        });
        let mut socket_flags = PollFlags::IN;
        if write {
            socket_flags |= PollFlags::OUT;
        }
        let mut fds = [
            PollFd::new(sock, socket_flags),
            PollFd::new(&self.0, PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) => !fds[1].revents().is_empty(),
            Err(_) => true,
        }
    }

    /// Waits as [`wait`](Self::wait) says; returns whether a wake-up may be waiting (a failed
    /// wait counts as one, so the thread looks at its state again).
    #[cfg(windows)]
    fn poll(&self, sock: &TcpStream, write: bool, left: Option<Duration>) -> bool {
        use crate::wsapoll::{poll, Interest};
        let sockets = [Interest::read_write(sock, write), Interest::read(&self.0)];
        match poll(&sockets, left) {
            Ok(ready) => ready[1],
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    /// A connected socket with nothing to read, and its peer.
    fn quiet_socket() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        (a, b)
    }

    #[test]
    fn a_wait_ends_at_its_deadline() {
        let (_peer, sock) = quiet_socket();
        let (_waker, rx) = pair().unwrap();
        let started = Instant::now();
        rx.wait(
            &sock,
            false,
            Some(Instant::now() + Duration::from_millis(50)),
        );
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_wake_up_ends_a_wait_without_a_deadline_and_is_drained() {
        let (_peer, sock) = quiet_socket();
        let (waker, rx) = pair().unwrap();
        waker.wake();
        rx.wait(&sock, false, None);
        let mut byte = [0u8; 1];
        let drained = (&rx.0).read(&mut byte).unwrap_err();
        assert_eq!(drained.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn input_on_the_socket_ends_a_wait() {
        let (mut peer, sock) = quiet_socket();
        let (_waker, rx) = pair().unwrap();
        peer.write_all(b"x").unwrap();
        let started = Instant::now();
        rx.wait(&sock, false, Some(Instant::now() + Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
