//! Log lines through the host (tagged with the plugin's name). In native
//! builds (unit tests) they go to stderr instead.

use crate::wit::agentload::plugin::host::LogLevel;

fn write(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::wit::agentload::plugin::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}

/// Shown only with `agentload -v`.
pub fn debug(message: &str) {
    write(LogLevel::Debug, message);
}

/// An informational line.
pub fn info(message: &str) {
    write(LogLevel::Info, message);
}

/// A warning.
pub fn warn(message: &str) {
    write(LogLevel::Warn, message);
}

/// An error that does not stop the plugin (return an [`Error`](crate::Error) for those).
pub fn error(message: &str) {
    write(LogLevel::Error, message);
}
