//! Errors from configuring and starting the simulator.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A configuration value is out of range.
    #[error("invalid sim config: `{field}` {reason}")]
    InvalidConfig {
        /// The offending field, e.g. `decode_tokens_per_s`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A responder input file (dataset, script) could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The request log could not be created.
    #[error("cannot create the request log {path}: {source}")]
    RequestLog {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line of a responder input file is malformed.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// The TLS certificate, key or client CA cannot be used.
    #[error("TLS {what} {path}: {reason}")]
    Tls {
        /// `certificate`, `key` or `client CA`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
