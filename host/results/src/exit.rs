//! The exit codes of the `agentload` command (stable: scripts may rely on
//! them).

/// The command did what it was asked (a run may still be INVALID: pass
/// `--require-valid` to make that an error).
pub const SUCCESS: u8 = 0;
/// An error stopped the command: a bad config or argument value, a plugin
/// that failed to load or configure, the endpoint check, a result file that
/// could not be written. The message names the cause.
pub const FAILURE: u8 = 1;
/// The command line could not be parsed (clap's usage errors).
pub const USAGE: u8 = 2;
/// `--require-valid` was given and the run is not VALID.
pub const INVALID: u8 = 3;
/// A phase issued turns and every one of them failed (the endpoint is not
/// answering as a Chat Completions server): an error even without
/// `--require-valid`.
pub const ALL_FAILED: u8 = 4;
/// A shard of a sharded run was lost (missing at a start barrier, or
/// silent before its upload completed): the run failed closed. The other
/// shards' records are merged and on disk, and the run is INVALID; the
/// message names the shard.
pub const SHARD_LOST: u8 = 5;
/// SIGINT or SIGTERM stopped the run; its results were written and marked
/// INCOMPLETE (`agentload resume DIR` continues it). 128 + SIGINT, as shells
/// report an interrupted command.
pub const INTERRUPTED: u8 = 130;
