//! Files agentload writes and reads, safe against what a crafted directory
//! holds (a run directory someone handed over, a folder a shard uploaded).
//!
//! **Writing under a results directory: [`OutDir`].** Every file agentload
//! writes under a directory the user named (a run's results, a report, an
//! export, a rescore, a submission, a sweep, a merge, a fetched listing) goes
//! through an [`OutDir`]: paths in it are relative, no folder below the named
//! one is entered through a symbolic link, and no file is written through a
//! link (each folder is opened with `O_NOFOLLOW` relative to the one above it,
//! so a link swapped in between a check and a write is not followed either).
//! Whole files are written to a temporary name and renamed into place, so a
//! reader never sees half a file and a hard link is replaced, never written
//! through. A new result file is one line:
//!
//! ```no_run
//! # fn f(run_dir: &std::path::Path, summary: &serde_json::Value) -> Result<(), agentload_fs::OutError> {
//! agentload_fs::OutDir::new(run_dir).write_json("aa/summary.json", summary)?;
//! # Ok(()) }
//! ```
//!
//! **Reading a file: [`read`].** Only a plain file is read: a FIFO, a device,
//! a socket or a folder is refused by its type before a byte is read, and
//! opening one never blocks. Its functions mirror `std::fs`'s
//! (`agentload_fs::read::read_to_string` for `std::fs::read_to_string`).
#![forbid(unsafe_code)]

mod out;
pub mod read;

pub use out::{is_staged_name, OutDir, OutError, Staged};
