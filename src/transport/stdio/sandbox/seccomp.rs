//! The socket filter: what Landlock's network rules leave open, closed with seccomp.
//!
//! Landlock confines TCP `connect` and `bind` by port; a datagram (UDP, a DNS query to any
//! server), a raw or packet socket, SCTP, a Unix socket to a daemon of the host (Docker's, the
//! session bus) and `io_uring`'s own socket operations pass it. The filter lets `socket()`
//! make only TCP sockets (IPv4, IPv6) and netlink ones (the kernel's own information, which
//! `getifaddrs` reads), refuses every other `socket()` with `EACCES` and `io_uring_setup` with
//! `ENOSYS`. Two TCP paths pass Landlock's rules too, and are refused with `EACCES`: `listen` on a
//! socket never bound (the kernel binds it to a free port without the bind check), and
//! `sendto`/`sendmsg`/`sendmmsg` with `MSG_FASTOPEN` (a connection opened without the connect
//! check). It also refuses system calls of another ABI (32-bit or x32 calls made by a 64-bit
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
    pub(super) const NR_SENDTO: u32 = 44;
    pub(super) const NR_SENDMSG: u32 = 46;
    pub(super) const NR_LISTEN: u32 = 50;
    pub(super) const NR_SENDMMSG: u32 = 307;
    pub(super) const NR_IO_URING_SETUP: u32 = 425;
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) const AUDIT_ARCH: u32 = 0xc000_00b7;
    pub(super) const NR_SOCKET: u32 = 198;
    pub(super) const NR_LISTEN: u32 = 201;
    pub(super) const NR_SENDTO: u32 = 206;
    pub(super) const NR_SENDMSG: u32 = 211;
    pub(super) const NR_SENDMMSG: u32 = 269;
    pub(super) const NR_IO_URING_SETUP: u32 = 425;
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const JA: u16 = 0x05;
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
const OFF_ARG3: u32 = 40;

/// x32 calls carry this bit in their number.
const X32_BIT: u32 = 0x4000_0000;
const SOCK_TYPE_MASK: u32 = 0xf;
const IPPROTO_TCP: u32 = 6;
/// `sendto`/`sendmsg` with this flag connect a TCP socket (TCP Fast Open) without passing
/// through `connect`, where Landlock's TCP rule is checked.
const MSG_FASTOPEN: u32 = 0x2000_0000;

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
                op(JEQ_K, 0, 1, arch::NR_LISTEN),          // 8: -> 9, else 10
                op(RET_K, 0, 0, eacces),                   // 9
                op(JEQ_K, 9, 0, arch::NR_SOCKET),          // 10: socket -> 20, else 11
                op(JEQ_K, 4, 0, arch::NR_SENDTO),          // 11: -> 16, else 12
                op(JEQ_K, 3, 0, arch::NR_SENDMMSG),        // 12: -> 16, else 13
                op(JEQ_K, 0, 5, arch::NR_SENDMSG),         // 13: -> 14, else 19
                op(LD_W_ABS, 0, 0, OFF_ARG2),              // 14: sendmsg's flags
                op(JA, 0, 0, 1),                           // 15: -> 17
                op(LD_W_ABS, 0, 0, OFF_ARG3),              // 16: sendto's, sendmmsg's flags
                op(JSET_K, 0, 1, MSG_FASTOPEN),            // 17: -> 18, else 19
                op(RET_K, 0, 0, eacces),                   // 18
                op(RET_K, 0, 0, RET_ALLOW),                // 19
                op(LD_W_ABS, 0, 0, OFF_ARG0),              // 20: the family
                op(JEQ_K, 0, 1, libc::AF_NETLINK as u32),  // 21: -> 22, else 23
                op(RET_K, 0, 0, RET_ALLOW),                // 22
                op(JEQ_K, 2, 0, libc::AF_INET as u32),     // 23: -> 26, else 24
                op(JEQ_K, 1, 0, libc::AF_INET6 as u32),    // 24: -> 26, else 25
                op(RET_K, 0, 0, eacces),                   // 25
                op(LD_W_ABS, 0, 0, OFF_ARG1),              // 26: the type, less its flags
                op(AND_K, 0, 0, SOCK_TYPE_MASK),           // 27
                op(JEQ_K, 1, 0, libc::SOCK_STREAM as u32), // 28: -> 30, else 29
                op(RET_K, 0, 0, eacces),                   // 29
                op(LD_W_ABS, 0, 0, OFF_ARG2),              // 30: the protocol: TCP only
                op(JEQ_K, 2, 0, 0),                        // 31: default -> 34
                op(JEQ_K, 1, 0, IPPROTO_TCP),              // 32: -> 34, else 33
                op(RET_K, 0, 0, eacces),                   // 33
                op(RET_K, 0, 0, RET_ALLOW),                // 34
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

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Runs the program on one call as the kernel would (the few instructions it uses),
    /// failing on a jump out of the program or an instruction it does not know.
    fn run(program: &[libc::sock_filter], arch_id: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch_id.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let i = program.get(pc).expect("a jump inside the program");
            let jump = |taken: bool| pc + 1 + usize::from(if taken { i.jt } else { i.jf });
            pc = match i.code {
                LD_W_ABS => {
                    let k = i.k as usize;
                    acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
                    pc + 1
                }
                AND_K => {
                    acc &= i.k;
                    pc + 1
                }
                JA => pc + 1 + i.k as usize,
                JEQ_K => jump(acc == i.k),
                JGE_K => jump(acc >= i.k),
                JSET_K => jump(acc & i.k != 0),
                RET_K => return i.k,
                other => panic!("instruction {other:#x} at {pc}"),
            };
        }
    }

    #[test]
    fn the_filter_allows_tcp_and_refuses_what_passes_landlock() {
        let f = Filter::new().expect("a filter on this CPU");
        let call = |nr: u32, args: [u64; 6]| run(&f.program, arch::AUDIT_ARCH, nr, args);
        let eacces = RET_ERRNO | libc::EACCES as u32;
        let enosys = RET_ERRNO | libc::ENOSYS as u32;
        let inet = libc::AF_INET as u64;
        let stream = (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64;
        // The numbers are the kernel's for this CPU.
        assert_eq!(i64::from(arch::NR_SOCKET), libc::SYS_socket);
        assert_eq!(i64::from(arch::NR_LISTEN), libc::SYS_listen);
        assert_eq!(i64::from(arch::NR_SENDTO), libc::SYS_sendto);
        assert_eq!(i64::from(arch::NR_SENDMSG), libc::SYS_sendmsg);
        assert_eq!(i64::from(arch::NR_SENDMMSG), libc::SYS_sendmmsg);
        assert_eq!(i64::from(arch::NR_IO_URING_SETUP), libc::SYS_io_uring_setup);

        assert_eq!(call(arch::NR_SOCKET, [inet, stream, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(arch::NR_SOCKET, [inet, stream, 6, 0, 0, 0]), RET_ALLOW);
        let v6 = libc::AF_INET6 as u64;
        assert_eq!(call(arch::NR_SOCKET, [v6, stream, 0, 0, 0, 0]), RET_ALLOW);
        let netlink = libc::AF_NETLINK as u64;
        assert_eq!(call(arch::NR_SOCKET, [netlink, 3, 0, 0, 0, 0]), RET_ALLOW);
        let dgram = libc::SOCK_DGRAM as u64;
        assert_eq!(call(arch::NR_SOCKET, [inet, dgram, 0, 0, 0, 0]), eacces);
        // MPTCP and SCTP streams.
        assert_eq!(call(arch::NR_SOCKET, [inet, stream, 262, 0, 0, 0]), eacces);
        assert_eq!(call(arch::NR_SOCKET, [inet, stream, 132, 0, 0, 0]), eacces);
        let unix = libc::AF_UNIX as u64;
        assert_eq!(call(arch::NR_SOCKET, [unix, stream, 0, 0, 0, 0]), eacces);
        assert_eq!(call(arch::NR_LISTEN, [3, 1, 0, 0, 0, 0]), eacces);
        let fastopen = u64::from(MSG_FASTOPEN);
        let nosignal = libc::MSG_NOSIGNAL as u64;
        assert_eq!(call(arch::NR_SENDTO, [3, 0, 7, nosignal, 0, 0]), RET_ALLOW);
        assert_eq!(call(arch::NR_SENDTO, [3, 0, 7, fastopen, 0, 0]), eacces);
        assert_eq!(call(arch::NR_SENDMSG, [3, 0, nosignal, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(arch::NR_SENDMSG, [3, 0, fastopen, 0, 0, 0]), eacces);
        assert_eq!(call(arch::NR_SENDMMSG, [3, 0, 1, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(arch::NR_SENDMMSG, [3, 0, 1, fastopen, 0, 0]), eacces);
        assert_eq!(call(arch::NR_IO_URING_SETUP, [0; 6]), enosys);
        assert_eq!(call(X32_BIT | 41, [inet, stream, 0, 0, 0, 0]), enosys);
        // Any other call, and a call of another ABI.
        assert_eq!(call(0, [0; 6]), RET_ALLOW);
        assert_eq!(run(&f.program, 0x4000_0003, 102, [0; 6]), enosys);
    }
}
