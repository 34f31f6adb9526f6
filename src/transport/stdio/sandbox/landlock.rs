//! Landlock, rlimits, `no_new_privs` and capabilities, through the raw system calls.
//!
//! Everything that allocates, opens a file or can fail in a way worth explaining runs in the
//! parent, before the fork: the ABI probe, the ruleset and its rules ([`build`]). The child,
//! between fork and exec, runs [`ChildSetup::apply`], which makes system calls only (`prctl`,
//! `prlimit64`, `landlock_restrict_self`, `prctl(PR_SET_SECCOMP)`, `capset`) on memory
//! prepared beforehand: nothing in it
//! allocates, locks or touches a global, so it is sound after `fork` in a threaded process.
//!
//! The Landlock maintainers' `landlock` crate was weighed: its `RulesetCreated::restrict_self`
//! consumes the ruleset and builds a status value in the child, and its compatibility layer
//! silently drops what the kernel lacks unless each right is marked required. The calls are
//! three, their structures fixed by the kernel's ABI; written here, every step of the child is
//! in view and each missing feature is named for the fail-closed rule.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

// Access rights (linux/landlock.h), with the ABI version that introduced each.
const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
const FS_READ_DIR: u64 = 1 << 3;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2: linking or renaming a file into another folder.
const FS_REFER: u64 = 1 << 13;
/// ABI 3: truncating a file.
const FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5: `ioctl` on a device file.
const FS_IOCTL_DEV: u64 = 1 << 15;
/// ABI 4.
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;
/// ABI 6.
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

const RULE_PATH_BENEATH: libc::c_int = 1;
const RULE_NET_PORT: libc::c_int = 2;
const CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// Rights that apply to a file (the rest apply to folders only).
const FILE_RIGHTS: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;
/// Reading and running what is there.
const READ_RIGHTS: u64 = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// The Landlock ABI version the kernel offers, `None` without Landlock.
pub(crate) fn abi() -> Option<u32> {
    // SAFETY: a NULL attribute with size 0 and the VERSION flag only asks for the version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// The filesystem rights the kernel of `abi` handles.
fn fs_rights(abi: u32) -> u64 {
    let mut all = FS_EXECUTE
        | FS_WRITE_FILE
        | FS_READ_FILE
        | FS_READ_DIR
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_CHAR
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SOCK
        | FS_MAKE_FIFO
        | FS_MAKE_BLOCK
        | FS_MAKE_SYM;
    if abi >= 2 {
        all |= FS_REFER;
    }
    if abi >= 3 {
        all |= FS_TRUNCATE;
    }
    if abi >= 5 {
        all |= FS_IOCTL_DEV;
    }
    all
}

/// What the sandbox asks Landlock for.
pub(crate) struct Rules {
    /// Paths and whether each is writable.
    pub(crate) paths: Vec<(PathBuf, bool)>,
    /// `Some(port)`: TCP connect to that port only (the proxy); `None` with `net`: nothing.
    pub(crate) connect_port: Option<u16>,
    /// Whether TCP is confined at all.
    pub(crate) net: bool,
}

/// A ruleset ready for the child, and what it leaves out.
pub(crate) struct Built {
    pub(crate) fd: Option<OwnedFd>,
    /// What was applied, in words.
    pub(crate) applied: Vec<String>,
    /// What this kernel could not apply, in words naming what is missing.
    pub(crate) missing: Vec<String>,
    /// Paths that did not exist (nothing to grant).
    pub(crate) absent: Vec<PathBuf>,
}

/// Builds the ruleset for `rules` on a kernel of `abi` (`None`: no Landlock).
pub(crate) fn build(abi: Option<u32>, rules: &Rules) -> io::Result<Built> {
    let mut out = Built {
        fd: None,
        applied: Vec::new(),
        missing: Vec::new(),
        absent: Vec::new(),
    };
    let Some(abi) = abi else {
        out.missing.push(
            "filesystem rules: this kernel offers no Landlock (Linux 5.13 or later with \
             `lsm=landlock` is needed)"
                .to_owned(),
        );
        if rules.net {
            out.missing
                .push("TCP rules: no Landlock (ABI 4, Linux 6.7, is needed)".to_owned());
        }
        out.missing.push(
            "signal and abstract-socket scoping: no Landlock (ABI 6, Linux 6.12, is needed)"
                .to_owned(),
        );
        return Ok(out);
    };
    let handled_fs = fs_rights(abi);
    if abi < 3 {
        out.missing.push(format!(
            "truncation rules: Landlock ABI {abi} cannot refuse truncating a readable file \
             (ABI 3, Linux 6.2, is needed)"
        ));
    }
    let handled_net = if rules.net && abi >= 4 {
        NET_BIND_TCP | NET_CONNECT_TCP
    } else {
        if rules.net {
            out.missing.push(format!(
                "TCP rules: Landlock ABI {abi} has none (ABI 4, Linux 6.7, is needed)"
            ));
        }
        0
    };
    let scoped = if abi >= 6 {
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    } else {
        out.missing.push(format!(
            "signal and abstract-socket scoping: Landlock ABI {abi} has none (ABI 6, Linux \
             6.12, is needed)"
        ));
        0
    };
    let attr = RulesetAttr {
        handled_access_fs: handled_fs,
        handled_access_net: handled_net,
        scoped,
    };
    // ABI 1 to 3 know only the first field, 4 and 5 the first two: a larger size would be
    // refused with E2BIG when the unknown fields are set, so pass what the kernel knows.
    let size = match abi {
        1..=3 => std::mem::size_of::<u64>(),
        4 | 5 => 2 * std::mem::size_of::<u64>(),
        _ => std::mem::size_of::<RulesetAttr>(),
    };
    // SAFETY: `attr` is a valid `landlock_ruleset_attr` of at least `size` bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            size,
            0 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call returned a new descriptor that nothing else owns (close-on-exec).
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };

    for (path, writable) in &rules.paths {
        let Some(target) = open_path(path)? else {
            out.absent.push(path.clone());
            continue;
        };
        let mut rights = if *writable { handled_fs } else { READ_RIGHTS };
        if !target.dir {
            rights &= FILE_RIGHTS;
            // A device may be written and queried (`isatty` on /dev/null) where it is granted.
            if *writable {
                rights |= FS_IOCTL_DEV & handled_fs;
            }
        }
        let rule = PathBeneathAttr {
            allowed_access: rights & handled_fs,
            parent_fd: target.fd.as_raw_fd(),
        };
        add_rule(&ruleset, RULE_PATH_BENEATH, (&raw const rule).cast())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    out.applied
        .push("filesystem rules (Landlock ABI {abi})".replace("{abi}", &abi.to_string()));
    if handled_net != 0 {
        if let Some(port) = rules.connect_port {
            let rule = NetPortAttr {
                allowed_access: NET_CONNECT_TCP,
                port: u64::from(port),
            };
            add_rule(&ruleset, RULE_NET_PORT, (&raw const rule).cast())?;
            out.applied.push(format!(
                "TCP: connect only to the proxy's port {port}, bind nowhere"
            ));
        } else {
            out.applied.push("TCP: no connect and no bind".to_owned());
        }
    }
    if scoped != 0 {
        out.applied.push(
            "scoping: no signal to, and no abstract Unix socket of, a process outside the \
             sandbox"
                .to_owned(),
        );
    }
    out.fd = Some(ruleset);
    Ok(out)
}

fn add_rule(ruleset: &OwnedFd, kind: libc::c_int, attr: *const libc::c_void) -> io::Result<()> {
    // SAFETY: `attr` points to the live structure for `kind`; flags must be 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            kind,
            attr,
            0 as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

struct Opened {
    fd: OwnedFd,
    dir: bool,
}

/// Opens `path` with `O_PATH` (no read right needed), `None` when it does not exist.
fn open_path(path: &Path) -> io::Result<Option<Opened>> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))?;
    // SAFETY: `c` is a valid C string; the flags open no data.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::EACCES) => Ok(None),
            _ => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
    }
    // SAFETY: a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `st` is written by fstat before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a valid out pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(Opened {
        fd,
        dir: (st.st_mode & libc::S_IFMT) == libc::S_IFDIR,
    }))
}

/// An rlimit for the child.
#[derive(Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) resource: libc::c_int,
    pub(crate) value: u64,
}

/// What the child applies between fork and exec; prepared in the parent.
pub(crate) struct ChildSetup {
    /// The Landlock ruleset (close-on-exec: the server never holds it).
    pub(crate) ruleset: Option<OwnedFd>,
    pub(crate) limits: Vec<Limit>,
    /// The socket filter (see `seccomp.rs`).
    pub(crate) seccomp: Option<super::seccomp::Filter>,
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;

impl ChildSetup {
    /// Confines the calling process; runs in the child between fork and exec.
    ///
    /// Async-signal-safe: system calls on memory owned by `self` (allocated before the fork)
    /// and on the stack, nothing else; an error is the raw OS error, which `std` passes to the
    /// parent through its exec pipe.
    pub(crate) fn apply(&self) -> io::Result<()> {
        // No privilege gained by exec (set-user-ID, file capabilities) from here on; also what
        // lets an unprivileged process restrict itself.
        // SAFETY: plain system calls with integer arguments.
        if unsafe {
            libc::syscall(
                libc::SYS_prctl,
                libc::PR_SET_NO_NEW_PRIVS,
                1u64,
                0u64,
                0u64,
                0u64,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        for l in &self.limits {
            let value = libc::rlimit64 {
                rlim_cur: l.value,
                rlim_max: l.value,
            };
            // SAFETY: pid 0 is the caller; `value` lives on the stack; no old value is read.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_prlimit64,
                    0,
                    l.resource,
                    &raw const value,
                    std::ptr::null_mut::<libc::rlimit64>(),
                )
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(fd) = &self.ruleset {
            // SAFETY: a ruleset descriptor made in the parent; flags 0.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    fd.as_raw_fd(),
                    0 as libc::c_uint,
                )
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = &self.seccomp {
            filter.install()?;
        }
        // Drop every capability: a server started by root would otherwise keep them (raise its
        // rlimits back, open raw sockets past the TCP rules). With `no_new_privs`, exec cannot
        // give them back.
        let header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: a version-3 header and the two data words it expects, on the stack.
        if unsafe { libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The current hard limit of `resource`, `None` when unlimited or unreadable.
pub(crate) fn hard_limit(resource: libc::c_int) -> Option<u64> {
    let mut cur = libc::rlimit64 {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: pid 0 is the caller; nothing is set; `cur` is written by the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0,
            resource,
            std::ptr::null::<libc::rlimit64>(),
            &raw mut cur,
        )
    };
    (r == 0 && cur.rlim_max != libc::RLIM64_INFINITY).then_some(cur.rlim_max)
}

/// Whether the process runs with real user id 0, which Linux exempts from `RLIMIT_NPROC`.
pub(crate) fn is_root() -> bool {
    // SAFETY: getuid cannot fail and touches nothing.
    unsafe { libc::getuid() == 0 }
}
