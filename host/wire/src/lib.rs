//! The wire both ends of a measurement stamp: [`hooked`], the TCP socket
//! that stamps every read and write the moment it returns (and, with kernel
//! stamps on, the moment its bytes reached the machine), shared by the
//! client and the simulator; and [`clock`], the machine-wide monotonic clock
//! and the wall-clock dates of result files.
//!
//! This crate is the bottom of the host: it knows nothing of HTTP, plugins
//! or results. A change here moves every timestamp agentload reports.

pub mod clock;
pub mod hooked;

pub use hooked::Timestamps;
