//! The live page's HTTP server: hyper's HTTP/1 on a one-thread tokio runtime of its own,
//! bounded so that no client can take the run's memory or threads: at most
//! [`MAX_CONNECTIONS`] at once (one more is answered 503 and closed), a request head of
//! at most [`MAX_HEAD`] bytes (hyper answers a longer one 431), the head within
//! [`HEAD_TIMEOUT`] and the whole exchange within [`CONNECTION_TIMEOUT`], one request per
//! connection, no request body ever read. It answers until [`Server::stop`] (the run's
//! end) or the process exits.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};

/// Connections served at once: a page, a scraper and a script, with room to spare.
pub const MAX_CONNECTIONS: usize = 16;
/// The largest request head read (hyper's smallest buffer).
pub const MAX_HEAD: usize = 8192;
/// Time for a client to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for a whole exchange, answer included.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// What the server answers: the status, the body and its content type.
pub type Answer = (StatusCode, String, &'static str);

/// A running server; [`Server::stop`] closes its socket.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves `listener` (bound already, so that a port in use is the caller's error)
    /// with `route` for every GET and HEAD.
    pub fn start(
        listener: TcpListener,
        route: impl Fn(&str) -> Answer + Send + Sync + 'static,
    ) -> Result<Server> {
        let addr = listener
            .local_addr()
            .context("--serve: the socket has no address")?;
        listener
            .set_nonblocking(true)
            .context("--serve: cannot make the socket non-blocking")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("--serve: cannot start the server's runtime")?;
        let stop = Arc::new(AtomicBool::new(false));
        let (route, flag) = (Arc::new(route), stop.clone());
        let thread = std::thread::Builder::new()
            .name("iolab-serve".into())
            .spawn(move || runtime.block_on(accept_loop(listener, route, flag)))
            .context("--serve: cannot start the server's thread")?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the socket and ends every connection (within a tenth of a second).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept_loop<R>(listener: TcpListener, route: Arc<R>, stop: Arc<AtomicBool>)
where
    R: Fn(&str) -> Answer + Send + Sync + 'static,
{
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    while !stop.load(Ordering::Relaxed) {
        // Wake up now and then to see whether the run is over.
        let Ok(accepted) =
            tokio::time::timeout(Duration::from_millis(100), listener.accept()).await
        else {
            continue;
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors or a connection reset before accept: keep serving.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let _ = stream.try_write(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            continue;
        };
        let route = route.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(req, route.clone()));
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            drop(slot);
        });
    }
}

async fn answer<R>(
    req: Request<Incoming>,
    route: Arc<R>,
) -> Result<Response<Full<Bytes>>, Infallible>
where
    R: Fn(&str) -> Answer,
{
    let response = Response::builder().header(header::CONNECTION, "close");
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(response
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header(header::ALLOW, "GET, HEAD")
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Full::new(Bytes::from_static(
                b"read-only: only GET and HEAD\n",
            )))
            .expect("a static response"));
    }
    let (status, body, kind) = route(req.uri().path());
    Ok(response
        .status(status)
        .header(header::CONTENT_TYPE, kind)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Full::new(Bytes::from(body)))
        .expect("a response of known headers"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn server() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        Server::start(listener, |path| match path {
            "/" => (StatusCode::OK, "hello\n".into(), "text/plain"),
            _ => (StatusCode::NOT_FOUND, "not found\n".into(), "text/plain"),
        })
        .unwrap()
    }

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(request).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn answers_get_and_head_refuses_other_methods_and_unknown_paths() {
        let srv = server();
        let got = exchange(srv.addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
        assert!(got.ends_with("\r\n\r\nhello\n"), "{got}");
        assert!(got.to_lowercase().contains("connection: close"), "{got}");
        let head = exchange(srv.addr(), b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let post = exchange(
            srv.addr(),
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        );
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        let missing = exchange(srv.addr(), b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    }

    #[test]
    fn a_request_head_too_large_is_refused() {
        let srv = server();
        let mut req = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        req.extend(std::iter::repeat_n(b'a', 4 * MAX_HEAD));
        req.extend(b"\r\n\r\n");
        let got = exchange(srv.addr(), &req);
        assert!(got.starts_with("HTTP/1.1 431"), "{got}");
    }

    /// Idle connections hold at most MAX_CONNECTIONS slots: one more is answered 503 at
    /// once, and the idle ones are closed once their head is late; then the server
    /// answers again.
    #[test]
    fn connections_are_bounded_and_idle_ones_closed() {
        let srv = server();
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(srv.addr()).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let refused = exchange(srv.addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        for mut s in idle {
            // The server closes it (end of file), not our own read timeout.
            s.set_read_timeout(Some(HEAD_TIMEOUT * 4)).unwrap();
            let mut buf = Vec::new();
            let read = s.read_to_end(&mut buf);
            assert!(read.is_ok(), "an idle connection stayed open: {read:?}");
        }
        let got = exchange(srv.addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    }

    #[test]
    fn stop_closes_the_socket() {
        let mut srv = server();
        let addr = srv.addr();
        srv.stop();
        assert!(
            TcpStream::connect(addr).is_err(),
            "still listening on {addr}"
        );
    }
}
