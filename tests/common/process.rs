//! Processes seen by their ids, on Unix (`/proc`, signals) and on Windows (process handles and
//! Toolhelp snapshots): whether one still runs, ending it, this process's children, and how many
//! files, pipes and sockets this process holds open.

/// Whether process `pid` still runs. On Unix a zombie (exited, reaped by nobody yet) counts as
/// gone: it runs no code.
#[cfg(unix)]
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z")
        }
        Err(_) => false,
    }
}

/// Whether process `pid` still runs: it can be opened and is not yet signalled (exited).
#[cfg(windows)]
pub fn running(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
    };
    // SAFETY: plain calls on a handle this function opens, checks and closes.
    #[allow(unsafe_code)]
    unsafe {
        let h = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid);
        if h.is_null() {
            return false;
        }
        let running = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
        CloseHandle(h);
        running
    }
}

/// Ends process `pid` at once (SIGKILL), whatever it is doing; a process already gone is no error.
#[cfg(unix)]
pub fn kill(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Ends process `pid` at once (`TerminateProcess`); a process already gone is no error.
#[cfg(windows)]
pub fn kill(pid: u32) {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: plain calls on a handle this function opens, checks and closes.
    #[allow(unsafe_code)]
    unsafe {
        let h = OpenProcess(PROCESS_TERMINATE, 0, pid);
        if h.is_null() {
            return;
        }
        TerminateProcess(h, 1);
        CloseHandle(h);
    }
}

/// The ids of this process's live child processes (a zombie is not live).
#[cfg(unix)]
pub fn children() -> Vec<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // The state and the parent are the first two fields after the parenthesised name.
            let f: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            (f.len() > 1 && f[1] == me && f[0] != "Z").then_some(pid)
        })
        .collect()
}

/// The ids of this process's live child processes (from a Toolhelp snapshot).
#[cfg(windows)]
pub fn children() -> Vec<u32> {
    use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W,
        TH32CS_SNAPPROCESS,
    };
    let me = std::process::id();
    let mut kids = Vec::new();
    // SAFETY: the snapshot handle is checked and closed; `entry` is a plain struct whose size
    // field is set as the API requires before the calls read into it.
    #[allow(unsafe_code)]
    unsafe {
        let snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
        if snap == INVALID_HANDLE_VALUE {
            return kids;
        }
        let mut entry: PROCESSENTRY32W = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
        let mut more = Process32FirstW(snap, &mut entry) != 0;
        while more {
            if entry.th32ParentProcessID == me && running(entry.th32ProcessID) {
                kids.push(entry.th32ProcessID);
            }
            more = Process32NextW(snap, &mut entry) != 0;
        }
        CloseHandle(snap);
    }
    kids
}

/// How many files, pipes and sockets this process holds open: its file descriptors on Unix,
/// its handles on Windows.
#[cfg(unix)]
pub fn open_handles() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// How many files, pipes and sockets this process holds open: its file descriptors on Unix,
/// its handles on Windows.
#[cfg(windows)]
pub fn open_handles() -> usize {
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessHandleCount};
    let mut n = 0u32;
    // SAFETY: the current process's pseudo-handle needs no closing; `n` is written by the call.
    #[allow(unsafe_code)]
    let ok = unsafe { GetProcessHandleCount(GetCurrentProcess(), &mut n) };
    assert!(ok != 0, "GetProcessHandleCount failed");
    n as usize
}
