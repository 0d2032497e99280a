//! [`ObjectError`]: an S3 request that failed, with the request, the object, the endpoint
//! and either the server's answer (status, S3 error code and message) or what happened
//! to the connection, and a hint of what to try.

use std::io;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ObjectError {
    /// The server answered with an error.
    #[error("{op} {target} at {endpoint} failed: {status} {code}{}{}", message_part(message), status_hint(*status, code))]
    Status {
        op: &'static str,
        target: String,
        endpoint: String,
        status: u16,
        /// The S3 error code (SlowDown, NoSuchBucket, ...), or the status's reason.
        code: String,
        message: String,
    },
    /// No usable answer: the connection failed, broke off or the answer did not parse.
    #[error(
        "{op} {target} at {endpoint} failed: {}{}",
        describe_io(source),
        io_hint(source)
    )]
    Connection {
        op: &'static str,
        target: String,
        endpoint: String,
        source: io::Error,
    },
    /// A request the client was not set up for (two queued, a TLS setup that failed).
    #[error("{0}")]
    Setup(String),
}

impl ObjectError {
    /// The HTTP status the server answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ObjectError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The S3 error code ("NoSuchBucket"), when the server gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ObjectError::Status { code, .. } => Some(code),
            _ => None,
        }
    }

    /// A refusal the user must fix rather than a measurement: wrong keys, no such bucket,
    /// access denied.
    pub fn is_configuration(&self) -> bool {
        matches!(self.status(), Some(400 | 401 | 403 | 404 | 405 | 409))
            || matches!(self, ObjectError::Setup(_))
    }
}

fn message_part(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(": {m}")
    }
}

fn status_hint(status: u16, code: &str) -> &'static str {
    match (status, code) {
        (_, "InvalidAccessKeyId") => "; check the access key (AWS_ACCESS_KEY_ID, --profile)",
        (_, "SignatureDoesNotMatch") => {
            "; check the secret key (AWS_SECRET_ACCESS_KEY, --profile) and --region"
        }
        (_, "NoSuchBucket") => {
            "; create the bucket, name another with --bucket, or pass --create-bucket"
        }
        (_, "AccessDenied") | (403, _) => "; the keys may not do this in this bucket",
        (_, "SlowDown") | (503, _) => {
            "; the server is throttling: lower --concurrency or raise --attempts"
        }
        _ => "",
    }
}

fn describe_io(e: &io::Error) -> String {
    let words = iolab_core::error::describe(e);
    match e.raw_os_error() {
        Some(n) => format!("{words}{}", iolab_core::error::errno_name(Some(n))),
        None => words,
    }
}

fn io_hint(e: &io::Error) -> &'static str {
    if super::tls::certificate_refused(e) {
        return "; give the authority that signed the server's certificate with --ca-cert (or AWS_CA_BUNDLE)";
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "; is the S3 server running at that address?",
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            "; the server did not answer in time"
        }
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
            "; the server went away mid-request"
        }
        _ => "",
    }
}
