//! Python semantics for agentload: the one home of every behaviour that
//! must match the reference's CPython 3.12 byte for byte, shared by the host
//! (the chat template's `tojson`, the result files' dates) and the plugins
//! (BFCL's tools, checkers and simulators; the shell IoU scorer).
//!
//! - [`chars`]: character classes (`str.isspace`, `\d`, `\w`) and `strip`,
//!   on Unicode 15.0 ([`chars::UNICODE_VERSION`]).
//! - [`num`]: `int` of any size, `float.__repr__` (`nan`, `inf`), `round`,
//!   `int(str)` and `float(str)`.
//! - [`value`]: the values `json.loads` produces, with `repr`, `str`, `==`,
//!   `in`, `len` and indexing.
//! - [`json`]: `json.dumps` (either `ensure_ascii`, any separators,
//!   `indent`) and `json.loads`.
//! - [`ast`]: `ast.parse` of expressions, `ast.literal_eval`, `ast.unparse`.
//! - [`re`]: the subset of `re` the BFCL checker's patterns use.
//! - [`repr`]: `repr` of lists, tuples, sets and dicts, for every value
//!   model (this crate's [`value::Value`] and the BFCL simulators' objects).
//! - [`date`]: proleptic Gregorian dates from day counts and timestamps.

#![forbid(unsafe_code)]

pub mod ast;
pub mod chars;
pub mod date;
pub mod json;
pub mod num;
pub mod re;
pub mod repr;
pub mod value;
