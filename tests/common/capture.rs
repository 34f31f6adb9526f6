//! A logger that keeps every record, at every level, as `LEVEL target: message`, for tests
//! that check what the crate logs (one per test binary: `capture_logs` installs it once).

use std::sync::{Mutex, Once};

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{} {}: {}", record.level(), record.target(), record.args());
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

/// Installs the capturing logger (at trace level), once per test binary.
pub fn capture_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).expect("the only logger of this test binary");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// Every line logged so far in this test binary.
pub fn logs() -> Vec<String> {
    CAPTURE.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
