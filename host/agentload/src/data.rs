//! The data directory: where dataset files are found, and the digests they
//! must have (`workloads/data.lock`).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The lock of known data files, compiled in.
const DATA_LOCK: &str = include_str!("../../../workloads/data.lock");

/// Problems finding or checking a data file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("data file {} not found (data directory {}); run `scripts/fetch-data.sh {}` or set AGENTLOAD_DATA_DIR", path.display(), dir.display(), dir.display())]
    Missing { path: PathBuf, dir: PathBuf },
    #[error("cannot read data file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("data file {} has sha256 {actual}, expected {expected} (workloads/data.lock)", path.display())]
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

/// Reads `file` (relative to `dir` unless absolute) and checks its digest
/// against the lock when the lock knows its name.
pub fn read(dir: &Path, file: &str) -> Result<DataFile, DataError> {
    let path = dir.join(file);
    if !path.exists() {
        return Err(DataError::Missing {
            path,
            dir: dir.to_path_buf(),
        });
    }
    let bytes = std::fs::read(&path).map_err(|source| DataError::Read {
        path: path.clone(),
        source,
    })?;
    let actual = hex::encode(Sha256::digest(&bytes));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if let Some(expected) = name.as_deref().and_then(locked_digest) {
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
