//! Typed plugin errors, as the host reports them.

use crate::wit::agentload::plugin::types::{DataError, PluginError};
use std::fmt;

/// An error a plugin reports on purpose. Panics are not errors: the host
/// reports a trap (with the panic message) itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A settings key is missing, unknown or has the wrong type; or a needed
    /// file was not granted.
    Config(String),
    /// A granted data file breaks a rule.
    Data {
        /// The file's name (as granted: [`GrantedFile::file_name`](crate::GrantedFile)).
        file: String,
        /// 1-based line; 0 when the problem is not tied to a line.
        line: u32,
        /// The rule that was broken.
        message: String,
    },
    /// The host passed something the plugin cannot use (unknown session...).
    Input(String),
    /// Anything else.
    Internal(String),
}

impl Error {
    /// A settings problem.
    pub fn config(message: impl fmt::Display) -> Self {
        Self::Config(message.to_string())
    }

    /// A problem at `file:line` of a granted file (line 0: the whole file).
    pub fn data(file: impl Into<String>, line: u32, message: impl fmt::Display) -> Self {
        Self::Data {
            file: file.into(),
            line,
            message: message.to_string(),
        }
    }

    /// Bad input from the host.
    pub fn input(message: impl fmt::Display) -> Self {
        Self::Input(message.to_string())
    }

    /// Anything else.
    pub fn internal(message: impl fmt::Display) -> Self {
        Self::Internal(message.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(m) => write!(f, "invalid config: {m}"),
            Self::Data {
                file,
                line,
                message,
            } if *line > 0 => {
                write!(f, "invalid data: {file}:{line}: {message}")
            }
            Self::Data { file, message, .. } => write!(f, "invalid data: {file}: {message}"),
            Self::Input(m) => write!(f, "invalid input: {m}"),
            Self::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for PluginError {
    fn from(e: Error) -> Self {
        match e {
            Error::Config(m) => PluginError::InvalidConfig(m),
            Error::Data {
                file,
                line,
                message,
            } => PluginError::InvalidData(DataError {
                file,
                line,
                message,
            }),
            Error::Input(m) => PluginError::InvalidInput(m),
            Error::Internal(m) => PluginError::Internal(m),
        }
    }
}
