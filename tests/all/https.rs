//! HTTPS end to end through the real binary: a replay against the simulator over TLS (its
//! stamps, the handshakes kept out of the turns and recorded), what is refused before any
//! request (an untrusted CA, `--insecure` in a submission), mTLS from the config, and the
//! first-token stamps checked against a TLS server written apart from agentload (Python's
//! `ssl`, stamping its own sends on CLOCK_MONOTONIC).

use crate::common::*;
use agentload_sim::pki::Pki;
use serde_json::Value;
use std::path::Path;

/// The simulator replaying the trajectories over TLS with `pki`'s server certificate.
async fn tls_sim(pki: &Pki, mtls: bool) -> agentload_sim::SimHandle {
    let server = pki.server().unwrap();
    start_sim(agentload_sim::SimConfig {
        slots: 2,
        tls: Some(pki.sim_tls(&server, mtls)),
        ..replay_sim(trajectories())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_over_https_keeps_its_stamps_and_records_its_sessions() {
    let dir = scratch("https");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let sim = tls_sim(&pki, false).await;
    // The simulator's /metrics page is scraped over the same TLS settings.
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 2",
        "[load]\nconcurrency = 2\n[telemetry]\ninterval_s = 0.2\n\
         [[telemetry.scrape]]\nurl = \"/metrics\"\nname = \"sim\"\n",
    );
    let out = dir.path().join("out");
    let ca = pki.ca_file();
    run_ok(
        &config,
        &out,
        &["--ca-file", ca.to_str().unwrap()],
        dir.path(),
    )
    .await;

    let summary = json(&out.join("performance/result_summary.json"));
    let extra = &summary["agentload"];
    let transport = &extra["transport"];
    assert_eq!(transport["scheme"], "https", "{transport}");
    assert_eq!(transport["tls"]["insecure"], false);
    assert_eq!(transport["tls"]["provider"], "ring");
    assert!(transport["tls"]["ca_file"]
        .as_str()
        .unwrap()
        .ends_with("ca.pem"));
    let setup = &extra["harness"]["connection_setup"];
    assert_eq!(setup["connections"], 2, "{setup}");
    // Both connections ready at the start (the endpoint check's and the warm-up's).
    let tls = &setup["tls"];
    assert_eq!(tls["versions"]["TLSv1.3"].as_u64(), Some(2), "{tls}");
    assert!(tls["handshake_us"]["max"].as_f64().unwrap() > 0.0, "{tls}");
    assert!(
        tls["resumed"].as_u64().unwrap() >= 1,
        "the second session resumes: {tls}"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("TLS: TLSv1.3 x"), "{report}");
    let telemetry = &extra["telemetry"];
    let source = &telemetry["sources"][0];
    assert_eq!(
        source["url"],
        format!("{}/metrics", sim.url()),
        "{telemetry}"
    );
    assert!(
        source["samples"].as_u64().unwrap_or(0) > source["failed"].as_u64().unwrap_or(0),
        "scraped over TLS: {telemetry}"
    );

    // Every completed turn: the simulator read the request after agentload sent it, and
    // agentload's first token came after that; no turn opened a connection (the handshakes
    // were the set-up's).
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let done: Vec<&Value> = turns
        .iter()
        .filter(|t| t["status"] == "completed")
        .collect();
    assert!(done.len() > 10, "{} turns", done.len());
    for t in &done {
        let s = &t["server_timestamps"];
        let issued = stamp(t, "issued_mono_ns");
        let first_token = issued + stamp(t, "first_token_ns") - stamp(t, "issued_ns");
        assert!(stamp(s, "received_mono_ns") >= issued, "{t}");
        assert!(first_token >= stamp(s, "received_mono_ns"), "{t}");
        // (The simulator's first-token stamp is its write's return; loopback delivers the
        // bytes inside that write, and the reader it wakes may run first: the response path
        // can be below zero, as over plain TCP. The Python server's test bounds it instead.)
        assert!(t.get("opened_connection").is_none(), "{t}");
    }
    assert_eq!(sim.tls_failures(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_ca_is_refused_before_any_request() {
    let dir = scratch("https-untrusted");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let sim = tls_sim(&pki, false).await;
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 1", "");
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let output = text(&run);
    assert!(!run.status.success(), "{output}");
    assert!(
        output.contains("endpoint check failed") && output.contains("not trusted"),
        "{output}"
    );
    assert_eq!(sim.chat_requests_received(), 0, "{output}");
    assert!(sim.tls_failures() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_is_said_recorded_and_refused_in_a_submission() {
    let dir = scratch("https-insecure");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let sim = tls_sim(&pki, false).await;
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 1", "");
    let out = dir.path().join("out");
    let refused = run_config(&config, &out, &["--insecure", "--submission"], dir.path()).await;
    let output = text(&refused);
    assert!(!refused.status.success(), "{output}");
    assert!(
        output.contains("insecure") && output.contains("submission"),
        "{output}"
    );
    assert_eq!(sim.connections_accepted(), 0, "nothing was sent: {output}");

    let output = run_ok(&config, &out, &["--insecure"], dir.path()).await;
    assert!(
        output.contains("WARNING: endpoint.tls.insecure"),
        "{output}"
    );
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["agentload"]["transport"]["tls"]["insecure"], true);
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("NOT verified"), "{report}");
    let written = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(written.contains("insecure = true"), "{written}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_from_the_config_and_headers_from_the_environment() {
    let dir = scratch("https-mtls");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let client = pki.client().unwrap();
    let sim = tls_sim(&pki, true).await;
    let tls = format!(
        "headers = {{ \"X-Gateway-Key\" = \"${{TEST_GATEWAY_KEY}}\", \"X-Api-Key\" = \"sk-literal\" }}\n\
         [endpoint.tls]\nca_file = \"{}\"\nclient_cert = \"{}\"\nclient_key = \"{}\"\n",
        pki.ca_file().display(),
        client.cert.display(),
        client.key.display()
    );
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 1",
        &tls,
    );
    let out = dir.path().join("out");
    let run = agentload_env(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
        &[("TEST_GATEWAY_KEY", Path::new("gw-secret-value"))],
    )
    .await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    assert!(sim.chat_requests_received() > 0);
    for file in [
        "config.toml",
        "config.yaml",
        "performance/result_summary.json",
    ] {
        let written = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            !written.contains("gw-secret-value") && !written.contains("sk-literal"),
            "{file}: {written}"
        );
    }
    let written = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(
        written.contains("${TEST_GATEWAY_KEY}") && written.contains("<redacted>"),
        "{written}"
    );
}

/// Runs the edge replay's first trajectory against the Python TLS server (`split`: the
/// token's record in two TCP writes that many ms apart) and pairs each turn's first-token
/// stamp with the server's send of that token's last bytes.
async fn against_python(split: Option<u32>) -> Vec<(i64, i64, i64)> {
    let dir = scratch("https-python");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let server = pki.server().unwrap();
    let log = dir.path().join("sends.jsonl");
    let script = manifest_dir().join("../../tests/fixtures/tls_stamp_server.py");
    let mut args = vec![
        script.to_str().unwrap().to_owned(),
        server.cert.to_str().unwrap().to_owned(),
        server.key.to_str().unwrap().to_owned(),
        log.to_str().unwrap().to_owned(),
    ];
    if let Some(ms) = split {
        args.extend(["--split".to_owned(), ms.to_string()]);
    }
    let mut python = tokio::process::Command::new("python3")
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    {
        use tokio::io::AsyncBufReadExt;
        let stdout = python.stdout.take().unwrap();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut port)
            .await
            .unwrap();
    }
    let url = format!("https://127.0.0.1:{}", port.trim());
    let config = edge_config(dir.path(), &url, "num_trajectories_to_issue = 1", "");
    let out = dir.path().join("out");
    let ca = pki.ca_file();
    run_ok(
        &config,
        &out,
        &["--ca-file", ca.to_str().unwrap(), "--mode", "perf"],
        dir.path(),
    )
    .await;
    let sends = read_jsonl(&log);
    let turns: Vec<Value> = read_jsonl(&out.join("turns.jsonl"))
        .into_iter()
        .filter(|t| t["status"] == "completed")
        .collect();
    assert_eq!(turns.len(), sends.len(), "one send per answered turn");
    assert!(turns.len() >= 5, "{} turns", turns.len());
    turns
        .iter()
        .zip(&sends)
        .map(|(t, s)| {
            let first_token =
                stamp(t, "issued_mono_ns") + stamp(t, "first_token_ns") - stamp(t, "issued_ns");
            (
                first_token,
                stamp(s, "send_start_ns"),
                stamp(s, "send_end_ns"),
            )
        })
        .collect()
}

/// The kernel's stamp, converted from the wall clock, may err by some µs.
const SLACK_NS: i64 = 50_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_first_token_stamp_lies_inside_the_python_servers_send() {
    for (first_token, start, end) in against_python(None).await {
        assert!(
            start - SLACK_NS <= first_token && first_token <= end + SLACK_NS,
            "first token at {} ns from the send's start (send took {} ns)",
            first_token - start,
            end - start
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_record_split_over_two_writes_takes_the_seconds_stamp() {
    for (first_token, start, end) in against_python(Some(20)).await {
        // The first 10 bytes went out 20 ms before `start`: a stamp from them would be
        // 20 ms early.
        assert!(
            start - SLACK_NS <= first_token && first_token <= end + SLACK_NS,
            "first token at {} ns from the second write's start (it took {} ns)",
            first_token - start,
            end - start
        );
    }
}

/// `k8s manifest` puts the config's text in a ConfigMap: a secret header given literally
/// is refused there, one read from the environment is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_manifest_refuses_a_literal_secret_header() {
    let dir = scratch("https-k8s");
    for (value, ok) in [("sk-literal", false), ("${GATEWAY_KEY}", true)] {
        let config = dir.path().join("run.toml");
        std::fs::write(
            &config,
            format!(
                "name = \"k\"\n[model]\nname = \"m\"\n[endpoint]\nurl = \"https://llm.example\"\n\
                 headers = {{ \"X-Api-Key\" = \"{value}\" }}\n"
            ),
        )
        .unwrap();
        let run = agentload(
            &[
                "k8s",
                "manifest",
                config.to_str().unwrap(),
                "--shards",
                "2",
                "--image",
                "registry.example/agentload:0.1.0",
            ],
            dir.path(),
        )
        .await;
        let output = text(&run);
        assert_eq!(run.status.success(), ok, "{value}: {output}");
        if !ok {
            assert!(
                output.contains("endpoint.headers.X-Api-Key") && !output.contains("sk-literal"),
                "{output}"
            );
        }
    }
}

/// A proxy named in the environment is said and not used (proxies are off unless
/// `endpoint.proxy` asks for one): the run goes straight to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_in_the_environment_is_named_and_not_used() {
    let dir = scratch("https-proxy-env");
    let pki = Pki::new(&dir.path().join("pki")).unwrap();
    let sim = tls_sim(&pki, false).await;
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 1", "");
    let out = dir.path().join("out");
    let ca = pki.ca_file();
    // Nothing listens there: a run that used it would fail.
    let nowhere = Path::new("http://127.0.0.1:9");
    let run = agentload_env(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--ca-file",
            ca.to_str().unwrap(),
            "--mode",
            "perf",
        ],
        dir.path(),
        &[("HTTPS_PROXY", nowhere), ("HTTP_PROXY", nowhere)],
    )
    .await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    assert!(
        output.contains("HTTPS_PROXY, HTTP_PROXY set but not used"),
        "{output}"
    );
    let summary = json(&out.join("performance/result_summary.json"));
    assert!(summary["agentload"]["transport"]["proxy"].is_null());
}

/// `bench --sections tls` at a toy size: plain and TLS side by side, every row there, the
/// CPU levels alternated over the rounds asked for, the full handshakes not resumed and the
/// resumed ones resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_measures_tls_beside_plain() {
    let dir = scratch("https-bench");
    let (table, v) = bench_ok(
        dir.path(),
        &[
            "--sections",
            "tls",
            "--samples",
            "4",
            "--requests",
            "2",
            "--answer-tokens",
            "2",
            "--tls-streams",
            "3",
            "--tls-handshakes",
            "3",
            "--tls-rounds",
            "2",
        ],
        &[
            "c=1 TTFT error p99, plain (4 req)",
            "c=1 TTFT error p99, TLS minus plain",
            "c=1 request path p99, TLS minus plain",
            "c=3 harness CPU, plain (median of 2 rounds)",
            "c=3 harness CPU, TLS / plain (medians)",
            "c=3 harness CPU, TLS / plain, highest round",
            "handshake (full, 3 conns, 0 resumed) p50",
            "handshake (resumed, 3 conns, 2 resumed) p50",
            "handshake (resumed) client CPU per connection",
        ],
    )
    .await;
    assert!(!table.contains("failed requests"), "{table}");
    let tls = &v["tls"];
    assert_eq!(tls["plain_c1"]["requests"], 4, "{tls}");
    assert_eq!(tls["tls_c1"]["requests"], 4, "{tls}");
    let rounds = tls["cpu_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{tls}");
    for round in rounds {
        for cpu in round.as_array().unwrap() {
            assert!(cpu.as_f64().unwrap() > 0.0, "{tls}");
        }
    }
    assert_eq!(tls["full"]["resumed"], 0, "{tls}");
    // Each connection's tickets are read before the next opens: all but the first resume.
    assert_eq!(tls["resumed"]["resumed"], 2, "{tls}");
    assert_eq!(tls["full"]["connections"], 3, "{tls}");
    assert!(tls["full"]["p50_us"].as_f64().unwrap() > 0.0, "{tls}");
}
