//! A Job Object per server: every process the server starts (the `node` behind an `npx.cmd`,
//! the `python` behind `uvx`) belongs to its job, and the job ends them all.
//!
//! ```text
//!   spawn (suspended) ──> assign to a new job (kill-on-close) ──> resume its threads
//!   close: stdin closed ─grace─> TerminateJobObject (the server and everything it started)
//!   client gone without close: the job handle closes, and the kernel ends the job
//! ```
//!
//! The child is created suspended and resumed only once it is in the job, so not even a
//! process it starts in its first instant escapes. This file holds the transport's calls into
//! the Windows API (through `windows-sys`); each `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::process::Child;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicProcessIdList,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_PROCESS_ID_LIST, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, WaitForSingleObject, THREAD_SUSPEND_RESUME,
};

/// The exit code a terminated job's processes get (as `taskkill /f` gives).
const TERMINATED: u32 = 1;

/// A Job Object whose processes end when it is terminated or its last handle closes.
#[derive(Debug)]
pub(crate) struct Job {
    handle: OwnedHandle,
}

impl Job {
    /// A new, unnamed job with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`.
    pub(crate) fn new() -> io::Result<Job> {
        // SAFETY: both arguments may be null (default security, no name); the returned handle
        // is checked before it is owned.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid handle just returned to us, owned by nothing else.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
        let mut info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: `info` is a live, initialised structure of the size passed, of the class named.
        let ok = unsafe {
            SetInformationJobObject(
                handle.as_raw_handle() as HANDLE,
                JobObjectExtendedLimitInformation,
                (&raw const info).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Job { handle })
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle() as HANDLE
    }

    /// Puts `child` (created suspended) in the job.
    pub(crate) fn assign(&self, child: &Child) -> io::Result<()> {
        // SAFETY: both handles are valid for the duration of the call (the job is owned by
        // `self`, the process handle by `child`).
        let ok = unsafe { AssignProcessToJobObject(self.raw(), child.as_raw_handle() as HANDLE) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends every process of the job (the server and all it started). Idempotent.
    pub(crate) fn terminate(&self) -> io::Result<()> {
        // SAFETY: the job handle is valid (owned by `self`).
        if unsafe { TerminateJobObject(self.raw(), TERMINATED) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The ids of the processes in the job now (at most 1024 are listed).
    pub(crate) fn processes(&self) -> io::Result<Vec<u32>> {
        const MAX: usize = 1024;
        // The structure ends in a variable-length array: a buffer of `usize`s holds it, aligned.
        let header = size_of::<JOBOBJECT_BASIC_PROCESS_ID_LIST>() / size_of::<usize>();
        let mut buf = vec![0usize; header + MAX];
        let len = (buf.len() * size_of::<usize>()) as u32;
        // SAFETY: `buf` is writable for `len` bytes and aligned for the structure, whose fixed
        // part (two u32 and the first element) fits in `header` words.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicProcessIdList,
                buf.as_mut_ptr().cast(),
                len,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the call filled the header; the ids follow it in the same buffer.
        let list = unsafe { &*buf.as_ptr().cast::<JOBOBJECT_BASIC_PROCESS_ID_LIST>() };
        let listed = (list.NumberOfProcessIdsInList as usize).min(MAX);
        let first = std::mem::offset_of!(JOBOBJECT_BASIC_PROCESS_ID_LIST, ProcessIdList)
            / size_of::<usize>();
        Ok(buf[first..first + listed]
            .iter()
            .map(|&pid| pid as u32)
            .collect())
    }

    /// Waits up to `limit` for the job to have no process left.
    pub(crate) fn wait_empty(&self, limit: Duration) -> bool {
        let deadline = crate::deadline::add(Instant::now(), limit);
        let mut pause = Duration::from_micros(500);
        loop {
            match self.processes() {
                Ok(p) if p.is_empty() => return true,
                Err(_) => return false,
                Ok(_) => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // No handle signals "the job is empty" without a completion port: short, growing
            // pauses, as the Unix transport sweeps a process group.
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

/// Resumes the threads of process `pid`, created suspended. Fails when none was found.
pub(crate) fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a thread snapshot of the whole system; the handle is checked, then closed below.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `snap` is a valid handle just returned to us; owning it closes it on every path.
    let snap = unsafe { OwnedHandle::from_raw_handle(snap as RawHandle) };
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    let mut failed = None;
    // SAFETY: `entry` is a live structure with `dwSize` set, as the API requires.
    let mut more = unsafe { Thread32First(snap.as_raw_handle() as HANDLE, &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: plain call; the handle is checked and closed.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if thread.is_null() {
                failed = Some(io::Error::last_os_error());
            } else {
                // SAFETY: `thread` is a valid handle with THREAD_SUSPEND_RESUME access.
                if unsafe { ResumeThread(thread) } == u32::MAX {
                    failed = Some(io::Error::last_os_error());
                } else {
                    resumed += 1;
                }
                // SAFETY: `thread` is ours and closed once.
                unsafe { CloseHandle(thread) };
            }
        }
        // SAFETY: as for `Thread32First`.
        more = unsafe { Thread32Next(snap.as_raw_handle() as HANDLE, &raw mut entry) } != 0;
    }
    match (resumed, failed) {
        (0, Some(e)) => Err(e),
        (0, None) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the new process has no thread to resume",
        )),
        _ => Ok(()),
    }
}

/// Waits up to `limit` for `child` to exit; whether it did.
pub(crate) fn wait_exit(child: &Child, limit: Duration) -> bool {
    let ms = limit.as_millis().min(u128::from(u32::MAX - 1)) as u32;
    // SAFETY: the process handle is valid while `child` lives.
    unsafe { WaitForSingleObject(child.as_raw_handle() as HANDLE, ms) == WAIT_OBJECT_0 }
}

/// Cancels every read or write in progress on `pipe`, whichever thread is blocked in it (a
/// pipe held open by a process outside the job); whether a cancellation was delivered.
pub(crate) fn cancel_io(pipe: &impl AsRawHandle) -> bool {
    // SAFETY: the handle is valid while `pipe` lives; a null OVERLAPPED means all its I/O.
    unsafe {
        windows_sys::Win32::System::IO::CancelIoEx(pipe.as_raw_handle() as HANDLE, std::ptr::null())
            != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::windows::process::CommandExt;
    use std::process::{Command, Stdio};
    use windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

    /// cmd.exe running a child of its own (ping, which waits about 30 s), its output nowhere.
    fn ping_in_cmd() -> Command {
        let mut c = Command::new("cmd.exe");
        c.args(["/d", "/c", "ping -n 30 127.0.0.1 >nul"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    /// Waits up to 10 s for the job to list at least `n` processes.
    fn listed(job: &Job, n: usize) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pids = job.processes().unwrap();
            if pids.len() >= n || Instant::now() >= deadline {
                return pids;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_process_started_suspended_runs_in_its_job_with_its_children_and_ends_with_it() {
        let job = Job::new().unwrap();
        let mut child = ping_in_cmd()
            .creation_flags(CREATE_SUSPENDED)
            .spawn()
            .unwrap();
        job.assign(&child).unwrap();
        assert_eq!(
            job.processes().unwrap(),
            vec![child.id()],
            "suspended: itself only"
        );
        resume(child.id()).unwrap();
        let pids = listed(&job, 2);
        assert!(
            pids.len() >= 2,
            "cmd.exe and its ping are in the job: {pids:?}"
        );
        job.terminate().unwrap();
        assert!(
            job.wait_empty(Duration::from_secs(5)),
            "{:?}",
            job.processes()
        );
        assert!(wait_exit(&child, Duration::from_secs(5)));
        assert_eq!(child.wait().unwrap().code(), Some(TERMINATED as i32));
    }

    #[test]
    fn closing_the_job_handle_ends_its_processes() {
        let job = Job::new().unwrap();
        let mut child = ping_in_cmd().spawn().unwrap();
        job.assign(&child).unwrap();
        drop(job);
        assert!(
            wait_exit(&child, Duration::from_secs(5)),
            "kill-on-close ended it"
        );
        child.wait().unwrap();
    }

    #[test]
    fn resuming_a_process_that_is_not_there_fails() {
        assert!(resume(u32::MAX - 3).is_err());
    }
}
