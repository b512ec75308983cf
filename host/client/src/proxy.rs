//! Proxies: off by default, as in the reference (a proxy's hop would sit inside every
//! timestamp). `endpoint.proxy = "env"` takes the usual variables (`HTTPS_PROXY`,
//! `HTTP_PROXY`, `ALL_PROXY`, lower case too, with `NO_PROXY`), a URL names one proxy. The
//! turn client reaches its server through an HTTP `CONNECT` tunnel (TLS, when the endpoint is
//! `https`, runs end to end inside it); reqwest's clients are given the same choice.

use super::wire::Stamped;
use std::io;
use std::net::IpAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Which proxy, if any (`endpoint.proxy`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ProxyOptions {
    /// Connect directly (the default).
    #[default]
    None,
    /// The environment's proxy variables.
    Env,
    /// This proxy (`http://host[:port]`).
    Url(String),
}

/// The environment variables that name proxies.
const PROXY_VARS: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// A proxy to tunnel through.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyRoute {
    pub(super) host: String,
    pub(super) port: u16,
    /// `Proxy-Authorization` (Basic), from the URL's user and password.
    authorization: Option<String>,
    /// The proxy's URL without credentials.
    pub shown: String,
    /// The URL as given (credentials included, for reqwest).
    url: String,
}

impl std::fmt::Debug for ProxyRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Why a proxy setting cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{what}: {why}")]
pub struct ProxyError {
    pub what: String,
    pub why: String,
}

/// The proxy choice, resolved against the environment once.
#[derive(Debug, Clone, Default)]
pub struct Proxy {
    options: ProxyOptions,
    /// `Env`: the variables' proxies and `NO_PROXY`.
    https: Option<ProxyRoute>,
    http: Option<ProxyRoute>,
    /// `Url`: the one proxy.
    fixed: Option<ProxyRoute>,
    bypass: Vec<String>,
}

impl Proxy {
    /// Resolves `options` (reading the environment for `Env`).
    ///
    /// # Errors
    /// A proxy URL that is not `http://host[:port]` (with, from the environment only, a user
    /// and password).
    pub fn new(options: &ProxyOptions) -> Result<Self, ProxyError> {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
        };
        let mut proxy = Self {
            options: options.clone(),
            ..Self::default()
        };
        match options {
            ProxyOptions::None => {}
            ProxyOptions::Url(url) => {
                proxy.fixed = Some(parse_route(url, "endpoint.proxy", false)?);
            }
            ProxyOptions::Env => {
                let https = var(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]);
                let http = var(&["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]);
                proxy.https = https
                    .map(|u| parse_route(&u, "HTTPS_PROXY", true))
                    .transpose()?;
                proxy.http = http
                    .map(|u| parse_route(&u, "HTTP_PROXY", true))
                    .transpose()?;
                proxy.bypass = var(&["NO_PROXY", "no_proxy"])
                    .unwrap_or_default()
                    .split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
        }
        Ok(proxy)
    }

    /// Whether no proxy is used.
    pub fn is_off(&self) -> bool {
        self.options == ProxyOptions::None
    }

    /// The proxy variables set in the environment while proxies are off: each is ignored,
    /// and a user is told so.
    pub fn ignored_env(&self) -> Vec<&'static str> {
        if self.options != ProxyOptions::None {
            return Vec::new();
        }
        PROXY_VARS
            .into_iter()
            .filter(|n| std::env::var(n).is_ok_and(|v| !v.trim().is_empty()))
            .collect()
    }

    /// The proxy for a request to `host` (`https`: an https URL), if any.
    pub fn route(&self, https: bool, host: &str) -> Option<&ProxyRoute> {
        if let Some(fixed) = &self.fixed {
            return Some(fixed);
        }
        let route = if https { &self.https } else { &self.http };
        route.as_ref().filter(|_| !self.bypassed(host))
    }

    /// Whether `NO_PROXY` covers `host`: `*`, the host itself, a domain it is in (with or
    /// without a leading dot), an IP address or an IP network in CIDR form.
    fn bypassed(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.bypass.iter().any(|entry| {
            if entry == "*" {
                return true;
            }
            if let (Some(ip), Some((net, bits))) = (ip, entry.split_once('/')) {
                return in_network(ip, net, bits);
            }
            let entry = entry.trim_start_matches("*.").trim_start_matches('.');
            let entry = entry
                .rsplit_once(':')
                .filter(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
                .map_or(entry, |(h, _)| h)
                .trim_start_matches('[')
                .trim_end_matches(']');
            host == entry || host.ends_with(&format!(".{entry}"))
        })
    }
}

/// Whether `ip` is inside `net`/`bits`.
fn in_network(ip: IpAddr, net: &str, bits: &str) -> bool {
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// A proxy URL: `http://[user:pass@]host[:port]` (port 1080 when absent, as curl has it);
/// credentials only where `credentials` allows (the environment, not a config file).
fn parse_route(url: &str, what: &str, credentials: bool) -> Result<ProxyRoute, ProxyError> {
    let bad = |why: &str| ProxyError {
        what: what.to_owned(),
        why: why.to_owned(),
    };
    let url = url.trim();
    // Without a scheme, as curl reads it: http.
    let rest = match url.split_once("://") {
        Some(("http", rest)) => rest,
        Some((scheme, _)) => {
            return Err(bad(&format!(
                "a `{scheme}://` proxy is not supported (an http:// proxy is, through CONNECT)"
            )))
        }
        None => url,
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if userinfo.is_some() && !credentials {
        return Err(bad(
            "credentials do not belong in the config (it is copied into the results); \
             use endpoint.proxy = \"env\" with HTTPS_PROXY",
        ));
    }
    let uri: http::uri::Authority = hostport
        .parse()
        .map_err(|_| bad(&format!("`{hostport}` is not host[:port]")))?;
    let host = uri.host().trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = uri.port_u16().unwrap_or(1080);
    let authorization = userinfo.map(|u| {
        use base64::Engine as _;
        let (user, pass) = u.split_once(':').unwrap_or((u, ""));
        let pair = format!("{}:{}", percent_decoded(user), percent_decoded(pass));
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    });
    Ok(ProxyRoute {
        host: host.to_owned(),
        port,
        authorization,
        shown: format!("http://{hostport}"),
        url: format!("http://{authority}"),
    })
}

/// `%XX` escapes decoded (a URL's user and password).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl ProxyRoute {
    /// The URL with its credentials, for reqwest.
    #[cfg(feature = "reqwest")]
    pub(super) fn url(&self) -> &str {
        &self.url
    }
}

/// A `CONNECT` answer's head longer than this is refused.
const MAX_CONNECT_HEAD: usize = 16 << 10;

/// Opens a tunnel to `authority` (`host:port`) through the proxy `io` is connected to.
///
/// # Errors
/// The proxy refused (its status and reason named; 407: it wants credentials), closed, or
/// answered something that is not HTTP.
pub(super) async fn tunnel(
    io: &mut Stamped,
    route: &ProxyRoute,
    authority: &str,
) -> io::Result<()> {
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n");
    if let Some(auth) = &route.authorization {
        head.push_str(&format!("proxy-authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    io.write_all(head.as_bytes()).await?;
    let refused = |why: String| {
        io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!(
                "the proxy {} did not open a tunnel to {authority}: {why}",
                route.shown
            ),
        )
    };
    // Read byte by byte past the head's end: nothing of the server's may be taken here.
    let mut answer = Vec::with_capacity(256);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_CONNECT_HEAD {
            return Err(refused("its answer's head is too long".into()));
        }
        let mut byte = [0u8; 1];
        if io.read(&mut byte).await? == 0 {
            return Err(refused("it closed the connection".into()));
        }
        answer.push(byte[0]);
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(&answer) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(refused("its answer is not HTTP".into())),
    }
    let status = parsed.code.unwrap_or(0);
    let reason = parsed.reason.unwrap_or("").to_owned();
    match status {
        200..=299 => Ok(()),
        407 => Err(refused(format!(
            "HTTP 407 {reason}: it wants credentials (user:password in HTTPS_PROXY)"
        ))),
        _ => Err(refused(format!("HTTP {status} {reason}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_proxy(bypass: &[&str]) -> Proxy {
        Proxy {
            options: ProxyOptions::Env,
            https: Some(parse_route("http://p:3128", "t", true).unwrap()),
            http: None,
            fixed: None,
            bypass: bypass.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn no_proxy_covers_hosts_domains_addresses_and_networks() {
        let p = env_proxy(&["example.com", ".corp", "10.0.0.0/8", "::1", "h:8443"]);
        for host in [
            "example.com",
            "api.example.com",
            "x.corp",
            "10.1.2.3",
            "[::1]",
            "h",
        ] {
            assert!(p.route(true, host).is_none(), "{host} bypasses");
        }
        for host in ["notexample.com", "11.0.0.1", "corp.io", "127.0.0.1"] {
            assert_eq!(
                p.route(true, host).map(|r| r.shown.as_str()),
                Some("http://p:3128"),
                "{host} goes through"
            );
        }
        assert!(p.route(false, "other").is_none(), "no HTTP_PROXY");
        assert!(env_proxy(&["*"]).route(true, "anything").is_none());
    }

    #[test]
    fn proxy_urls() {
        let r = parse_route("http://u%40x:p%3Aw@proxy.local:8080", "t", true).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("proxy.local", 8080));
        assert_eq!(r.shown, "http://proxy.local:8080");
        assert_eq!(
            r.authorization.as_deref(),
            Some("Basic dUB4OnA6dw==") // "u@x:p:w"
        );
        assert_eq!(parse_route("proxy", "t", true).unwrap().port, 1080);
        assert_eq!(
            parse_route("http://[::1]:3", "t", true).unwrap().host,
            "::1"
        );
        for (url, why) in [
            ("https://p:1", "not supported"),
            ("socks5://p:1", "not supported"),
            ("http://u:p@p:1", "credentials"),
            ("http://:1", "host"),
        ] {
            let err = parse_route(url, "endpoint.proxy", false)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(why) && err.contains("endpoint.proxy"),
                "{url}: {err}"
            );
        }
    }
}
