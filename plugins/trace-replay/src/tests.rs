use super::*;

fn config(trace: &str) -> Config {
    Config::with_settings(r#"{"block_tokens": 4}"#).grant(TRACE, "t.jsonl", trace)
}

fn prompt(run: &Run, k: usize) -> String {
    let turn = run.start(&format!("trace-{k}")).unwrap();
    turn.messages[0].content.clone().unwrap()
}

/// Words two prompts share from their start.
fn shared(a: &str, b: &str) -> usize {
    a.split(' ')
        .zip(b.split(' '))
        .take_while(|(x, y)| x == y)
        .count()
}

#[test]
fn requests_sharing_hash_blocks_share_their_prefixes_and_no_more() {
    let trace = r#"{"timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1, 2, 3]}
{"timestamp": 5, "input_length": 9, "output_length": 1, "hash_ids": [1, 2, 7]}
{"timestamp": 5, "input_length": 6, "output_length": 1, "hash_ids": [1, 5]}

{"timestamp": 9.5, "input_length": 3, "output_length": 2, "hash_ids": [9], "extra": true}
{"timestamp": 10, "input_length": 12, "output_length": 2, "hash_ids": [1, 2]}
"#;
    let mut w = TraceReplay::default();
    let sessions = w.configure(config(trace)).unwrap();
    assert_eq!(sessions.len(), 5);
    assert_eq!(sessions[4].id, "trace-4");
    assert!(sessions.iter().all(|s| s.expected_turns == 1));
    let run = w.run.as_ref().unwrap();
    let p: Vec<String> = (0..5).map(|k| prompt(run, k)).collect();
    for (k, len) in [10, 9, 6, 3, 12].into_iter().enumerate() {
        assert_eq!(p[k].split(' ').count(), len);
        assert!(p[k]
            .split(' ')
            .all(|w| w.len() == 4 && prompt::words().contains(&w)));
    }
    // Two blocks of 4 words shared, then the third blocks (ids 3 and 7) part at once.
    assert_eq!(shared(&p[0], &p[1]), 8);
    assert_eq!(shared(&p[0], &p[2]), 4);
    assert_eq!(shared(&p[0], &p[3]), 0);
    // Line 4 has two blocks, then its own words: 8 shared with line 0.
    assert_eq!(shared(&p[4], &p[0]), 8);
    let turn = run.start("trace-0").unwrap();
    assert_eq!(turn.sampling.max_completion_tokens, Some(3));
    // The same line, the same prompt.
    assert_eq!(prompt(run, 1), p[1]);
    assert!(w.next("trace-0", Outcome::Aborted).unwrap().is_none());
    assert!(w.start("trace-5").is_err());
}

#[test]
fn bad_lines_are_refused_with_file_and_line() {
    for (trace, want) in [
        (
            "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}",
            "t.jsonl:2",
        ),
        (
            "{\"timestamp\": 5, \"input_length\": 1, \"hash_ids\": []}",
            "missing field `output_length`",
        ),
        (
            "{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
            "input_length",
        ),
        ("\n", "no lines"),
    ] {
        let e = TraceReplay::default()
            .configure(config(trace))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e} lacks {want}");
    }
    let e = TraceReplay::default()
        .configure(Config::with_settings("{}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("trace"), "{e}");
}

#[test]
fn the_words_are_1024_four_letter_words_and_block_heads_differ_by_id() {
    let words = prompt::words();
    assert_eq!(words.len() as u64, prompt::VOCABULARY);
    let mut unique = words.to_vec();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), words.len());
    assert!(words
        .iter()
        .all(|w| w.len() == 4 && w.bytes().all(|b| b.is_ascii_lowercase())));
    let heads: std::collections::HashSet<usize> =
        (0..1024).map(|id| prompt::block_word(id, 0)).collect();
    assert_eq!(heads.len(), 1024);
}
