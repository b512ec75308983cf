//! Fuzz and property targets for what agentload parses from others: the
//! SSE parser and stream assembler (the endpoint's bytes), the config
//! loader (the user's file), every dataset loader (the data directory's
//! files) and each scorer's decoding of completions (the model's output).
//!
//! Every target is a proptest strategy and a property. [`drive`] runs one
//! with a seed, for a number of inputs (the seeded runs in `cargo test`,
//! `tests/targets.rs`) or for a time (`agentload-fuzz`, `scripts/fuzz.sh`);
//! a failure names the target, the seed and batch that reproduce it, and
//! the shrunk input. A panic anywhere in the code under test is a failure.

pub mod json;
pub mod mutate;
pub mod targets;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// How long a target runs.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// This many inputs.
    Inputs(u64),
    /// Until this much time has passed (checked between batches).
    Time(Duration),
}

/// What one target did.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: &'static str,
    pub inputs: u64,
    pub elapsed: Duration,
}

/// A property that failed (or code that panicked) on some input.
#[derive(Debug, Clone)]
pub struct Failure {
    pub target: &'static str,
    pub seed: u64,
    /// The batch whose RNG found it (`seed` and `batch` reproduce it).
    pub batch: u64,
    /// The reason and the shrunk input.
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fuzz target {} failed (seed {}, batch {}): {}",
            self.target, self.seed, self.batch, self.message
        )
    }
}

/// A fuzz target: a name, what it checks, and how to run it.
pub struct Target {
    pub name: &'static str,
    pub about: &'static str,
    pub run: fn(Budget, u64) -> Result<Report, Failure>,
}

/// Inputs per batch; each batch has its own RNG stream, derived from the
/// seed and the batch number.
const BATCH: u64 = 128;

/// Runs `property` on inputs drawn from `strategy` under `budget`.
pub fn drive<S>(
    target: &'static str,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
    budget: Budget,
    seed: u64,
) -> Result<Report, Failure>
where
    S: Strategy,
    S::Value: Debug,
{
    let started = Instant::now();
    let mut inputs = 0u64;
    let mut batch = 0u64;
    loop {
        let cases = match budget {
            Budget::Inputs(n) => (n - inputs).min(BATCH),
            Budget::Time(limit) if started.elapsed() < limit => BATCH,
            Budget::Time(_) => 0,
        };
        if cases == 0 {
            break;
        }
        let config = Config {
            cases: cases as u32,
            failure_persistence: None,
            // Shrinking a failure may take a while; finding it matters more.
            max_shrink_time: 120_000,
            ..Config::default()
        };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed, batch));
        let mut runner = TestRunner::new_with_rng(config, rng);
        let fail = |message: String| Failure {
            target,
            seed,
            batch,
            message,
        };
        match runner.run(&strategy, &property) {
            Ok(()) => {}
            Err(TestError::Fail(why, input)) => {
                return Err(fail(format!("{why}\nminimal input: {input:#?}")))
            }
            Err(TestError::Abort(why)) => return Err(fail(format!("aborted: {why}"))),
        }
        inputs += cases;
        batch += 1;
    }
    Ok(Report {
        target,
        inputs,
        elapsed: started.elapsed(),
    })
}

/// The 32-byte ChaCha seed of one batch.
fn seed_bytes(seed: u64, batch: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&batch.to_le_bytes());
    bytes[16..].copy_from_slice(b"agentload-fuzz\0\0");
    bytes
}

/// Every target, in the order the script runs them.
pub const TARGETS: &[Target] = &[
    targets::sse::TARGET,
    targets::sse::CHUNKING,
    targets::assemble::TARGET,
    targets::assemble::RESPONSE,
    targets::config::TARGET,
    targets::datasets::CODING_REPLAY,
    targets::datasets::BFCL_SINGLE,
    targets::datasets::BFCL_MULTI,
    targets::scorers::SHELL_IOU,
    targets::scorers::SHELL_IOU_JSON,
    targets::scorers::BFCL_AST,
    targets::scorers::BFCL_MULTI_DECODE,
];

/// The target named `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
