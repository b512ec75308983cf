//! What a resume holds of an earlier process's log, measured with a counting allocator:
//! each record's facts and place, not the record; a session it drives on reads its records
//! whole one at a time, as it replays them. A log of 2,000 records with 16 KiB answers each
//! (32 MB of records) is the test.

use agentload_engine::journal::{sessions_file, side_file, Durability, Journal, TokenLine};
use agentload_engine::{LocalTokens, Prior, SessionEnd, SessionOutcome, TurnRecord, TurnStatus};
use agentload_plugin_host::SessionPlan;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SESSIONS: u32 = 100;
const TURNS: u32 = 20;
const ANSWER: usize = 16 * 1024;

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

#[test]
fn a_resume_holds_facts_of_the_log_and_replays_a_session_one_record_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let turns = dir.path().join("turns.jsonl");
    let out = agentload_fs::OutDir::new(dir.path());
    let rel = std::path::Path::new("turns.jsonl");
    let mut log = Journal::create(&out, rel, Durability::Write).unwrap();
    let mut ended = Journal::create(&out, sessions_file(rel), Durability::Write).unwrap();
    let answer = "a".repeat(ANSWER);
    for turn in 1..=TURNS {
        for s in 0..SESSIONS {
            let mut r = TurnRecord::aborted(&format!("s{s}"), turn, "item", &answer);
            r.status = TurnStatus::Completed;
            r.issued_ns = Some(u64::from(turn) * 1_000_000);
            log.write(&r).unwrap();
        }
    }
    // Every session but the last ended; the last was cut short by the kill.
    for s in 0..SESSIONS - 1 {
        ended
            .write(&SessionOutcome {
                id: format!("s{s}"),
                expected_turns: TURNS,
                completed: TURNS,
                failed: 0,
                aborted: 0,
                ended: SessionEnd::Finished,
                agent: None,
                error: None,
            })
            .unwrap();
    }
    // Every record was counted locally: the counts are the side file's, one line each.
    let mut counts = Journal::create(&out, side_file(rel, "tokens"), Durability::Write).unwrap();
    for line in 1..=u64::from(SESSIONS * TURNS) {
        counts
            .write(&TokenLine {
                line,
                tokens: LocalTokens {
                    isl: 1000,
                    osl: 10,
                    osl_after_first: 9,
                    osl_count_ns: 5,
                },
                recorded: None,
            })
            .unwrap();
    }
    drop((log, ended, counts));
    let plans: Vec<SessionPlan> = (0..SESSIONS)
        .map(|s| SessionPlan {
            id: format!("s{s}"),
            expected_turns: TURNS,
            workspace: None,
        })
        .collect();
    let records = (SESSIONS * TURNS) as isize;

    let before = live();
    let prior = Prior::read(&turns, &plans, &[None]).unwrap();
    let held = live() - before;
    let whole = records * ANSWER as isize;
    println!(
        "prior: {held} bytes held for {records} records ({} per record; the records: {whole})",
        held / records
    );
    assert_eq!(prior.turns.facts.len(), records as usize);
    assert!(held < records * 1024, "{held} bytes for {records} records");

    let before = live();
    let (over, tasks) = prior.split(plans, false).unwrap();
    let driven = live() - before;
    println!("split: {driven} bytes for the one session driven on");
    assert_eq!((over.len(), tasks.len()), (SESSIONS as usize - 1, 1));
    let history = &tasks[0].history;
    assert_eq!(history.len(), TURNS as usize);
    assert!(
        driven < 16 * 1024,
        "{driven} bytes: the split holds where the session's records are and their counts, \
         not the records nor the log's other counts"
    );

    // Replaying reads one record at a time: the most held at once is about one record.
    let before = live();
    let mut most = 0;
    let mut turns = Vec::new();
    for record in history.records() {
        let record = record.unwrap();
        most = most.max(live() - before);
        assert!(
            record.record.local_tokens.is_some(),
            "its count comes with it"
        );
        turns.push(record.record.turn);
    }
    println!("replay: at most {most} bytes held at once");
    assert_eq!(turns, (1..=TURNS).collect::<Vec<_>>());
    let one = ANSWER as isize;
    assert!(
        most >= one && most < 2 * one + 4096,
        "{most} bytes held at once for records of {one}"
    );
}
