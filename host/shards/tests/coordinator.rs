//! The coordinator and its links over real HTTP on loopback: barriers,
//! uploads acknowledged with size and digest, and the two ways a run fails
//! closed (a shard that never joins, a shard that falls silent), with the
//! live shards' uploads kept. Hostile callers: `hostile.rs`.

#[path = "coordinator/hostile.rs"]
mod hostile;

use agentload_shards::{Coordinator, Identity, Link, Setup, ShardHeader, Slice};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn coordinator(dir: &Path, count: u32, barrier: Duration) -> Coordinator {
    coordinator_with(
        dir,
        count,
        barrier,
        agentload_shards::coordinator::DEFAULT_UPLOAD_BUDGET,
    )
}

fn coordinator_with(dir: &Path, count: u32, barrier: Duration, budget: u64) -> Coordinator {
    Coordinator::start(
        "127.0.0.1:0".parse().unwrap(),
        Setup {
            count,
            run_id: "run".into(),
            config_digest: "sha256:c".into(),
            dir: dir.to_path_buf(),
            barrier_timeout: barrier,
            silence_timeout: Duration::from_millis(600),
            upload_budget: budget,
        },
    )
    .unwrap()
}

/// A work directory for shard `index` of `count`: its `shard.json` of the
/// test run, and `files` (path, content).
fn work(index: u32, count: u32, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let header = ShardHeader {
        run_id: "run".into(),
        config_digest: "sha256:c".into(),
        index,
        count,
        host: format!("host-{index}"),
        concurrency: 1,
        started_at: "2026-01-01T00:00:00Z".into(),
        anchors: Vec::new(),
        histograms: Default::default(),
    };
    std::fs::write(
        dir.path().join("shard.json"),
        serde_json::to_vec(&header).unwrap(),
    )
    .unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

async fn join(c: &Coordinator, index: u32, count: u32) -> Arc<Link> {
    Link::join(
        &format!("http://{}", c.addr()),
        Identity {
            slice: Slice::new(index, count).unwrap(),
            run_id: "run".into(),
            config_digest: "sha256:c".into(),
            host: format!("host-{index}"),
        },
        Duration::from_secs(5),
    )
    .await
    .unwrap()
}

/// A sweep level's phase-end barrier: the first shard whose end rules hold waits (its load
/// going on) until the last one's do; then both stop at one time. Arriving again (a phase
/// that ended another way after its shard arrived) is arriving once; a sweep phase's files
/// are uploaded, and nothing else of its folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_ends_on_every_shard_once_every_shard_s_rules_hold() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_secs(5));
    let (a, b) = (join(&c, 0, 2).await, join(&c, 1, 2).await);
    let early = tokio::spawn({
        let a = a.clone();
        async move { a.phase_end("sweep-00").await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!early.is_finished(), "the first shard waits for the second");
    let late = b.phase_end("sweep-00").await.unwrap();
    let early = early.await.unwrap().unwrap();
    let apart = early.max(late) - early.min(late);
    assert!(apart < Duration::from_millis(5), "{apart:?}");
    // Once answered, a second arrival answers the same end at once.
    let again = tokio::time::timeout(Duration::from_secs(2), b.phase_end("sweep-00"))
        .await
        .expect("answered at once")
        .unwrap();
    assert!(again.max(late) - again.min(late) < Duration::from_millis(5));
    // Each phase has its own barrier.
    let next = tokio::spawn({
        let a = a.clone();
        async move { a.phase_end("sweep-01").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!next.is_finished());
    next.abort();
    let w = work(
        0,
        2,
        &[
            ("sweep/summary.json", "{}"),
            ("sweep/phase-00-c4/turns.jsonl", "{}\n"),
        ],
    );
    let files = [
        "sweep/summary.json",
        "sweep/phase-00-c4/turns.jsonl",
        "shard.json",
    ]
    .map(String::from);
    let sent = a.upload(w.path(), &files).await.unwrap();
    assert_eq!(sent.len(), 3);
    assert!(dir
        .path()
        .join("shards/0/sweep/phase-00-c4/turns.jsonl")
        .is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_starts_every_shard_together_and_uploads_are_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_secs(5));
    let (a, b) = (join(&c, 0, 2).await, join(&c, 1, 2).await);
    // Each shard's progress, from its heartbeats, adds up at the coordinator.
    for (link, ttft_ms) in [(&a, 10u64), (&b, 1000)] {
        link.watch(Box::new(move || {
            let mut h = agentload_shards::header::live_histogram();
            h.record_n(ttft_ms * 1000, 50).unwrap();
            agentload_shards::Live {
                completed: 50,
                failed: 1,
                output_tokens: 500,
                ttft_us: agentload_shards::header::to_buckets(&h),
            }
        }));
    }
    let beats = [
        a.heartbeats(Duration::from_millis(50)),
        b.heartbeats(Duration::from_millis(50)),
    ];
    let (sa, sb) = tokio::join!(a.barrier("performance", 0), b.barrier("performance", 0));
    let (sa, sb) = (sa.unwrap(), sb.unwrap());
    let apart = sa.max(sb) - sa.min(sb);
    assert!(apart < Duration::from_millis(5), "{apart:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let live = c.status().live.expect("progress reported");
    assert_eq!(
        (live.shards_reporting, live.completed, live.failed),
        (2, 100, 2)
    );
    assert_eq!(live.phase, "performance");
    // Half the turns at 10 ms, half at 1 s: the merged p50 is 10 ms, p99 1 s.
    assert!((live.ttft_p50_ms.unwrap() - 10.0).abs() < 0.05, "{live:?}");
    assert!((live.ttft_p99_ms.unwrap() - 1000.0).abs() < 1.0, "{live:?}");
    drop(beats);
    let anchor = &a.anchors()[0];
    assert!(anchor.offset.offset_ns.unsigned_abs() <= anchor.offset.uncertainty_ns);
    let files = [
        "shard.json".to_owned(),
        "turns.jsonl".into(),
        "accuracy/turns.jsonl".into(),
        "sessions.json".into(),
    ];
    let works: Vec<_> = (0..2)
        .map(|i| {
            work(
                i,
                2,
                &[("turns.jsonl", "{}\n"), ("accuracy/turns.jsonl", "[]\n")],
            )
        })
        .collect();
    for (link, work) in [&a, &b].into_iter().zip(&works) {
        let sent = link.upload(work.path(), &files).await.unwrap();
        assert_eq!(sent.len(), 3, "the absent file is skipped");
    }
    let uploads = c.uploads().await;
    assert!(uploads.failed.is_none());
    assert_eq!(uploads.complete.len(), 2);
    assert_eq!(
        std::fs::read(dir.path().join("shards/1/accuracy/turns.jsonl")).unwrap(),
        b"[]\n"
    );
    // A shard that already completed its upload cannot send more.
    let again = a.upload(works[0].path(), &files).await.unwrap_err();
    assert!(again.to_string().contains("already completed"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_of_another_config_or_a_second_pod_with_the_same_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_secs(5));
    let _a = join(&c, 0, 2).await;
    let other = Link::join(
        &format!("http://{}", c.addr()),
        Identity {
            slice: Slice::new(1, 2).unwrap(),
            run_id: "run".into(),
            config_digest: "sha256:other".into(),
            host: "h".into(),
        },
        Duration::from_secs(5),
    )
    .await
    .err()
    .unwrap();
    assert!(
        other
            .to_string()
            .contains("every shard must run the same config"),
        "{other}"
    );
    let twin = Link::join(
        &format!("http://{}", c.addr()),
        Identity {
            slice: Slice::new(0, 2).unwrap(),
            run_id: "run".into(),
            config_digest: "sha256:c".into(),
            host: "another-pod".into(),
        },
        Duration::from_secs(5),
    )
    .await
    .err()
    .unwrap();
    assert!(
        twin.to_string().contains("already registered from host-0"),
        "{twin}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_shard_fails_the_run_and_the_live_shards_uploads_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 3, Duration::from_millis(300));
    let links = [
        join(&c, 0, 3).await,
        join(&c, 1, 3).await,
        join(&c, 2, 3).await,
    ];
    let beats: Vec<_> = links[..2]
        .iter()
        .map(|l| l.heartbeats(Duration::from_millis(100)))
        .collect();
    let starts = futures_join(&links).await;
    assert!(starts.iter().all(Result::is_ok));
    // Shard 2 never beats again (killed). Shards 0 and 1 go on past the
    // barrier timeout (alive: waited for), then meet at the next phase's
    // barrier, which the lost shard fails.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let refused = links[0]
        .barrier("accuracy", 0)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("shard 2 (host-2)"), "{refused}");
    for (i, l) in links[..2].iter().enumerate() {
        let work = work(i as u32, 3, &[("turns.jsonl", "{}\n")]);
        let files = ["shard.json".to_owned(), "turns.jsonl".to_owned()];
        l.upload(work.path(), &files).await.unwrap();
    }
    drop(beats);
    let uploads = c.uploads().await;
    assert_eq!(uploads.complete.keys().copied().collect::<Vec<_>>(), [0, 1]);
    assert!(uploads.failed.unwrap().contains("shard 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_that_never_joins_fails_the_barrier_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_millis(400));
    let a = join(&c, 0, 2).await;
    let _beat = a.heartbeats(Duration::from_millis(100));
    let refused = a.barrier("performance", 0).await.unwrap_err().to_string();
    assert!(refused.contains("shard(s) 1 never joined"), "{refused}");
    assert!(c.status().failed.is_some());
}

/// Every link at the performance barrier at once.
async fn futures_join(links: &[Arc<Link>]) -> Vec<Result<std::time::Instant, String>> {
    let tasks: Vec<_> = links
        .iter()
        .map(|l| {
            let l = l.clone();
            tokio::spawn(
                async move { l.barrier("performance", 0).await.map_err(|e| e.to_string()) },
            )
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}
