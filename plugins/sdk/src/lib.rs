//! # agentload-sdk
//!
//! Write agentload workloads and scorers as plain Rust: implement
//! [`Workload`] or [`Scorer`] on a type and export it with
//! [`export_workload!`] or [`export_scorer!`]. The SDK generates the
//! WebAssembly component glue for the WIT contract it targets
//! ([`API_VERSION`], `wit/agentload-plugin@0.4.0`) and takes care of the
//! chores: settings parsing with unknown-key errors ([`Config::settings`]),
//! granted files by logical name ([`Config::file`], [`Config::jsonl`]),
//! chat messages ([`Message::user`]...), tools ([`Tool::function`]) and
//! typed errors ([`Error`]).
//!
//! The SDK's types ([`Config`], [`Message`], [`Completion`], [`Outcome`]...)
//! are its own: the export glue converts them to and from the WIT bindings
//! at the edge (moving, not copying), so a change in the WIT contract does
//! not change the API plugins are written against.
//!
//! ```
//! use agentload_sdk::{export_workload, Config, Error, Message, Outcome, Session, Turn, Workload};
//!
//! #[derive(Default)]
//! struct Hello;
//!
//! impl Workload for Hello {
//!     fn configure(&mut self, _config: Config) -> Result<Vec<Session>, Error> {
//!         Ok(vec![Session::new("hello-1", 1)])
//!     }
//!     fn start(&mut self, _session: &str) -> Result<Turn, Error> {
//!         Ok(Turn::new(1, vec![Message::user("Say hello.")]))
//!     }
//!     fn next(&mut self, _session: &str, _outcome: Outcome) -> Result<Option<Turn>, Error> {
//!         Ok(None)
//!     }
//! }
//!
//! export_workload!(Hello);
//! # fn main() {}
//! ```
//!
//! The plugin crate must depend on this crate under its own name
//! (`agentload-sdk`, used as `agentload_sdk`): the generated glue refers to it
//! by that path. Build with `cargo build --profile plugin --target wasm32-wasip2`.

#![forbid(unsafe_code)]

mod chat;
mod config;
mod detail;
mod edge;
mod error;
pub mod live;
pub mod log;
mod scorer;
mod workload;

pub use chat::{Completion, Message, Role, Sampling, Tool, ToolCall, Usage};
pub use config::{Config, GrantedFile, Line, Lines};
pub use detail::Detail;
pub use error::Error;
pub use scorer::{Gate, GateMetric, Item, Report, Scorer, Verdict};
pub use workload::{History, Outcome, Session, Turn, TurnRequest, Workload};

/// The WIT package this SDK (and every plugin built with it) targets.
pub const API_VERSION: &str = "agentload:plugin@0.4.0";
/// The version part of [`API_VERSION`].
pub const WIT_VERSION: &str = "0.4.0";

/// Self-description of a plugin; the glue adds the kind (workload or scorer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// Short kebab-case name, e.g. `coding-replay`.
    pub name: String,
    /// Semantic version of the plugin itself.
    pub version: String,
    /// One line for humans.
    pub description: String,
}

impl Info {
    /// An info from its three parts.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            description: description.into(),
        }
    }

    /// The same info with another description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

/// The calling crate's Cargo metadata as an [`Info`]: `CARGO_PKG_NAME`,
/// `CARGO_PKG_VERSION` and `CARGO_PKG_DESCRIPTION` (evaluated in the crate
/// that invokes the macro). This is what `describe` returns by default.
#[macro_export]
macro_rules! package_info {
    () => {
        $crate::Info::new(
            ::core::env!("CARGO_PKG_NAME"),
            ::core::env!("CARGO_PKG_VERSION"),
            ::core::env!("CARGO_PKG_DESCRIPTION"),
        )
    };
}

/// Bindings generated once for the shared `types` and `host` interfaces; the
/// plugin-side glue maps its own bindings onto these (`with`), and converts
/// their records to the SDK's types and back (`edge`). Not a stable API.
#[doc(hidden)]
#[allow(clippy::all, missing_docs)]
pub mod wit {
    wit_bindgen::generate!({
        path: "../../wit/agentload-plugin@0.4.0",
        inline: "package agentload:sdk;
                 world sdk {
                     import agentload:plugin/host@0.4.0;
                     import agentload:plugin/types@0.4.0;
                 }",
        world: "sdk",
        generate_all,
        additional_derives: [PartialEq],
    });
}

// `__agentload_generate_workload_plugin!` and `__agentload_generate_scorer_plugin!`:
// `wit_bindgen::generate!` with the WIT contract embedded (see build.rs).
include!(concat!(env!("OUT_DIR"), "/wit_macros.rs"));

/// Support for the export macros; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::scorer::glue as scorer;
    pub use crate::wit;
    pub use crate::wit::agentload::plugin::types;
    pub use crate::workload::glue as workload;
    pub use wit_bindgen;
}

#[cfg(test)]
mod tests;
