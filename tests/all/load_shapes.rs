//! Open-loop load shapes end to end: the real binary against the embedded simulator, every
//! check read from the simulator's own stamp log (`request_stamps`: each request's arrival
//! on the kernel's clock, and its prefix-cache hit), not from agentload's records.
//!
//! The acceptance's figures (`docs/load-shapes.md`): 10,000 arrivals of one-token requests
//! for Poisson, gamma CV 2 and gamma CV 0.5; the gaps between the simulator's arrival stamps
//! pass a Kolmogorov-Smirnov test against the configured law at α = 0.01, the mean rate is
//! within 1 % and the CV within 5 % of the configured ones, and each test also shows the
//! same data failing against a wrong law.
//!
//! What these tests measure is timing, so they run alone, after the rest of the suite
//! (`scripts/test.sh`: `cargo test -p agentload --test all load_shapes -- --ignored
//! --test-threads=1`), and agentload runs with `--realtime`: on a machine whose two CPUs
//! are busy with other work (CI's, or other builds), an ordinary thread that wakes for a due
//! time waits milliseconds for a CPU, which bunches arrivals (send lag p99 36 ms, K-S D 0.046
//! for Poisson at 500/s, measured so under a load average of 12); at real-time priority the
//! sends keep their due times (send lag p50 5 µs, D 0.010 on the same machine under the same
//! load; docs/load-shapes.md). The simulator's arrival stamps are the kernel's, taken as the
//! request's bytes reach its socket, so its own scheduling does not move them.

use crate::common::*;
use agentload_results::fit::{ks_above, mean_cv, Ks, Law};
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One open-loop test at a time: their timing is what they measure.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Gaps shorter than this are compared as a whole (`fit::ks_above`): two requests cannot
/// reach the wire closer together than the harness's send resolution, and a gamma law of
/// CV 2 puts a fifth of its gaps below 10 µs at any rate (its CDF grows as x^¼ near 0, so a
/// lower rate hardly helps). Here the resolution is the test build's on two CPUs shared with
/// the simulator: two sends due within a few µs of each other go out up to about 50 µs
/// apart (the p90 of the difference between consecutive arrivals' send lags, 37-55 µs,
/// measured on this machine at 200 and 500 arrivals/s), so gaps under 100 µs are counted,
/// not placed.
const RESOLUTION_S: f64 = 100e-6;

/// A simulator answering at once (one token, time scale 10⁻⁶), logging its stamps.
async fn stamped_sim(log: &Path, cache_tokens: u64) -> agentload_sim::SimHandle {
    start_sim(SimConfig {
        time_scale: 1e-6,
        slots: 64,
        cache_tokens,
        responder: ResponderConfig::Fill { default_tokens: 1 },
        request_stamps: Some(log.to_path_buf()),
        ..SimConfig::default()
    })
    .await
}

/// A Mooncake-format trace of `lines` (timestamp ms, input length, output length, hash ids).
fn write_trace(path: &Path, lines: &[(f64, u32, u32, Vec<u64>)]) {
    let mut text = String::new();
    for (t, input, output, ids) in lines {
        text.push_str(
            &serde_json::json!({
                "timestamp": t, "input_length": input, "output_length": output, "hash_ids": ids,
            })
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// A run config: the trace-replay workload over `dir/trace.jsonl`, `load` as given.
fn config(dir: &Path, url: &str, load: &str) -> PathBuf {
    RunToml {
        name: "load-shapes",
        url,
        top: &format!("data_dir = \"{}\"\n", dir.display()),
        load: &format!("{load}\n"),
        workload: "[performance]\nworkload = \"trace-replay\"\n\
                   [performance.data]\ntrace = \"trace.jsonl\"\n",
        ..RunToml::default()
    }
    .write(&dir.join("run.toml"))
}

/// The stamp log's finished requests: arrival (ns, CLOCK_MONOTONIC) by session.
fn stamps(log: &Path) -> Vec<Value> {
    read_jsonl(log)
        .into_iter()
        .filter(|l| l["outcome"] == "finished")
        .collect()
}

/// Gaps (s) between consecutive arrivals at the simulator.
fn arrival_gaps(stamps: &[Value]) -> Vec<f64> {
    let mut at: Vec<u64> = stamps
        .iter()
        .map(|l| l["received_mono_ns"].as_u64().unwrap())
        .collect();
    at.sort_unstable();
    at.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e9).collect()
}

/// What the simulator saw of one run: rate, CV and the test against `law`.
struct Seen {
    rate: f64,
    cv: f64,
    fit: Ks,
}

fn seen_at(gaps: &[f64], law: &Law) -> Seen {
    let (mean, cv) = mean_cv(gaps).unwrap();
    Seen {
        rate: 1.0 / mean,
        cv,
        fit: ks_above(gaps, |x| law.cdf(x), RESOLUTION_S).unwrap(),
    }
}

/// 10,000 one-token requests arriving as `process` says at `rate`, checked at the
/// simulator against `law`; `wrong` must fail the same test.
///
/// Each test's rate is 500/s, which this machine delivers exactly: the test build's
/// agentload and simulator together use about 0.75 of its 2 CPUs at that rate (measured:
/// 15 s of CPU over the 20 s run), so a runtime worker is free at almost every due time, and
/// the sends keep their due times (send lag p50 4-5 µs, p99 0.2-0.3 ms, under a load
/// average of 12-15 from other builds).
async fn delivered_matches(name: &str, process: &str, rate: f64, law: Law, wrong: Law) {
    let _serial = SERIAL.lock().await;
    let n = 10_000;
    let load = format!(
        "[load.arrivals]\nof = \"requests\"\nprocess = \"{process}\"\nrate = {rate:?}\nseed = 11\n{}",
        match law {
            Law::Gamma { shape, .. } => format!("cv = {:?}\n", 1.0 / shape.sqrt()),
            _ => String::new(),
        }
    );
    // A run during which agentload's own records show it held off the CPU for longer than
    // FROZEN (one send lag past it: the machine froze, e.g. ~100 ms of the hypervisor's
    // steal, seen twice in about ten runs here) is run once more, and the second run must
    // pass every check: a harness that misdelivers does so both times.
    const FROZEN_MS: f64 = 20.0;
    let mut attempt = 0;
    let (_dir, report, gaps, summary) = loop {
        attempt += 1;
        let dir = scratch(name);
        let log = dir.path().join("stamps.jsonl");
        let sim = stamped_sim(&log, 0).await;
        let lines: Vec<_> = (0..n).map(|k| (0.0, 4, 1, vec![k as u64])).collect();
        write_trace(&dir.path().join("trace.jsonl"), &lines);
        let config = config(dir.path(), &sim.url(), &load);
        let out = dir.path().join("out");
        let report = run_ok(&config, &out, &["--mode", "perf", "--realtime"], dir.path()).await;
        let stamps = stamps(&log);
        assert_eq!(stamps.len(), n, "every arrival reached the simulator once");
        let summary = json(&out.join("performance/result_summary.json"));
        let max_lag = summary["agentload"]["arrivals"]["delivered"]["send_lag_ms"]["max"]
            .as_f64()
            .unwrap();
        if attempt == 1 && max_lag > FROZEN_MS {
            eprintln!("{name}: a send {max_lag} ms late: the machine froze; once more");
            continue;
        }
        break (dir, report, arrival_gaps(&stamps), summary);
    };
    let s = seen_at(&gaps, &law);
    let arrivals = &summary["agentload"]["arrivals"];
    eprintln!(
        "{name}: {process} at {rate}/s: simulator saw {:.3}/s, cv {:.4}, K-S D {:.5} p {:.4}; \
         harness send lag {} (attempt {attempt})",
        s.rate, s.cv, s.fit.d, s.fit.p_value, arrivals["delivered"]["send_lag_ms"]
    );
    assert!(s.fit.passes(0.01), "{name}: {:?}\n{report}", s.fit);
    assert!(
        (s.rate / rate - 1.0).abs() < 0.01,
        "{name}: rate {}",
        s.rate
    );
    assert!((s.cv / law.cv() - 1.0).abs() < 0.05, "{name}: cv {}", s.cv);
    let w = seen_at(&gaps, &wrong);
    assert!(
        !w.fit.passes(0.01),
        "{name}: passed against {wrong:?}: {:?}",
        w.fit
    );
    // The run's own summary says the same, and nothing was behind.
    assert_eq!(arrivals["configured"]["rate"].as_f64(), Some(rate));
    assert_eq!(arrivals["dispatch"]["released"], n);
    assert!(
        arrivals["behind"].as_array().unwrap().is_empty(),
        "{arrivals}"
    );
    assert!(report.contains("delivered rate"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn poisson_arrivals_are_delivered_as_configured() {
    let rate = 500.0;
    delivered_matches(
        "poisson",
        "poisson",
        rate,
        Law::Exponential { mean: 1.0 / rate },
        Law::gamma_with(1.0 / rate, 1.15),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn gamma_cv_2_arrivals_are_delivered_as_configured() {
    let rate = 500.0;
    delivered_matches(
        "gamma2",
        "gamma",
        rate,
        Law::gamma_with(1.0 / rate, 2.0),
        Law::gamma_with(1.0 / rate, 1.8),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn gamma_cv_half_arrivals_are_delivered_as_configured() {
    let rate = 500.0;
    delivered_matches(
        "gamma05",
        "gamma",
        rate,
        Law::gamma_with(1.0 / rate, 0.5),
        Law::Exponential { mean: 1.0 / rate },
    )
    .await;
}

/// Bad input is refused before any request, naming the key (and a trace's line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_load_shapes_are_refused_before_any_request() {
    let dir = scratch("bad-shapes");
    let log = dir.path().join("stamps.jsonl");
    let sim = stamped_sim(&log, 0).await;
    write_trace(
        &dir.path().join("trace.jsonl"),
        &[
            (0.0, 4, 1, vec![1]),
            (5.0, 4, 1, vec![2]),
            (3.0, 4, 1, vec![3]),
        ],
    );
    for (load, want) in [
        (
            "[load.arrivals]\nprocess = \"poisson\"\nrate = 0.0",
            "load.arrivals.rate",
        ),
        (
            "[load.arrivals]\nprocess = \"poisson\"\nrate = -5.0",
            "load.arrivals.rate",
        ),
        (
            "[load.arrivals]\nprocess = \"gamma\"\nrate = 5.0\ncv = 0.0",
            "load.arrivals.cv",
        ),
        (
            "[load.arrivals]\nprocess = \"gamma\"\nrate = 5.0\ncv = -1.0",
            "load.arrivals.cv",
        ),
        (
            "[load.arrivals]\nprocess = \"poisson\"\nrate = 5.0\nmax_in_flight = 0",
            "load.arrivals.max_in_flight",
        ),
        ("[load.arrivals]\nprocess = \"trace\"", "trace.jsonl:3"),
        // A rate sweep's levels and its SLO tiers.
        ("[sweep]\nrates = [10.0, 0.0]", "sweep.rates"),
        ("[sweep]\nrates = [10.0, -2.5]", "sweep.rates"),
        (
            "[load.arrivals]\nprocess = \"poisson\"\nrate = 5.0\n[sweep]\nrates = [5.0]",
            "load.arrivals.rate",
        ),
        (
            "[load.arrivals]\nprocess = \"poisson\"\nmax_in_flight = 0\n[sweep]\nrates = [5.0]",
            "load.arrivals.max_in_flight",
        ),
        (
            "[load.arrivals]\nprocess = \"gamma\"\ncv = 0.0\n[sweep]\nrates = [5.0]",
            "load.arrivals.cv",
        ),
        (
            "[sweep]\nrates = [5.0]\n[[sweep.slo]]\nname = \"x\"\nttft_p90_ms = 0.0\nspeed_p25_tps = 1.0",
            "sweep.slo[0].ttft_p90_ms",
        ),
        (
            "[sweep]\nrates = [5.0]\n[[sweep.slo]]\nname = \"x\"\nttft_p90_ms = 9.0\nspeed_p25_tps = 1.0\n[[sweep.slo]]\nname = \"x\"\nttft_p90_ms = 9.0\nspeed_p25_tps = -1.0",
            "sweep.slo[1].name",
        ),
    ] {
        let config = config(dir.path(), &sim.url(), load);
        let out = run_config(&config, &dir.path().join("o"), &["--force"], dir.path()).await;
        let text = text(&out);
        assert!(!out.status.success(), "{load}: {text}");
        assert!(text.contains(want), "{load}: {text}");
    }
    // A missing field, the line named too.
    std::fs::write(
        dir.path().join("trace.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": []}\n\
         {\"timestamp\": 1, \"input_length\": 4, \"hash_ids\": []}\n",
    )
    .unwrap();
    let config = config(
        dir.path(),
        &sim.url(),
        "[load.arrivals]\nprocess = \"trace\"",
    );
    let out = run_config(&config, &dir.path().join("o"), &["--force"], dir.path()).await;
    let text = text(&out);
    assert!(
        text.contains("output_length") && text.contains('2'),
        "{text}"
    );
    assert_eq!(sim.chat_requests_received(), 0, "nothing was sent");
}

/// A Mooncake-format trace the test draws: requests sharing leading hash blocks of a few
/// "documents", each ending in a partial block of its own. Every request is issued at its
/// time (checked at the simulator), and the simulator's prefix-cache hits are exactly what
/// the hash ids imply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn a_trace_is_replayed_at_its_times_and_its_hash_blocks_are_the_cache_hits() {
    let _serial = SERIAL.lock().await;
    let dir = scratch("trace");
    let log = dir.path().join("stamps.jsonl");
    let sim = stamped_sim(&log, 100_000_000).await;
    const BLOCK: u32 = 16;
    // 12 documents of 4 blocks (ids 0..48); each request takes 1-4 of a document's blocks,
    // the last possibly cut short, then a partial block of its own (ids 100..); ids below
    // 1024 and distinct, so distinct blocks differ from their first word.
    let mut rng = 0x5EED_u64;
    let mut next = |n: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % n
    };
    let mut lines = Vec::new();
    let mut t = 0.0;
    // No two prompts alike (a repeated prompt is cached whole but its last token).
    let mut seen = std::collections::HashSet::new();
    for k in 0..300u64 {
        t += 4.0 + next(12) as f64;
        let doc = next(12);
        let blocks = 1 + next(4);
        let mut ids: Vec<u64> = (0..blocks).map(|j| doc * 4 + j).collect();
        let mut words = blocks as u32 * BLOCK;
        let cut = words - 1 - next(u64::from(BLOCK) - 1) as u32;
        if next(3) == 0 && seen.insert((doc, cut)) {
            // The document's last block cut short: no own block after it.
            words = cut;
        } else {
            ids.push(100 + k);
            words += 1 + next(u64::from(BLOCK) - 1) as u32;
        }
        lines.push((t, words, 1, ids));
    }
    write_trace(&dir.path().join("trace.jsonl"), &lines);
    let config = config(
        dir.path(),
        &sim.url(),
        "[load.arrivals]\nprocess = \"trace\"",
    );
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap() + "[performance.settings]\nblock_tokens = 16\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let report = run_ok(&config, &out, &["--mode", "perf", "--realtime"], dir.path()).await;
    let stamps = stamps(&log);
    assert_eq!(stamps.len(), lines.len());
    let by_session: BTreeMap<u64, &Value> = stamps
        .iter()
        .map(|l| {
            let id = l["session"].as_str().unwrap();
            (id.strip_prefix("trace-").unwrap().parse().unwrap(), l)
        })
        .collect();
    // Issued at its time: each arrival against the trace's own time, on the simulator's
    // clock (aligned by the median: the phase's origin is agentload's).
    let mut off: Vec<i64> = lines
        .iter()
        .enumerate()
        .map(|(k, (t, ..))| {
            let at = by_session[&(k as u64)]["received_mono_ns"]
                .as_u64()
                .unwrap() as i64;
            at - ((t - lines[0].0) * 1e6) as i64
        })
        .collect();
    off.sort_unstable();
    let median = off[off.len() / 2];
    let mut late: Vec<i64> = off.iter().map(|o| (o - median).abs()).collect();
    late.sort_unstable();
    let p99 = late[late.len() * 99 / 100];
    // What the hash ids imply: the longest prefix shared with an earlier request, block by
    // block (a shorter block shares its own length, then sharing stops), plus the role
    // marker's two pieces every prompt shares (`<|use`, `r|>`).
    let block_len = |words: u32, j: usize| (words - j as u32 * BLOCK).min(BLOCK);
    let mut implied = Vec::new();
    for (k, (_, words, _, ids)) in lines.iter().enumerate() {
        let mut best = 0;
        for (_, w2, _, ids2) in &lines[..k] {
            let mut shared = 0;
            for j in 0..ids.len().min(ids2.len()) {
                if ids[j] != ids2[j] || j as u32 * BLOCK >= (*words).min(*w2) {
                    break;
                }
                let (a, b) = (block_len(*words, j), block_len(*w2, j));
                shared += a.min(b);
                if a != b || a < BLOCK {
                    break;
                }
            }
            best = best.max(shared);
        }
        implied.push(if k == 0 { 0 } else { 2 + best });
    }
    let hits: Vec<u32> = (0..lines.len())
        .map(|k| by_session[&(k as u64)]["cached_tokens"].as_u64().unwrap() as u32)
        .collect();
    assert_eq!(hits, implied, "cache hits against what hash_ids imply");
    let mut worst: Vec<(i64, usize)> = (0..lines.len())
        .map(|k| {
            let at = by_session[&(k as u64)]["received_mono_ns"]
                .as_u64()
                .unwrap() as i64;
            (
                (at - ((lines[k].0 - lines[0].0) * 1e6) as i64 - median).abs(),
                k,
            )
        })
        .collect();
    worst.sort_unstable();
    assert!(
        p99 < 2_000_000,
        "arrivals off their times: p99 {p99} ns; the worst (ns off, request): {:?}",
        &worst[worst.len() - 5..]
    );
    assert!(implied.iter().filter(|&&h| h > 2 + BLOCK).count() > 50);
    let summary = json(&out.join("performance/result_summary.json"));
    let lag = &summary["agentload"]["arrivals"]["delivered"]["send_lag_ms"];
    eprintln!("trace: arrival offset p99 {p99} ns; harness send lag {lag}");
    assert!(lag["p99"].is_number(), "{summary}");
    assert!(report.contains("send lag of arrivals"), "{report}");
}

/// trace-replay's words are one Qwen3.6 token each with their leading space (so a
/// request's `input_length` words are about `input_length` tokens on a real server) and
/// one piece of the simulator's approximate counter.
#[test]
fn the_trace_words_are_one_token_each() {
    let words =
        std::fs::read_to_string(manifest_dir().join("../../plugins/trace-replay/src/words.txt"))
            .unwrap();
    let words: Vec<&str> = words.split_whitespace().collect();
    assert_eq!(words.len(), 1024);
    let approx = agentload_sim::ApproxTokenCounter;
    use agentload_sim::TokenCounter as _;
    for w in &words {
        assert_eq!(approx.count(&format!(" {w}")), 1, "{w}");
    }
    if !vocabulary() {
        return;
    }
    let qwen = agentload_engine::tokens::load_qwen(&data_dir()).unwrap();
    for w in &words {
        assert_eq!(qwen.count(&format!(" {w}")), 1, "{w}");
    }
}

/// A rate sweep (`sweep.rates`): each level open-loop at its rate, ended by the end rules,
/// its delivered rate beside the configured one, and each SLO tier's highest rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_sweep_delivers_each_rate_and_finds_the_highest_meeting_the_slo() {
    let dir = scratch("rate-sweep");
    let log = dir.path().join("stamps.jsonl");
    let sim = start_sim(SimConfig {
        time_scale: 0.001,
        slots: 256,
        decode_batch_slowdown: 0.0,
        responder: ResponderConfig::Fill { default_tokens: 8 },
        request_stamps: Some(log.clone()),
        ..SimConfig::default()
    })
    .await;
    let config = RunToml {
        name: "rate-sweep",
        url: &sim.url(),
        load: &poisson_sessions(5),
        workload: SMALL_SYNTH,
        sweep: Some(&format!(
            r#"rates = [20.0, 40.0, 80.0]
min_trajectories = 10
max_phase_s = 20.0
{SHORT_RATE_RULES}[[sweep.slo]]
name = "loose"
ttft_p90_ms = 60000.0
speed_p25_tps = 0.0
[[sweep.slo]]
name = "impossible"
ttft_p90_ms = 0.000001
speed_p25_tps = 1000000000.0
"#
        )),
        ..RunToml::default()
    }
    .write(&dir.path().join("sweep.toml"));
    let out = dir.path().join("out");
    let report = run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phases = summary["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3, "{report}");
    // The simulator's own log: every request's session and its kernel receive stamp. A
    // level's sessions have the ids of the level before's (their prompts are salted
    // apart), so each level's requests are those received after its first was issued
    // (on the same monotonic clock, `issued_mono_ns`) and before the next level's.
    let received: Vec<(String, u64)> = read_jsonl(&log)
        .iter()
        .map(|l| {
            (
                l["session"].as_str().unwrap().to_owned(),
                l["received_mono_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    let journals: Vec<Vec<Value>> = phases
        .iter()
        .map(|p| read_jsonl(&out.join("sweep").join(p["turns"].as_str().unwrap())))
        .collect();
    let starts: Vec<u64> = journals
        .iter()
        .map(|j| {
            j.iter()
                .filter_map(|r| r["issued_mono_ns"].as_u64())
                .min()
                .unwrap()
        })
        .collect();
    let mut placed = 0;
    let mut on_schedule = Vec::new();
    for (i, (p, rate)) in phases.iter().zip([20.0, 40.0, 80.0]).enumerate() {
        let (lo, hi) = (starts[i], starts.get(i + 1).copied().unwrap_or(u64::MAX));
        let mut first_at: BTreeMap<&str, u64> = BTreeMap::new();
        for (session, at) in received.iter().filter(|r| (lo..hi).contains(&r.1)) {
            let e = first_at.entry(session).or_insert(*at);
            *e = (*e).min(*at);
            placed += 1;
        }
        assert_eq!(p["rate"].as_f64(), Some(rate), "{p}");
        let a = &p["arrivals"];
        assert_eq!(a["configured"]["rate"].as_f64(), Some(rate));
        assert!(
            p["turns"].as_str().unwrap().contains(&format!("-r{rate}/")),
            "{p}"
        );
        assert!(p["trajectories_completed"].as_u64().unwrap() >= 10, "{p}");
        // This level's arrivals, as the simulator received them: each session's first
        // request. Their count is agentload's, and their rate agentload's delivered one.
        let sessions: std::collections::BTreeSet<&str> = journals[i]
            .iter()
            .map(|r| r["session_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            sessions,
            first_at.keys().copied().collect(),
            "r{rate}: the sessions the simulator saw"
        );
        let mut at: Vec<u64> = first_at.into_values().collect();
        at.sort_unstable();
        let seen = (at.len() - 1) as f64 / ((at[at.len() - 1] - at[0]) as f64 / 1e9);
        let d = &a["delivered"];
        assert_eq!(d["arrivals"].as_u64(), Some(at.len() as u64), "{a}");
        let delivered = d["rate"].as_f64().unwrap();
        assert!(
            (seen / delivered - 1.0).abs() < 0.02,
            "r{rate}: the simulator saw {seen}/s, agentload says {delivered}/s"
        );
        // An endless schedule: its draw is about the rate, and what was sent is held to it.
        let scheduled = d["scheduled_rate"].as_f64().unwrap();
        assert!((scheduled / rate - 1.0).abs() < 0.5, "{rate}: {scheduled}");
        let late = d["send_lag_ms"]["p99"].as_f64().unwrap() > (100.0 / rate).max(1.0);
        let behind = delivered / scheduled < 0.99 || a["dispatch"]["held_back"] != 0;
        assert_eq!(a["lighter"].as_bool(), Some(behind), "{a}");
        assert_eq!(
            !a["behind"].as_array().unwrap().is_empty(),
            behind || late,
            "{a}"
        );
        // The loose tier holds wherever the level's load was delivered whole; the
        // impossible one nowhere.
        let met: Vec<&str> = p["meets_slo"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(met, if behind { vec![] } else { vec!["loose"] }, "{p}");
        if !behind {
            on_schedule.push(rate);
        }
    }
    // Nothing reached the simulator before the first level or outside every level.
    assert_eq!(placed, received.len(), "requests the simulator saw");
    let slo = summary["slo"].as_array().unwrap();
    let highest = on_schedule.iter().copied().reduce(f64::max);
    assert_eq!(slo[0]["max_rate"].as_f64(), highest, "{summary}");
    assert!(slo[1]["max_rate"].is_null(), "{summary}");
    let best = highest.map_or_else(|| "none".to_owned(), |r| format!("{r}/s"));
    assert!(report.contains(&format!("highest rate {best}")), "{report}");
    assert!(
        report.contains("r40") && report.contains("delivered"),
        "{report}"
    );
    assert!(report.contains("meets SLO: "), "{report}");
    let pareto = json(&out.join("sweep/pareto.json"));
    assert!(pareto["points"][0]["rate"].is_number(), "{pareto}");
    // The report page: configured beside delivered, and each level's SLO verdict.
    let made = agentload(&["report", out.to_str().unwrap()], dir.path()).await;
    assert!(made.status.success(), "{}", text(&made));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for want in ["configured (delivered)", "meets SLO", "highest rate"] {
        assert!(html.contains(want), "{want}");
    }
}

/// One schedule over four local shards: arrival `k` is shard `k mod 4`'s, every due time of
/// the one-host schedule is issued exactly once, and the merged stream, at the simulator,
/// passes the same test as one host's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn four_shards_issue_every_due_time_of_the_one_schedule_once() {
    let _serial = SERIAL.lock().await;
    let dir = scratch("shards-open");
    let log = dir.path().join("stamps.jsonl");
    let sim = stamped_sim(&log, 0).await;
    let (n, rate, seed) = (10_000u64, 500.0, 13);
    let lines: Vec<_> = (0..n).map(|k| (0.0, 4, 1, vec![k])).collect();
    write_trace(&dir.path().join("trace.jsonl"), &lines);
    let load = format!(
        "[load.arrivals]\nof = \"requests\"\nprocess = \"poisson\"\nrate = {rate:?}\nseed = {seed}\n"
    );
    let config = config(dir.path(), &sim.url(), &load);
    let out = dir.path().join("out");
    run_ok(
        &config,
        &out,
        // Each shard process inherits the launcher's real-time priority.
        &["--mode", "perf", "--shards", "4", "--realtime"],
        dir.path(),
    )
    .await;
    // The one-host schedule, drawn as one host draws it.
    let due = agentload_engine::schedule::fixed(
        &agentload_engine::schedule::Spec {
            gaps: agentload_engine::schedule::Gaps::Exponential,
            rate,
            seed,
            ramp: None,
        },
        n,
    );
    let stamps = stamps(&log);
    let mut seen = vec![0u32; n as usize];
    for l in &stamps {
        let k: usize = l["session"].as_str().unwrap()["trace-".len()..]
            .parse()
            .unwrap();
        seen[k] += 1;
    }
    assert!(seen.iter().all(|&c| c == 1), "every arrival exactly once");
    // Each merged record keeps its due time of the one schedule (on the merged time line:
    // the shards' origins within the start skew) and was sent by shard k mod 4.
    for r in read_jsonl(&out.join("turns.jsonl")) {
        let k: usize = r["session_id"].as_str().unwrap()["trace-".len()..]
            .parse()
            .unwrap();
        let off = r["scheduled_ns"].as_u64().unwrap() as i64 - due[k] as i64;
        assert!(
            off.abs() < 50_000_000,
            "arrival {k} due {off} ns off the schedule"
        );
        assert_eq!(r["shard"].as_u64(), Some(k as u64 % 4));
    }
    let law = Law::Exponential { mean: 1.0 / rate };
    let s = seen_at(&arrival_gaps(&stamps), &law);
    eprintln!(
        "4 shards: simulator saw {:.3}/s, cv {:.4}, K-S D {:.5} p {:.4}",
        s.rate, s.cv, s.fit.d, s.fit.p_value
    );
    assert!(s.fit.passes(0.01), "{:?}", s.fit);
    assert!((s.rate / rate - 1.0).abs() < 0.01, "rate {}", s.rate);
    assert!((s.cv - 1.0).abs() < 0.05, "cv {}", s.cv);
    let wrong = seen_at(&arrival_gaps(&stamps), &Law::gamma_with(1.0 / rate, 1.15));
    assert!(!wrong.fit.passes(0.01), "{:?}", wrong.fit);
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["agentload"]["arrivals"]["dispatch"]["released"], n);
}
