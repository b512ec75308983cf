//! A real headless Chromium (Debian's `chromium-headless-shell`) driven
//! over the DevTools protocol on a pipe (`--remote-debugging-pipe`: fd 3
//! in, fd 4 out, NUL-terminated JSON): load a page, collect console errors,
//! exceptions, log errors and every network request, measure the charts,
//! and take screenshots and a PDF.

use base64::Engine as _;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The browser binary (`AGENTLOAD_CHROMIUM` overrides), or none with a
/// note; with `AGENTLOAD_REQUIRE_DATA=1` (scripts/test.sh, CI) absence
/// fails instead.
pub fn chromium() -> Option<PathBuf> {
    let name =
        std::env::var_os("AGENTLOAD_CHROMIUM").unwrap_or_else(|| "chromium-headless-shell".into());
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(&name))
            .chain(std::iter::once(PathBuf::from(&name)))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let why = format!(
            "{} not found (scripts/install-deps.sh installs chromium-headless-shell)",
            name.to_string_lossy()
        );
        bfcl_test_data::skip_without(&why);
    }
    found
}

/// One figure as the browser laid it out.
#[derive(Debug, Clone)]
pub struct Chart {
    pub id: String,
    /// `data-marks`: the data marks the report says it drew.
    pub marks: u64,
    /// The SVG's rendered size (CSS px).
    pub width: f64,
    pub height: f64,
    /// Shapes inside the SVG.
    pub shapes: u64,
    /// Text elements that overflow the SVG's box.
    pub clipped_texts: Vec<String>,
}

/// What loading a page showed.
#[derive(Debug)]
pub struct Loaded {
    /// Console errors and warnings, exceptions, log entries of level error.
    pub errors: Vec<String>,
    /// Every URL the page requested.
    pub requests: Vec<String>,
    pub charts: Vec<Chart>,
    /// Section ids in order.
    pub sections: Vec<String>,
    /// The page's text.
    pub text: String,
}

struct Cdp {
    child: std::process::Child,
    to: std::io::PipeWriter,
    from: Receiver<Value>,
    next: u64,
    session: Option<String>,
    events: Vec<Value>,
}

impl Cdp {
    fn start(binary: &Path, profile: &Path) -> Self {
        let (chrome_in, to) = std::io::pipe().expect("pipe");
        let (from_reader, chrome_out) = std::io::pipe().expect("pipe");
        let (rin, wout) = (chrome_in.as_raw_fd(), chrome_out.as_raw_fd());
        let mut cmd = std::process::Command::new(binary);
        cmd.args([
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        // Its own process group: the drop ends its helper processes too.
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        // SAFETY: only async-signal-safe fcntl/dup2 calls between fork and
        // exec. Both ends are first copied above 10, so neither can be fd 3
        // or 4 already (dup2 onto itself would keep close-on-exec) or be
        // overwritten by the other's dup2.
        unsafe {
            cmd.pre_exec(move || {
                let high_in = libc::fcntl(rin, libc::F_DUPFD, 10);
                let high_out = libc::fcntl(wout, libc::F_DUPFD, 10);
                if high_in < 0
                    || high_out < 0
                    || libc::dup2(high_in, 3) < 0
                    || libc::dup2(high_out, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("chromium starts");
        drop((chrome_in, chrome_out));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from_reader);
            loop {
                let mut buf = Vec::new();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        buf.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                            if tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Self {
            child,
            to,
            from: rx,
            next: 0,
            session: None,
            events: Vec::new(),
        }
    }

    /// Sends a command (to the page session once attached) and waits for
    /// its result; events meanwhile are kept.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["id"] == id => {
                    assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                    return v["result"].clone();
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{method}: no answer from chromium in 90 s")
                }
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: chromium exited"),
            }
        }
    }

    /// Waits for an event by name.
    fn wait_event(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("waiting for {method}: {e}"));
            let hit = v["method"] == method;
            self.events.push(v);
            if hit {
                return;
            }
        }
    }

    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }
}

impl Drop for Cdp {
    /// Closes the browser, then kills whatever of its process group is
    /// left: a helper still writing the profile after the test removed it
    /// would leave it behind in the temporary directory.
    fn drop(&mut self) {
        let close = json!({"id": u64::MAX, "method": "Browser.close"});
        let mut bytes = serde_json::to_vec(&close).unwrap();
        bytes.push(0);
        if self.to.write_all(&bytes).is_ok() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // SAFETY: a plain kill(2) of the group `process_group(0)` made.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

const MEASURE: &str = r#"(() => {
  const charts = [...document.querySelectorAll('figure.chart')].map(f => {
    const svg = f.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0, left: 0, right: 0, top: 0, bottom: 0};
    const clipped = svg ? [...svg.querySelectorAll('text')].filter(t => {
      const b = t.getBoundingClientRect();
      return t.textContent.trim() && (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1);
    }).map(t => t.textContent.trim()) : [];
    return {id: f.id, marks: Number(f.dataset.marks || 0), width: box.width, height: box.height,
            shapes: svg ? svg.querySelectorAll('circle,rect,polyline,path,line,polygon').length : 0,
            clipped};
  });
  return {charts, sections: [...document.querySelectorAll('main > section')].map(s => s.id),
          text: document.body.innerText, height: document.documentElement.scrollHeight};
})()"#;

/// Loads `html` at 1400 px wide; writes `NAME.png` (the whole page),
/// `NAME-SECTION.png` per section and `NAME.pdf` (printed) into `shots`.
pub fn load(binary: &Path, html: &Path, shots: &Path, name: &str) -> Loaded {
    std::fs::create_dir_all(shots).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let mut cdp = Cdp::start(binary, profile.path());
    let target = cdp.call("Target.createTarget", json!({"url": "about:blank"}));
    let attached = cdp.call(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    cdp.session = attached["sessionId"].as_str().map(str::to_owned);
    for domain in [
        "Page.enable",
        "Runtime.enable",
        "Log.enable",
        "Network.enable",
    ] {
        cdp.call(domain, json!({}));
    }
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
    );
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    cdp.call("Page.navigate", json!({"url": url}));
    cdp.wait_event("Page.loadEventFired");
    let m = cdp.eval(MEASURE);
    let height = m["height"].as_f64().unwrap_or(1000.0).ceil();
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": false}),
    );
    let save = |cdp: &mut Cdp, file: &str, params: Value| {
        let shot = cdp.call("Page.captureScreenshot", params);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .unwrap();
        std::fs::write(shots.join(file), bytes).unwrap();
    };
    save(
        &mut cdp,
        &format!("{name}.png"),
        json!({"format": "png", "captureBeyondViewport": true}),
    );
    let boxes = cdp.eval(
        "[...document.querySelectorAll('main > section')].map(s => { const b = s.getBoundingClientRect(); return {id: s.id, x: b.left + scrollX, y: b.top + scrollY, w: b.width, h: b.height}; })",
    );
    for b in boxes.as_array().unwrap() {
        // Long sections in pieces a screen can show.
        let (y0, h) = (b["y"].as_f64().unwrap(), b["h"].as_f64().unwrap());
        let mut part = 0;
        let mut y = y0;
        while y < y0 + h {
            let ph = (y0 + h - y).min(1800.0);
            save(
                &mut cdp,
                &format!("{name}-{}-{part}.png", b["id"].as_str().unwrap()),
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": 0, "y": y, "width": 1400, "height": ph, "scale": 1}}),
            );
            y += ph;
            part += 1;
        }
    }
    let pdf = cdp.call(
        "Page.printToPDF",
        json!({"landscape": true, "printBackground": true}),
    );
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(pdf["data"].as_str().expect("pdf data"))
        .unwrap();
    std::fs::write(shots.join(format!("{name}.pdf")), bytes).unwrap();

    let mut errors = Vec::new();
    let mut requests = Vec::new();
    for e in &cdp.events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or_default() {
            "Runtime.consoleAPICalled"
                if matches!(p["type"].as_str(), Some("error" | "warning" | "assert")) =>
            {
                errors.push(format!("console.{}: {}", p["type"], p["args"]));
            }
            "Runtime.exceptionThrown" => {
                errors.push(format!("exception: {}", p["exceptionDetails"]))
            }
            "Log.entryAdded"
                if matches!(p["entry"]["level"].as_str(), Some("error" | "warning")) =>
            {
                errors.push(format!("log: {}", p["entry"]));
            }
            "Network.requestWillBeSent" => {
                requests.push(p["request"]["url"].as_str().unwrap_or_default().to_owned());
            }
            _ => {}
        }
    }
    let charts = m["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Chart {
            id: c["id"].as_str().unwrap_or_default().to_owned(),
            marks: c["marks"].as_u64().unwrap_or(0),
            width: c["width"].as_f64().unwrap_or(0.0),
            height: c["height"].as_f64().unwrap_or(0.0),
            shapes: c["shapes"].as_u64().unwrap_or(0),
            clipped_texts: c["clipped"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        })
        .collect();
    Loaded {
        errors,
        requests,
        charts,
        sections: m["sections"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        text: m["text"].as_str().unwrap_or_default().to_owned(),
    }
}

impl Loaded {
    /// No console error, only the page itself loaded, every chart drawn
    /// and non-empty, no label outside its chart; `expected` charts there.
    pub fn assert_clean(&self, expected: &[&str]) {
        assert!(self.errors.is_empty(), "browser errors: {:#?}", self.errors);
        assert!(
            self.requests.iter().all(|u| u.starts_with("file://")) && self.requests.len() == 1,
            "the page fetched something: {:?}",
            self.requests
        );
        assert!(!self.charts.is_empty(), "no chart");
        for c in &self.charts {
            assert!(c.marks > 0, "{}: no data mark", c.id);
            assert!(
                c.width > 300.0 && c.height > 120.0,
                "{}: {}x{} px",
                c.id,
                c.width,
                c.height
            );
            assert!(
                c.shapes >= c.marks,
                "{}: {} shapes for {} marks",
                c.id,
                c.shapes,
                c.marks
            );
            assert!(
                c.clipped_texts.is_empty(),
                "{}: labels outside the chart: {:?}",
                c.id,
                c.clipped_texts
            );
        }
        let ids: Vec<&str> = self.charts.iter().map(|c| c.id.as_str()).collect();
        for e in expected {
            assert!(ids.contains(e), "chart {e} missing; charts: {ids:?}");
        }
    }
}
