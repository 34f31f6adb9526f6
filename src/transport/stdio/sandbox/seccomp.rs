//! The socket filter: what Landlock's network rules leave open, closed with seccomp.
//!
//! Landlock confines TCP `connect` and `bind` by port; a datagram (UDP, a DNS query to any
//! server), a raw or packet socket, SCTP, a Unix socket to a daemon of the host (Docker's, the
//! session bus) and `io_uring`'s own socket operations pass it. The filter lets `socket()`
//! make only TCP sockets (IPv4, IPv6) and netlink ones (the kernel's own information, which
//! `getifaddrs` reads), refuses every other `socket()` with `EACCES` and `io_uring_setup` with
//! `ENOSYS`, and refuses system calls of another ABI (32-bit or x32 calls made by a 64-bit
//! process, which the filter's numbers do not describe). `socketpair` (a pipe between two ends
//! the process holds) is left alone.
//!
//! The program is built in the parent ([`Filter::new`]); the child installs it with one
//! `prctl` ([`Filter::install`]), after `no_new_privs`.
#![allow(unsafe_code)]

use std::io;

#[cfg(target_arch = "x86_64")]
mod arch {
    pub(super) const AUDIT_ARCH: u32 = 0xc000_003e;
    pub(super) const NR_SOCKET: u32 = 41;
    pub(super) const NR_IO_URING_SETUP: u32 = 425;
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) const AUDIT_ARCH: u32 = 0xc000_00b7;
    pub(super) const NR_SOCKET: u32 = 198;
    pub(super) const NR_IO_URING_SETUP: u32 = 425;
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// `struct seccomp_data` offsets: the call's number, the ABI, the low words of the arguments.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;
const OFF_ARG1: u32 = 24;
const OFF_ARG2: u32 = 32;

/// x32 calls carry this bit in their number.
const X32_BIT: u32 = 0x4000_0000;
const SOCK_TYPE_MASK: u32 = 0xf;
const IPPROTO_TCP: u32 = 6;

/// A seccomp program, ready to install.
pub(crate) struct Filter {
    program: Vec<libc::sock_filter>,
}

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

impl Filter {
    /// The filter for this CPU, `None` where its system call numbers are not written here.
    pub(crate) fn new() -> Option<Filter> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let eacces = RET_ERRNO | libc::EACCES as u32;
            let enosys = RET_ERRNO | libc::ENOSYS as u32;
            // Jump offsets count from the next instruction; the numbers on the right are the
            // instructions' indices.
            let program = vec![
                op(LD_W_ABS, 0, 0, OFF_ARCH),              // 0
                op(JEQ_K, 1, 0, arch::AUDIT_ARCH),         // 1: native -> 3
                op(RET_K, 0, 0, enosys),                   // 2
                op(LD_W_ABS, 0, 0, OFF_NR),                // 3
                op(JGE_K, 0, 1, X32_BIT),                  // 4: x32 -> 5, else 6
                op(RET_K, 0, 0, enosys),                   // 5
                op(JEQ_K, 0, 1, arch::NR_IO_URING_SETUP),  // 6: -> 7, else 8
                op(RET_K, 0, 0, enosys),                   // 7
                op(JEQ_K, 1, 0, arch::NR_SOCKET),          // 8: socket -> 10, else 9
                op(RET_K, 0, 0, RET_ALLOW),                // 9
                op(LD_W_ABS, 0, 0, OFF_ARG0),              // 10: the family
                op(JEQ_K, 0, 1, libc::AF_NETLINK as u32),  // 11: -> 12, else 13
                op(RET_K, 0, 0, RET_ALLOW),                // 12
                op(JEQ_K, 2, 0, libc::AF_INET as u32),     // 13: -> 16, else 14
                op(JEQ_K, 1, 0, libc::AF_INET6 as u32),    // 14: -> 16, else 15
                op(RET_K, 0, 0, eacces),                   // 15
                op(LD_W_ABS, 0, 0, OFF_ARG1),              // 16: the type, less its flags
                op(AND_K, 0, 0, SOCK_TYPE_MASK),           // 17
                op(JEQ_K, 1, 0, libc::SOCK_STREAM as u32), // 18: -> 20, else 19
                op(RET_K, 0, 0, eacces),                   // 19
                op(LD_W_ABS, 0, 0, OFF_ARG2),              // 20: the protocol: TCP only
                op(JEQ_K, 2, 0, 0),                        // 21: default -> 24
                op(JEQ_K, 1, 0, IPPROTO_TCP),              // 22: -> 24, else 23
                op(RET_K, 0, 0, eacces),                   // 23
                op(RET_K, 0, 0, RET_ALLOW),                // 24
            ];
            Some(Filter { program })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            None
        }
    }

    /// Installs the filter on the calling thread; runs in the child between fork and exec,
    /// after `no_new_privs` (which an unprivileged filter needs).
    ///
    /// Async-signal-safe: one `prctl` on the program built before the fork.
    pub(crate) fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.program.len() as u16,
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: `prog` points to the program, alive for the call; the kernel copies it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_prctl,
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &raw const prog,
                0u64,
                0u64,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}
