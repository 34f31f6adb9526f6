//! Lock helpers shared by the whole crate.
//!
//! Every value guarded by a lock here stays consistent if a thread panics while holding it
//! (each update is a single insert, remove, push or assignment), so a poisoned lock is used as it
//! is instead of turning one panic into a cascade of them.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, ignoring poisoning (see the module docs).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Read-locks `l`, ignoring poisoning (see the module docs).
pub(crate) fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// Write-locks `l`, ignoring poisoning (see the module docs).
pub(crate) fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// Joins the threads of `handles` that have ended, keeping the others (which are not waited
/// for).
pub(crate) fn join_finished(handles: &mut Vec<std::thread::JoinHandle<()>>) {
    let (done, running): (Vec<_>, Vec<_>) = handles
        .drain(..)
        .partition(std::thread::JoinHandle::is_finished);
    *handles = running;
    for h in done {
        let _ = h.join();
    }
}
