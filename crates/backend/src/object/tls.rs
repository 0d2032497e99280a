//! TLS for https:// endpoints (rustls with the ring provider): [`tls_config`] trusts the
//! system's certificate authorities, or only those of a PEM file (`--ca-cert`,
//! AWS_CA_BUNDLE); [`connect`] wraps a TCP connection.

use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

pub type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// A client configuration trusting `ca_file`'s certificates, or the system's.
pub fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(f) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(f)
                .map_err(|e| format!("cannot read the CA file {}: {e}", f.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the CA file {} does not parse as PEM: {e}", f.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "the CA file {} holds no certificate (BEGIN CERTIFICATE)",
                    f.display()
                ));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("a certificate in {} is not usable: {e}", f.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                // A system store may hold certificates rustls cannot use; skip them.
                let _ = roots.add(c);
            }
            if roots.is_empty() {
                return Err(
                    "no system certificate authorities found; give --ca-cert FILE".to_string(),
                );
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// TLS over `tcp` to `host`, the handshake done before returning.
pub fn connect(config: &Arc<ClientConfig>, host: &str, tcp: TcpStream) -> io::Result<TlsStream> {
    let name = host.trim_start_matches('[').trim_end_matches(']');
    let server = ServerName::try_from(name.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
    let conn = ClientConnection::new(config.clone(), server)
        .map_err(|e| io::Error::other(format!("TLS setup failed: {e}")))?;
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).map_err(|e| {
            let words = format!("TLS handshake with {host} failed: {e}");
            let refused = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .is_some_and(|r| matches!(r, rustls::Error::InvalidCertificate(_)));
            if refused {
                io::Error::new(io::ErrorKind::InvalidData, CertificateRefused(words))
            } else {
                io::Error::new(e.kind(), words)
            }
        })?;
    }
    Ok(s)
}

/// The server's certificate was refused (unknown issuer, wrong name, expired): trying
/// again cannot help, so it is not retried (as minio-go does not retry x509 errors).
#[derive(Debug)]
pub struct CertificateRefused(String);

impl std::fmt::Display for CertificateRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CertificateRefused {}

/// Whether `e` is a refused server certificate.
pub fn certificate_refused(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<CertificateRefused>())
}
