//! agentload: the BFCL v4 multi-turn simulated APIs, ported from BFCL's
//! Python (`eval_checker/multi_turn_eval/func_source_code/`) so that every
//! call returns the same string, and the executor that runs call strings on
//! them as `multi_turn_utils.execute_multi_turn_func_call` does.
//!
//! Parity with the Python is measured by `tests/parity.rs` against a fixture
//! written by `tests/bfcl-multi-parity/gen_multi_parity.py`.

pub mod call;
pub mod exec;
pub mod mt;
pub mod py;
pub mod sim;
