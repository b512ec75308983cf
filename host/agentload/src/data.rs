//! The data directory: where dataset files are found, and the digests they
//! must have (`workloads/data.lock`, and `workloads/bfcl-v4.manifest` for
//! the BFCL v4 files under `bfcl_v4/`).
//!
//! A file missing from the data directory is looked up in the agentload
//! cache's `data/` folder (`$AGENTLOAD_CACHE_DIR/data`, else
//! `~/.cache/agentload/data`), where the fetch scripts can put data when the
//! data directory is read-only.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The lock of known data files, compiled in.
const DATA_LOCK: &str = include_str!("../../../workloads/data.lock");
/// The BFCL v4 files (`<path> <bytes> <sha256>`, paths relative to `bfcl_v4/`).
const BFCL_MANIFEST: &str = include_str!("../../../workloads/bfcl-v4.manifest");

/// Problems finding or checking a data file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("data file {} not found (data directory {}{}); run `scripts/fetch-data.sh {}` or set AGENTLOAD_DATA_DIR", path.display(), dir.display(), fallback.as_ref().map(|f| format!(", nor in {}", f.display())).unwrap_or_default(), dir.display())]
    Missing {
        path: PathBuf,
        dir: PathBuf,
        fallback: Option<PathBuf>,
    },
    #[error("cannot read data file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("data file {} has sha256 {actual}, expected {expected} (workloads/data.lock, workloads/bfcl-v4.manifest)", path.display())]
    Digest {
        path: PathBuf,
        expected: String,
        actual: String,
    },
}

/// A data file read and checked.
#[derive(Debug, Clone)]
pub struct DataFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// The data directory: the config's `data_dir`, else `$AGENTLOAD_DATA_DIR`,
/// else `./data`.
pub fn data_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    std::env::var_os("AGENTLOAD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("data"))
}

/// The expected sha256 of a known file name.
pub fn locked_digest(file_name: &str) -> Option<&'static str> {
    DATA_LOCK
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|l| {
            let mut cols = l.split_whitespace();
            (cols.next()? == file_name).then(|| cols.next()).flatten()
        })
}

/// The expected sha256 of a data path: a BFCL v4 file (`bfcl_v4/<path>`)
/// from the BFCL manifest, any other file by its name from the lock.
pub fn expected_digest(file: &str) -> Option<&'static str> {
    let normalized = file.replace('\\', "/");
    if let Some(rel) = normalized.strip_prefix("bfcl_v4/") {
        return BFCL_MANIFEST
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .find_map(|l| {
                let mut cols = l.split_whitespace();
                (cols.next()? == rel).then(|| cols.nth(1)).flatten()
            });
    }
    let name = Path::new(&normalized).file_name()?.to_str()?;
    locked_digest(name)
}

/// The cache's data folder, the fallback for files missing from the data
/// directory.
pub fn cache_data_dir() -> Option<PathBuf> {
    crate::plugin::PluginEngine::default_cache_dir().map(|d| d.join("data"))
}

/// Where `file` is: under `dir`, else under the cache's data folder.
pub fn locate(dir: &Path, file: &str) -> Option<PathBuf> {
    std::iter::once(dir.to_path_buf())
        .chain(cache_data_dir())
        .map(|d| d.join(file))
        .find(|p| p.exists())
}

/// Reads `file` (relative to `dir` unless absolute; else from the cache's
/// data folder) and checks its digest when the lock or manifest knows it.
pub fn read(dir: &Path, file: &str) -> Result<DataFile, DataError> {
    let Some(path) = locate(dir, file) else {
        return Err(DataError::Missing {
            path: dir.join(file),
            dir: dir.to_path_buf(),
            fallback: cache_data_dir(),
        });
    };
    let bytes = std::fs::read(&path).map_err(|source| DataError::Read {
        path: path.clone(),
        source,
    })?;
    let actual = hex::encode(Sha256::digest(&bytes));
    if let Some(expected) = expected_digest(file) {
        if expected != actual {
            return Err(DataError::Digest {
                path,
                expected: expected.to_string(),
                actual,
            });
        }
    }
    Ok(DataFile {
        path,
        bytes,
        digest: format!("sha256:{actual}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_names_the_edge_dataset() {
        assert_eq!(
            locked_digest("agentic_coding_2.5h.jsonl"),
            Some("b7da8c4ffbe1cabd79c4d8169e5201541e006364b4bfc016d01d893e20ee6f70")
        );
        assert_eq!(locked_digest("nope.jsonl"), None);
        assert_eq!(
            expected_digest("bfcl_v4/possible_answer/BFCL_v4_simple_java.json").map(|d| &d[..8]),
            Some("78f25616")
        );
        assert_eq!(expected_digest("bfcl_v4/nope.json"), None);
        // Written by scripts/fetch-bfcl.sh from the pinned wheel.
        assert_eq!(
            expected_digest("bfcl_v4_extra/long_context.json").map(|d| &d[..8]),
            Some("2ef89ec1")
        );
        assert_eq!(
            expected_digest("sub/agentic_coding_2.5h.jsonl"),
            locked_digest("agentic_coding_2.5h.jsonl")
        );
    }

    #[test]
    fn digest_mismatch_names_both() {
        let dir = std::env::temp_dir().join(format!("agentload-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agentic_coding_2.5h.jsonl"), b"tampered").unwrap();
        let err = read(&dir, "agentic_coding_2.5h.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected b7da8c4f"), "{err}");
        let missing = read(&dir, "absent.jsonl").unwrap_err().to_string();
        assert!(missing.contains("fetch-data.sh"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
