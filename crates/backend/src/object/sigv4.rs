//! AWS Signature Version 4 for S3 requests, header form ([`Signer::sign`]): the canonical
//! request, the string to sign and the HMAC-SHA256 chain, with the day's signing key
//! computed once per day. Paths and query strings are encoded as S3 expects (each byte
//! outside `A-Za-z0-9-._~` as %XX; `/` kept in paths). Writes into a caller's buffers,
//! so a request costs no allocation.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The payload hash S3 accepts instead of the body's SHA-256.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// SHA-256 of the empty string, for requests without a body.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Signs requests for one key pair and region.
pub struct Signer {
    access_key: String,
    secret_key: String,
    session_token: Option<String>,
    region: String,
    /// The day ("20260101") the cached key is for, and the key.
    day: [u8; 8],
    key: [u8; 32],
    canonical: Vec<u8>,
    to_sign: Vec<u8>,
}

/// What a request contributes to its signature.
pub struct SignInput<'a> {
    pub method: &'a str,
    /// The path as sent, already encoded (`/bucket/key`).
    pub path: &'a str,
    /// The query string as sent, already encoded and sorted by name (`a=1&b=`).
    pub query: &'a str,
    pub host: &'a str,
    /// Hex SHA-256 of the body, [`UNSIGNED_PAYLOAD`] or [`EMPTY_SHA256`].
    pub payload_hash: &'a str,
    /// Base64 MD5 of the body, when the request carries Content-MD5.
    pub content_md5: Option<&'a str>,
    /// `YYYYMMDDTHHMMSSZ`.
    pub amz_date: &'a str,
}

impl Signer {
    pub fn new(
        access_key: &str,
        secret_key: &str,
        session_token: Option<&str>,
        region: &str,
    ) -> Self {
        Signer {
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
            session_token: session_token.map(str::to_string),
            region: region.to_string(),
            day: [0; 8],
            key: [0; 32],
            canonical: Vec::with_capacity(512),
            to_sign: Vec::with_capacity(256),
        }
    }

    pub fn session_token(&self) -> Option<&str> {
        self.session_token.as_deref()
    }

    fn day_key(&mut self, day: &[u8]) -> [u8; 32] {
        if self.day != day {
            let mut secret = Vec::with_capacity(4 + self.secret_key.len());
            secret.extend_from_slice(b"AWS4");
            secret.extend_from_slice(self.secret_key.as_bytes());
            let k = hmac(&secret, day);
            let k = hmac(&k, self.region.as_bytes());
            let k = hmac(&k, b"s3");
            self.key = hmac(&k, b"aws4_request");
            self.day.copy_from_slice(day);
        }
        self.key
    }

    /// Appends the `Authorization` header's value for `r` to `out`.
    pub fn sign(&mut self, r: &SignInput<'_>, out: &mut Vec<u8>) {
        let day = &r.amz_date.as_bytes()[..8];
        let c = &mut self.canonical;
        c.clear();
        for part in [r.method, "\n", r.path, "\n", r.query, "\n"] {
            c.extend_from_slice(part.as_bytes());
        }
        // Headers in name order: content-md5, host, x-amz-content-sha256, x-amz-date,
        // x-amz-security-token.
        let mut signed = String::new();
        let mut header = |c: &mut Vec<u8>, name: &str, value: &str| {
            c.extend_from_slice(name.as_bytes());
            c.push(b':');
            c.extend_from_slice(value.trim().as_bytes());
            c.push(b'\n');
            if !signed.is_empty() {
                signed.push(';');
            }
            signed.push_str(name);
        };
        if let Some(md5) = r.content_md5 {
            header(c, "content-md5", md5);
        }
        header(c, "host", r.host);
        header(c, "x-amz-content-sha256", r.payload_hash);
        header(c, "x-amz-date", r.amz_date);
        if let Some(t) = &self.session_token {
            header(c, "x-amz-security-token", t);
        }
        c.push(b'\n');
        c.extend_from_slice(signed.as_bytes());
        c.push(b'\n');
        c.extend_from_slice(r.payload_hash.as_bytes());

        let t = &mut self.to_sign;
        t.clear();
        t.extend_from_slice(b"AWS4-HMAC-SHA256\n");
        t.extend_from_slice(r.amz_date.as_bytes());
        t.push(b'\n');
        let scope_at = t.len();
        t.extend_from_slice(day);
        t.push(b'/');
        t.extend_from_slice(self.region.as_bytes());
        t.extend_from_slice(b"/s3/aws4_request");
        let scope_end = t.len();
        t.push(b'\n');
        push_hex(t, &Sha256::digest(&self.canonical));
        let key = self.day_key(day);
        let signature = hmac(&key, &self.to_sign);

        out.extend_from_slice(b"AWS4-HMAC-SHA256 Credential=");
        out.extend_from_slice(self.access_key.as_bytes());
        out.push(b'/');
        out.extend_from_slice(&self.to_sign[scope_at..scope_end]);
        out.extend_from_slice(b", SignedHeaders=");
        out.extend_from_slice(signed.as_bytes());
        out.extend_from_slice(b", Signature=");
        push_hex(out, &signature);
    }
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

/// Appends `bytes` as lowercase hex.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Appends `s` URI-encoded as SigV4 wants it; `/` is kept when `path` is true.
pub fn push_encoded(out: &mut String, s: &str, path: bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (path && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// `YYYYMMDDTHHMMSSZ` for a time in seconds since the Unix epoch (UTC).
pub fn amz_date(unix_secs: u64, out: &mut [u8; 16]) {
    let t = iolab_core::civil::UtcTime::from_ms(unix_secs as i64 * 1000);
    let s = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    );
    out.copy_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GET of /test.txt on examplebucket.s3.amazonaws.com with AWS's example keys,
    /// signed by botocore 1.x (`S3SigV4Auth(...).add_auth` at 2013-05-24T00:00:00Z, payload
    /// signing on): the same Authorization header byte for byte.
    #[test]
    fn signature_matches_botocore() {
        let mut s = Signer::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
            "us-east-1",
        );
        let mut out = Vec::new();
        s.sign(
            &SignInput {
                method: "GET",
                path: "/test.txt",
                query: "",
                host: "examplebucket.s3.amazonaws.com",
                payload_hash: EMPTY_SHA256,
                content_md5: None,
                amz_date: "20130524T000000Z",
            },
            &mut out,
        );
        let auth = String::from_utf8(out).unwrap();
        assert!(auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="
        ), "{auth}");
        assert_eq!(&auth[auth.len() - 64..], BOTOCORE_SIGNATURE);
    }

    const BOTOCORE_SIGNATURE: &str =
        "df548e2ce037944d03f3e68682813b093763996d597cf890ca3d9037fd231eb4";

    #[test]
    fn dates_and_encoding() {
        let mut d = [0u8; 16];
        amz_date(1_369_353_600, &mut d);
        assert_eq!(&d, b"20130524T000000Z");
        amz_date(951_782_400 + 86_399, &mut d); // 2000-02-29 23:59:59
        assert_eq!(&d, b"20000229T235959Z");
        let mut s = String::new();
        push_encoded(&mut s, "a b/c~d*é", true);
        assert_eq!(s, "a%20b/c~d%2A%C3%A9");
        s.clear();
        push_encoded(&mut s, "a/b", false);
        assert_eq!(s, "a%2Fb");
    }
}
