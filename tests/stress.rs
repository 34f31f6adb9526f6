//! Many callers on one stdio connection: 16 threads × 5,000 `tools/call` to the fixture server,
//! some of them with deadlines short enough to expire at random while their requests are in
//! flight. Every answer that arrives must be the answer to its own request (the echoed text
//! names the thread and the call), a caller that timed out gets `Error::Timeout` and nothing
//! else, and the connection serves calls normally afterwards.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::json;

mod common;

const THREADS: usize = 16;
const CALLS: usize = 5_000;

/// A small deterministic generator (xorshift64*): the same run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn sixteen_threads_on_one_connection_get_their_own_answers_while_callers_time_out_at_random() {
    let started = Instant::now();
    let client = Arc::new(
        Client::connect(ServerConfig::stdio("stress", common::fixture::path()))
            .expect("connect to the fixture server"),
    );
    let answered = Arc::new(AtomicUsize::new(0));
    let timed_out = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let client = Arc::clone(&client);
            let answered = Arc::clone(&answered);
            let timed_out = Arc::clone(&timed_out);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                let patient = CallOptions::new().timeout(Duration::from_secs(60));
                for i in 0..CALLS {
                    let text = format!("t{t}-c{i}");
                    // About one call in eight gets a deadline of 1 to 300 µs: some expire
                    // before the request is written, some while it is queued or being read,
                    // some just as the answer arrives.
                    let r = rng.next();
                    let short = r % 8 == 0;
                    let opts = if short {
                        let us = 1 + (r >> 8) % 300;
                        CallOptions::new().timeout(Duration::from_micros(us))
                    } else {
                        patient.clone()
                    };
                    match client.call_tool_with("echo", json!({ "text": text }), &opts) {
                        Ok(result) => {
                            assert_eq!(
                                result.text(),
                                text,
                                "thread {t} call {i} got another request's answer"
                            );
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Timeout { method, .. }) => {
                            assert_eq!(method, "tools/call");
                            assert!(short, "thread {t} call {i}: a patient call timed out");
                            timed_out.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("thread {t} call {i}: {e}"),
                    }
                }
            });
        }
    });
    let (answered, timed_out) = (
        answered.load(Ordering::Relaxed),
        timed_out.load(Ordering::Relaxed),
    );
    assert_eq!(answered + timed_out, THREADS * CALLS);
    assert!(
        timed_out > 0,
        "no call timed out: the deadlines were not exercised"
    );
    assert!(answered > THREADS * CALLS / 2, "{answered} answered");
    // The connection is still in order: no stray answer is waiting to be mistaken for the next.
    for i in 0..100 {
        let text = format!("after-{i}");
        assert_eq!(
            client
                .call_tool("echo", json!({ "text": text }))
                .unwrap()
                .text(),
            text
        );
    }
    client.close().expect("close");
    eprintln!(
        "{answered} answered, {timed_out} timed out, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
