//! How the endpoint is reached and what its requests carry besides the body:
//! `[endpoint.tls]`, `endpoint.proxy`, `endpoint.headers` and
//! `endpoint.session_header` (docs/https.md).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// TLS for an `https://` endpoint (`[endpoint.tls]`); also used for every
/// other HTTPS URL agentload reaches (telemetry pages, the SWE-bench
/// service, a coordinator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// Trusted roots: `webpki` (default: Mozilla's, compiled in, the same on
    /// every machine) or `system` (this machine's store; `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` are honoured).
    #[serde(default)]
    pub roots: TlsRoots,
    /// A PEM file of CA certificates trusted besides the roots (a private
    /// CA); `--ca-file` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain (PEM) for a server that asks for one
    /// (mTLS); needs `client_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    /// The name sent in SNI and checked against the server's certificate,
    /// instead of the URL's host (an endpoint reached by IP address whose
    /// certificate names a host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accept any server certificate, unverified (the handshake's signatures
    /// are still checked): said on the console, recorded in the results,
    /// refused in a submission run. `--insecure` sets it.
    #[serde(default)]
    pub insecure: bool,
    /// Resume TLS sessions on new connections (tickets kept in memory).
    #[serde(default = "yes")]
    pub resumption: bool,
    /// Write the TLS session secrets to the file `SSLKEYLOGFILE` names, so
    /// that a packet capture can be decrypted.
    #[serde(default)]
    pub keylog: bool,
}

fn yes() -> bool {
    true
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            roots: TlsRoots::default(),
            ca_file: None,
            client_cert: None,
            client_key: None,
            server_name: None,
            insecure: false,
            resumption: true,
            keylog: false,
        }
    }
}

impl TlsConfig {
    /// Whether nothing is set (it is then left out of the written config).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Checks values; the error names the key.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((format!("endpoint.tls.{k}"), m.to_owned()));
        match (&self.client_cert, &self.client_key) {
            (Some(_), None) => return bad("client_key", "client_cert needs its client_key"),
            (None, Some(_)) => return bad("client_cert", "client_key needs its client_cert"),
            _ => {}
        }
        if let Some(name) = &self.server_name {
            let name = name.trim();
            if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '/') {
                return bad("server_name", "must be a DNS name or an IP address");
            }
        }
        Ok(())
    }
}

/// `endpoint.tls.roots`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TlsRoots {
    #[default]
    Webpki,
    System,
}

/// `endpoint.proxy`: `"none"` (the default: connect directly, as the
/// reference does), `"env"` (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, with
/// `NO_PROXY`), or a proxy's URL `http://host:port`. Requests go through an
/// HTTP `CONNECT` tunnel; the timestamps then include the proxy's hop, which
/// the results say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(from = "String", into = "String")]
pub enum ProxySetting {
    #[default]
    None,
    Env,
    Url(String),
}

impl From<String> for ProxySetting {
    fn from(s: String) -> Self {
        match s.trim() {
            "none" | "" => Self::None,
            "env" => Self::Env,
            _ => Self::Url(s),
        }
    }
}

impl From<ProxySetting> for String {
    fn from(p: ProxySetting) -> Self {
        match p {
            ProxySetting::None => "none".into(),
            ProxySetting::Env => "env".into(),
            ProxySetting::Url(url) => url,
        }
    }
}

impl ProxySetting {
    pub fn is_none(&self) -> bool {
        *self == Self::None
    }

    /// Checks a proxy URL: `http://host[:port]`, no credentials (they would
    /// be copied into the results; `"env"` takes them from `HTTPS_PROXY`).
    pub fn check(&self) -> Result<(), (String, String)> {
        let Self::Url(url) = self else {
            return Ok(());
        };
        let bad = |m: String| Err(("endpoint.proxy".to_owned(), m));
        let parsed = match url::Url::parse(url.trim()) {
            Ok(u) => u,
            Err(e) => {
                return bad(format!(
                    "`{url}` is neither \"none\", \"env\" nor a proxy URL ({e})"
                ))
            }
        };
        if parsed.scheme() != "http" {
            return bad(format!(
                "`{}://` proxies are not supported: an http:// proxy is (through CONNECT)",
                parsed.scheme()
            ));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return bad(
                "credentials do not belong in the config (it is copied into the results); use \
                 proxy = \"env\" with HTTPS_PROXY"
                    .into(),
            );
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return bad(format!("`{url}` has no host"));
        }
        Ok(())
    }
}

/// What a redacted header value is written as.
pub const REDACTED: &str = "<redacted>";

/// `endpoint.headers`: headers every request to the endpoint carries. A
/// value may take environment variables, `"${GATEWAY_KEY}"` or
/// `"Bearer ${TOKEN}"`, read when the run starts and never written into a
/// result file. Headers that carry a secret (`Authorization`, `Cookie`,
/// names with `key`, `token`, `secret`, `auth`, `password`, `signature` or
/// `credential`) are written redacted wherever agentload writes the config,
/// unless their secret comes from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Headers(pub BTreeMap<String, String>);

impl Headers {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the header `name` carries a secret.
    pub fn secret(name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        matches!(
            name.as_str(),
            "authorization" | "proxy-authorization" | "cookie"
        ) || [
            "key",
            "token",
            "secret",
            "auth",
            "password",
            "signature",
            "credential",
        ]
        .iter()
        .any(|word| name.contains(word))
    }

    /// Whether `value` (of a secret header) holds nothing secret literally:
    /// after its `${VAR}` references, at most an authorization scheme word.
    fn from_environment(value: &str) -> bool {
        let mut rest = String::new();
        let mut text = value;
        while let Some(start) = text.find("${") {
            rest.push_str(&text[..start]);
            match text[start..].find('}') {
                Some(end) => text = &text[start + end + 1..],
                None => return false,
            }
        }
        rest.push_str(text);
        matches!(
            rest.trim().to_ascii_lowercase().as_str(),
            "" | "bearer" | "basic" | "token" | "apikey"
        )
    }

    /// The headers as written into a result file: secret literals redacted.
    pub fn redacted(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(k, v)| {
                let shown = if Self::secret(k) && !Self::from_environment(v) {
                    REDACTED.to_owned()
                } else {
                    v.clone()
                };
                (k.clone(), shown)
            })
            .collect()
    }

    /// The headers with their `${VAR}` references read from the environment
    /// (`var` looks one up).
    ///
    /// # Errors
    /// A variable that is not set, a reference left open, or a value
    /// redacted when the results were written (a resumed run's config), each
    /// naming the header.
    pub fn resolve(
        &self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::with_capacity(self.0.len());
        for (name, value) in &self.0 {
            if value == REDACTED {
                return Err(format!(
                    "endpoint.headers.{name} was redacted when the config was written; give it \
                     as \"${{VAR}}\" (read from the environment) to run with it"
                ));
            }
            let mut resolved = String::new();
            let mut text = value.as_str();
            while let Some(start) = text.find("${") {
                resolved.push_str(&text[..start]);
                let Some(end) = text[start..].find('}') else {
                    return Err(format!(
                        "endpoint.headers.{name}: `${{` without its closing `}}`"
                    ));
                };
                let key = &text[start + 2..start + end];
                let found = var(key).ok_or_else(|| {
                    format!("endpoint.headers.{name}: the environment variable {key} is not set")
                })?;
                resolved.push_str(&found);
                text = &text[start + end + 1..];
            }
            resolved.push_str(text);
            out.push((name.clone(), resolved));
        }
        Ok(out)
    }

    /// Checks names and references; the error names the key.
    pub fn check(&self) -> Result<(), (String, String)> {
        for (name, value) in &self.0 {
            let key = format!("endpoint.headers.{name}");
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err((key, "is not a header name".into()));
            }
            if value.contains(['\r', '\n']) {
                return Err((key, "a value cannot hold a line end".into()));
            }
            let mut text = value.as_str();
            while let Some(start) = text.find("${") {
                let Some(end) = text[start..].find('}') else {
                    return Err((key, "`${` without its closing `}`".into()));
                };
                let var = &text[start + 2..start + end];
                if var.is_empty() || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    return Err((key, format!("`${{{var}}}` is not an environment variable")));
                }
                text = &text[start + end + 1..];
            }
        }
        Ok(())
    }
}

impl Serialize for Headers {
    /// Written redacted ([`Headers::redacted`]).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.redacted().serialize(serializer)
    }
}

/// `endpoint.session_header`'s default.
pub fn default_session_header() -> String {
    "X-Session-ID".into()
}

/// Whether `name` is the default session header (left out of the written config).
pub(crate) fn is_default_session_header(name: &str) -> bool {
    name == "X-Session-ID"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        Headers(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn secret_literals_are_redacted_and_references_kept() {
        let h = headers(&[
            ("X-Org", "acme"),
            ("X-Api-Key", "sk-live-1"),
            ("Authorization", "Bearer ${GW_TOKEN}"),
            ("X-Gateway-Token", "${GW_TOKEN}"),
            ("Cookie", "s=1; ${C}"),
        ]);
        let shown = h.redacted();
        assert_eq!(shown["X-Org"], "acme");
        assert_eq!(shown["X-Api-Key"], REDACTED);
        assert_eq!(shown["Authorization"], "Bearer ${GW_TOKEN}");
        assert_eq!(shown["X-Gateway-Token"], "${GW_TOKEN}");
        assert_eq!(shown["Cookie"], REDACTED);
        let written = toml::to_string(&h).unwrap();
        assert!(
            !written.contains("sk-live-1") && !written.contains("s=1"),
            "{written}"
        );
    }

    #[test]
    fn references_are_read_from_the_environment() {
        let h = headers(&[("Authorization", "Bearer ${T}"), ("X-Route", "a-${R}-b")]);
        let env = |k: &str| match k {
            "T" => Some("tok".to_owned()),
            "R" => Some("7".to_owned()),
            _ => None,
        };
        assert_eq!(
            h.resolve(env).unwrap(),
            [
                ("Authorization".to_owned(), "Bearer tok".to_owned()),
                ("X-Route".to_owned(), "a-7-b".to_owned())
            ]
        );
        let err = headers(&[("X-K", "${MISSING}")]).resolve(env).unwrap_err();
        assert!(
            err.contains("endpoint.headers.X-K") && err.contains("MISSING"),
            "{err}"
        );
        let err = headers(&[("X-K", REDACTED)]).resolve(env).unwrap_err();
        assert!(err.contains("redacted"), "{err}");
        for (name, value, why) in [
            ("X K", "v", "header name"),
            ("X-K", "${A", "closing"),
            ("X-K", "${A-B}", "not an environment variable"),
        ] {
            let (key, message) = headers(&[(name, value)]).check().unwrap_err();
            assert!(key.contains(name) && message.contains(why), "{message}");
        }
    }

    #[test]
    fn proxy_settings() {
        for (text, want) in [
            ("none", ProxySetting::None),
            ("env", ProxySetting::Env),
            ("http://p:3128", ProxySetting::Url("http://p:3128".into())),
        ] {
            let p = ProxySetting::from(text.to_owned());
            assert_eq!(p, want);
            p.check().unwrap();
            assert_eq!(String::from(p), text);
        }
        for (url, why) in [
            ("http://u:p@p:1", "credentials"),
            ("socks5://p:1", "not supported"),
            ("p:1", "not supported"),
            ("nonsense", "neither"),
        ] {
            let (_, message) = ProxySetting::Url(url.into()).check().unwrap_err();
            assert!(message.contains(why), "{url}: {message}");
        }
    }
}
