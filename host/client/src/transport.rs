//! How agentload's HTTP clients reach a server: the TLS settings and the proxy choice, built
//! once and shared by the turn client, the endpoint check, the telemetry scraper, the
//! SWE-bench service client and the shard coordinator's clients (reqwest's through
//! [`Transport::reqwest`]).

use super::proxy::{Proxy, ProxyError, ProxyOptions};
use super::tls::{Tls, TlsDescription, TlsOptions, TlsSetupError};
use serde::Serialize;

/// TLS and the proxy. Cloning shares the TLS config (and its session cache).
#[derive(Debug, Clone)]
pub struct Transport {
    pub tls: Tls,
    pub proxy: Proxy,
}

/// Why the transport settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error(transparent)]
    Proxy(#[from] ProxyError),
}

/// How a run reached its endpoint, as the results record it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransportDescription {
    /// `https` or `http`.
    pub scheme: &'static str,
    /// The TLS settings (https only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsDescription>,
    /// The proxy tunnelled through, if any: the stamps then include the proxy's hop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// What the stamps cover, when a proxy stands between.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

impl Default for Transport {
    /// Mozilla's roots, verification on, no proxy.
    fn default() -> Self {
        Self {
            tls: Tls::new(&TlsOptions::default()).expect("the built-in roots load"),
            proxy: Proxy::default(),
        }
    }
}

impl Transport {
    /// Builds the TLS config and resolves the proxy.
    ///
    /// # Errors
    /// What [`Tls::new`] and [`Proxy::new`] refuse.
    pub fn new(tls: &TlsOptions, proxy: &ProxyOptions) -> Result<Self, TransportError> {
        Ok(Self {
            tls: Tls::new(tls)?,
            proxy: Proxy::new(proxy)?,
        })
    }

    /// What a run against `url` records of its transport.
    pub fn describe(&self, url: &str) -> TransportDescription {
        let https = url.trim_start().starts_with("https://");
        let host = http::Uri::try_from(url.trim())
            .ok()
            .and_then(|u| u.host().map(str::to_owned))
            .unwrap_or_default();
        let proxy = self.proxy.route(https, &host).map(|r| r.shown.clone());
        TransportDescription {
            scheme: if https { "https" } else { "http" },
            tls: https.then(|| self.tls.describe().clone()),
            note: proxy.as_ref().map(|_| {
                "the timestamps include the proxy's hop: agentload stamps the bytes the proxy \
                 relays, not the server's"
            }),
            proxy,
        }
    }

    /// The description, when there is anything to record: a plain `http` endpoint reached
    /// directly has nothing (`None`).
    pub fn recorded(&self, url: &str) -> Option<TransportDescription> {
        let d = self.describe(url);
        (d.tls.is_some() || d.proxy.is_some()).then_some(d)
    }

    /// A reqwest client builder on this transport: the shared rustls config, and the proxy
    /// choice (none unless one is configured: reqwest's own reading of the environment is off).
    #[cfg(feature = "reqwest")]
    pub fn reqwest(&self) -> reqwest::ClientBuilder {
        let builder = reqwest::Client::builder().use_preconfigured_tls(self.tls.rustls_config());
        let proxy = self.proxy.clone();
        if proxy.is_off() {
            return builder.no_proxy();
        }
        builder.proxy(reqwest::Proxy::custom(move |url| {
            let host = url.host_str()?;
            proxy
                .route(url.scheme() == "https", host)
                .map(|r| r.url().to_owned())
        }))
    }
}
