//! `agentload k8s fetch`: the merged run's files from a coordinator, as a
//! hostile server could serve them. The listing is read up to a cap; each
//! file streams to a staging folder beside `OUT`, hashed as it comes and
//! stopped the moment it passes its listed size; every read has a deadline
//! and every file one of its own; no redirect is followed. `OUT` gets the
//! files only once the whole listing is verified, and an `OUT` that holds
//! anything is refused unless `force` says to write over it.

use crate::coordinator::safe_path;
use crate::protocol::{ErrorBody, Stored};
use crate::worker::chain;
use crate::ShardError;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;
use tokio::time::Instant;

/// The listing's JSON, at most.
pub const MAX_LISTING_BYTES: usize = 1 << 20;
/// Files a listing names, at most.
pub const MAX_FILES: usize = 10_000;
/// An error answer's body kept for the message, at most.
const MAX_ERROR_BYTES: usize = 4 << 10;
/// The slowest a file may come on average (its own deadline is the read
/// timeout plus its listed size at this rate).
const MIN_BYTES_PER_S: u64 = 1 << 20;

/// How a fetch behaves.
#[derive(Debug, Clone, Copy)]
pub struct FetchOptions {
    /// No byte for this long (and no connection within it) fails the fetch;
    /// each file must also be whole within it plus its size at 1 MiB/s.
    pub timeout: Duration,
    /// Write into an `OUT` that already holds files (same names replaced).
    pub force: bool,
}

/// Fetches the merged run's files from the coordinator at `base` into
/// `out` (see the module's doc), over `transport`.
///
/// # Errors
/// The coordinator's refusals, a listing or file that breaks its bounds,
/// a deadline, and local I/O; then `out` is as it was.
pub async fn fetch_results(
    base: &str,
    out: &Path,
    options: FetchOptions,
    transport: &agentload_client::Transport,
) -> Result<Vec<Stored>, ShardError> {
    refuse_unless_empty(out, options.force)?;
    // The TLS settings for an `https://` coordinator (behind a TLS ingress), no proxy.
    let client = transport
        .reqwest()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(options.timeout)
        .read_timeout(options.timeout)
        .build()
        .map_err(|e| ShardError::Coordinator(chain(&e)))?;
    let base = base.trim_end_matches('/');
    let files = listing(&client, base, options.timeout).await?;
    let staging = Staging::create(out)?;
    for f in &files {
        let url = format!("{base}/v1/results/{}", f.path);
        let deadline = Instant::now()
            + options.timeout
            + Duration::from_secs_f64(f.bytes as f64 / MIN_BYTES_PER_S as f64);
        let started = Instant::now();
        tokio::time::timeout_at(deadline, download(&client, &url, f, &staging.dir))
            .await
            .map_err(|_| {
                ShardError::Coordinator(format!(
                    "{}: not whole after {:.1} s ({} bytes listed; a file must come within \
                     --timeout-s plus its size at 1 MiB/s)",
                    f.path,
                    started.elapsed().as_secs_f64(),
                    f.bytes
                ))
            })??;
    }
    staging.publish(out, &files)?;
    Ok(files)
}

/// Refuses an `out` that holds anything, unless `force`.
fn refuse_unless_empty(out: &Path, force: bool) -> Result<(), ShardError> {
    let io = |e: std::io::Error| ShardError::Io(format!("{}: {e}", out.display()));
    match std::fs::read_dir(out) {
        Ok(mut entries) => match entries.next().is_some() && !force {
            true => Err(ShardError::Io(format!(
                "{} already holds files: fetch into a new folder, or write over them with --force",
                out.display()
            ))),
            false => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// `GET /v1/results`: the file list, read up to [`MAX_LISTING_BYTES`],
/// every path safe and named once, at most [`MAX_FILES`] of them.
async fn listing(
    client: &reqwest::Client,
    base: &str,
    timeout: Duration,
) -> Result<Vec<Stored>, ShardError> {
    let url = format!("{base}/v1/results");
    let read = async {
        let response = answered(client, &url).await?;
        let (body, whole) = read_capped(response, &url, MAX_LISTING_BYTES).await?;
        if !whole {
            return Err(ShardError::Coordinator(format!(
                "{url}: the listing is over {MAX_LISTING_BYTES} bytes"
            )));
        }
        Ok(body)
    };
    let body = tokio::time::timeout(timeout * 2, read)
        .await
        .map_err(|_| {
            ShardError::Coordinator(format!(
                "{url}: the listing did not come within {:.0} s",
                (timeout * 2).as_secs_f64()
            ))
        })??;
    let files: Vec<Stored> = serde_json::from_slice(&body)
        .map_err(|e| ShardError::Coordinator(format!("{url}: unreadable listing: {e}")))?;
    if files.len() > MAX_FILES {
        return Err(ShardError::Refused(format!(
            "{url}: the listing names {} files, more than the {MAX_FILES} a run has",
            files.len()
        )));
    }
    let mut seen = BTreeSet::new();
    for f in &files {
        safe_path(&f.path)
            .ok_or_else(|| ShardError::Refused(format!("result path {:?} is refused", f.path)))?;
        if !seen.insert(f.path.as_str()) {
            return Err(ShardError::Refused(format!(
                "the listing names {} twice",
                f.path
            )));
        }
    }
    Ok(files)
}

/// Sends a GET; a redirect (not followed) or any other non-2xx answer is
/// an error naming it.
async fn answered(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, ShardError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| ShardError::Coordinator(format!("{url}: {}", chain(&e))))?;
    let status = response.status();
    if status.is_redirection() {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map_or_else(|| "(no Location)".to_owned(), |l| quote(l.as_bytes()));
        return Err(ShardError::Refused(format!(
            "{url} redirects (HTTP {}) to {location}: redirects are not followed",
            status.as_u16()
        )));
    }
    if !status.is_success() {
        let (body, _) = read_capped(response, url, MAX_ERROR_BYTES).await?;
        let why = serde_json::from_slice::<ErrorBody>(&body)
            .map(|e| e.error)
            .unwrap_or_else(|_| quote(&body));
        return Err(ShardError::Refused(why));
    }
    Ok(response)
}

/// The body, up to `cap` bytes, and whether it ended within them.
async fn read_capped(
    mut response: reqwest::Response,
    url: &str,
    cap: usize,
) -> Result<(Vec<u8>, bool), ShardError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ShardError::Coordinator(format!("{url}: {}", chain(&e))))?
    {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// Streams `f` from `url` into `dir/f.path`, hashed as it comes, refused
/// the moment it passes its listed size; its size and digest must be the
/// listed ones.
async fn download(
    client: &reqwest::Client,
    url: &str,
    f: &Stored,
    dir: &Path,
) -> Result<(), ShardError> {
    let mut response = answered(client, url).await?;
    let too_long = |got: u64| {
        ShardError::Coordinator(format!(
            "{}: the coordinator sends more than its listed {} bytes ({got} so far)",
            f.path, f.bytes
        ))
    };
    if let Some(length) = response.content_length().filter(|n| *n > f.bytes) {
        return Err(too_long(length));
    }
    let target = dir.join(&f.path);
    let io = |e: std::io::Error| ShardError::Io(format!("{}: {e}", target.display()));
    if let Some(parent) = target.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(io)?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .await
        .map_err(io)?;
    let (mut hash, mut got) = (Sha256::new(), 0u64);
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ShardError::Coordinator(format!("{}: {}", f.path, chain(&e))))?
    {
        got += chunk.len() as u64;
        if got > f.bytes {
            return Err(too_long(got));
        }
        hash.update(&chunk);
        file.write_all(&chunk).await.map_err(io)?;
    }
    file.sync_all().await.map_err(io)?;
    let sha = hex::encode(hash.finalize());
    if got != f.bytes || sha != f.sha256 {
        return Err(ShardError::Coordinator(format!(
            "{} arrived as {got} bytes (sha256 {sha}), listed as {} (sha256 {})",
            f.path, f.bytes, f.sha256
        )));
    }
    Ok(())
}

/// A fresh folder beside `OUT` the files stream into; removed with what it
/// holds unless published.
struct Staging {
    dir: PathBuf,
    published: bool,
}

impl Staging {
    fn create(out: &Path) -> Result<Self, ShardError> {
        let name = out
            .file_name()
            .ok_or_else(|| ShardError::Io(format!("{}: not a folder name", out.display())))?;
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut staging = std::ffi::OsString::from(".");
        staging.push(name);
        staging.push(format!(".fetch-{}", std::process::id()));
        let dir = parent.join(staging);
        std::fs::create_dir_all(parent)
            .and_then(|()| std::fs::create_dir(&dir))
            .map_err(|e| ShardError::Io(format!("{}: {e}", dir.display())))?;
        Ok(Self {
            dir,
            published: false,
        })
    }

    /// Moves the verified `files` into `out`: the folder itself when `out`
    /// does not exist, else file by file (never through a link inside it).
    fn publish(mut self, out: &Path, files: &[Stored]) -> Result<(), ShardError> {
        let io =
            |path: &Path, e: std::io::Error| ShardError::Io(format!("{}: {e}", path.display()));
        match std::fs::rename(&self.dir, out) {
            Ok(()) => {
                self.published = true;
                return Ok(());
            }
            Err(e) if out.exists() => drop(e),
            Err(e) => return Err(io(out, e)),
        }
        for f in files {
            let mut at = out.to_path_buf();
            let parts: Vec<&str> = f.path.split('/').collect();
            let (name, folders) = parts.split_last().expect("a safe path has a name");
            for folder in folders {
                at.push(folder);
                match std::fs::symlink_metadata(&at) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        return Err(ShardError::Io(format!(
                            "{} is not a folder (a link?): not written through",
                            at.display()
                        )))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::create_dir(&at).map_err(|e| io(&at, e))?;
                    }
                    Err(e) => return Err(io(&at, e)),
                }
            }
            at.push(name);
            std::fs::rename(self.dir.join(&f.path), &at).map_err(|e| io(&at, e))?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Server text for a message: its first 160 bytes in backticks, control
/// characters escaped (nothing a terminal would act on).
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(160)]);
    let mut out = String::from("`");
    for c in text.chars() {
        match c.is_control() {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    if bytes.len() > 160 {
        out.push('…');
    }
    out.push('`');
    out
}
