//! TLS settings, built once into the one rustls `ClientConfig` every HTTPS connection of
//! agentload uses (the turn client's own, and reqwest's through [`super::Transport`]), and
//! what a failed handshake or a broken record means, in words that name the fix.
//!
//! The crypto provider is ring, chosen explicitly (never rustls' process default), with
//! X25519 first among the key-exchange groups: only the first group's key share is sent, so a
//! server that picks X25519 (nearly all) costs no extra round trip.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore,
    SignatureScheme,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where trusted root certificates come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Roots {
    /// Mozilla's roots, compiled in (`webpki-roots`): the same on every machine.
    #[default]
    Webpki,
    /// The machine's store (`rustls-native-certs`; `SSL_CERT_FILE` and `SSL_CERT_DIR` are
    /// honoured).
    System,
}

/// How HTTPS connections are verified and what they offer (`[endpoint.tls]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    pub roots: Roots,
    /// PEM certificates trusted besides the roots (a private CA).
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain (PEM) for servers that ask for one (mTLS), with its key.
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub client_key: Option<PathBuf>,
    /// The name sent in SNI and checked against the certificate, instead of the URL's host
    /// (an endpoint reached by IP whose certificate names a host).
    pub server_name: Option<String>,
    /// Accept any certificate (the handshake's signatures are still checked).
    pub insecure: bool,
    /// Resume TLS sessions on new connections (tickets kept in memory).
    pub resumption: bool,
    /// Write the session secrets to the file `SSLKEYLOGFILE` names, so that a capture can be
    /// decrypted (Wireshark, tshark).
    pub keylog: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            roots: Roots::Webpki,
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

/// Why the TLS settings cannot be used. The keys named are the config's.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("endpoint.tls.{key}: cannot read {}: {cause}", path.display())]
    Read {
        key: &'static str,
        path: PathBuf,
        cause: String,
    },
    #[error("endpoint.tls.{key}: {} holds no {what} (a PEM file is expected)", path.display())]
    Empty {
        key: &'static str,
        path: PathBuf,
        what: &'static str,
    },
    #[error("endpoint.tls.{key}: {} is not a usable {what}: {cause}", path.display())]
    Unusable {
        key: &'static str,
        path: PathBuf,
        what: &'static str,
        cause: String,
    },
    #[error("endpoint.tls.client_cert and client_key go together (only {0} is set)")]
    HalfIdentity(&'static str),
    #[error("endpoint.tls.client_cert and client_key do not match: {0}")]
    Identity(String),
    #[error("endpoint.tls.server_name: `{0}` is not a DNS name or an IP address")]
    ServerName(String),
    #[error("endpoint.tls.roots = \"system\": no usable certificate in the system's store ({0})")]
    SystemRoots(String),
}

/// The built TLS settings: one rustls client config, shared (cloning shares it, and with it
/// the session cache that resumption reads).
#[derive(Clone)]
pub struct Tls {
    config: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
    described: TlsDescription,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("described", &self.described)
            .finish_non_exhaustive()
    }
}

/// The TLS settings as the results record them (no key material, no file contents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsDescription {
    /// `webpki` or `system`.
    pub roots: &'static str,
    /// The extra CA file, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// A client certificate is offered (mTLS).
    pub client_certificate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Certificates were not verified.
    pub insecure: bool,
    pub resumption: bool,
    /// The crypto provider.
    pub provider: &'static str,
}

/// The crypto provider: ring, X25519 first. rustls 0.23.48 marks ring's provider deprecated
/// because it has no post-quantum key exchange (aws-lc-rs has X25519MLKEM768); ring is kept
/// for its small build on this project's machines, and the group a session used is no secret
/// a benchmark's timings depend on.
#[allow(deprecated)]
fn provider() -> CryptoProvider {
    let mut provider = ring::default_provider();
    provider.kx_groups = vec![
        ring::kx_group::X25519,
        ring::kx_group::SECP256R1,
        ring::kx_group::SECP384R1,
    ];
    provider
}

impl Tls {
    /// Builds the client config: reads the CA file and the client identity (errors name the
    /// key and the file), loads the roots.
    ///
    /// # Errors
    /// A file that cannot be read or holds nothing usable, a half-given identity, a server
    /// name that is no name, a system store with no usable certificate.
    pub fn new(options: &TlsOptions) -> Result<Self, TlsSetupError> {
        let provider = Arc::new(provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3");
        let mut roots = RootCertStore::empty();
        match options.roots {
            Roots::Webpki => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    let errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
                    return Err(TlsSetupError::SystemRoots(if errors.is_empty() {
                        "the store is empty".into()
                    } else {
                        errors.join("; ")
                    }));
                }
            }
        }
        if let Some(path) = &options.ca_file {
            let pem = read("ca_file", path)?;
            let mut found = 0;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| unusable("ca_file", path, "CA certificate", e))?;
                roots
                    .add(cert)
                    .map_err(|e| unusable("ca_file", path, "CA certificate", e))?;
                found += 1;
            }
            if found == 0 {
                return Err(TlsSetupError::Empty {
                    key: "ca_file",
                    path: path.clone(),
                    what: "certificate",
                });
            }
        }
        let builder = builder.with_root_certificates(roots);
        let mut config = match (&options.client_cert, &options.client_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(_), None) => return Err(TlsSetupError::HalfIdentity("client_cert")),
            (None, Some(_)) => return Err(TlsSetupError::HalfIdentity("client_key")),
            (Some(cert), Some(key)) => {
                let (chain, key) = identity(cert, key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| TlsSetupError::Identity(e.to_string()))?
            }
        };
        if options.insecure {
            config
                .dangerous()
                .set_certificate_verifier(Arc::new(AnyCertificate(
                    provider.signature_verification_algorithms,
                )));
        }
        // HTTP/1.1 is what agentload speaks (reqwest's clients are built without HTTP/2).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        if !options.resumption {
            config.resumption = rustls::client::Resumption::disabled();
        }
        if options.keylog {
            config.key_log = Arc::new(rustls::KeyLogFile::new());
        }
        let server_name = match &options.server_name {
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|_| TlsSetupError::ServerName(name.clone()))?,
            ),
            None => None,
        };
        Ok(Self {
            config: Arc::new(config),
            server_name,
            described: TlsDescription {
                roots: match options.roots {
                    Roots::Webpki => "webpki",
                    Roots::System => "system",
                },
                ca_file: options.ca_file.as_ref().map(|p| p.display().to_string()),
                client_certificate: options.client_cert.is_some(),
                server_name: options.server_name.clone(),
                insecure: options.insecure,
                resumption: options.resumption,
                provider: "ring",
            },
        })
    }

    /// The settings as recorded in the results.
    pub fn describe(&self) -> &TlsDescription {
        &self.described
    }

    /// Whether certificates go unverified.
    pub fn insecure(&self) -> bool {
        self.described.insecure
    }

    /// The shared client config (HTTP/1.1 offered in ALPN).
    pub(super) fn config(&self) -> &Arc<ClientConfig> {
        &self.config
    }

    /// A copy of the client config (for reqwest's `use_preconfigured_tls`); its session
    /// cache is still the shared one.
    pub fn rustls_config(&self) -> ClientConfig {
        (*self.config).clone()
    }

    /// The name a connection to `host` verifies (the configured override, else the host).
    pub(super) fn server_name(&self, host: &str) -> Result<ServerName<'static>, String> {
        match &self.server_name {
            Some(name) => Ok(name.clone()),
            None => ServerName::try_from(host.to_owned())
                .map_err(|_| format!("`{host}` is not a DNS name or an IP address")),
        }
    }
}

/// The file's bytes, or an error naming the key and the file.
fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    std::fs::read(path).map_err(|e| TlsSetupError::Read {
        key,
        path: path.to_owned(),
        cause: e.to_string(),
    })
}

fn unusable(
    key: &'static str,
    path: &Path,
    what: &'static str,
    cause: impl std::fmt::Display,
) -> TlsSetupError {
    TlsSetupError::Unusable {
        key,
        path: path.to_owned(),
        what,
        cause: cause.to_string(),
    }
}

/// The client certificate chain and its key.
fn identity(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsSetupError> {
    let pem = read("client_cert", cert)?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable("client_cert", cert, "certificate chain", e))?;
    if chain.is_empty() {
        return Err(TlsSetupError::Empty {
            key: "client_cert",
            path: cert.to_owned(),
            what: "certificate",
        });
    }
    let pem = read("client_key", key)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsSetupError::Empty {
            key: "client_key",
            path: key.to_owned(),
            what: "private key",
        },
        e => unusable("client_key", key, "private key", e),
    })?;
    Ok((chain, key))
}

/// `insecure`: every certificate is accepted; the handshake's signatures are still checked
/// (the server holds the key of the certificate it sent).
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// One connection's TLS, as negotiated (recorded in the results).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TlsSession {
    /// `TLSv1.3` or `TLSv1.2`.
    pub version: String,
    /// The IANA name, e.g. `TLS13_AES_128_GCM_SHA256`.
    pub cipher_suite: String,
    /// The session was resumed (no certificate sent or checked).
    pub resumed: bool,
    /// The application protocol the server chose (`http/1.1`), if it chose one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
    /// From the ClientHello's making to the handshake's end, µs.
    pub handshake_us: f64,
}

impl TlsSession {
    /// What `conn`, done with its handshake, negotiated.
    pub(super) fn of(conn: &rustls::ClientConnection, handshake_us: f64) -> Self {
        let version = match conn.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_owned(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_owned(),
            Some(other) => format!("{other:?}"),
            None => "unknown".to_owned(),
        };
        let cipher_suite = conn.negotiated_cipher_suite().map_or_else(
            || "unknown".to_owned(),
            |s| {
                s.suite()
                    .as_str()
                    .map_or_else(|| format!("{:?}", s.suite()), str::to_owned)
            },
        );
        Self {
            version,
            cipher_suite,
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            alpn: conn
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
            handshake_us,
        }
    }
}

/// A TLS failure in words: what happened and, where there is one, what fixes it. `host` is
/// the name the certificate was checked against; `identity`: a client certificate was offered.
pub(super) fn explain(e: &Error, host: &str, identity: bool) -> String {
    match e {
        Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => "the server's certificate is not trusted: its \
                 issuer is not among the roots (add its CA with endpoint.tls.ca_file or \
                 --ca-file, or use endpoint.tls.roots = \"system\")"
                .to_owned(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the server's certificate does not name `{host}` ({e}); connect by a name \
                     it carries, or set endpoint.tls.server_name"
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the server's certificate has expired ({e})")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!(
                    "the server's certificate is not valid yet ({e}); is this machine's clock \
                     right?"
                )
            }
            _ => format!("the server's certificate was refused: {e}"),
        },
        Error::AlertReceived(AlertDescription::CertificateRequired) if !identity => {
            "the server wants a client certificate (set endpoint.tls.client_cert and \
             client_key)"
                .to_owned()
        }
        Error::AlertReceived(AlertDescription::HandshakeFailure) if !identity => {
            "the server refused the handshake (alert `HandshakeFailure`): it may want a client \
             certificate (endpoint.tls.client_cert and client_key)"
                .to_owned()
        }
        Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateRequired
            | AlertDescription::DecryptError
            | AlertDescription::AccessDenied),
        ) if identity => {
            format!("the server refused agentload's client certificate (alert `{alert:?}`)")
        }
        Error::AlertReceived(alert) => format!("the server sent the TLS alert `{alert:?}`"),
        other => format!("TLS error: {other}"),
    }
}
