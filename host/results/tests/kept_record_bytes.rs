//! What a phase holds in memory per turn: a whole record against its facts
//! (`TurnFacts`), measured with a counting allocator on a record shaped like the edge
//! replay's average line (370 bytes of reasoning, a 260-byte tool call, a 380-byte expected
//! answer, llama.cpp's `usage` and `timings`, the simulator's stamps). The budgets are the
//! figures docs/performance.md projects from.

use agentload_results::record::{Interner, TurnFacts, TurnRecord};
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

fn average_edge_line() -> String {
    let record = serde_json::json!({
        "session_id": "django__django-16899", "turn": 21, "item_id": "django__django-16899/22",
        "status": "completed", "issued_ns": 34434162u64, "first_byte_ns": 36554048u64,
        "first_token_ns": 36554048u64, "last_token_ns": 50629790u64, "complete_ns": 50629790u64,
        "first_token_read_lag_ns": 79267, "token_chunks": 735,
        "completion": {
            "content": "",
            "reasoning_content": "Let me look at how the check is wired before editing it. ".repeat(6)
                + &"x".repeat(28),
            "tool_calls": [{
                "id": "functions.bash:1324", "name": "bash",
                "arguments": format!("{{\"command\": \"grep -n \\\"check_list_display_item\\\" {}\"}}", "d/".repeat(90))
            }],
            "finish_reason": "tool_calls"
        },
        "first_chunk": {"content_bytes": 0, "reasoning_bytes": 1, "tool_call": false},
        "usage": {"completion_tokens": 736, "prompt_tokens": 5303, "total_tokens": 6039,
                  "prompt_tokens_details": {"cached_tokens": 4936}},
        "timings": {"cache_n": 4936, "prompt_n": 367, "prompt_ms": 0.367,
                    "prompt_per_token_ms": 0.001, "prompt_per_second": 999999.99,
                    "predicted_n": 736, "predicted_ms": 14.69, "predicted_per_token_ms": 0.0199,
                    "predicted_per_second": 50068.02},
        "server_timestamps": {"first_token_ns": 2115980, "last_token_ns": 16090102,
                              "queued_ns": 29764, "received_mono_ns": 3949393478295u64,
                              "first_token_mono_ns": 3949395594275u64},
        "issued_mono_ns": 3949393462281u64, "scheduled_ns": 34172784,
        "expected_json": format!("{{\"conversation_id\":\"django__django-16899\",\"tool_calls\":[{}]}}", "y".repeat(320)),
    });
    serde_json::to_string(&record).unwrap()
}

/// Heap bytes `make` leaves allocated, and what it made.
fn heap_of<T>(make: impl FnOnce() -> T) -> (isize, T) {
    let before = LIVE.load(Ordering::SeqCst);
    let made = make();
    (LIVE.load(Ordering::SeqCst) - before, made)
}

#[test]
fn a_turns_facts_hold_a_fraction_of_its_records_bytes_and_no_heap() {
    let line = average_edge_line();
    let (whole_heap, whole) = heap_of(|| serde_json::from_str::<TurnRecord>(&line).unwrap());
    let whole_bytes = std::mem::size_of::<TurnRecord>() as isize + whole_heap;
    let mut strings = Interner::default();
    // The session's first turn allocates its id and finish reason once, in the interner.
    let (first_heap, first) = heap_of(|| TurnFacts::of(&whole, 1, &mut strings));
    let (next_heap, next) = heap_of(|| TurnFacts::of(&whole, 2, &mut strings));
    let facts_bytes = std::mem::size_of::<TurnFacts>() as isize + next_heap;
    eprintln!(
        "line {} bytes; whole record {whole_bytes} bytes; facts {facts_bytes} bytes (the \
         session's first turn: {first_heap} more, shared with its other turns)",
        line.len()
    );
    assert_eq!(next_heap, 0, "a later turn of a session allocates nothing");
    assert_eq!(first.session_id, next.session_id);
    // The record keeps the server's objects as their text (2,284 bytes whole; 5,875 when
    // they were `Value` maps).
    assert!(
        facts_bytes * 8 < whole_bytes,
        "{facts_bytes} vs {whole_bytes}"
    );
    assert!(
        facts_bytes <= 256,
        "a turn's facts grew to {facts_bytes} bytes"
    );
}
