//! A phase's data files as its plugins are granted them: confined to the
//! data directory and the cache unless named on the command line, digests
//! checked, and only locked files in a submission run (shared by `run` and
//! `rescore`).

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
    for (name, file) in grants {
        let data = match how.explicit.get(name) {
            Some(path) => agentload_config::data::read_explicit(path, how.max_bytes)?,
            None => agentload_config::data::read(how.data_dir, file, how.max_bytes)?,
        };
        if how.locked_only {
            agentload_config::seal::require_data(name, &data)?;
        }
        ids.push(DatasetIdentity {
            name: name.clone(),
            path: data.path.clone(),
            digest: data.digest.clone(),
        });
        files.push(GrantedFile {
            name: name.clone(),
            file_name: data
                .path
                .file_name()
                .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned()),
            bytes: data.bytes,
        });
    }
    Ok((files, ids))
}
