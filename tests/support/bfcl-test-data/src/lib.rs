//! Test support: where tests find the BFCL v4 data `scripts/fetch-bfcl.sh` fetched:
//! `$AGENTLOAD_BFCL_DIR`, else `~/.cache/agentload/data/bfcl_v4` (where
//! `scripts/test.sh` puts it).

use std::path::PathBuf;

/// The BFCL v4 data folder, if it holds `probe` (a file the test reads).
/// Missing data skips the test with a note, unless `AGENTLOAD_REQUIRE_DATA`
/// is set (the test script sets it), where it fails instead.
pub fn bfcl_dir(probe: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AGENTLOAD_BFCL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agentload/data/bfcl_v4"))
        })?;
    if dir.join(probe).is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_none(),
        "BFCL data missing at {} (no {probe}): run scripts/fetch-bfcl.sh DIR",
        dir.display()
    );
    println!("note: BFCL data not found; test skipped");
    None
}
