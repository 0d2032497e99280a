//! A blocking HTTP/1.1 connection for S3 requests: [`Conn`] writes a request head and
//! body, reads the response head ([`Head`], parsed by httparse) and streams the body to
//! a sink as it arrives (content-length, chunked, or until close), so a GET never holds
//! an object. One connection per worker and endpoint, kept alive between requests;
//! [`Stream`] is plain TCP or TLS (rustls).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::object::tls::TlsStream;

/// Bytes read from the socket at once, and the largest response head accepted.
const READ_BUF: usize = 256 << 10;
const MAX_HEAD: usize = 64 << 10;

pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(b),
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A response's status line and the headers iolab uses.
#[derive(Debug, Default)]
pub struct Head {
    pub status: u16,
    pub content_length: Option<u64>,
    pub chunked: bool,
    /// The server will close the connection after this response.
    pub close: bool,
    pub etag: Option<String>,
}

pub struct Conn {
    stream: Stream,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Responses read on this connection so far (a reused connection the server closed
    /// while idle fails its next request without an answer).
    pub served: u64,
    /// The server said it closes, or a body was read to the end of the stream.
    pub closing: bool,
}

/// Where a response body goes, and when its first byte came.
pub struct BodySink<'a> {
    pub sink: &'a mut dyn FnMut(&[u8]),
    pub first_byte: Option<Instant>,
}

impl Conn {
    pub fn new(stream: Stream) -> Conn {
        Conn {
            stream,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            served: 0,
            closing: false,
        }
    }

    /// Connects to `host:port` (no TLS) with a read and write timeout.
    pub fn connect_plain(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let s = TcpStream::connect((host, port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        Ok(s)
    }

    pub fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.stream.write_all(b)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }

    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = self.stream.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Reads and parses the response head, leaving any body bytes after it buffered.
    pub fn read_head(&mut self) -> io::Result<Head> {
        loop {
            if self.end > self.start {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut r = httparse::Response::new(&mut headers);
                match r.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => {
                        let mut head = Head {
                            status: r.code.unwrap_or(0),
                            close: r.version == Some(0),
                            ..Head::default()
                        };
                        for h in r.headers.iter() {
                            let v = std::str::from_utf8(h.value).unwrap_or("").trim();
                            if h.name.eq_ignore_ascii_case("content-length") {
                                head.content_length = v.parse().ok();
                            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                                head.chunked = v.to_ascii_lowercase().contains("chunked");
                            } else if h.name.eq_ignore_ascii_case("connection") {
                                let v = v.to_ascii_lowercase();
                                head.close = v.contains("close");
                            } else if h.name.eq_ignore_ascii_case("etag") {
                                head.etag = Some(v.to_string());
                            }
                        }
                        self.start += n;
                        if head.status == 100 {
                            continue;
                        }
                        self.served += 1;
                        self.closing |= head.close;
                        return Ok(head);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("the server's response does not parse as HTTP/1.1 ({e})"),
                        ));
                    }
                }
                if self.end - self.start >= MAX_HEAD {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the server's response head is over 64 KiB",
                    ));
                }
            }
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection without an answer",
                ));
            }
        }
    }

    /// Streams the body of a response to `to`; `none` for a HEAD request or a status
    /// without a body. Returns the body's length.
    pub fn read_body(&mut self, head: &Head, none: bool, to: &mut BodySink<'_>) -> io::Result<u64> {
        if none || head.status == 204 || head.status == 304 || (100..200).contains(&head.status) {
            return Ok(0);
        }
        if head.chunked {
            return self.chunked(to);
        }
        match head.content_length {
            Some(n) => self.exact(n, to),
            None => {
                // Until the server closes.
                self.closing = true;
                let mut total = 0;
                loop {
                    total += self.drain(u64::MAX, to);
                    if self.fill()? == 0 {
                        return Ok(total);
                    }
                }
            }
        }
    }

    /// Passes up to `most` buffered bytes to the sink.
    fn drain(&mut self, most: u64, to: &mut BodySink<'_>) -> u64 {
        let n = ((self.end - self.start) as u64).min(most) as usize;
        if n > 0 {
            if to.first_byte.is_none() {
                to.first_byte = Some(Instant::now());
            }
            (to.sink)(&self.buf[self.start..self.start + n]);
            self.start += n;
        }
        n as u64
    }

    fn exact(&mut self, n: u64, to: &mut BodySink<'_>) -> io::Result<u64> {
        let mut left = n;
        loop {
            left -= self.drain(left, to);
            if left == 0 {
                return Ok(n);
            }
            if self.fill()? == 0 {
                self.closing = true;
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the server closed the connection {} bytes into a body of {n}",
                        n - left
                    ),
                ));
            }
        }
    }

    fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(i) = self.buf[self.start..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                let s = String::from_utf8_lossy(&self.buf[self.start..self.start + i]).into_owned();
                self.start += i + 2;
                return Ok(s);
            }
            if self.end - self.start > 4096 || self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a chunked body broke off",
                ));
            }
        }
    }

    fn chunked(&mut self, to: &mut BodySink<'_>) -> io::Result<u64> {
        let mut total = 0;
        loop {
            let line = self.line()?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "a chunk size does not parse")
            })?;
            if size == 0 {
                // Trailers, then the empty line.
                while !self.line()?.is_empty() {}
                return Ok(total);
            }
            total += self.exact(size, to)?;
            if !self.line()?.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a chunk did not end where its size said",
                ));
            }
        }
    }
}
