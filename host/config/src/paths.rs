//! Where agentload keeps what outlives a run: the cache of data files,
//! compiled plugins and the tokenizer vocabulary.

use std::path::PathBuf;

/// The default cache directory: `$AGENTLOAD_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/agentload`, else `~/.cache/agentload`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENTLOAD_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("agentload"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("agentload"))
}
