//! The SSE parser (`client/sse.rs`): every event of a well-formed stream
//! comes out with its data, whatever the line endings, comments, other
//! fields and read boundaries; any bytes at all parse the same whole or in
//! pieces, without a panic.

use crate::{drive, Budget, Failure, Report, Target};
use agentload_client::{SseEvent, SseParser};
use proptest::prelude::*;

/// Structured streams against the parsing rules.
pub const TARGET: Target = Target {
    name: "sse",
    about: "SSE parser: events, line endings, comments, fields, any read split",
    run,
};

/// Arbitrary bytes, whole vs in pieces.
pub const CHUNKING: Target = Target {
    name: "sse-bytes",
    about: "SSE parser: arbitrary bytes parse the same whole and in pieces",
    run: run_bytes,
};

/// One line of an event.
#[derive(Debug, Clone)]
enum Line {
    /// `data` with an optional `:` and optional single space.
    Data {
        colon: bool,
        space: bool,
        value: String,
    },
    Comment(String),
    /// Another field (`event`, `id`, `retry`, or made up).
    Field(String, String),
}

fn value() -> impl Strategy<Value = String> {
    // Anything but line ends (which would end the line).
    any::<String>().prop_map(|s| {
        s.chars()
            .filter(|c| *c != '\r' && *c != '\n')
            .take(40)
            .collect()
    })
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        6 => (any::<bool>(), any::<bool>(), value()).prop_map(|(colon, space, value)| Line::Data {
            colon: colon || space || !value.is_empty(),
            space,
            value
        }),
        1 => value().prop_map(Line::Comment),
        1 => (prop_oneof![Just("event".to_string()), Just("id".into()), Just("retry".into()), "[a-z]{1,6}"]
                .prop_filter("not data", |n| n != "data"), value())
            .prop_map(|(n, v)| Line::Field(n, v)),
    ]
}

const ENDINGS: [&str; 3] = ["\n", "\r\n", "\r"];

/// Events (lines, and each line's ending), whether the last blank line is
/// left out, and where the reads are split.
type Stream = (
    Vec<Vec<(Line, usize)>>,
    Vec<usize>,
    bool,
    Vec<prop::sample::Index>,
);

fn stream() -> impl Strategy<Value = Stream> {
    (
        proptest::collection::vec(proptest::collection::vec((line(), 0usize..3), 0..5), 0..6),
        proptest::collection::vec(0usize..3, 6),
        any::<bool>(),
        proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    )
}

/// The bytes of the stream and the data the parser must give.
fn render(
    events: &[Vec<(Line, usize)>],
    blanks: &[usize],
    open_end: bool,
) -> (Vec<u8>, Vec<String>) {
    let mut bytes = String::new();
    let mut expected = Vec::new();
    let mut last_cr = false;
    for (i, event) in events.iter().enumerate() {
        let mut data: Vec<String> = Vec::new();
        for (line, ending) in event {
            let text = match line {
                Line::Data {
                    colon,
                    space,
                    value,
                } => {
                    let after = format!("{}{value}", if *space { " " } else { "" });
                    // The rule: one leading space after the colon is dropped.
                    data.push(after.strip_prefix(' ').unwrap_or(&after).to_string());
                    if *colon {
                        format!("data:{after}")
                    } else {
                        "data".into()
                    }
                }
                Line::Comment(c) => format!(":{c}"),
                Line::Field(n, v) => format!("{n}:{v}"),
            };
            let ending = ENDINGS[*ending];
            bytes.push_str(&text);
            bytes.push_str(ending);
            last_cr = ending == "\r";
        }
        let is_last = i + 1 == events.len();
        if !(is_last && open_end) {
            // A blank line right after a `\r` written as `\n` would be one
            // CRLF with it: not the blank line the generator means.
            let mut blank = ENDINGS[blanks[i % blanks.len()]];
            if last_cr && blank == "\n" {
                blank = "\r";
            }
            bytes.push_str(blank);
            last_cr = blank == "\r";
        }
        if !data.is_empty() {
            expected.push(data.join("\n"));
        }
    }
    (bytes.into_bytes(), expected)
}

fn parse(bytes: &[u8], cuts: &[prop::sample::Index]) -> Vec<String> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut parser = SseParser::default();
    let mut out = Vec::new();
    let mut keep = |e: SseEvent<'_>| {
        out.push(e.data.to_owned());
        Ok::<_, std::convert::Infallible>(())
    };
    let mut from = 0;
    for p in points.into_iter().chain([bytes.len()]) {
        let Ok(()) = parser.feed(&bytes[from..p], &mut keep);
        from = p;
    }
    let Ok(()) = parser.finish(&mut keep);
    out
}

fn run(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        TARGET.name,
        stream(),
        |(events, blanks, open_end, cuts)| {
            let (bytes, expected) = render(&events, &blanks, open_end);
            let got = parse(&bytes, &cuts);
            prop_assert_eq!(
                &got,
                &expected,
                "stream {:?}",
                String::from_utf8_lossy(&bytes)
            );
            Ok(())
        },
        budget,
        seed,
    )
}

fn run_bytes(budget: Budget, seed: u64) -> Result<Report, Failure> {
    let bytes = proptest::collection::vec(
        prop_oneof![
            3 => any::<u8>(),
            1 => prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' ')],
            1 => Just(b'd'),
        ],
        0..256,
    );
    drive(
        CHUNKING.name,
        (
            bytes,
            proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        ),
        |(bytes, cuts)| {
            let whole = parse(&bytes, &[]);
            let pieces = parse(&bytes, &cuts);
            prop_assert_eq!(&whole, &pieces);
            let line_ends = bytes
                .iter()
                .filter(|b| **b == b'\n' || **b == b'\r')
                .count();
            prop_assert!(whole.len() <= line_ends + 1);
            Ok(())
        },
        budget,
        seed,
    )
}
