//! Sealing, probed as an adversary would: a submission run accepts only the
//! locked plugins under their own names and the locked data files, checks
//! the config against the benchmark's rules before any request, never runs
//! compiled code it cannot authenticate, and the shipped edge config passes
//! it; a development run proceeds and says what is unsealed or not compliant.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The official plugins as built (scripts/build-plugins.sh).
fn official_dir() -> PathBuf {
    test_plugin("misbehave")
        .parent()
        .unwrap()
        .join("../plugins")
}

fn sha256_of(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// A copy of the official plugins with one byte of `coding_replay.wasm`
/// changed inside its description string (the component stays valid).
fn tampered_plugins(dir: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["coding_replay.wasm", "shell_iou.wasm"] {
        std::fs::copy(official_dir().join(name), plugins.join(name)).unwrap();
    }
    let path = plugins.join("coding_replay.wasm");
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = b"recorded agentic-coding trajectories";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the description string is in the component");
    bytes[at] = b'R';
    std::fs::write(&path, bytes).unwrap();
    plugins
}

/// `text` with a `[plugins]` table pointing at `plugins`.
fn with_plugin_dir(text: &str, plugins: &Path) -> String {
    text.replacen(
        "[performance]\n",
        &format!(
            "[plugins]\ndir = \"{}\"\n\n[performance]\n",
            plugins.display()
        ),
        1,
    )
}

fn config_with_plugins(dir: &Path, url: &str, plugins: &Path) -> PathBuf {
    let config = edge_config(dir, url, "num_trajectories_to_issue = 1", "");
    let text = with_plugin_dir(&std::fs::read_to_string(&config).unwrap(), plugins);
    std::fs::write(&config, text).unwrap();
    config
}

/// The shipped edge config, edited (`from` must occur), written to `dir`.
fn shipped_edited(dir: &Path, name: &str, edit: impl FnOnce(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(shipped_edge_config()).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, edit(text)).unwrap();
    path
}

fn replace(text: String, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` not in the config");
    text.replacen(from, to, 1)
}

/// `agentload run CONFIG --submission --out OUT` against a port nothing
/// listens on: it must be refused before any request.
async fn submission_refused(dir: &Path, config: &Path, env: &[(&str, &Path)]) -> String {
    let out = dir.join("refused-out");
    let run = agentload_env(
        &[
            "run",
            config.to_str().unwrap(),
            "--submission",
            "--endpoint",
            "http://127.0.0.1:9",
            "--out",
            out.to_str().unwrap(),
        ],
        dir,
        env,
    )
    .await;
    let msg = text(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(!out.join("turns.jsonl").exists(), "nothing was sent: {msg}");
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_plugin_is_refused_in_submission_and_marked_in_development() {
    let dir = scratch("seal");
    let plugins = tampered_plugins(dir.path());
    // Submission: refused before anything is sent (the endpoint does not even exist).
    let config = shipped_edited(dir.path(), "edge.toml", |t| with_plugin_dir(&t, &plugins));
    let msg = submission_refused(dir.path(), &config, &[]).await;
    assert!(
        msg.contains("coding_replay.wasm") && msg.contains("not the locked coding-replay@"),
        "{msg}"
    );
    let digests = msg.matches("sha256:").count();
    assert!(digests >= 2, "both digests named: {msg}");

    // Development: the same plugins run, and the results say unsealed.
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let config = config_with_plugins(dir.path(), &sim.url(), &plugins);
    let out = dir.path().join("dev");
    run_ok(&config, &out, &[], dir.path()).await;
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["seal"]["mode"], "development");
    assert_eq!(manifest["seal"]["sealed"], false);
    let statuses: Vec<(&str, &str)> = manifest["seal"]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap(), p["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("coding_replay.wasm", "unsealed"),
            ("shell_iou.wasm", "sealed")
        ]
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.starts_with("UNSEALED"), "{report}");
    sim.shutdown().await;
}

/// A scorer's locked bytes in the workload's place (the probe), and
/// a locked data file's bytes under an unlocked name, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_digest_under_another_name_is_refused() {
    let dir = scratch("seal-name");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["shell_iou.wasm", "bfcl_single.wasm", "bfcl_ast.wasm"] {
        std::fs::copy(official_dir().join(name), plugins.join(name)).unwrap();
    }
    std::fs::copy(
        official_dir().join("shell_iou.wasm"),
        plugins.join("coding_replay.wasm"),
    )
    .unwrap();
    let config = shipped_edited(dir.path(), "edge.toml", |t| with_plugin_dir(&t, &plugins));
    let msg = submission_refused(dir.path(), &config, &[]).await;
    assert!(
        msg.contains("coding_replay.wasm")
            && msg.contains("is the locked shell-iou@0.2.0's")
            && msg.contains("under another plugin's name"),
        "{msg}"
    );

    // The trajectories' locked bytes under another name, granted explicitly.
    let renamed = dir.path().join("renamed.jsonl");
    std::fs::copy(trajectories(), &renamed).unwrap();
    let grant = format!("performance.trajectories={}", renamed.display());
    let out = dir.path().join("data-out");
    let run = agentload(
        &[
            "run",
            shipped_edge_config().to_str().unwrap(),
            "--submission",
            "--endpoint",
            "http://127.0.0.1:9",
            "--grant",
            &grant,
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    let msg = text(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(
        msg.contains("renamed.jsonl")
            && msg.contains("granted as `trajectories`")
            && msg.contains("not a file a workload's data lock"),
        "{msg}"
    );
}

/// Each deviation from the edge rules the issue lists refuses a submission
/// run before any request, naming the key, the rule and both values; a
/// development run with the same config goes on and says "not compliant".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_rule_deviation_is_refused_naming_its_key() {
    let dir = scratch("seal-rules");
    let cases: &[(&str, &str, &str, &str)] = &[
        // (replace, with, key, the config's value as named)
        (
            "concurrency = 1",
            "concurrency = 2",
            "load.concurrency",
            "the config has 2",
        ),
        (
            "inject_tool_delay = false\ntemperature = 0.0",
            "inject_tool_delay = false\ntemperature = 1.5",
            "performance.settings.temperature",
            "the config has 1.5",
        ),
        (
            "seed = 42\nmax_completion_tokens = 1024\n\n#",
            "seed = 42\nmax_completion_tokens = 4096\n\n#",
            "performance.settings.max_completion_tokens",
            "the config has 4096",
        ),
        (
            "seed = 42\nmax_completion_tokens = 1024\n\n#",
            "seed = 1\nmax_completion_tokens = 1024\n\n#",
            "performance.settings.seed",
            "the config has 1",
        ),
        (
            "num_trajectories_to_issue = 20",
            "num_trajectories_to_issue = 2",
            "performance.settings.num_trajectories_to_issue",
            "the config has 2",
        ),
        (
            "stream = true",
            "stream = false",
            "endpoint.stream",
            "the config has false",
        ),
        (
            "turn_timeout_s = 600.0",
            "turn_timeout_s = 30.0",
            "load.turn_timeout_s",
            "the config has 30.0",
        ),
        (
            "inject_tool_delay = false",
            "inject_tool_delay = true",
            "performance.settings.inject_tool_delay",
            "the config has true",
        ),
        (
            "subset_floor = 25",
            "subset_floor = 1",
            "accuracy.settings.subset_floor",
            "the config has 1",
        ),
        // Live-reply replay is never official.
        (
            "inject_tool_delay = false\ntemperature = 0.0",
            "inject_tool_delay = false\ntemperature = 0.0\nhistory = \"live\"",
            "performance.settings.history",
            "the config has \"live\"",
        ),
    ];
    for (i, (from, to, key, actual)) in cases.iter().enumerate() {
        let config = shipped_edited(dir.path(), &format!("dev{i}.toml"), |t| {
            replace(t, from, to)
        });
        let msg = submission_refused(dir.path(), &config, &[]).await;
        assert!(
            msg.contains(&format!("`{key}`"))
                && msg.contains("rule \"")
                && msg.contains("requires")
                && msg.contains(actual)
                && msg.contains("before any request"),
            "{key}: {msg}"
        );
    }
    // Without a ruleset a submission run is refused too.
    let config = shipped_edited(dir.path(), "norules.toml", |t| {
        replace(t, "rules = \"mlperf-edge-v0.1\"\n", "")
    });
    let msg = submission_refused(dir.path(), &config, &[]).await;
    assert!(msg.contains("needs a ruleset"), "{msg}");

    // Development: the run goes on and the report says what is not compliant.
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let config = shipped_edited(dir.path(), "devrun.toml", |t| {
        let t = replace(
            t,
            "num_trajectories_to_issue = 20",
            "num_trajectories_to_issue = 1",
        );
        replace(t, "tokenizer = \"qwen3.6\"", "tokenizer = \"none\"")
    });
    let out = dir.path().join("dev-out");
    run_ok(
        &config,
        &out,
        &["--endpoint", &sim.url(), "--mode", "perf"],
        dir.path(),
    )
    .await;
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("NOT COMPLIANT with mlperf-edge-v0.1"),
        "{report}"
    );
    for key in [
        "--mode",
        "performance.settings.num_trajectories_to_issue",
        "model.tokenizer",
    ] {
        assert!(
            report.contains(&format!("not compliant: `{key}`")),
            "{key}: {report}"
        );
    }
    let manifest = json(&out.join("run_manifest.json"));
    let compliance = &manifest["compliance"];
    assert_eq!(compliance["rules"], "mlperf-edge-v0.1");
    assert_eq!(compliance["compliant"], false);
    assert_eq!(compliance["deviations"].as_array().unwrap().len(), 3);
    assert_eq!(
        compliance["config_digest"],
        format!("sha256:{}", sha256_of(&out.join("config.toml")))
    );
    sim.shutdown().await;
}

/// The cache entry file of the component at `wasm` in `cache`.
fn entry_of(cache: &Path, wasm: &Path) -> PathBuf {
    let hex = sha256_of(wasm);
    let found: Vec<PathBuf> = std::fs::read_dir(cache.join("components"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&hex) && name.ends_with(".cwasm")
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one entry for {}: {found:?}",
        wasm.display()
    );
    found[0].clone()
}

/// Another workload's compiled code (entry and tag) copied under
/// coding-replay's name: the poisoning.
fn poison(cache: &Path) {
    let victim = entry_of(cache, &official_dir().join("coding_replay.wasm"));
    let other = entry_of(cache, &test_plugin("misbehave"));
    std::fs::copy(&other, &victim).unwrap();
    std::fs::copy(
        other.with_extension("cwasm.hmac"),
        victim.with_extension("cwasm.hmac"),
    )
    .unwrap();
}

/// A cache directory of its own (its compiled code apart; the data and the
/// tokenizer linked from the real cache) and a cache key of its own.
fn isolated_cache(dir: &Path) -> (PathBuf, PathBuf) {
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let real = agentload_config::cache_dir().filter(|d| d.is_dir());
    for entry in real.iter().flat_map(|d| std::fs::read_dir(d).unwrap()) {
        let entry = entry.unwrap();
        if entry.file_name() != "components" {
            std::os::unix::fs::symlink(entry.path(), cache.join(entry.file_name())).unwrap();
        }
    }
    (cache, dir.join("config/cache.key"))
}

/// Fills the cache with coding-replay's and misbehave's compiled code, then
/// poisons coding-replay's entry: a development run reports it, recompiles
/// and runs the real coding-replay. (No endpoint is needed: the plugins are
/// compiled and their sessions planned before the first request fails.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_cache_entry_is_detected_and_never_loaded_in_development() {
    let dir = scratch("seal-cache");
    let (cache, key) = isolated_cache(dir.path());
    let env = [
        ("AGENTLOAD_CACHE_DIR", cache.as_path()),
        ("AGENTLOAD_CACHE_KEY", key.as_path()),
    ];
    // An echo endpoint: the plugins run, what they are answered is not the point.
    let echo = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let closed = echo.url();
    let config = edge_config(dir.path(), &closed, "num_trajectories_to_issue = 1", "");
    let misbehave = dir.path().join("misbehave.toml");
    std::fs::write(
        &misbehave,
        format!(
            "name = \"m\"\n[model]\nname = \"m\"\ntokenizer = \"none\"\n[endpoint]\nurl = \"{closed}\"\n\
             [performance]\nworkload = \"{}\"\nreport_file = \"none.json\"\n",
            test_plugin("misbehave").display()
        ),
    )
    .unwrap();
    let run = |cfg: PathBuf, out: &'static str| {
        let (dir, env) = (dir.path().to_path_buf(), env);
        async move {
            let out = dir.join(out);
            let run = agentload_env(
                &["run", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()],
                &dir,
                &env,
            )
            .await;
            let msg = text(&run);
            assert!(run.status.success(), "{msg}");
            (msg, out)
        }
    };
    run(config.clone(), "fill1").await;
    run(misbehave, "fill2").await;
    poison(&cache);

    let (msg, out) = run(config.clone(), "dev").await;
    assert!(
        msg.contains("does not authenticate") && msg.contains("coding_replay.wasm"),
        "the poisoning is reported: {msg}"
    );
    let sessions = json(&out.join("sessions.json"));
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids.len(), 1, "one trajectory: {sessions}");
    assert_ne!(ids[0], "s1", "misbehave's code did not run");
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["plugins"][0]["name"], "coding-replay");
    // The entry was replaced by an authentic one: the next run loads it
    // without a word.
    let (msg, _) = run(config, "again").await;
    assert!(!msg.contains("does not authenticate"), "{msg}");
}

/// The shipped edge config passes a submission run (performance replay and
/// accuracy gate against the oracle, VALID, sealed, compliant), compiling
/// every plugin from its verified bytes: a poisoned cache entry is reported
/// and not executed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_edge_config_passes_a_submission_run_despite_a_poisoned_cache() {
    let dir = scratch("seal-submit");
    let (cache, key) = isolated_cache(dir.path());
    let env = [
        ("AGENTLOAD_CACHE_DIR", cache.as_path()),
        ("AGENTLOAD_CACHE_KEY", key.as_path()),
    ];
    // Fill and poison the cache with development runs (no endpoint needed:
    // the plugins are compiled before the requests fail).
    let echo = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let head = format!(
        "name = \"f\"\n[model]\nname = \"m\"\ntokenizer = \"none\"\n[endpoint]\n\
         url = \"{}\"\n",
        echo.url()
    );
    let fills = [
        format!(
            "{head}[plugins]\ndir = \"{}\"\n[performance]\nworkload = \"coding-replay\"\n\
             [performance.data]\ntrajectories = \"agentic_coding_2.5h.jsonl\"\n\
             [performance.settings]\nnum_trajectories_to_issue = 1\n",
            official_dir().display()
        ),
        format!(
            "{head}[performance]\nworkload = \"{}\"\n",
            test_plugin("misbehave").display()
        ),
    ];
    for fill in fills {
        let cfg = dir.path().join("fill.toml");
        std::fs::write(&cfg, fill).unwrap();
        let run = agentload_env(
            &["run", cfg.to_str().unwrap(), "--out", "fill", "--force"],
            dir.path(),
            &env,
        )
        .await;
        assert!(run.status.success(), "{}", text(&run));
    }
    poison(&cache);

    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: gold_responder(Some(trajectories()), Some(bfcl_dir())),
        ..SimConfig::default()
    })
    .await;
    let config = shipped_edited(dir.path(), "edge.toml", |t| {
        with_plugin_dir(&t, &official_dir())
    });
    let out = dir.path().join("sealed");
    let run = agentload_env(
        &[
            "run",
            config.to_str().unwrap(),
            "--submission",
            "--require-valid",
            "--endpoint",
            &sim.url(),
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
        &env,
    )
    .await;
    let msg = text(&run);
    assert!(run.status.success(), "{msg}");
    assert!(
        msg.contains("does not authenticate") && msg.contains("coding_replay.wasm"),
        "the poisoning is reported: {msg}"
    );
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["seal"]["mode"], "submission");
    assert_eq!(manifest["seal"]["sealed"], true);
    assert_eq!(manifest["compliance"]["rules"], "mlperf-edge-v0.1");
    assert_eq!(manifest["compliance"]["compliant"], true);
    assert!(manifest["compliance"]["rules_version"]
        .as_str()
        .unwrap()
        .starts_with("edge-v0.1"));
    assert_eq!(
        manifest["compliance"]["config_digest"],
        format!("sha256:{}", sha256_of(&out.join("config.toml")))
    );
    assert_eq!(manifest["plugins"][0]["name"], "coding-replay");
    let sessions = json(&out.join("sessions.json"));
    assert_eq!(
        sessions.as_array().unwrap().len(),
        20,
        "the real replay ran"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        !report.contains("UNSEALED") && !report.contains("NOT COMPLIANT"),
        "{report}"
    );
    assert!(report.contains("run VALID"), "{report}");
    sim.shutdown().await;
}
