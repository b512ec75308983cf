//! A phase's data files as its plugins are granted them: confined to the
//! data directory and the cache unless named on the command line, digests
//! checked, and only locked files in a submission run (shared by `run` and
//! `rescore`).
//!
//! A grant whose path ends with `/` grants a folder: every plain file under
//! it, each named `<grant>/<path in the folder>` (a replay's manifest and its
//! traces, say). `{arch}` in a grant's path is the machine's architecture as
//! AA's replay manifests name it (`x86_64` or `arm64`).

use agentload_config::data::{self, DataFile};
use agentload_plugin_host::types::GrantedFile;
use agentload_results::DatasetIdentity;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a phase's data files are granted.
pub struct Grants<'a> {
    pub data_dir: &'a Path,
    /// Files named on the command line, by grant name (not confined).
    pub explicit: &'a BTreeMap<String, PathBuf>,
    /// The largest file granted.
    pub max_bytes: u64,
    /// Only files the data locks know by name (a submission run).
    pub locked_only: bool,
}

/// Reads the phase's data files (confined to the data directory and the
/// cache, unless named on the command line) and checks their digests.
pub fn grant_files(
    grants: &BTreeMap<String, String>,
    how: &Grants<'_>,
) -> Result<(Vec<GrantedFile>, Vec<DatasetIdentity>)> {
    let mut files = Vec::new();
    let mut ids = Vec::new();
    let mut grant = |name: String, file_name: String, data: DataFile| -> Result<()> {
        if how.locked_only {
            agentload_config::seal::require_data(&name, &data)?;
        }
        ids.push(DatasetIdentity {
            name: name.clone(),
            path: data.path.clone(),
            digest: data.digest.clone(),
        });
        files.push(GrantedFile {
            name,
            file_name,
            bytes: data.bytes,
        });
        Ok(())
    };
    for (name, file) in grants {
        let file = data::expand_grant(file);
        let folder = match how.explicit.get(name) {
            Some(path) if path.is_dir() => Some(data::read_explicit_folder(path, how.max_bytes)?),
            None if data::is_folder_grant(&file) => {
                Some(data::read_folder(how.data_dir, &file, how.max_bytes)?)
            }
            _ => None,
        };
        if let Some(members) = folder {
            for (rel, data) in members {
                grant(format!("{name}/{rel}"), rel, data)?;
            }
            continue;
        }
        let data = match how.explicit.get(name) {
            Some(path) => data::read_explicit(path, how.max_bytes)?,
            None => data::read(how.data_dir, &file, how.max_bytes)?,
        };
        let file_name = data
            .path
            .file_name()
            .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
        grant(name.clone(), file_name, data)?;
    }
    Ok((files, ids))
}
