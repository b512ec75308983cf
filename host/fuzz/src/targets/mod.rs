//! The targets, by what they parse.

pub mod assemble;
pub mod config;
pub mod datasets;
pub mod scorers;
pub mod sse;
