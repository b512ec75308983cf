//! A throwaway PKI for serving TLS without a real certificate authority: a CA made on the
//! spot, and leaf certificates it signs (a server's for `localhost`, `127.0.0.1` and `::1`, a
//! client's for mTLS), written as PEM files. `agentload sim --tls-self-signed`, the bench's
//! TLS levels and the tests use it; the CA file is what a client trusts (`--ca-file`).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::{SimError, SimTls};

/// The CA, and the directory its files go to.
pub struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    dir: PathBuf,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").field("dir", &self.dir).finish()
    }
}

/// A certificate and its key, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What a leaf is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    Server,
    Client,
}

fn failed(path: &Path, reason: impl std::fmt::Display) -> SimError {
    SimError::Tls {
        what: "PKI",
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn write(path: &Path, text: &str) -> Result<(), SimError> {
    std::fs::write(path, text).map_err(|e| failed(path, e))
}

impl Pki {
    /// A new CA; its certificate is written to `DIR/ca.pem` (the directory is created).
    pub fn new(dir: &Path) -> Result<Self, SimError> {
        std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
        let key = KeyPair::generate().map_err(|e| failed(dir, e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        // A name of its own: a verifier finds a certificate's issuer by name, so two CAs of
        // one name would read as one whose signature does not check.
        let made = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        params.distinguished_name.push(
            DnType::CommonName,
            format!("agentload throwaway CA {made:x}-{}", std::process::id()),
        );
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(params, key).map_err(|e| failed(dir, e))?;
        let pki = Self {
            ca,
            dir: dir.to_owned(),
        };
        write(&pki.ca_file(), &pki.ca.pem())?;
        Ok(pki)
    }

    /// The CA's certificate (PEM), the file a client trusts.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A leaf for `names` (DNS names or IP addresses) signed by the CA, written to
    /// `DIR/<stem>.pem` and `DIR/<stem>.key`; `expired`: valid only in 2020.
    pub fn leaf(
        &self,
        stem: &str,
        names: &[&str],
        usage: Usage,
        expired: bool,
    ) -> Result<Leaf, SimError> {
        let leaf = Leaf {
            cert: self.dir.join(format!("{stem}.pem")),
            key: self.dir.join(format!("{stem}.key")),
        };
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).map_err(|e| failed(&leaf.cert, e))?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("agentload {stem}"));
        params.extended_key_usages = vec![match usage {
            Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
            Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
        }];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().map_err(|e| failed(&leaf.cert, e))?;
        let cert = params
            .signed_by(&key, &self.ca)
            .map_err(|e| failed(&leaf.cert, e))?;
        write(&leaf.cert, &cert.pem())?;
        write(&leaf.key, &key.serialize_pem())?;
        Ok(leaf)
    }

    /// The server's leaf, for `localhost`, `127.0.0.1` and `::1` (`DIR/server.pem`,
    /// `DIR/server.key`).
    pub fn server(&self) -> Result<Leaf, SimError> {
        self.leaf(
            "server",
            &["localhost", "127.0.0.1", "::1"],
            Usage::Server,
            false,
        )
    }

    /// A client's leaf for mTLS (`DIR/client.pem`, `DIR/client.key`).
    pub fn client(&self) -> Result<Leaf, SimError> {
        self.leaf("client", &["agentload-client"], Usage::Client, false)
    }

    /// The simulator's TLS with `leaf`, requiring clients signed by this CA when `mtls`.
    pub fn sim_tls(&self, leaf: &Leaf, mtls: bool) -> SimTls {
        SimTls {
            cert: leaf.cert.clone(),
            key: leaf.key.clone(),
            client_ca: mtls.then(|| self.ca_file()),
        }
    }
}
