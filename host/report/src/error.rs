//! Why a report, a diff or an export could not be made.

use crate::read::ReadError;
use std::path::{Path, PathBuf};

/// Why a report, a diff or an export could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A result directory could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A result file that is not what it should be.
    #[error("{}: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    /// A file could not be written where it goes (a link there, say).
    #[error(transparent)]
    Out(#[from] agentload_fs::OutError),
    /// A CSV table could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Csv { path: PathBuf, source: csv::Error },
    /// The page template failed.
    #[error("cannot render the report template: {0}")]
    Template(#[from] minijinja::Error),
    /// Nothing to report or compare.
    #[error("{0}")]
    Nothing(String),
}

/// What the report functions return.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// Maps an I/O error on `path` while doing `action` (`read`, `write`, `create`).
pub(crate) fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> ReportError + 'a {
    move |source| ReportError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}
