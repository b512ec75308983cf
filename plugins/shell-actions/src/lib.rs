//! Shell tool calls to canonical executables and their multiset IoU, as the
//! MLPerf Edge Agentic reference's inline accuracy check computes them
//! (`_bash_actions`, Python semantics throughout via `pysem`): the library
//! of the `shell-iou` scorer.

#![forbid(unsafe_code)]

pub mod canon;
pub mod command_args;
pub mod iou;
