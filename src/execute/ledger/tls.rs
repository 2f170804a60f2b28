//! TLS to a PostgreSQL ledger as libpq reads a URL (`sslmode`, `sslrootcert`), on rustls, so a
//! managed database that demands TLS with a verified certificate can hold the ledger.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::execute::percent::percent_decode;

/// libpq's `sslmode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Disable,
    /// TLS when the server offers it, unverified (libpq's default).
    Prefer,
    /// TLS, unverified unless a root certificate is given (then as `VerifyCa`).
    Require,
    /// TLS, the certificate chain verified.
    VerifyCa,
    /// TLS, the chain verified and the certificate issued for the host connected to.
    VerifyFull,
}

/// The TLS settings of a ledger URL, and the URL without them (tokio-postgres knows neither
/// `verify-*` nor `sslrootcert`).
#[derive(Debug, PartialEq, Eq)]
pub struct LedgerUrl {
    pub url: String,
    pub mode: Mode,
    /// A PEM file of CA certificates, or `system` for the operating system's.
    pub root: Option<String>,
}

impl LedgerUrl {
    pub fn parse(url: &str) -> Result<LedgerUrl> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut kept = Vec::new();
        let (mut mode, mut root) = (Mode::Prefer, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => {
                    mode = match percent_decode(value).as_str() {
                        "disable" => Mode::Disable,
                        "allow" | "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-ca" => Mode::VerifyCa,
                        "verify-full" => Mode::VerifyFull,
                        other => bail!("sslmode `{other}`: expected disable, prefer, require, verify-ca or verify-full"),
                    }
                }
                "sslrootcert" => root = Some(percent_decode(value)),
                _ => kept.push(pair),
            }
        }
        let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        Ok(LedgerUrl { url, mode, root })
    }

    /// tokio-postgres' own mode for the handshake.
    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The rustls connector these settings ask for.
    pub fn connector(&self) -> Result<MakeRustlsConnect> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
        let roots = match (&self.root, self.mode) {
            (Some(root), _) => Some(load_roots(root)?),
            (None, Mode::VerifyCa | Mode::VerifyFull) => Some(load_roots(&default_root()?)?),
            (None, _) => None,
        };
        let config = match (roots, self.mode) {
            (None, _) => builder.dangerous().with_custom_certificate_verifier(Arc::new(Unverified(provider))).with_no_client_auth(),
            (Some(roots), Mode::VerifyFull) => builder.with_root_certificates(roots).with_no_client_auth(),
            (Some(roots), _) => {
                let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
                builder.dangerous().with_custom_certificate_verifier(Arc::new(ChainOnly(chain))).with_no_client_auth()
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }
}

/// libpq's default root certificate file.
fn default_root() -> Result<String> {
    let path = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".postgresql/root.crt"));
    match path {
        Some(p) if p.exists() => Ok(p.display().to_string()),
        _ => bail!("a verifying sslmode needs sslrootcert=FILE (a PEM file of CA certificates) or sslrootcert=system"),
    }
}

fn load_roots(root: &str) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    if root == "system" {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = store.add(cert);
        }
    } else {
        for cert in CertificateDer::pem_file_iter(root).with_context(|| format!("sslrootcert {root}: cannot read"))? {
            store.add(cert.with_context(|| format!("sslrootcert {root}: not a PEM certificate file"))?).with_context(|| format!("sslrootcert {root}"))?;
        }
    }
    if store.is_empty() {
        bail!("sslrootcert {root}: no certificates");
    }
    Ok(store)
}

/// `require` without a root certificate: encrypted, the server not authenticated (as libpq).
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(&self, _: &CertificateDer, _: &[CertificateDer], _: &ServerName, _: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a given root; the name in the certificate is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(&self, end: &CertificateDer, chain: &[CertificateDer], name: &ServerName, ocsp: &[u8], now: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end, chain, name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_of_the_url() {
        let u = LedgerUrl::parse("postgres://u:p@db:5432/x?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=5").unwrap();
        assert_eq!(u, LedgerUrl { url: "postgres://u:p@db:5432/x?connect_timeout=5".into(), mode: Mode::VerifyFull, root: Some("/etc/ca.pem".into()) });
        let plain = LedgerUrl::parse("postgres://db/x").unwrap();
        assert_eq!((plain.url.as_str(), plain.mode, plain.root), ("postgres://db/x", Mode::Prefer, None));
        assert!(LedgerUrl::parse("postgres://db/x?sslmode=verify-everything").is_err());
    }
}
