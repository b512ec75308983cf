//! Sealing: the official plugins' digests (`plugins/official.lock`, compiled
//! in). A submission run refuses any plugin whose bytes are not locked,
//! before compiling it; a development run accepts any plugin and marks its
//! results unsealed.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The lockfile text, compiled in.
const OFFICIAL_LOCK: &str = include_str!("../../../plugins/official.lock");

/// `plugins/official.lock`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfficialLock {
    pub lock_version: u32,
    /// The WIT package the plugins are built against.
    pub wit: String,
    #[serde(rename = "plugin")]
    pub plugins: Vec<LockedPlugin>,
}

/// One official plugin.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LockedPlugin {
    pub name: String,
    pub version: String,
    /// Component file name (`coding_replay.wasm`).
    pub file: String,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// The compiled-in lock.
pub fn official() -> &'static OfficialLock {
    static LOCK: OnceLock<OfficialLock> = OnceLock::new();
    LOCK.get_or_init(|| {
        toml::from_str(OFFICIAL_LOCK).expect("plugins/official.lock is checked by the unit tests")
    })
}

/// How a plugin's bytes relate to the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Seal {
    /// The digest is an official plugin's.
    Sealed { name: String, version: String },
    /// Not an official plugin's bytes.
    Unsealed { reason: String },
}

/// A plugin refused in submission mode.
#[derive(Debug, thiserror::Error)]
#[error(
    "plugin {file}: {reason} (submission runs accept only the plugins in plugins/official.lock)"
)]
pub struct Refused {
    pub file: String,
    pub reason: String,
}

/// The seal of a component file (`file` is its base name) with `digest`.
pub fn check(file: &str, digest: &str) -> Seal {
    let lock = official();
    if let Some(p) = lock.plugins.iter().find(|p| p.digest == digest) {
        return Seal::Sealed {
            name: p.name.clone(),
            version: p.version.clone(),
        };
    }
    let reason = match lock.plugins.iter().find(|p| p.file == file) {
        Some(p) => format!(
            "digest {digest} is not the locked {}@{} digest {}",
            p.name, p.version, p.digest
        ),
        None => format!("digest {digest} is not an official plugin's (no {file} in the lock)"),
    };
    Seal::Unsealed { reason }
}

/// In submission mode, an unsealed plugin is refused.
pub fn require(file: &str, digest: &str) -> Result<Seal, Refused> {
    match check(file, digest) {
        Seal::Unsealed { reason } => Err(Refused {
            file: file.to_owned(),
            reason,
        }),
        sealed => Ok(sealed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_parses_and_names_every_official_plugin() {
        let lock = official();
        assert_eq!(lock.lock_version, 1);
        assert_eq!(lock.wit, "agentload:plugin@0.1.0");
        let names: Vec<&str> = lock.plugins.iter().map(|p| p.name.as_str()).collect();
        for n in ["coding-replay", "shell-iou", "bfcl-single", "bfcl-ast"] {
            assert!(names.contains(&n), "{n} not locked");
        }
        for p in &lock.plugins {
            assert!(
                p.digest.starts_with("sha256:") && p.digest.len() == 71,
                "{p:?}"
            );
            assert_eq!(p.file, format!("{}.wasm", p.name.replace('-', "_")));
        }
    }

    #[test]
    fn unknown_bytes_are_refused_naming_both_digests() {
        let locked = &official().plugins[0];
        assert!(matches!(
            check(&locked.file, &locked.digest),
            Seal::Sealed { .. }
        ));
        let fake = format!("sha256:{}", "0".repeat(64));
        let err = require(&locked.file, &fake).unwrap_err().to_string();
        assert!(err.contains(&fake) && err.contains(&locked.digest), "{err}");
        let err = require("other.wasm", &fake).unwrap_err().to_string();
        assert!(err.contains("no other.wasm in the lock"), "{err}");
    }
}
