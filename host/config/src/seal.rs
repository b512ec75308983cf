//! Sealing: the official plugins' digests (`plugins/official.lock`, compiled
//! in). A submission run refuses any plugin that is not the locked plugin
//! of its name with its locked digest, before compiling it, and any data
//! file that is not a locked name (its digest is checked when read); a
//! development run accepts any plugin and marks its results unsealed. What
//! the run does with them is checked against the benchmark's rules
//! ([`crate::rules`]).

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

/// Identity of a loaded plugin, recorded in every result file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PluginIdentity {
    /// Name the plugin reports.
    pub name: String,
    /// Version the plugin reports.
    pub version: String,
    /// `workload` or `scorer`.
    pub kind: String,
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    /// Where it was loaded from.
    pub path: std::path::PathBuf,
}

/// A plugin or data file refused in submission mode.
#[derive(Debug, thiserror::Error)]
#[error("{what} {file}: {reason} (submission runs accept only {accepted})")]
pub struct Refused {
    pub what: &'static str,
    pub file: String,
    pub reason: String,
    accepted: &'static str,
}

const LOCKED_PLUGINS: &str = "the plugins in plugins/official.lock";

/// The seal of a component file (`file` is its base name) with `digest`:
/// sealed only when the lock's plugin of that file name has that digest.
/// Another locked plugin's bytes under this name are not sealed.
pub fn check(file: &str, digest: &str) -> Seal {
    let lock = official();
    let named = lock.plugins.iter().find(|p| p.file == file);
    if let Some(p) = named.filter(|p| p.digest == digest) {
        return Seal::Sealed {
            name: p.name.clone(),
            version: p.version.clone(),
        };
    }
    let owner = lock.plugins.iter().find(|p| p.digest == digest);
    let reason = match (named, owner) {
        (Some(p), Some(o)) => format!(
            "digest {digest} is the locked {}@{}'s, not the locked {}@{} digest {}: \
             a locked plugin under another plugin's name",
            o.name, o.version, p.name, p.version, p.digest
        ),
        (Some(p), None) => format!(
            "digest {digest} is not the locked {}@{} digest {}",
            p.name, p.version, p.digest
        ),
        (None, Some(o)) => format!(
            "no {file} in the lock; digest {digest} is the locked {}@{}'s, \
             which is sealed only as {}",
            o.name, o.version, o.file
        ),
        (None, None) => {
            format!("digest {digest} is not an official plugin's (no {file} in the lock)")
        }
    };
    Seal::Unsealed { reason }
}

/// In submission mode, an unsealed plugin is refused.
pub fn require(file: &str, digest: &str) -> Result<Seal, Refused> {
    match check(file, digest) {
        Seal::Unsealed { reason } => Err(Refused {
            what: "plugin",
            file: file.to_owned(),
            reason,
            accepted: LOCKED_PLUGINS,
        }),
        sealed => Ok(sealed),
    }
}

/// In submission mode, a sealed plugin must also describe itself by its
/// locked name.
pub fn require_described(file: &str, seal: &Seal, described: &str) -> Result<(), Refused> {
    match seal {
        Seal::Sealed { name, .. } if name != described => Err(Refused {
            what: "plugin",
            file: file.to_owned(),
            reason: format!("it is locked as {name} but describes itself as {described}"),
            accepted: LOCKED_PLUGINS,
        }),
        _ => Ok(()),
    }
}

/// In submission mode, a data file granted as `grant` must be one the
/// locks know by name (its digest was checked when it was read).
pub fn require_data(grant: &str, file: &crate::data::DataFile) -> Result<(), Refused> {
    if file.locked_name.is_some() {
        return Ok(());
    }
    Err(Refused {
        what: "data file",
        file: file.path.display().to_string(),
        reason: format!(
            "granted as `{grant}`, it is not a file a workload's data lock \
             (workloads/*/data.lock) names (its digest {} is not checked against a lock \
             under this name)",
            file.digest
        ),
        accepted: "locked data files with their locked digests",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_parses_and_names_every_official_plugin() {
        let lock = official();
        assert_eq!(lock.lock_version, 1);
        assert_eq!(lock.wit, "agentload:plugin@0.4.0");
        let names: Vec<&str> = lock.plugins.iter().map(|p| p.name.as_str()).collect();
        for n in [
            "coding-replay",
            "shell-iou",
            "bfcl-single",
            "bfcl-ast",
            "aa-replay",
        ] {
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

    #[test]
    fn a_locked_digest_under_another_name_is_not_sealed() {
        let lock = official();
        let (workload, scorer) = (&lock.plugins[0], &lock.plugins[1]);
        let err = require(&workload.file, &scorer.digest)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("is the locked {}@", scorer.name))
                && err.contains("under another plugin's name")
                && err.contains(&workload.digest),
            "{err}"
        );
        let err = require("renamed.wasm", &workload.digest)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("sealed only as {}", workload.file)),
            "{err}"
        );
        let seal = require(&workload.file, &workload.digest).unwrap();
        assert!(require_described(&workload.file, &seal, &workload.name).is_ok());
        let err = require_described(&workload.file, &seal, "impostor")
            .unwrap_err()
            .to_string();
        assert!(err.contains("describes itself as impostor"), "{err}");
    }
}
