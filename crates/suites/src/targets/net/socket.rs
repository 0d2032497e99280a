//! The TCP side of `iolab net`: [`listen`] opens this rank's listener, a sender
//! [`connect`]s to its peer and introduces itself with a 16-byte [`Hello`], a receiver
//! [`accept`]s connections (skipping strangers) until its deadline. After the start gate
//! (the engine's [`UnitWorker`]) [`send`] streams blocks until its size or runtime is
//! done and [`receive`] counts what arrives until end of stream: the receiver's count is
//! the measurement.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::units::Nanos;

use iolab_engine::{Clock, UnitWorker};

const MAGIC: u64 = u64::from_le_bytes(*b"iolabnet");

/// What a sender says first: who it is and for which phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    pub sender: u32,
    pub phase: u32,
}

impl Hello {
    fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&self.sender.to_le_bytes());
        b[12..].copy_from_slice(&self.phase.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8; 16]) -> Option<Hello> {
        let quad = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let magic = u64::from(quad(0)) | (u64::from(quad(4)) << 32);
        (magic == MAGIC).then_some(Hello {
            sender: quad(8),
            phase: quad(12),
        })
    }
}

/// Listens on every interface (IPv6 and IPv4 where the system allows both).
pub fn listen(port: u16) -> io::Result<TcpListener> {
    let listener = TcpListener::bind((Ipv6Addr::UNSPECIFIED, port))
        .or_else(|_| TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Where to reach a peer: loopback on the same host, else its advertised address.
pub fn peer_addresses(same_host: bool, address: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    if same_host {
        return Ok(vec![
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
        ]);
    }
    Ok((address, port).to_socket_addrs()?.collect())
}

/// Connects to the first address that answers and says hello.
pub fn connect(addrs: &[SocketAddr], hello: Hello, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the address resolves to nothing");
    for a in addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(mut s) => {
                s.set_nodelay(true)?;
                s.set_write_timeout(Some(timeout))?;
                s.write_all(&hello.to_bytes())?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Accepts the next connection that says `expected`, until `timeout` has passed.
pub fn accept(listener: &TcpListener, expected: Hello, timeout: Duration) -> io::Result<TcpStream> {
    let deadline = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(timeout))?;
                let mut b = [0u8; 16];
                if s.read_exact(&mut b).is_ok() && Hello::from_bytes(&b) == Some(expected) {
                    return Ok(s);
                }
                // A stranger (or a peer of another phase): not ours.
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no connection arrived in time",
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Everything a streaming worker needs after its connection is up.
pub struct Stream<'a, C: Clock> {
    pub stream: TcpStream,
    pub clock: &'a C,
    pub block_size: usize,
    /// Bytes to send (size-based), or None to send until `runtime` is over.
    pub size: Option<u64>,
    pub runtime: Option<Nanos>,
    pub error: ErrorRecord,
}

fn fail(worker: &mut UnitWorker<'_>, template: &ErrorRecord, e: &io::Error) {
    let mut r = template.clone();
    r.errno = e.raw_os_error();
    r.message = format!("{}: {e}", r.message);
    worker.error(r);
}

/// Sends blocks until done, then closes its side. It measures only its errors; its
/// count is 0.
pub fn send<C: Clock>(mut s: Stream<'_, C>, worker: &mut UnitWorker<'_>) -> u64 {
    let Some(start) = worker.wait_for_start(true) else {
        return 0;
    };
    let buf = vec![0xA5u8; s.block_size];
    let deadline = s.runtime.map(|r| start + r);
    let mut sent = 0u64;
    loop {
        if worker.stopped() {
            break;
        }
        let n = match (s.size, deadline) {
            (Some(size), _) if sent >= size => break,
            (Some(size), _) => (size - sent).min(s.block_size as u64) as usize,
            (None, Some(d)) if s.clock.now() >= d => break,
            _ => s.block_size,
        };
        if let Err(e) = s.stream.write_all(&buf[..n]) {
            fail(worker, &s.error, &e);
            break;
        }
        sent += n as u64;
    }
    let _ = s.stream.shutdown(std::net::Shutdown::Write);
    0
}

/// Counts what arrives until the sender closes: one transfer per block, its latency the
/// time the block took to arrive. Its count is the blocks received.
pub fn receive<C: Clock>(mut s: Stream<'_, C>, worker: &mut UnitWorker<'_>) -> u64 {
    let Some(start) = worker.wait_for_start(true) else {
        return 0;
    };
    let mut buf = vec![0u8; s.block_size];
    let (mut filled, mut blocks, mut bytes) = (0usize, 0u64, 0u64);
    let mut block_start = start;
    loop {
        match s.stream.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                fail(worker, &s.error, &e);
                break;
            }
        }
        if filled == buf.len() {
            let now = s.clock.now();
            worker.record(
                OpKind::Transfer,
                now.saturating_sub(block_start),
                filled as u64,
                now,
            );
            (blocks, bytes, block_start, filled) = (blocks + 1, bytes + filled as u64, now, 0);
            worker.show(blocks, bytes);
        }
    }
    if filled > 0 {
        let now = s.clock.now();
        worker.record(
            OpKind::Transfer,
            now.saturating_sub(block_start),
            filled as u64,
            now,
        );
        blocks += 1;
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_strangers_are_refused() {
        let h = Hello {
            sender: 7,
            phase: 2,
        };
        assert_eq!(Hello::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Hello::from_bytes(b"GET / HTTP/1.1\r\n"), None);
    }

    #[test]
    fn accept_skips_a_stranger_and_times_out_cleanly() {
        let l = listen(0).unwrap();
        let port = l.local_addr().unwrap().port();
        let addrs = peer_addresses(true, "unused", port).unwrap();
        let mut stranger = TcpStream::connect(addrs[0]).unwrap();
        stranger.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let want = Hello {
            sender: 1,
            phase: 0,
        };
        let _peer = connect(&addrs, want, Duration::from_secs(5)).unwrap();
        assert!(accept(&l, want, Duration::from_secs(5)).is_ok());
        let err = accept(&l, want, Duration::from_millis(20)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}
