//! Test support: the one data-gated skip every test uses ([`skip_without`]),
//! and where tests find the BFCL v4 data `scripts/fetch-bfcl.sh` fetched:
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
    skip_without(&format!(
        "BFCL data missing at {} (no {probe}): run scripts/fetch-bfcl.sh DIR",
        dir.display()
    ));
    None
}

/// A test is about to skip because `missing` (data, a tool) is not there:
/// with `AGENTLOAD_REQUIRE_DATA` set (the test script and CI set it) the test
/// fails instead, naming what is missing; otherwise it prints a note.
pub fn skip_without(missing: &str) {
    assert!(
        std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_none(),
        "{missing} (AGENTLOAD_REQUIRE_DATA is set: data-gated tests must run)"
    );
    eprintln!("note: test skipped: {missing}");
}
