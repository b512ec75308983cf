//! `agentload config`: a broken config file is named by file, line, column
//! and key path before anything runs; the schema and the reference page
//! come out of the binary as the checked-in files hold them.

use crate::common::*;

/// The shipped edge config with `from` replaced by `to`, written into `dir`.
fn edge_with(dir: &std::path::Path, from: &str, to: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(shipped_edge_config()).unwrap();
    assert!(text.contains(from), "{from}");
    let path = dir.join("edge.toml");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// The 1-based line of the first line of `path` that starts with `prefix`.
fn line_of(path: &std::path::Path, prefix: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .position(|l| l.starts_with(prefix))
        .expect("the line is there")
        + 1
}

#[tokio::test]
async fn an_unknown_or_mistyped_key_is_named_with_its_line() {
    let dir = scratch("config-check");
    let cases = [
        (
            "concurrency = 1",
            "concurency = 1",
            "concurency",
            1,
            "`load.concurency`: unknown field `concurency`",
        ),
        (
            "concurrency = 1",
            "concurrency = \"1\"",
            "concurrency",
            15,
            "`load.concurrency`: invalid type: string \"1\", expected usize",
        ),
        (
            "stream = true",
            "stream = true\nttft_trigger = \"first-byte\"",
            "ttft_trigger",
            16,
            "`endpoint.ttft_trigger`: unknown variant `first-byte`",
        ),
        (
            "memory_mib = 512",
            "memory_mib = 0",
            "memory_mib",
            1,
            "`plugins.limits.memory_mib`: must be positive",
        ),
    ];
    for (from, to, key, column, want) in cases {
        let file = edge_with(dir.path(), from, to);
        let line = line_of(&file, key);
        let out = agentload(&["config", "check", file.to_str().unwrap()], dir.path()).await;
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        let place = format!("{}:{line}:{column}: {want}", file.display());
        assert!(said.contains(&place), "want {place}\n{said}");
    }
}

#[tokio::test]
async fn shipped_configs_check_and_a_rule_broken_is_placed_at_its_key() {
    let dir = scratch("config-rules");
    let configs = manifest_dir().join("../../configs");
    let mut files: Vec<String> = std::fs::read_dir(&configs)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".toml"))
        .collect();
    files.sort();
    let mut args = vec!["config", "check"];
    args.extend(files.iter().map(String::as_str));
    let out = agentload(&args, dir.path()).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("edge-full-run.toml: ok, compliant with mlperf-edge-v0.1"),
        "{said}"
    );
    assert_eq!(said.matches(": ok").count(), files.len(), "{said}");

    // A development run may break its rules: listed, placed, not refused...
    let file = edge_with(dir.path(), "concurrency = 1", "concurrency = 2");
    let line = line_of(&file, "concurrency");
    let path = file.to_str().unwrap();
    let out = agentload(&["config", "check", path], dir.path()).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "{path}:{line}:1: not compliant: `load.concurrency`"
        )),
        "{said}"
    );
    // ...a submission run is refused.
    let out = agentload(&["config", "check", "--submission", path], dir.path()).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[tokio::test]
async fn the_schema_and_reference_are_the_checked_in_files() {
    let dir = scratch("config-schema");
    let root = manifest_dir().join("../..");
    for (command, file) in [
        ("schema", agentload_config::schema::SCHEMA_FILE),
        ("reference", agentload_config::schema::REFERENCE_PAGE),
    ] {
        let out = agentload(&["config", command], dir.path()).await;
        assert!(out.status.success(), "{}", text(&out));
        let on_disk = std::fs::read(root.join(file)).unwrap();
        assert!(
            out.stdout == on_disk,
            "`agentload config {command}` differs from {file}"
        );
    }
    let schema: serde_json::Value =
        serde_json::from_slice(&agentload(&["config", "schema"], dir.path()).await.stdout).unwrap();
    assert_eq!(schema["properties"]["load"]["$ref"], "#/$defs/LoadConfig");
}
