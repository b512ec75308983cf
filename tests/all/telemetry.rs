//! Telemetry end to end: the real binary scrapes the embedded simulator's
//! llama.cpp `/metrics` page (and a URL that refuses) during a run and a
//! sweep; NVML configured on a machine without it stops the run first.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;

fn fast() -> SimConfig {
    SimConfig {
        time_scale: 0.0005,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    }
}

/// A URL nothing listens on.
fn refused() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/metrics", listener.local_addr().unwrap())
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_scrapes_the_server_whose_counters_equal_the_turns_usage() {
    let sim = start_sim(fast()).await;
    let dir = scratch("telemetry-run");
    let extra = format!(
        "include_usage = true\n[load]\nconcurrency = 2\n[telemetry]\ninterval_s = 0.05\n\
         [[telemetry.scrape]]\nurl = \"{}/metrics\"\nname = \"server\"\n\
         [[telemetry.scrape]]\nurl = \"{}\"\nname = \"gone\"\n",
        sim.url(),
        refused()
    );
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 3",
        &extra,
    );
    let out = dir.path().join("out");
    let console = run_ok(&config, &out, &[], dir.path()).await;
    // The refusing source is on the console with its cause, and the run went on.
    assert!(
        console.contains("telemetry source gone failed") && console.contains("Connection refused"),
        "{console}"
    );
    assert!(
        console.contains("performance telemetry (telemetry.jsonl): server"),
        "{console}"
    );

    let summary = json(&out.join("performance/result_summary.json"));
    let t = &summary["agentload"]["telemetry"];
    assert_eq!(t["file"], "telemetry.jsonl", "{t}");
    let server = &t["sources"][0];
    assert_eq!(server["name"], "server");
    assert_eq!(server["families"], serde_json::json!(["llama.cpp"]));
    assert_eq!(server["failed"], 0, "{server}");
    let gone = &t["sources"][1];
    assert!(gone["samples"].as_u64().unwrap() >= 2, "{gone}");
    assert_eq!(gone["samples"], gone["failed"]);
    assert!(gone["first_error"]["error"]
        .as_str()
        .unwrap()
        .contains("Connection refused"));

    // The server's own counters over the phase equal the turns' usage.
    let check = &t["usage_check"];
    assert_eq!(check["source"], "server");
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let sum = |key: &str| -> u64 {
        turns
            .iter()
            .map(|r| {
                r["usage"][key]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{key}: {r}"))
            })
            .sum()
    };
    assert_eq!(check["turns"].as_u64().unwrap(), turns.len() as u64);
    assert_eq!(
        check["usage_prompt_tokens"].as_u64().unwrap(),
        sum("prompt_tokens")
    );
    assert_eq!(
        check["usage_completion_tokens"].as_u64().unwrap(),
        sum("completion_tokens")
    );
    assert!(sum("completion_tokens") > 0);
    assert_eq!(
        num(&check["server_prompt_tokens"]),
        sum("prompt_tokens") as f64,
        "{check}"
    );
    assert_eq!(
        num(&check["server_completion_tokens"]),
        sum("completion_tokens") as f64,
        "{check}"
    );
    // Requests were seen in flight at some sample.
    assert!(
        num(&server["gauges"]["requests_running"]["max"]) >= 1.0,
        "{server}"
    );

    // The samples line up with the turns on one clock: the first before
    // the first request, the last after the last answer.
    let samples = read_jsonl(&out.join("telemetry.jsonl"));
    let of =
        |name: &str| -> Vec<&Value> { samples.iter().filter(|s| s["source"] == name).collect() };
    let mine = of("server");
    assert_eq!(mine.len() as u64, server["samples"].as_u64().unwrap());
    assert_eq!(of("gone").len() as u64, gone["samples"].as_u64().unwrap());
    let t_ns = |s: &Value| s["t_ns"].as_u64().unwrap();
    let first_issue = turns
        .iter()
        .map(|r| r["issued_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    let last_answer = turns
        .iter()
        .map(|r| r["complete_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        t_ns(mine[0]) < first_issue,
        "{} vs {first_issue}",
        t_ns(mine[0])
    );
    assert!(t_ns(mine[mine.len() - 1]) > last_answer);
    assert!(mine.windows(2).all(|w| t_ns(w[0]) <= t_ns(w[1])));
    assert!(of("gone")
        .iter()
        .all(|s| s["error"].is_string() && s["fields"].is_null()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_phase_keeps_its_telemetry_and_normalizes_by_measured_power() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("telemetry-sweep");
    let url = sim.url();
    let config = RunToml {
        name: "telemetry-sweep",
        url: &url,
        endpoint: "include_usage = true\n",
        workload: CODING_REPLAY,
        sweep: Some(&format!(
            r#"levels = [2]
{SHORT_AGENT_RULES}[sweep.normalize]
power_command = "echo 250; echo 250"
power_interval_s = 0.05
[telemetry]
interval_s = 0.05
[[telemetry.scrape]]
url = "{url}/metrics"
"#
        )),
        ..RunToml::default()
    }
    .write(&dir.path().join("sweep.toml"));
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phase = &summary["phases"][0];
    let t = &phase["telemetry"];
    assert_eq!(t["sources"][0]["name"], "scrape0", "{t}");
    assert_eq!(t["sources"][1]["kind"], "power_command");
    let power = &t["power"];
    assert_eq!(power["source"], "power");
    assert_eq!(num(&power["mean_w"]), 500.0);
    assert_eq!(num(&power["window_mean_w"]), 500.0);
    assert_eq!(power["energy_method"], "integrated");
    assert!(num(&t["energy_per_output_token_j"]) > 0.0, "{t}");
    let tps = num(&phase["throughput"]["total_tps"]);
    assert!(
        (num(&phase["normalized"]["tps_per_mw"]) - tps / 500e-6).abs() < 1e-6 * tps / 500e-6,
        "{phase}"
    );
    let check = &t["usage_check"];
    assert_eq!(
        num(&check["server_completion_tokens"]),
        num(&check["usage_completion_tokens"]),
        "{check}"
    );
    let file = out.join("sweep/phase-00-c2/telemetry.jsonl");
    assert_eq!(t["file"], "telemetry.jsonl");
    assert!(read_jsonl(&file).len() >= 4);
    // The report draws the time lines in a real browser.
    if let Some(chromium) = crate::common::browser::chromium() {
        let shots =
            std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
        let page =
            crate::common::browser::load(&chromium, &out.join("report.html"), &shots, "telemetry");
        page.assert_clean(&[
            "telemetry-output",
            "telemetry-prompt",
            "telemetry-queue",
            "telemetry-power",
        ]);
        assert!(
            page.sections.iter().any(|s| s == "telemetry"),
            "{:?}",
            page.sections
        );
        for needle in ["Server telemetry", "Telemetry sources", "power_command"] {
            assert!(page.text.contains(needle), "{needle} not on the page");
        }
    }
    // `--force` knows the file as agentload's.
    run_ok(&config, &out, &["--force"], dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_without_the_driver_stops_the_run_before_any_request() {
    if agentload_telemetry::Nvml::open(None).is_ok() {
        eprintln!("this machine has NVML: the refusal cannot be shown here");
        return;
    }
    let sim = start_sim(fast()).await;
    let dir = scratch("telemetry-nvml");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 1",
        "[telemetry.nvml]\n",
    );
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let output = text(&run);
    assert!(!run.status.success(), "{output}");
    assert!(
        output.contains("NVML is not available on this machine"),
        "{output}"
    );
    assert!(output.contains("libnvidia-ml.so.1"), "{output}");
    assert_eq!(sim.chat_requests_received(), 0);
    assert!(!out.join("turns.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_telemetry_command_reads_each_source_once_and_fails_on_a_failing_one() {
    let sim = start_sim(fast()).await;
    let dir = scratch("telemetry-probe");
    let good = "[[telemetry.scrape]]\nurl = \"/metrics\"\nname = \"server\"\n";
    let config = edge_config(dir.path(), "http://127.0.0.1:9", "", good);
    let cfg = config.to_str().unwrap();
    // The path alone follows --endpoint.
    let ok = agentload(&["telemetry", cfg, "--endpoint", &sim.url()], dir.path()).await;
    let out = text(&ok);
    assert!(ok.status.success(), "{out}");
    assert!(
        out.contains(&format!("server ({}/metrics) [llama.cpp]", sim.url())),
        "{out}"
    );
    assert!(out.contains("requests_running = 0"), "{out}");
    assert_eq!(
        sim.chat_requests_received(),
        0,
        "a probe sends no chat request"
    );

    let both = format!(
        "{good}[[telemetry.scrape]]\nurl = \"{}\"\nname = \"gone\"\n",
        refused()
    );
    let config = edge_config(dir.path(), &sim.url(), "", &both);
    let failed = agentload(&["telemetry", config.to_str().unwrap()], dir.path()).await;
    let out = text(&failed);
    assert_eq!(failed.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAILED: ") && out.contains("Connection refused"),
        "{out}"
    );
    assert!(out.contains("1 of 2 telemetry sources failed"), "{out}");

    let none = edge_config(dir.path(), &sim.url(), "", "");
    let refused_run = agentload(&["telemetry", none.to_str().unwrap()], dir.path()).await;
    assert!(
        text(&refused_run).contains("has no telemetry source"),
        "{}",
        text(&refused_run)
    );
}

/// A loopback metrics server: the n-th scrape (from 0) is answered `page(n)`.
async fn metrics_server(page: impl Fn(u64) -> String + Send + Sync + 'static) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let page = std::sync::Arc::new(page);
    let scrapes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (page, scrapes) = (page.clone(), scrapes.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = page(scrapes.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
            });
        }
    });
    url
}

/// `agentload telemetry` on a config scraping `url` (and capturing `capture`).
async fn probe(dir: &std::path::Path, url: &str, capture: &str) -> (bool, String) {
    let scrape =
        format!("[[telemetry.scrape]]\nurl = \"{url}\"\nname = \"odd\"\ncapture = [{capture}]\n");
    let config = edge_config(dir, "http://127.0.0.1:9", "", &scrape);
    let run = agentload(&["telemetry", config.to_str().unwrap()], dir).await;
    (run.status.success(), text(&run))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_pages_are_flagged_and_the_rest_of_the_page_is_kept() {
    let dir = scratch("telemetry-odd");
    // A series twice: the last one is kept and the duplicate flagged, never summed.
    let url = metrics_server(|_| {
        "# TYPE vllm:kv_cache_usage_perc gauge\n\
         vllm:kv_cache_usage_perc{engine=\"0\"} 0.75\n\
         vllm:kv_cache_usage_perc{engine=\"0\"} 1\n\
         vllm:num_requests_running{engine=\"0\"} 3\n\
         vllm:num_requests_running{engine=\"0\"} 4\n"
            .to_owned()
    })
    .await;
    let (ok, out) = probe(dir.path(), &url, "").await;
    assert!(ok, "{out}");
    assert!(out.contains("kv_cache_usage = 1\n"), "{out}");
    assert!(out.contains("requests_running = 4\n"), "{out}");
    assert!(
        out.contains("note: 2 duplicate series (the last of each kept): vllm:kv_cache_usage_perc{engine=\"0\"}"),
        "{out}"
    );

    // One garbage line among good ones: it is flagged, and the rest is read.
    let url = metrics_server(|_| {
        "vllm:num_requests_running{engine=\"0\"} 3\n\
         this is { not a metric\n\
         vllm:num_requests_waiting{engine=\"0\"} 2\n"
            .to_owned()
    })
    .await;
    let (ok, out) = probe(dir.path(), &url, "").await;
    assert!(ok, "a page with one bad line still answered: {out}");
    assert!(out.contains("requests_running = 3\n"), "{out}");
    assert!(out.contains("requests_waiting = 2\n"), "{out}");
    assert!(
        out.contains("note: 1 line could not be read: line 2: `this is { not a metric`"),
        "{out}"
    );

    // A gauge outside its range is flagged.
    let url = metrics_server(|_| "vllm:kv_cache_usage_perc{engine=\"0\"} 1.75\n".to_owned()).await;
    let (ok, out) = probe(dir.path(), &url, "").await;
    assert!(ok, "{out}");
    assert!(
        out.contains("note: kv_cache_usage = 1.75 is outside 0..1"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_400000_series_is_cut_to_a_bound_and_the_cut_recorded() {
    let dir = scratch("telemetry-flood");
    // 200,000 series of a known metric and 200,000 of a captured one.
    let page: std::sync::Arc<String> = std::sync::Arc::new({
        let mut p = String::new();
        for i in 0..200_000 {
            p.push_str(&format!("vllm:num_requests_running{{engine=\"{i}\"}} 1\n"));
            p.push_str(&format!("my_flood{{i=\"{i}\"}} 1\n"));
        }
        p
    });
    let url = metrics_server(move |_| page.to_string()).await;
    let (ok, out) = probe(dir.path(), &url, "\"my_flood\"").await;
    assert!(ok, "{}", &out[..out.len().min(2000)]);
    let captured = out.lines().filter(|l| l.contains("my_flood{")).count();
    assert!(
        (1..=1000).contains(&captured),
        "{captured} captured series kept"
    );
    assert!(
        out.contains("note: series over the bound, cut: 199000 of my_flood"),
        "{}",
        &out[..out.len().min(4000)]
    );
    assert!(
        out.contains("of vllm:num_requests_running"),
        "{}",
        &out[..out.len().min(4000)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_that_falls_on_every_scrape_is_flagged_not_counted_as_resets() {
    let sim = start_sim(fast()).await;
    let dir = scratch("telemetry-falling");
    let url = metrics_server(|n| {
        format!(
            "vllm:generation_tokens_total{{engine=\"0\"}} {}\n",
            1_000_000 - n * 10
        )
    })
    .await;
    let extra = format!(
        "include_usage = true\n[telemetry]\ninterval_s = 0.02\n\
         [[telemetry.scrape]]\nurl = \"{url}\"\nname = \"falling\"\n"
    );
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 2",
        &extra,
    );
    let out = dir.path().join("out");
    let console = run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("performance/result_summary.json"));
    let t = &summary["agentload"]["telemetry"];
    let counter = &t["sources"][0]["counters"]["generation_tokens_total"];
    let samples = t["sources"][0]["samples"].as_u64().unwrap();
    assert!(samples >= 3, "{t:#}");
    assert_eq!(counter["resets"], samples - 1, "{counter}");
    assert!(
        counter["flag"]
            .as_str()
            .is_some_and(|f| f.contains("fell at") && f.contains("not a counter")),
        "{counter}"
    );
    // Its "increase" (the sum of its values after each fall) is not compared with the turns.
    assert!(
        t["usage_check"].is_null() || t["usage_check"]["server_completion_tokens"].is_null(),
        "{t:#}"
    );
    assert!(
        console.contains("generation_tokens_total fell at"),
        "{console}"
    );
    sim.shutdown().await;
}
