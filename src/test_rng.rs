//! The seeded generator and case budget of the crate's property tests (test builds only).
//!
//! Every property test draws its inputs from [`Rng`] and runs [`cases`] cases: `MCP_FUZZ_CASES`
//! overrides a test's default budget and `MCP_FUZZ_SEED` the seed, so a failure a test reports
//! (it prints its seed and case) reproduces exactly.

/// xorshift64*: small, fast, and the same sequence everywhere for a seed.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03 | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`0` when `n` is `0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True one time in `n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// True `percent` times in a hundred.
    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (which must not be empty).
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The number of cases to run: `MCP_FUZZ_CASES`, else `default`.
pub(crate) fn cases(default: u64) -> u64 {
    std::env::var("MCP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The seed to start from: `MCP_FUZZ_SEED`, else `default`.
pub(crate) fn seed(default: u64) -> u64 {
    std::env::var("MCP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}
