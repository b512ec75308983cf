//! agentload: the BFCL v4 multi-turn simulated APIs, ported from BFCL's
//! Python (`eval_checker/multi_turn_eval/func_source_code/`) so that every
//! call returns the same string, and the executor that runs call strings on
//! them as `multi_turn_utils.execute_multi_turn_func_call` does.
//!
//! [`checker`] is BFCL's multi-turn checker on decoded model steps;
//! [`decode`] is BFCL's FC decoding of a step; [`data`] reads the granted
//! dataset files. The library of the `bfcl-multi` workload and the
//! `bfcl-multi-score` scorer; Python semantics come from `pysem`.
//!
//! Parity with the Python is measured against fixtures written by
//! `tests/bfcl-multi-parity/gen_multi_parity.py` (BFCL's own simulators and
//! checker): `tests/parity.rs` (every call's result string and every
//! instance's end state, for the ground truth and for model-like variants)
//! and `tests/checker.rs` (verdicts on synthetic model outputs).

#![forbid(unsafe_code)]

pub mod call;
pub mod checker;
pub mod data;
pub mod decode;
pub mod exec;
pub mod mt;
pub mod py;
pub mod sim;
