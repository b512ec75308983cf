//! The service's HTTP calls: JSON in and out, artifacts streamed to disk,
//! the Bearer token on every call, and no redirect followed (a 3xx is an
//! error naming where it pointed). Every body is read up to a cap: a JSON
//! answer to [`MAX_JSON_BYTES`], an error's text to [`MAX_ERROR_BYTES`], an
//! artifact to the cap its caller gives.

use crate::error::{chain, shortened};
use crate::Error;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, RequestBuilder, Response, Url};
use serde_json::{Map, Value};
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;

/// The reference's timeouts: `/health` and cancel 10 s, run calls 30 s, and
/// 60 s for each read of an artifact.
pub(crate) const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const ARTIFACT_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// A JSON answer (a run's status, with its result), at most.
pub const MAX_JSON_BYTES: u64 = 32 << 20;
/// An error answer's text kept for its message, at most.
const MAX_ERROR_BYTES: u64 = 64 << 10;

/// A client for one service.
pub(crate) struct Http {
    client: reqwest::Client,
    token: Option<String>,
}

impl Http {
    pub(crate) fn new(
        token: Option<String>,
        transport: &agentload_client::Transport,
    ) -> Result<Self, Error> {
        let client = transport
            .reqwest()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(HEALTH_TIMEOUT)
            .read_timeout(ARTIFACT_READ_TIMEOUT)
            .build()
            .map_err(|e| Error::Unreachable {
                url: "(client setup)".into(),
                cause: chain(&e),
            })?;
        Ok(Self {
            client,
            token: token.filter(|t| !t.is_empty()),
        })
    }

    fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let request = self.client.request(method, url);
        match &self.token {
            Some(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
            None => request,
        }
    }

    /// Sends `request`; anything but a 2xx is an error.
    async fn send(url: &Url, request: RequestBuilder) -> Result<Response, Error> {
        let response = request.send().await.map_err(|e| Error::Unreachable {
            url: url.to_string(),
            cause: chain(&e),
        })?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(LOCATION).map_or_else(
                || "(no Location)".to_owned(),
                |l| String::from_utf8_lossy(l.as_bytes()).into_owned(),
            );
            return Err(Error::Redirect {
                url: url.to_string(),
                status: status.as_u16(),
                location: shortened(&location, 200),
            });
        }
        if !status.is_success() {
            let (detail, _) = read_capped(response, url, MAX_ERROR_BYTES)
                .await
                .unwrap_or_default();
            return Err(Error::Status {
                url: url.to_string(),
                status: status.as_u16(),
                detail: shortened(&String::from_utf8_lossy(&detail), 500),
            });
        }
        Ok(response)
    }

    /// A JSON call: `body` (already encoded) is posted when given, the
    /// answer must be a JSON object.
    pub(crate) async fn json(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Map<String, Value>, Error> {
        let mut request = self
            .request(method, url.clone())
            .header(ACCEPT, "application/json")
            .timeout(timeout);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let response = Self::send(&url, request).await?;
        let (bytes, whole) = read_capped(response, &url, MAX_JSON_BYTES).await?;
        if !whole {
            return Err(Error::TooLarge {
                url: url.to_string(),
                what: "a JSON answer",
                cap: MAX_JSON_BYTES,
            });
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(Error::Json {
                url: url.to_string(),
                why: format!(
                    "expected an object, got {}",
                    shortened(&other.to_string(), 80)
                ),
            }),
            Err(e) => Err(Error::Json {
                url: url.to_string(),
                why: e.to_string(),
            }),
        }
    }

    /// Streams `url` into `target` through `<target>.tmp`, synced to disk
    /// and renamed over it only when complete, stopped the moment it passes
    /// `cap` bytes: a failed (or dropped) download leaves any earlier file as
    /// it was, and no `.tmp`. Returns the bytes written.
    pub(crate) async fn download(&self, url: Url, target: &Path, cap: u64) -> Result<u64, Error> {
        let request = self
            .request(Method::GET, url.clone())
            .header(ACCEPT, "application/octet-stream");
        let mut tmp_name = target.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = Partial(std::path::PathBuf::from(tmp_name));
        let mut response = Self::send(&url, request).await?;
        let too_large = || Error::TooLarge {
            url: url.to_string(),
            what: "an artifact",
            cap,
        };
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let write = |source| Error::Write {
            path: tmp.0.clone(),
            source,
        };
        let mut file = tokio::fs::File::create(&tmp.0).await.map_err(write)?;
        let mut written = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| Error::Unreachable {
            url: url.to_string(),
            cause: chain(&e),
        })? {
            written += chunk.len() as u64;
            if written > cap {
                return Err(too_large());
            }
            file.write_all(&chunk).await.map_err(write)?;
        }
        file.sync_all().await.map_err(write)?;
        drop(file);
        crate::files::publish(&tmp.0, target)?;
        Ok(written)
    }
}

/// A download's temporary file, removed when the download does not get to
/// rename it (an error, or the download dropped at a deadline).
struct Partial(std::path::PathBuf);

impl Drop for Partial {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `response`'s body, up to `cap` bytes, and whether it ended within them.
async fn read_capped(
    mut response: Response,
    url: &Url,
    cap: u64,
) -> Result<(Vec<u8>, bool), Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| Error::Unreachable {
        url: url.to_string(),
        cause: chain(&e),
    })? {
        let room = (cap as usize).saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}
