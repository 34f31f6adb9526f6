//! Running many cells at once (bounded), and what is left of them: this process's library
//! threads and child processes; the report.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{describe, Outcome, PARALLEL};

/// Runs `jobs` with at most `PARALLEL` at once (a panic is the job's failure); results in order.
pub(super) fn run_all<J: Send + Sync + 'static>(
    jobs: Vec<(String, J)>,
    run: fn(&J) -> Outcome,
) -> Vec<(String, Outcome)> {
    let queue: Arc<Mutex<VecDeque<(usize, String, J)>>> = Arc::new(Mutex::new(
        jobs.into_iter()
            .enumerate()
            .map(|(i, (n, j))| (i, n, j))
            .collect(),
    ));
    let results: Arc<Mutex<Vec<(usize, String, Outcome)>>> = Arc::default();
    let workers: Vec<_> = (0..PARALLEL)
        .map(|w| {
            let (queue, results) = (queue.clone(), results.clone());
            std::thread::Builder::new()
                .name(format!("fault-cell-{w}"))
                .spawn(move || loop {
                    let Some((i, name, job)) = queue.lock().unwrap().pop_front() else {
                        return;
                    };
                    let started = Instant::now();
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&job)))
                            .unwrap_or_else(|p| {
                                let msg = p
                                    .downcast_ref::<String>()
                                    .cloned()
                                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                                    .unwrap_or_default();
                                Err(format!("panicked after {:?}: {msg}", started.elapsed()))
                            });
                    results.lock().unwrap().push((i, name, outcome));
                })
                .expect("spawn a worker")
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by_key(|(i, _, _)| *i);
    results.into_iter().map(|(_, n, o)| (n, o)).collect()
}

/// The names of this process's library threads (`mcp-…`, `hub-…`).
pub(super) fn library_threads() -> Vec<String> {
    super::threads::names()
        .into_iter()
        .filter(|c| c.starts_with("mcp-") || c.starts_with("hub-"))
        .collect()
}

/// This process's live child processes.
#[cfg(windows)]
pub(super) fn children() -> Vec<u32> {
    super::process::children()
}

/// This process's child processes (any state), from `/proc/*/stat`.
#[cfg(unix)]
pub(super) fn children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|d| {
        let d = d.ok()?;
        let pid: u32 = d.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(d.path().join("stat")).ok()?;
        // The parent is the second field after the parenthesised command.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == me).then_some(pid)
    })
    .collect()
}

pub(super) fn selected(name: &str) -> bool {
    match std::env::var("FAULT_CELLS") {
        Ok(f) if !f.is_empty() => f.split(',').any(|p| name.contains(p)),
        _ => true,
    }
}

/// Prints every result and panics naming every failed cell.
pub(super) fn report(what: &str, results: &[(String, Outcome)], took: Duration) {
    let failed: Vec<_> = results.iter().filter(|(_, o)| o.is_err()).collect();
    for (name, o) in results {
        match o {
            Ok(d) => eprintln!("ok   {name}: {d:?}"),
            Err(e) => eprintln!("FAIL {name}: {e}"),
        }
    }
    eprintln!(
        "{what}: {} cells, {} failed, in {took:?}",
        results.len(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{what}: {} of {} cells failed:\n{}",
        failed.len(),
        results.len(),
        failed
            .iter()
            .map(|(n, o)| format!("  {n}: {}", describe(o)))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
