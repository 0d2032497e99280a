//! Where the objects go: an endpoint URL taken apart ([`S3Endpoint`]) and a bucket name
//! checked against S3's rules before any request.

use crate::error::SpecError;

/// S3's bucket naming rules that matter before a request: 3 to 63 characters of
/// lowercase letters, digits, dots and hyphens, starting and ending with a letter or
/// digit.
pub fn validate_bucket_name(name: &str) -> Result<(), SpecError> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    let ends = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !(3..=63).contains(&name.len())
        || !ok_chars
        || !ends(name.bytes().next())
        || !ends(name.bytes().last())
    {
        return Err(SpecError::new(
            "--bucket",
            format!(
                "'{name}' is not a valid bucket name: 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit"
            ),
        ));
    }
    Ok(())
}

/// An endpoint URL taken apart: scheme, host, port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Endpoint {
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

impl S3Endpoint {
    pub fn parse(url: &str) -> Result<S3Endpoint, SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "--endpoint",
                format!("'{url}' {why}; give http://HOST[:PORT] or https://HOST[:PORT]"),
            )
        };
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("has no http:// or https://"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains('/') || rest.contains('?') || rest.contains('@') {
            return Err(bad("is not a bare host and port (no path, query or user)"));
        }
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("has an unclosed ["))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("has text after the address")),
            };
            (format!("[{h}]"), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| bad("has a port that is not a number"))?,
            None if tls => 443,
            None => 80,
        };
        if host.is_empty() || port == 0 {
            return Err(bad("has no host or port"));
        }
        Ok(S3Endpoint {
            tls,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The Host header: the port only when it is not the scheme's default.
    pub fn authority(&self) -> String {
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.authority()
        )
    }
}
