//! Server text never reaches the terminal raw: a server whose error bodies
//! and metrics page carry terminal escapes (`ESC [2J` clears the screen, an
//! OSC sequence retitles the window, NUL bytes, a carriage return that
//! overwrites the line) is shown escaped on the console, in `report.txt` and
//! in `report.html`.

use crate::common::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Terminal escapes, as a hostile server sends them.
const HOSTILE: &str = "boom\x1b[2J\x1b]0;pwned\x07 nul\0 \r\x1b[31mred\u{9b}1m";

/// A loopback HTTP/1.1 server: `/metrics` answers a page of garbage with
/// `HOSTILE` in it, `/v1/models` an empty list, anything else `500` with
/// `HOSTILE` as its body.
async fn hostile_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                let mut body = vec![0u8; length];
                let _ = socket.read_exact(&mut body).await;
                let (status, text) = if head.starts_with("get /metrics") {
                    ("200 OK", format!("garbage {HOSTILE}\n"))
                } else if head.starts_with("get /v1/models") {
                    ("200 OK", r#"{"object": "list", "data": []}"#.to_owned())
                } else {
                    ("500 Internal Server Error", HOSTILE.to_owned())
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

/// The control bytes in `bytes` other than line ends and tabs.
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.char_indices()
        .filter(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
        .map(|(i, c)| format!("{c:?} at {i}: …{}…", &text[i.saturating_sub(40)..i]))
        .collect()
}

fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    let found = raw_controls(bytes);
    assert!(
        found.is_empty(),
        "{what} carries raw control characters: {found:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_is_shown_escaped_on_the_console_and_in_the_reports() {
    let url = hostile_server().await;
    let dir = scratch("terminal");
    let telemetry = format!(
        "[telemetry]\ninterval_s = 0.05\n[[telemetry.scrape]]\nurl = \"{url}/metrics\"\nname = \"evil\"\n"
    );
    let config = edge_config(
        dir.path(),
        &url,
        "num_trajectories_to_issue = 2",
        &telemetry,
    );
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let console = text(&run);
    assert_eq!(run.status.code(), Some(4), "every turn failed: {console}");
    // The cause is shown, its escapes as text.
    assert!(
        console.contains("HTTP 500: boom\\u{1b}[2J\\u{1b}]0;pwned\\u{7}"),
        "{console}"
    );
    assert!(console.contains("telemetry source evil"), "{console}");
    assert_no_raw_controls("stdout", &run.stdout);
    assert_no_raw_controls("stderr", &run.stderr);
    for file in ["report.txt", "report.html"] {
        let bytes = std::fs::read(out.join(file)).unwrap();
        assert_no_raw_controls(file, &bytes);
    }
    // The page says what the server sent, escaped.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("boom\\u{1b}[2J"), "the cause is on the page");

    // `agentload telemetry` shows the page's parse error escaped too.
    let probe = agentload(&["telemetry", config.to_str().unwrap()], dir.path()).await;
    let shown = text(&probe);
    assert!(shown.contains("evil"), "{shown}");
    assert_no_raw_controls("the telemetry probe's stdout", &probe.stdout);
    assert_no_raw_controls("the telemetry probe's stderr", &probe.stderr);

    // A report of a run whose log carries raw control bytes (another tool's, or an
    // older agentload's) escapes them on the page.
    let turns = out.join("turns.jsonl");
    let log = std::fs::read_to_string(&turns)
        .unwrap()
        .replace("boom", "boom\\u001b[2J\\u0007");
    std::fs::write(&turns, log).unwrap();
    let page = dir.path().join("again.html");
    let report = agentload(
        &[
            "report",
            out.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(report.status.success(), "{}", text(&report));
    assert_no_raw_controls(
        "report.html of a crafted log",
        &std::fs::read(&page).unwrap(),
    );
}
