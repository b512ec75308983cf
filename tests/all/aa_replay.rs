//! AA's replays run as agentperf-local 0.3.4 runs them (`configs/aa-*.toml`,
//! the `aa-replay` workload, `endpoint.client = "agentperf-local"`), against
//! a small server that records every request byte for byte:
//!
//! - every POST body equals the one agentperf-local itself builds for the
//!   same manifest, model and namespace (`tests/fixtures/aa/`, written by
//!   `gen_bodies.py` with agentperf-local's own builders): the 2 probes and
//!   every turn, in order, with AA's headers;
//! - bad manifests and traces are refused before any request, naming the
//!   file, the line and the key;
//! - a server that drops `ignore_eos` is refused after its probe, leaving
//!   nothing behind; one that answers `exact` turns short fails those turns
//!   with AA's message and the run goes on;
//! - a killed run resumes with the same cache namespace.
//!
//! The replays come from the agentload cache (`scripts/fetch-aa-replays.sh`,
//! run by `scripts/test.sh`); without them these tests are skipped (or fail
//! under `AGENTLOAD_REQUIRE_DATA=1`).

use crate::common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The namespace the fixtures were written with.
const NAMESPACE: &str = "3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4 6 2 6 4 3 3 8 3 2 7 9 5";

/// One request the server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// How the server answers chat requests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Behaviour {
    /// `ignore_eos` honoured: exactly `max_tokens` tokens, finish `length`.
    Honours,
    /// `ignore_eos` dropped: every answer stops after 3 tokens.
    Drops,
    /// The probes honoured, every replay turn answered short (3 tokens, `stop`).
    ShortTurns,
    /// Ollama: `/api/version` and `/api/tags` answered as Ollama answers them,
    /// `ignore_eos` dropped.
    Ollama,
}

/// A recording OpenAI-compatible server, HTTP/1.1 keep-alive.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(behaviour: Behaviour, delay_ms: u64) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let log = log.clone();
                tokio::spawn(serve(socket, log, behaviour, delay_ms));
            }
        });
        Self { url, seen, task }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST")
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut socket: tokio::net::TcpStream,
    log: Arc<Mutex<Vec<Seen>>>,
    behaviour: Behaviour,
    delay_ms: u64,
) {
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 65536];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut request = lines.next().unwrap_or_default().split(' ');
        let method = request.next().unwrap_or_default().to_owned();
        let path = request.next().unwrap_or_default().to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(n, v)| (n.to_ascii_lowercase(), v.to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 65536];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + len].to_vec();
        buf.drain(..head_end + len);
        let seen = Seen {
            method: method.clone(),
            path: path.clone(),
            headers,
            body,
        };
        log.lock().unwrap().push(seen.clone());
        let (status, kind, answer) = match (method.as_str(), path.as_str()) {
            ("GET", "/v1/models") => (
                "200 OK",
                "application/json",
                r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"test","meta":{"n_ctx":65536}}]}"#
                    .as_bytes()
                    .to_vec(),
            ),
            ("GET", "/api/version") if behaviour == Behaviour::Ollama => (
                "200 OK",
                "application/json",
                br#"{"version":"0.6.2"}"#.to_vec(),
            ),
            ("GET", "/api/tags") if behaviour == Behaviour::Ollama => (
                "200 OK",
                "application/json",
                br#"{"models":[{"name":"m"}]}"#.to_vec(),
            ),
            ("POST", "/v1/chat/completions") => {
                tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
                ("200 OK", "text/event-stream", stream(&seen.json(), behaviour))
            }
            _ => ("404 Not Found", "application/json", b"{\"error\":\"not found\"}".to_vec()),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        if socket.write_all(head.as_bytes()).await.is_err()
            || socket.write_all(&answer).await.is_err()
        {
            return;
        }
    }
}

/// The event stream answering `body`.
fn stream(body: &Value, behaviour: Behaviour) -> Vec<u8> {
    let max = body["max_tokens"].as_u64().unwrap_or(16);
    let probe = body["messages"][0]["content"] == "Reply with exactly the word: hi";
    let honoured = body["ignore_eos"] == true
        && match behaviour {
            Behaviour::Honours => true,
            Behaviour::Drops | Behaviour::Ollama => false,
            Behaviour::ShortTurns => probe,
        };
    let (tokens, finish) = if honoured {
        (max, "length")
    } else {
        (3.min(max), "stop")
    };
    let mut out = String::from(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    );
    for _ in 0..tokens {
        out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok \"}}]}\n\n");
    }
    out.push_str(&format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{tokens}}}}}\n\n\
         data: [DONE]\n\n"
    ));
    out.into_bytes()
}

/// AA's replays in the data directory or the cache, if fetched.
pub(super) fn replays() -> Option<PathBuf> {
    let dir = agentload_config::data::locate(&data_dir(), "aa_replays/aa-mini-v1/manifest.json")
        .map(|manifest| manifest.parent().unwrap().parent().unwrap().to_path_buf());
    if dir.is_none() {
        bfcl_test_data::skip_without("aa_replays missing: run scripts/fetch-aa-replays.sh DIR");
    }
    dir
}

/// The preset `name` (configs/), pointed at `url` with model `m`, with
/// `settings` added to its workload settings.
pub(super) fn preset(dir: &Path, name: &str, url: &str, settings: &str) -> PathBuf {
    let text = std::fs::read_to_string(manifest_dir().join("../../configs").join(name)).unwrap();
    let text = text
        .replacen(
            "url = \"http://127.0.0.1:8080\"",
            &format!("url = \"{url}\""),
            1,
        )
        .replacen("name = \"model\"", "name = \"m\"", 1)
        .replacen(
            "[performance.settings]",
            &format!("[performance.settings]\n{settings}"),
            1,
        );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `(name, bytes, sha256)` of each POST a fixture lists.
fn fixture(name: &str) -> Vec<(String, usize, String)> {
    let text =
        std::fs::read_to_string(manifest_dir().join("../../tests/fixtures/aa").join(name)).unwrap();
    text.lines()
        .map(|l| {
            let mut parts = l.split('\t');
            (
                parts.next().unwrap().to_owned(),
                parts.next().unwrap().parse().unwrap(),
                parts.next().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every POST equals the fixture's body, in order.
fn assert_bodies(posts: &[Seen], fixture_name: &str) {
    let want = fixture(fixture_name);
    assert_eq!(posts.len(), want.len(), "POSTs sent");
    for (i, (post, (name, bytes, sha))) in posts.iter().zip(&want).enumerate() {
        let got = hex::encode(Sha256::digest(&post.body));
        assert!(
            post.body.len() == *bytes && got == *sha,
            "POST {i} ({name}): {} bytes, sha256 {got}; agentperf-local sends {bytes} bytes, {sha}",
            post.body.len()
        );
    }
}

/// AA's headers on every POST (no session header).
fn assert_headers(posts: &[Seen]) {
    for p in posts {
        assert_eq!(p.path, "/v1/chat/completions");
        assert_eq!(p.header("accept"), Some("text/event-stream"), "{p:?}");
        assert_eq!(p.header("accept-encoding"), Some("identity"), "{p:?}");
        assert_eq!(p.header("content-type"), Some("application/json"), "{p:?}");
        assert!(p.header("x-session-id").is_none(), "{:?}", p.headers);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aa_mini_sends_agentperf_locals_bodies_and_headers() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Honours, 0).await;
    let dir = scratch("aa-mini");
    let settings = format!("cache_namespace = \"{NAMESPACE}\"");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, &settings);
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    let posts = server.posts();
    assert_bodies(&posts, "bodies-aa-mini-exact.tsv");
    assert_headers(&posts);
    // One turn whole, byte for byte.
    let turn =
        std::fs::read(manifest_dir().join("../../tests/fixtures/aa/aa-mini-0001-exact.json"))
            .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&posts[3].body),
        String::from_utf8_lossy(&turn)
    );
    // The preflight: GET /v1/models, GET /api/version (not Ollama), then the probes.
    let gets: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.method == "GET")
        .map(|s| s.path.clone())
        .collect();
    assert!(gets.contains(&"/v1/models".to_owned()), "{gets:?}");
    let manifest = json(&out.join("run_manifest.json"));
    let pre = &manifest["aa_preflight"];
    assert_eq!(pre["ignore_eos_probe"]["verdict"], "honoured", "{pre:#}");
    assert_eq!(pre["context"]["observed_tokens"], 65536, "{pre:#}");
    assert_eq!(pre["context"]["reduced"], false, "{pre:#}");
    assert_eq!(pre["policy"], "exact", "{pre:#}");
    let facts = &manifest["workload_facts"]["performance"];
    assert!(
        facts["workload_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:4e2ac8ad"),
        "{facts:#}"
    );
    assert_eq!(facts["cache_isolation"]["namespace"], NAMESPACE);
    // Every turn passed AA's exact check and carries its facts for AA's files.
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(turns.len(), 6);
    for t in &turns {
        assert_eq!(t["status"], "completed", "{t}");
        let expected: Value = serde_json::from_str(t["expected_json"].as_str().unwrap()).unwrap();
        assert_eq!(expected["aa"]["max_tokens"], 256, "{expected}");
        assert_eq!(expected["aa"]["task_id"], "aa-mini-library-01");
    }
    assert!(
        output.contains("workload digest sha256:4e2ac8ad"),
        "{output}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_replay_sends_agentperf_locals_170_posts() {
    let Some(_) = replays() else { return };
    if agentload_config::data::manifest_arch() != "x86_64" {
        return; // the fixture is the x86_64 manifest's (the arm64 one differs in its digest only)
    }
    let server = Server::start(Behaviour::Honours, 0).await;
    let dir = scratch("aa-default");
    let settings = format!("cache_namespace = \"{NAMESPACE}\"");
    let config = preset(
        dir.path(),
        "aa-agentperf-local.toml",
        &server.url,
        &settings,
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let posts = server.posts();
    assert_bodies(&posts, "bodies-default-x86_64-exact.tsv");
    assert_headers(&posts);
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(
        manifest["workload_facts"]["performance"]["workload_digest"],
        "sha256:7d9b1daeeb917156a5a5afa96cae63571dd9ce0ec756d331080fa4db956d802d"
    );
    let sessions = json(&out.join("sessions.json"));
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "task_meeting_council_budget",
            "task_meeting_council_votes",
            "task_k8s_debugging",
            "task_meeting_searchable_index",
            "task_skill_search",
            "django__django-15851",
            "django__django-14500",
            "sphinx-doc__sphinx-10614"
        ]
    );
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(turns.len(), 168);
    assert!(turns.iter().all(|t| t["status"] == "completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_policy_sends_no_probe_and_no_ignore_eos() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Drops, 0).await;
    let dir = scratch("aa-recorded");
    let settings = format!("cache_namespace = \"{NAMESPACE}\"");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, &settings);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("policy = \"exact\"", "policy = \"recorded\"");
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let posts = server.posts();
    assert_bodies(&posts, "bodies-aa-mini-recorded.tsv");
    // Short answers pass the transport check under `recorded`.
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{turns:#?}"
    );
    let manifest = json(&out.join("run_manifest.json"));
    assert!(manifest["aa_preflight"]["ignore_eos_probe"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_without_a_policy_runs_the_recorded_policy_and_says_so() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Ollama, 0).await;
    let dir = scratch("aa-ollama");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("policy = \"exact\"\n", "");
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    let said = run_ok(&config, &out, &[], dir.path()).await;
    assert!(
        said.contains("this server is Ollama, which cannot honor ignore_eos, so the run uses the recorded output policy"),
        "{said}"
    );
    let asked: Vec<String> = server.seen().iter().map(|s| s.path.clone()).collect();
    assert!(
        asked.iter().any(|p| p == "/api/version") && asked.iter().any(|p| p == "/api/tags"),
        "{asked:?}"
    );
    // No probe, no ignore_eos: the 6 turns only, each completed.
    let posts = server.posts();
    assert_eq!(posts.len(), 6, "{posts:#?}");
    assert!(posts.iter().all(|p| p.json().get("ignore_eos").is_none()));
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{turns:#?}"
    );
    let preflight = &json(&out.join("run_manifest.json"))["aa_preflight"];
    assert_eq!(preflight["ollama"], true);
    assert_eq!(preflight["policy"], "recorded");
    assert!(preflight["ignore_eos_probe"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_drops_ignore_eos_is_refused_leaving_nothing_behind() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Drops, 0).await;
    let dir = scratch("aa-drops");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let said = text(&run);
    assert!(!run.status.success(), "{said}");
    assert!(
        said.contains(
            "the server ignores ignore_eos: a 512-token probe finished with 'stop' after 3 tokens"
        ),
        "{said}"
    );
    assert!(
        said.contains("set policy = \"recorded\" in [performance.settings]"),
        "{said}"
    );
    assert!(!out.exists(), "the refused run left {}", out.display());
    // The one probe, short: no control, no replay request.
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0].json()["ignore_eos"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_exact_turns_fail_with_agentperf_locals_message_and_the_run_goes_on() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::ShortTurns, 0).await;
    let dir = scratch("aa-short");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let said = text(&run);
    // Every turn was sent (2 probes + 6 turns), each failed with AA's words.
    assert_eq!(server.posts().len(), 8, "{said}");
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(turns.len(), 6, "{said}");
    for t in &turns {
        assert_eq!(t["status"], "failed", "{t}");
        assert_eq!(
            t["error"],
            "exact output policy: server finished with 'stop' instead of generating the full length",
            "{t}"
        );
        // The answer is kept with the failed turn.
        assert_eq!(t["completion"]["finish_reason"], "stop", "{t}");
    }
    let sessions = json(&out.join("sessions.json"));
    assert_eq!(sessions[0]["failed"], 6, "{sessions:#}");
    assert_eq!(sessions[0]["aborted"], 0, "{sessions:#}");
    assert_eq!(sessions[0]["ended"], "finished", "{sessions:#}");
}

/// A manifest in AA's format beside its traces, as `agentperf-local convert` writes one.
fn custom_replay(dir: &Path, edit: impl Fn(&str) -> String, trace_edit: impl Fn(&str) -> String) {
    let mini = replays().unwrap().join("aa-mini-v1");
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    let manifest = std::fs::read_to_string(mini.join("manifest.json")).unwrap();
    std::fs::write(dir.join("manifest.json"), edit(&manifest)).unwrap();
    let trace = std::fs::read_to_string(mini.join("traces/aa-mini-library-01.jsonl")).unwrap();
    std::fs::write(
        dir.join("traces/aa-mini-library-01.jsonl"),
        trace_edit(&trace),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manifests_are_refused_before_any_request_naming_file_line_and_key() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Honours, 0).await;
    let dir = scratch("aa-bad");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let same = |t: &str| t.to_owned();
    type Edit = Box<dyn Fn(&str) -> String>;
    let cases: Vec<(&str, Edit, Edit, &str)> = vec![
        (
            "rows",
            Box::new(|m: &str| m.replace("\"model_calls\": 6", "\"model_calls\": 7")),
            Box::new(same),
            "invalid data: manifest.json:11: `tasks[0].model_calls`: the manifest records 7 model calls but traces/aa-mini-library-01.jsonl has 6 rows",
        ),
        (
            "tools",
            Box::new(|m: &str| m.replace("\"tool_calls\": 5", "\"tool_calls\": 4")),
            Box::new(same),
            "invalid data: manifest.json:12: `tasks[0].tool_calls`: the manifest records 4 tool calls but traces/aa-mini-library-01.jsonl has 5",
        ),
        (
            "escape",
            Box::new(|m: &str| m.replace("\"traces/aa-mini-library-01.jsonl\"", "\"../../etc/passwd\"")),
            Box::new(same),
            "invalid data: manifest.json:9: `tasks[0].trace`: \"../../etc/passwd\" must stay within the manifest directory",
        ),
        (
            "no target",
            Box::new(same),
            Box::new(|t: &str| {
                let mut lines: Vec<String> = t.lines().map(str::to_owned).collect();
                let mut row: Value = serde_json::from_str(&lines[2]).unwrap();
                row.as_object_mut().unwrap().remove("target_output_tokens");
                lines[2] = row.to_string();
                lines.join("\n") + "\n"
            }),
            "invalid data: traces/aa-mini-library-01.jsonl:3: `target_output_tokens`: a turn with no recorded output length",
        ),
    ];
    for (name, edit, trace_edit, says) in cases {
        let replay = dir.path().join(name);
        custom_replay(&replay, edit, trace_edit);
        let out = dir.path().join(format!("out-{name}"));
        let manifest_grant = format!(
            "performance.manifest={}",
            replay.join("manifest.json").display()
        );
        let folder_grant = format!("performance.replay={}", replay.display());
        let grants = ["--grant", &manifest_grant, "--grant", &folder_grant];
        let run = run_config(&config, &out, &grants, dir.path()).await;
        let said = text(&run);
        assert!(!run.status.success(), "{name}: {said}");
        assert!(said.contains(says), "{name}: {said}");
    }
    // An unknown policy names the key.
    let bad = std::fs::read_to_string(&config)
        .unwrap()
        .replace("policy = \"exact\"", "policy = \"exactly\"");
    std::fs::write(&config, bad).unwrap();
    let out = dir.path().join("out-policy");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let said = text(&run);
    assert!(!run.status.success(), "{said}");
    assert!(said.contains("unknown variant `exactly`"), "{said}");
    assert!(server.seen().is_empty(), "{:#?}", server.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_manifest_runs_through_the_same_path() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Honours, 0).await;
    let dir = scratch("aa-custom");
    let replay = dir.path().join("my-replay");
    // The same task under another name: another workload, another digest.
    custom_replay(
        &replay,
        |m| m.replace("AA bundled mini replay v1", "mine"),
        |t| t.to_owned(),
    );
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let out = dir.path().join("out");
    let manifest_grant = format!(
        "performance.manifest={}",
        replay.join("manifest.json").display()
    );
    let folder_grant = format!("performance.replay={}", replay.display());
    run_ok(
        &config,
        &out,
        &["--grant", &manifest_grant, "--grant", &folder_grant],
        dir.path(),
    )
    .await;
    let manifest = json(&out.join("run_manifest.json"));
    let facts = &manifest["workload_facts"]["performance"];
    assert_eq!(facts["manifest_name"], "mine");
    // AA's digest of these two files, computed here from its formula.
    let file_digest = |p: &Path| {
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
        )
    };
    let members = serde_json::json!([
        ["manifest.json", file_digest(&replay.join("manifest.json"))],
        [
            "traces/aa-mini-library-01.jsonl",
            file_digest(&replay.join("traces/aa-mini-library-01.jsonl"))
        ],
    ]);
    let digest = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(members.to_string()))
    );
    assert_eq!(facts["workload_digest"], digest.as_str());
    assert_eq!(server.posts().len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replay_resumes_with_its_cache_namespace() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Honours, 300).await;
    let dir = scratch("aa-resume");
    let config = preset(dir.path(), "aa-mini.toml", &server.url, "");
    let out = dir.path().join("out");
    let mut run = spawn(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    let log = out.join("turns.jsonl");
    wait_for_lines(&log, 3, &mut run).await;
    run.start_kill().unwrap();
    run.wait().await.unwrap();
    assert!(lines(&log) < 6, "killed before the end");
    let resumed = agentload(&["resume", out.to_str().unwrap()], dir.path()).await;
    assert!(resumed.status.success(), "{}", text(&resumed));
    let turns = read_jsonl(&log);
    let completed: Vec<&Value> = turns
        .iter()
        .filter(|t| t["status"] == "completed")
        .collect();
    assert_eq!(completed.len(), 6, "{turns:#?}");
    // Every request of both processes carries the run's one namespace.
    let namespaces: std::collections::BTreeSet<String> = server
        .posts()
        .iter()
        .map(|p| p.json())
        .filter(|b| b["messages"][0]["role"] == "system")
        .map(|b| {
            let first = b["messages"][0]["content"].as_str().unwrap().to_owned();
            first.split('\n').next().unwrap().to_owned()
        })
        .collect();
    assert_eq!(namespaces.len(), 1, "{namespaces:?}");
    let nonce = json(&out.join("run_manifest.json"))["nonce"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(namespaces.into_iter().next().unwrap(), nonce);
}

/// configs/aa-agentperf-sweep.toml on aa-mini's task, at 2 agents: each agent
/// works through the task again and again (`<task>#<pass>` sessions), every
/// request in AA's shape with its own recorded length as `max_tokens` (the
/// sweep's cap applies to that key; no `max_completion_tokens` is added).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_replays_aas_tasks_per_agent_with_their_recorded_lengths() {
    let Some(_) = replays() else { return };
    let server = Server::start(Behaviour::Honours, 0).await;
    let dir = scratch("aa-sweep");
    let text =
        std::fs::read_to_string(manifest_dir().join("../../configs/aa-agentperf-sweep.toml"))
            .unwrap()
            .replacen(
                "url = \"http://127.0.0.1:8080\"",
                &format!("url = \"{}\"", server.url),
                1,
            )
            .replace(
                "agentperf-default-v1/manifest-{arch}.json",
                "aa-mini-v1/manifest.json",
            )
            .replace("agentperf-default-v1/", "aa-mini-v1/")
            .replace("levels = [1, 10, 100, 1000]", "levels = [2]")
            .replace("min_trajectories = 30", "min_trajectories = 2")
            .replace("steady_state_s = 600.0", "steady_state_s = 0.5")
            .replace("warmup_s = 30.0", "warmup_s = 0.0")
            .replace("max_phase_s = 1800.0", "max_phase_s = 60.0")
            .replace(
                "max_trajectories_per_agent = 8",
                "max_trajectories_per_agent = 3",
            );
    let config = dir.path().join("sweep.toml");
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    run_ok(&config, &out, &["--model", "m"], dir.path()).await;
    let posts = server.posts();
    // The two probes, then the replay's turns.
    assert!(posts.len() > 2 + 6, "{} POSTs", posts.len());
    for p in &posts[2..] {
        let body = p.json();
        assert_eq!(body["max_tokens"], 256, "{body}");
        assert_eq!(body["ignore_eos"], true);
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
    }
    assert_headers(&posts);
    let turns: Vec<Value> = std::fs::read_dir(out.join("sweep"))
        .unwrap()
        .map(|e| e.unwrap().path().join("turns.jsonl"))
        .filter(|p| p.is_file())
        .flat_map(|p| read_jsonl(&p))
        .collect();
    assert!(
        turns.iter().all(|t| t["status"] == "completed"),
        "{turns:#?}"
    );
    assert!(
        turns.iter().any(|t| t["session_id"]
            .as_str()
            .unwrap()
            .starts_with("aa-mini-library-01#")),
        "the task again in a later pass"
    );
}
