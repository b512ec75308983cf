//! The simulator's TLS server config: a certificate chain and key from PEM files, ring as the
//! provider (the client's), ALPN `http/1.1`, and, with a client CA, client certificates
//! required (mTLS).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::{SimError, SimTls};

fn bad(what: &'static str, path: &Path, reason: impl std::fmt::Display) -> SimError {
    SimError::Tls {
        what,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// The certificates of a PEM file (at least one).
fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, SimError> {
    let pem = std::fs::read(path).map_err(|e| bad(what, path, e))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(what, path, e))?;
    if certs.is_empty() {
        return Err(bad(what, path, "no certificate in the file (PEM expected)"));
    }
    Ok(certs)
}

/// The server config for `tls`. ring, as the client's (rustls 0.23.48 marks it deprecated
/// for lacking post-quantum key exchange; the client offers X25519 first, which ring has).
#[allow(deprecated)]
pub(crate) fn server_config(tls: &SimTls) -> Result<Arc<ServerConfig>, SimError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates("certificate", &tls.cert)?;
    let pem = std::fs::read(&tls.key).map_err(|e| bad("key", &tls.key, e))?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| bad("key", &tls.key, e))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports TLS 1.2 and 1.3");
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates("client CA", ca)? {
                roots.add(cert).map_err(|e| bad("client CA", ca, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad("client CA", ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        bad(
            "key",
            &tls.key,
            format!("does not fit the certificate: {e}"),
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
