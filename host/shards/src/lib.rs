//! Load from many processes or pods, with results that merge exactly.
//!
//! A run split into N shards: each owns a slice of every phase's sessions
//! and its share of the concurrency ([`slice`]), runs them on its own turn
//! engine, and writes its own journals with a header ([`header`]) that maps
//! its clock onto the coordinator's ([`clock`]). Shard 0 also runs the
//! [`coordinator`]: three calls (register, start barrier, upload) and a
//! heartbeat; the others reach it through [`worker::Link`]. The merge
//! (in the `agentload` crate) rebuilds the run's result files from the
//! shards' raw records, so every percentile is an order statistic over the
//! union. [`k8s`] writes the plain Kubernetes objects that run it, and
//! [`fetch`] brings the merged run back from the coordinator.

#![forbid(unsafe_code)]

pub mod clock;
pub mod coordinator;
pub mod fetch;
pub mod header;
pub mod k8s;
pub mod protocol;
pub mod slice;
pub mod worker;

pub use clock::{Offset, Sample};
pub use coordinator::{Coordinator, Setup, Uploads};
pub use fetch::{fetch_results, FetchOptions};
pub use header::{LatencyHistograms, ShardHeader};
pub use protocol::{Live, LiveTotal};
pub use slice::{Slice, SliceError};
pub use worker::{Heartbeats, Identity, Link, LiveSource, PhaseAnchor};

/// What goes wrong between shards.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// The coordinator cannot be reached, or answered nonsense.
    #[error("coordinator: {0}")]
    Coordinator(String),
    /// The coordinator refused the call (its message says why).
    #[error("coordinator refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Slice(#[from] SliceError),
}
