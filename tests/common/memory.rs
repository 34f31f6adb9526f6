//! This process's resident memory now and at its peak, for the tests that bound what a peer can
//! make the client hold: on Linux `VmRSS` and `VmHWM` from `/proc/self/status`, on Windows the
//! working set and its peak (`K32GetProcessMemoryInfo`).

/// Resident memory, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    /// Resident now.
    pub now: u64,
    /// The most resident so far (since the last [`reset_peak`] that worked).
    pub peak: u64,
}

/// This process's resident memory now and at its peak.
///
/// # Panics
/// Where the system does not say.
#[cfg(unix)]
pub fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = |field: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
    };
    Resident {
        now: kib("VmRSS:") * 1024,
        peak: kib("VmHWM:") * 1024,
    }
}

/// This process's resident memory now and at its peak.
///
/// # Panics
/// Where the system does not say.
#[cfg(windows)]
pub fn resident() -> Resident {
    use windows_sys::Win32::System::ProcessStatus::{
        K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    let mut counters = PROCESS_MEMORY_COUNTERS {
        cb: std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32,
        ..PROCESS_MEMORY_COUNTERS::default()
    };
    // SAFETY: the current process's pseudo-handle needs no closing; `counters` is a plain struct
    // of the size given, which the call fills in.
    #[allow(unsafe_code)]
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut counters, counters.cb) };
    assert!(ok != 0, "K32GetProcessMemoryInfo failed");
    Resident {
        now: counters.WorkingSetSize as u64,
        peak: counters.PeakWorkingSetSize as u64,
    }
}

/// Resets the peak to the resident memory now (Linux 4.0+: `clear_refs` 5); false where that
/// cannot be done (Windows, an older or stricter kernel): the peak then only ever grows.
pub fn reset_peak() -> bool {
    cfg!(unix) && std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
