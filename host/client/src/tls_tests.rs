//! HTTPS against the simulator (its TLS from a throwaway CA) and against a hand-driven rustls
//! server (records cut and timed at will): what is trusted, what is refused before any
//! request and why, and that the stamps keep their meaning through TLS.

use super::*;
use agentload_sim::pki::{Leaf, Pki, Usage};
use agentload_sim::{ApproxTokenCounter, SimConfig, SimHandle};
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A CA in a temporary directory, with the server's leaf.
struct Certs {
    _dir: tempfile::TempDir,
    pki: Pki,
    server: Leaf,
}

fn certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path()).unwrap();
    let server = pki.server().unwrap();
    Certs {
        _dir: dir,
        pki,
        server,
    }
}

async fn tls_sim(tls: agentload_sim::SimTls) -> SimHandle {
    agentload_sim::start(
        SimConfig {
            time_scale: 0.0,
            tls: Some(tls),
            ..Default::default()
        },
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap()
}

fn client_with(url: &str, tls: TlsOptions, connections: usize) -> ChatClient {
    ChatClient::new(&ClientOptions {
        endpoint: url.to_owned(),
        turn_timeout: Duration::from_secs(10),
        max_connections: connections,
        transport: Transport::new(&tls, &ProxyOptions::None).unwrap(),
        ..Default::default()
    })
    .unwrap()
}

fn trusting(ca: PathBuf) -> TlsOptions {
    TlsOptions {
        ca_file: Some(ca),
        ..Default::default()
    }
}

fn body() -> serde_json::Value {
    json!({"messages": [{"role": "user", "content": "echo these words back"}], "stream": true})
}

/// The endpoint check's error with `tls`, and the chat requests the server saw (0 expected).
async fn refused(sim: &SimHandle, url: &str, tls: TlsOptions) -> String {
    let c = client_with(url, tls, 1);
    let err = preflight(&c, Duration::from_secs(5)).await.unwrap_err();
    assert_eq!(
        sim.chat_requests_received(),
        0,
        "no request reached the server"
    );
    err.to_string()
}

#[tokio::test]
async fn https_with_the_servers_ca_streams_and_resumes() {
    let c = certs();
    let sim = tls_sim(c.pki.sim_tls(&c.server, false)).await;
    assert!(sim.url().starts_with("https://"));
    let client = client_with(&sim.url(), trusting(c.pki.ca_file()), 2);
    assert_eq!(
        preflight(&client, Duration::from_secs(5)).await.unwrap(),
        ["agentload-sim"]
    );
    let setup = client.warm_up(2).await.unwrap();
    // The endpoint check's connection was open already: the warm-up opened one more, and
    // resumed the first one's session; both are summarised.
    assert_eq!((setup.connections, setup.opened), (2, 1));
    let tls = setup.tls.expect("TLS sessions are summarised");
    assert_eq!(tls.versions.get("TLSv1.3"), Some(&2));
    assert_eq!(tls.alpn.get("http/1.1"), Some(&2));
    assert_eq!(tls.resumed, 1, "{tls:?}");
    assert!(tls.handshake_us.max > 0.0);
    // Session tickets arrive while the connections are idle: they are no reason to drop one.
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..3 {
        let ex = client.send(&body(), "s").await;
        assert_eq!(ex.result.unwrap().content, "echo these words back");
        let t = &ex.timeline;
        assert!(!t.new_connection, "an idle connection was reused");
        let first = t.first_token.unwrap();
        assert!(t.issued <= first && first <= t.complete);
        assert!(t.first_token_read.is_none_or(|read| read >= first));
    }
    assert_eq!(client.connections_opened(), 2);
    assert_eq!(sim.connections_accepted(), 2);
    assert_eq!(sim.tls_failures(), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn untrusted_misnamed_and_expired_certificates_are_refused_before_any_request() {
    let c = certs();
    let sim = tls_sim(c.pki.sim_tls(&c.server, false)).await;
    let url = sim.url();
    let err = refused(&sim, &url, TlsOptions::default()).await;
    assert!(
        err.contains("not trusted") && err.contains("ca_file"),
        "{err}"
    );
    let misnamed = TlsOptions {
        server_name: Some("api.example.com".into()),
        ..trusting(c.pki.ca_file())
    };
    let err = refused(&sim, &url, misnamed).await;
    assert!(
        err.contains("does not name `api.example.com`") && err.contains("server_name"),
        "{err}"
    );
    // Another CA's certificate in the CA file.
    let other = tempfile::tempdir().unwrap();
    let err = refused(
        &sim,
        &url,
        trusting(Pki::new(other.path()).unwrap().ca_file()),
    )
    .await;
    assert!(err.contains("not trusted"), "{err}");
    // The server counts each failed handshake once it has read the client's alert.
    for _ in 0..100 {
        if sim.tls_failures() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sim.tls_failures(), 3);
    sim.shutdown().await;

    let expired = c
        .pki
        .leaf("expired", &["127.0.0.1"], Usage::Server, true)
        .unwrap();
    let sim = tls_sim(c.pki.sim_tls(&expired, false)).await;
    let err = refused(&sim, &sim.url(), trusting(c.pki.ca_file())).await;
    assert!(err.contains("has expired"), "{err}");
    sim.shutdown().await;
}

#[tokio::test]
async fn insecure_takes_any_certificate() {
    let c = certs();
    let sim = tls_sim(c.pki.sim_tls(&c.server, false)).await;
    let insecure = TlsOptions {
        insecure: true,
        ..Default::default()
    };
    let client = client_with(&sim.url(), insecure, 1);
    let ex = client.send(&body(), "s").await;
    assert_eq!(ex.result.unwrap().content, "echo these words back");
    let opened = ex.timeline.opened.expect("the turn opened its connection");
    assert!(opened.tls.is_some());
    sim.shutdown().await;
}

#[tokio::test]
async fn mtls_is_accepted_with_the_client_certificate_and_refused_without() {
    let c = certs();
    let sim = tls_sim(c.pki.sim_tls(&c.server, true)).await;
    let err = refused(&sim, &sim.url(), trusting(c.pki.ca_file())).await;
    assert!(err.contains("wants a client certificate"), "{err}");
    let client_leaf = c.pki.client().unwrap();
    let with_cert = TlsOptions {
        client_cert: Some(client_leaf.cert.clone()),
        client_key: Some(client_leaf.key.clone()),
        ..trusting(c.pki.ca_file())
    };
    let client = client_with(&sim.url(), with_cert, 1);
    preflight(&client, Duration::from_secs(5)).await.unwrap();
    let ex = client.send(&body(), "s").await;
    assert_eq!(ex.result.unwrap().content, "echo these words back");
    assert_eq!(sim.chat_requests_received(), 1);
    // A certificate from another CA is refused, naming it.
    let other = tempfile::tempdir().unwrap();
    let stranger = Pki::new(other.path()).unwrap().client().unwrap();
    let wrong = TlsOptions {
        client_cert: Some(stranger.cert),
        client_key: Some(stranger.key),
        ..trusting(c.pki.ca_file())
    };
    let err = preflight(&client_with(&sim.url(), wrong, 1), Duration::from_secs(5))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refused agentload's client certificate"),
        "{err}"
    );
    assert_eq!(sim.chat_requests_received(), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn the_wrong_scheme_for_the_port_is_named() {
    let c = certs();
    let plain = agentload_sim::start(
        SimConfig::default(),
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let https = plain.url().replace("http://", "https://");
    let err = refused(&plain, &https, trusting(c.pki.ca_file())).await;
    assert!(
        err.contains("plain HTTP") && err.contains("http:// URL"),
        "{err}"
    );
    let tls = tls_sim(c.pki.sim_tls(&c.server, false)).await;
    let http = tls.url().replace("https://", "http://");
    let err = refused(&tls, &http, TlsOptions::default()).await;
    assert!(err.contains("this port speaks TLS"), "{err}");
}

#[test]
fn unusable_tls_files_name_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate").unwrap();
    let missing = dir.path().join("missing.pem");
    for (options, why) in [
        (
            trusting(missing.clone()),
            "endpoint.tls.ca_file: cannot read",
        ),
        (trusting(empty.clone()), "endpoint.tls.ca_file"),
        (
            TlsOptions {
                client_cert: Some(empty.clone()),
                ..Default::default()
            },
            "client_cert and client_key go together",
        ),
        (
            TlsOptions {
                server_name: Some("bad name!".into()),
                ..Default::default()
            },
            "endpoint.tls.server_name",
        ),
    ] {
        let err = Tls::new(&options).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
    let pki = Pki::new(dir.path()).unwrap();
    let a = pki.client().unwrap();
    let b = pki.leaf("other", &["x"], Usage::Client, false).unwrap();
    let mismatched = TlsOptions {
        client_cert: Some(a.cert),
        client_key: Some(b.key),
        ..Default::default()
    };
    let err = Tls::new(&mismatched).unwrap_err().to_string();
    assert!(err.contains("do not match"), "{err}");
}

/// A TLS server driven by hand on a thread: it answers each request with `answer`'s records,
/// each record's bytes written in the pieces `cut` gives (with `pause` between), and after
/// each answer does `idle` to the session.
struct HandServer {
    url: String,
    /// When the write of each answer's last piece began.
    written: Arc<std::sync::Mutex<Vec<Instant>>>,
    /// Connections accepted.
    accepted: Arc<std::sync::atomic::AtomicU64>,
}

/// What the hand server does beside answering.
#[derive(Clone, Copy, PartialEq)]
enum Idle {
    Nothing,
    /// The session tickets held back 20 ms past the handshake's end (the client idle).
    Ticket,
    /// A key update once the answer ended.
    KeyUpdate,
    /// `close_notify` once the answer ended (the TCP connection stays open).
    CloseNotify,
    /// A fatal alert right after the token (the rest never comes).
    AlertMidStream,
    /// The connection closed three bytes short of the last record's end.
    CutMidRecord,
}

#[allow(deprecated)] // ring, as the client's (tls.rs says why)
fn hand_server(c: &Certs, pause: Duration, idle: Idle) -> HandServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(&c.server.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&c.server.key).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let written = Arc::new(std::sync::Mutex::new(Vec::new()));
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (w, a) = (written.clone(), accepted.clone());
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(mut tcp) = tcp else { return };
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tcp.set_nodelay(true).unwrap();
            let mut conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let w = w.clone();
            std::thread::spawn(move || {
                while conn.is_handshaking() {
                    while conn.wants_write() {
                        conn.write_tls(&mut tcp).unwrap();
                    }
                    match conn.read_tls(&mut tcp) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if conn.process_new_packets().is_err() {
                        let _ = conn.write_tls(&mut tcp);
                        return;
                    }
                }
                // What the handshake's end queued: TLS 1.3 session tickets.
                let mut tickets = Vec::new();
                while conn.wants_write() {
                    conn.write_tls(&mut tickets).unwrap();
                }
                if idle == Idle::Ticket {
                    assert!(!tickets.is_empty(), "no session ticket to hold back");
                    std::thread::sleep(Duration::from_millis(20));
                }
                tcp.write_all(&tickets).unwrap();
                let mut request = Vec::new();
                loop {
                    // What the handshake's last read decrypted is taken first.
                    let _ = conn.reader().read_to_end(&mut request);
                    // One request: a head, then Content-Length bytes.
                    let complete =
                        request
                            .windows(4)
                            .position(|w| w == b"\r\n\r\n")
                            .and_then(|end| {
                                let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                                let len: usize = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length:"))
                                    .map_or(0, |v| v.trim().parse().unwrap());
                                (request.len() >= end + 4 + len).then_some(end + 4 + len)
                            });
                    if let Some(n) = complete {
                        request.drain(..n);
                        // No end record when an alert follows the token: its sequence
                        // number is the alert's.
                        let [first, token, end] =
                            answer_records(&mut conn, idle != Idle::AlertMidStream);
                        match idle {
                            Idle::AlertMidStream => {
                                tcp.write_all(&[first, token].concat()).unwrap();
                                // A record that does not decrypt: rustls answers with a
                                // fatal alert, which goes to the client.
                                let bogus = [&[23u8, 3, 3, 0, 32][..], &[7; 32]].concat();
                                let _ = conn.read_tls(&mut &bogus[..]);
                                assert!(conn.process_new_packets().is_err());
                                while conn.wants_write() {
                                    conn.write_tls(&mut tcp).unwrap();
                                }
                                return;
                            }
                            Idle::CutMidRecord => {
                                let all = [first, token, end].concat();
                                tcp.write_all(&all[..all.len() - 3]).unwrap();
                                return;
                            }
                            _ => {}
                        }
                        // The token's record cut in two: its first 10 bytes, then the rest.
                        tcp.write_all(&[first, token[..10].to_vec()].concat())
                            .unwrap();
                        std::thread::sleep(pause);
                        w.lock().unwrap().push(Instant::now());
                        tcp.write_all(&[token[10..].to_vec(), end].concat())
                            .unwrap();
                        std::thread::sleep(Duration::from_millis(20));
                        match idle {
                            Idle::KeyUpdate => conn.refresh_traffic_keys().unwrap(),
                            Idle::CloseNotify => conn.send_close_notify(),
                            _ => {}
                        }
                        while conn.wants_write() {
                            conn.write_tls(&mut tcp).unwrap();
                        }
                        continue;
                    }
                    match conn.read_tls(&mut tcp) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if conn.process_new_packets().is_err() {
                        return;
                    }
                }
            });
        }
    });
    HandServer {
        url,
        written,
        accepted,
    }
}

/// A streamed answer as TLS records: the head and role chunk, the token's, the end's (when
/// `end`; else nothing for it).
fn answer_records(conn: &mut rustls::ServerConnection, end: bool) -> [Vec<u8>; 3] {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ";
    let events = [
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    ];
    let total: usize = events.iter().map(|e| e.len()).sum();
    let mut records = |plain: &str| {
        conn.writer().write_all(plain.as_bytes()).unwrap();
        let mut out = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut out).unwrap();
        }
        out
    };
    let first = records(&format!("{head}{total}\r\n\r\n{}", events[0]));
    let token = records(events[1]);
    let end = if end { records(events[2]) } else { Vec::new() };
    [first, token, end]
}

/// A token's record cut across two TCP writes 30 ms apart is stamped with the second: the
/// plaintext belongs to the read that completed its record.
#[tokio::test]
async fn a_token_record_split_across_two_writes_gets_the_second_writes_stamp() {
    let c = certs();
    let server = hand_server(&c, Duration::from_millis(30), Idle::Nothing);
    let client = client_with(&server.url, trusting(c.pki.ca_file()), 1);
    client.warm_up(1).await.unwrap();
    for _ in 0..3 {
        let ex = client.send(&body(), "s").await;
        assert_eq!(ex.result.unwrap().content, "Hi");
        let second = *server.written.lock().unwrap().last().unwrap();
        let first_token = ex.timeline.first_token.unwrap();
        // The kernel's stamp, converted from the wall clock, may err by some µs.
        let slack = Duration::from_millis(1);
        assert!(
            first_token + slack >= second,
            "stamped {:?} before the second write",
            second.duration_since(first_token)
        );
        assert!(first_token >= ex.timeline.issued + Duration::from_millis(25));
    }
}

/// Session tickets, a key update or `close_notify` while the connection is idle: the first
/// two are handed to the session and the connection reused (not taken for a dead one), the
/// last ends it before any request is written.
#[tokio::test]
async fn post_handshake_records_on_an_idle_connection() {
    let c = certs();
    for (idle, reused) in [
        (Idle::Ticket, true),
        (Idle::KeyUpdate, true),
        (Idle::CloseNotify, false),
    ] {
        let server = hand_server(&c, Duration::ZERO, idle);
        let client = client_with(&server.url, trusting(c.pki.ca_file()), 1);
        // Opened ahead and left idle while the post-handshake records (tickets) arrive.
        client.warm_up(1).await.unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
        for i in 0..3 {
            let ex = client.send(&body(), "s").await;
            assert_eq!(ex.result.unwrap().content, "Hi", "request {i}");
            assert_eq!(ex.timeline.new_connection, i > 0 && !reused, "request {i}");
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
        let want = if reused { 1 } else { 3 };
        assert_eq!(
            server.accepted.load(std::sync::atomic::Ordering::SeqCst),
            want
        );
    }
}

/// A fatal alert, or a connection cut inside a record, after the first token: the turn fails
/// saying so, and what came before is kept (the first token's stamp, the bytes received).
#[tokio::test]
async fn an_alert_or_a_cut_record_mid_stream_fails_the_turn_naming_it() {
    let c = certs();
    for (mode, why) in [
        (Idle::AlertMidStream, "the server sent the TLS alert"),
        (Idle::CutMidRecord, "inside a TLS record"),
    ] {
        let server = hand_server(&c, Duration::ZERO, mode);
        let client = client_with(&server.url, trusting(c.pki.ca_file()), 1);
        let ex = client.send(&body(), "s").await;
        let err = ex.result.unwrap_err().to_string();
        assert!(
            err.contains("connection broke mid-stream") && err.contains(why),
            "{err}"
        );
        assert!(
            ex.timeline.first_token.is_some(),
            "the token was kept: {err}"
        );
        assert!(ex.timeline.bytes_received > 0);
    }
}

/// A `CONNECT` proxy on loopback: it counts the tunnels it opened, and answers 407 to a
/// request for `refused:PORT`.
async fn connect_proxy() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap()
                    .to_owned();
                log.lock().unwrap().push(line.clone());
                let target = line.split(' ').nth(1).unwrap().to_owned();
                if target.starts_with("refused:") {
                    let _ = tcp
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                        .await;
                    return;
                }
                let mut upstream = tokio::net::TcpStream::connect(&target).await.unwrap();
                tcp.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut upstream).await;
            });
        }
    });
    (url, seen)
}

/// Through a configured proxy the client opens a `CONNECT` tunnel and runs TLS inside it;
/// the description says that the stamps include the proxy's hop.
#[tokio::test]
async fn a_configured_proxy_carries_tls_through_a_connect_tunnel() {
    let c = certs();
    let sim = tls_sim(c.pki.sim_tls(&c.server, false)).await;
    let (proxy, seen) = connect_proxy().await;
    let transport = Transport::new(
        &trusting(c.pki.ca_file()),
        &ProxyOptions::Url(proxy.clone()),
    )
    .unwrap();
    let described = transport.describe(&sim.url());
    assert_eq!(described.proxy.as_deref(), Some(proxy.as_str()));
    assert!(described.note.unwrap().contains("proxy's hop"));
    let client = ChatClient::new(&ClientOptions {
        endpoint: sim.url(),
        turn_timeout: Duration::from_secs(10),
        transport,
        ..Default::default()
    })
    .unwrap();
    preflight(&client, Duration::from_secs(5)).await.unwrap();
    let ex = client.send(&body(), "s").await;
    assert_eq!(ex.result.unwrap().content, "echo these words back");
    let addr = sim.url().replace("https://", "");
    assert_eq!(*seen.lock().unwrap(), [format!("CONNECT {addr} HTTP/1.1")]);
    // A proxy that refuses names its status.
    let refusing =
        Transport::new(&TlsOptions::default(), &ProxyOptions::Url(proxy.clone())).unwrap();
    let client = ChatClient::new(&ClientOptions {
        endpoint: "https://refused:9".into(),
        transport: refusing,
        ..Default::default()
    })
    .unwrap();
    let err = preflight(&client, Duration::from_secs(5))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("407") && err.contains("wants credentials"),
        "{err}"
    );
}
