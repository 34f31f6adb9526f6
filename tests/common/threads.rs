//! This process's threads by name, for the tests that check a library thread (`mcp-…`, `hub-…`)
//! started or ended: on Linux from `/proc/self/task`, on Windows from a Toolhelp snapshot and
//! each thread's description (where Rust's standard library puts a thread's name).

/// The longest name Linux keeps for a thread (`comm`, without its NUL): a name on Windows is cut
/// to it too, so that a test compares the same names on both.
#[cfg(windows)]
const NAME_BYTES: usize = 15;

/// The names of this process's threads (cut to 15 bytes); an unnamed thread on Windows is left out.
#[cfg(unix)]
pub fn names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// The names of this process's threads (cut to 15 bytes); an unnamed thread is left out (the
/// runtime's own threads, which Wine starts and ends as it needs them).
#[cfg(windows)]
pub fn names() -> Vec<String> {
    ids().into_iter().filter_map(name_of).collect()
}

/// How many threads this process has: on Windows, how many named ones (see [`names`]).
#[cfg(unix)]
pub fn count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// How many threads this process has: on Windows, how many named ones (see [`names`]).
#[cfg(windows)]
pub fn count() -> usize {
    names().len()
}

/// The ids of this process's threads.
#[cfg(windows)]
fn ids() -> Vec<u32> {
    use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
    };
    let me = std::process::id();
    let mut ids = Vec::new();
    // SAFETY: the snapshot handle is checked and closed; `entry` is a plain struct whose size
    // field is set as the API requires before each call reads into it.
    #[allow(unsafe_code)]
    unsafe {
        let snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snap == INVALID_HANDLE_VALUE {
            return ids;
        }
        let mut entry: THREADENTRY32 = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
        let mut more = Thread32First(snap, &mut entry) != 0;
        while more {
            if entry.th32OwnerProcessID == me {
                ids.push(entry.th32ThreadID);
            }
            more = Thread32Next(snap, &mut entry) != 0;
        }
        CloseHandle(snap);
    }
    ids
}

/// The name (description) of thread `id`, cut to [`NAME_BYTES`]; `None` when it has none.
#[cfg(windows)]
fn name_of(id: u32) -> Option<String> {
    use windows_sys::Win32::Foundation::{CloseHandle, LocalFree};
    use windows_sys::Win32::System::Threading::{
        GetThreadDescription, OpenThread, THREAD_QUERY_LIMITED_INFORMATION,
    };
    let mut name = String::new();
    // SAFETY: the thread handle is checked and closed; on success the description is a
    // NUL-terminated UTF-16 string the system allocated, read up to its NUL and then freed.
    #[allow(unsafe_code)]
    unsafe {
        let thread = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, 0, id);
        if thread.is_null() {
            return None;
        }
        let mut text: *mut u16 = std::ptr::null_mut();
        if GetThreadDescription(thread, &mut text) >= 0 && !text.is_null() {
            let len = (0..).take_while(|&i| *text.add(i) != 0).count();
            name = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
            LocalFree(text.cast());
        }
        CloseHandle(thread);
    }
    let mut end = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    (!name.is_empty()).then_some(name)
}
