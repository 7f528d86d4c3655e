//! IOPub's PUB socket, speaking ZMTP 3.0 (NULL mechanism) over TCP itself, so that each
//! subscriber has a queue of its own with a high-water mark, as a libzmq PUB socket has
//! (`SNDHWM`): a client that does not read loses output past its mark, and every other client
//! still gets everything. (zeromq-rs's `PubSocket` bounds each queue only by a message count
//! of 100,000, whatever their size, and shows the kernel no per-subscriber state.)
//!
//! Past the mark, stream and display messages for that subscriber are dropped until its queue
//! falls to half; the messages that say where a request stands (status, execute input,
//! results, errors) are still queued up to twice the mark, so a slow client's busy/idle stays
//! right; past that the subscriber is stuck and loses everything, as with zmq.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use zeromq::{SocketSend, ZmqMessage, ZmqResult};

/// Messages queued for one subscriber, at most (libzmq's default `SNDHWM`).
pub const HWM_MESSAGES: usize = 1000;
/// Bytes queued for one subscriber, at most.
pub const HWM_BYTES: usize = 32 << 20;
/// How long output waits for a reader at its mark to catch up before it is dropped (a healthy
/// client drains a burst well within it).
const CATCH_UP: Duration = Duration::from_millis(250);
/// Frames longer than this need ZMTP's 8-byte size.
const SHORT_FRAME: usize = 255;
const FLAG_MORE: u8 = 1;
const FLAG_LONG: u8 = 2;
const FLAG_COMMAND: u8 = 4;

/// One connected subscriber's state, shared by the publisher and its writer task.
#[derive(Default)]
struct Subscriber {
    topics: Vec<Vec<u8>>,
    queue: VecDeque<ZmqMessage>,
    bytes: usize,
    /// Messages dropped since the queue reached its mark; None while none are dropped.
    dropped: Option<usize>,
    closed: bool,
}

impl Subscriber {
    fn wants(&self, topic: &[u8]) -> bool {
        self.topics.iter().any(|t| topic.starts_with(t))
    }

    /// Queues `message` unless the subscriber is past its mark; whether it was queued.
    fn offer(&mut self, message: &ZmqMessage, size: usize, droppable: bool) -> bool {
        let (n, b) = (self.queue.len(), self.bytes);
        if self.dropped.is_some() && n < HWM_MESSAGES / 2 && b < HWM_BYTES / 2 {
            self.dropped = None;
        }
        let over = n >= HWM_MESSAGES || b >= HWM_BYTES;
        let stuck = n >= 2 * HWM_MESSAGES || b >= 2 * HWM_BYTES;
        if (over && droppable) || stuck {
            *self.dropped.get_or_insert(0) += 1;
            return false;
        }
        self.queue.push_back(message.clone());
        self.bytes += size;
        true
    }
}

struct Peer {
    state: Mutex<Subscriber>,
    wake: Notify,
}

impl Peer {
    fn lock(&self) -> MutexGuard<'_, Subscriber> {
        // A panicking writer leaves the queue as it was; keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct Peers(Mutex<Vec<Arc<Peer>>>);

impl Peers {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Peer>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The bound socket. Sending never waits for a subscriber.
pub struct PubSocket {
    peers: Arc<Peers>,
}

impl PubSocket {
    /// Binds `endpoint` (`tcp://host:port`) and accepts subscribers on the current runtime.
    pub async fn bind(endpoint: &str) -> std::io::Result<PubSocket> {
        let address = endpoint.strip_prefix("tcp://").ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!("{endpoint}: the IOPub socket supports the tcp transport only"),
            )
        })?;
        let listener = TcpListener::bind(address).await?;
        let peers = Arc::new(Peers::default());
        let accepted = peers.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(serve(stream, accepted.clone()));
                    }
                    Err(e) => {
                        eprintln!("[devarray-kernel] iopub: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Ok(PubSocket { peers })
    }

    /// Queues `message` for every subscriber whose subscriptions match its first frame.
    pub fn publish(&self, message: &ZmqMessage) {
        let topic = message.get(0).map(|b| b.as_ref()).unwrap_or(b"");
        let droppable = droppable(topic);
        let size = message.iter().map(Bytes::len).sum();
        for peer in self.peers.lock().iter() {
            let mut s = peer.lock();
            if s.closed || !s.wants(topic) {
                continue;
            }
            let was_dropping = s.dropped.is_some();
            if s.offer(message, size, droppable) {
                if was_dropping {
                    eprintln!(
                        "[devarray-kernel] iopub: a subscriber caught up; output to it resumed"
                    );
                }
                drop(s);
                peer.wake.notify_one();
            } else if !was_dropping {
                eprintln!(
                    "[devarray-kernel] iopub: a subscriber is not reading (high-water mark reached); output to it is dropped until it catches up"
                );
            }
        }
    }

    /// (queued messages, queued bytes, dropping) per subscriber, for tests.
    #[cfg(test)]
    fn queues(&self) -> Vec<(usize, usize, bool)> {
        self.peers
            .lock()
            .iter()
            .map(|p| {
                let s = p.lock();
                (s.queue.len(), s.bytes, s.dropped.is_some())
            })
            .collect()
    }

    /// Whether a subscriber that wants `topic` has reached its mark but drops nothing yet.
    fn about_to_drop(&self, topic: &[u8]) -> bool {
        self.peers.lock().iter().any(|p| {
            let s = p.lock();
            !s.closed
                && s.dropped.is_none()
                && s.wants(topic)
                && (s.queue.len() >= HWM_MESSAGES || s.bytes >= HWM_BYTES)
        })
    }
}

#[async_trait::async_trait]
impl SocketSend for PubSocket {
    async fn send(&mut self, message: ZmqMessage) -> ZmqResult<()> {
        // A reader that only fell behind in a burst gets a moment to catch up before it loses
        // output; one that does not read costs that moment once per stretch of dropping.
        let topic = message.get(0).map(|b| b.to_vec()).unwrap_or_default();
        if droppable(&topic) {
            let deadline = Instant::now() + CATCH_UP;
            while self.about_to_drop(&topic) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        self.publish(&message);
        Ok(())
    }
}

/// Output a slow reader may lose: streams and displays (by the topic `kernel.<msg_type>`).
fn droppable(topic: &[u8]) -> bool {
    [&b".stream"[..], b".display_data", b".update_display_data"]
        .iter()
        .any(|t| topic.ends_with(t))
}

/// Our greeting: signature, version 3.0, the NULL mechanism, not as-server.
fn greeting() -> [u8; 64] {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[8] = 1;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 0;
    g[12..16].copy_from_slice(b"NULL");
    g
}

fn ready_command() -> Vec<u8> {
    let mut body = vec![5u8];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&3u32.to_be_bytes());
    body.extend_from_slice(b"PUB");
    let mut frame = vec![FLAG_COMMAND, body.len() as u8];
    frame.extend_from_slice(&body);
    frame
}

/// One subscriber: the handshake, then its subscriptions read and its queue written until
/// either side closes.
async fn serve(stream: TcpStream, peers: Arc<Peers>) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    if handshake(&mut reader, &mut writer).await.is_err() {
        return;
    }
    let peer = Arc::new(Peer {
        state: Mutex::new(Subscriber::default()),
        wake: Notify::new(),
    });
    peers.lock().push(peer.clone());
    let written = peer.clone();
    let write_task = tokio::spawn(async move { write_queue(&mut writer, &written).await });
    let _ = read_subscriptions(&mut reader, &peer).await;
    // The peer left (or broke the protocol): stop writing and forget its queue.
    peer.lock().closed = true;
    peer.wake.notify_one();
    let _ = write_task.await;
    peers.lock().retain(|p| !Arc::ptr_eq(p, &peer));
}

async fn handshake(reader: &mut OwnedReadHalf, writer: &mut OwnedWriteHalf) -> std::io::Result<()> {
    writer.write_all(&greeting()).await?;
    let mut theirs = [0u8; 64];
    reader.read_exact(&mut theirs).await?;
    if theirs[0] != 0xFF || theirs[9] & 1 != 1 || theirs[10] < 3 || &theirs[12..16] != b"NULL" {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a ZMTP 3 peer with the NULL mechanism",
        ));
    }
    writer.write_all(&ready_command()).await?;
    // Their READY (its properties do not matter to a PUB socket).
    let (flags, _) = read_frame(reader).await?;
    if flags & FLAG_COMMAND == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "expected READY",
        ));
    }
    Ok(())
}

/// Reads one frame: its flags and body.
async fn read_frame(reader: &mut OwnedReadHalf) -> std::io::Result<(u8, Vec<u8>)> {
    let flags = reader.read_u8().await?;
    let size = if flags & FLAG_LONG != 0 {
        reader.read_u64().await?
    } else {
        u64::from(reader.read_u8().await?)
    };
    // A subscription is a topic; nothing a client sends here is large.
    if size > 1 << 20 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "frame too large for an IOPub subscription",
        ));
    }
    let mut body = vec![0u8; size as usize];
    reader.read_exact(&mut body).await?;
    Ok((flags, body))
}

/// Subscriptions: messages `\x01topic` / `\x00topic` (ZMTP 3.0), or the SUBSCRIBE and CANCEL
/// commands of ZMTP 3.1.
async fn read_subscriptions(reader: &mut OwnedReadHalf, peer: &Peer) -> std::io::Result<()> {
    loop {
        let (flags, body) = read_frame(reader).await?;
        let change = if flags & FLAG_COMMAND != 0 {
            let n = usize::from(body.first().copied().unwrap_or(0));
            let name = body.get(1..1 + n).unwrap_or(b"");
            let rest = body.get(1 + n..).unwrap_or(b"").to_vec();
            match name {
                b"SUBSCRIBE" => Some((true, rest)),
                b"CANCEL" => Some((false, rest)),
                _ => None,
            }
        } else {
            match body.split_first() {
                Some((1, topic)) => Some((true, topic.to_vec())),
                Some((0, topic)) => Some((false, topic.to_vec())),
                _ => None,
            }
        };
        let mut s = peer.lock();
        match change {
            Some((true, topic)) => s.topics.push(topic),
            Some((false, topic)) => {
                if let Some(i) = s.topics.iter().position(|t| *t == topic) {
                    s.topics.remove(i);
                }
            }
            None => {}
        }
    }
}

/// Writes the subscriber's queue out as it fills, a batch at a time.
async fn write_queue(writer: &mut OwnedWriteHalf, peer: &Peer) -> std::io::Result<()> {
    let mut buf = BytesMut::new();
    loop {
        let batch: Vec<ZmqMessage> = {
            let mut s = peer.lock();
            if s.closed {
                return Ok(());
            }
            let n = s.queue.len().min(64);
            let batch: Vec<ZmqMessage> = s.queue.drain(..n).collect();
            batch
        };
        if batch.is_empty() {
            peer.wake.notified().await;
            continue;
        }
        let mut size = 0;
        for message in &batch {
            let frames = message.len();
            for (i, frame) in message.iter().enumerate() {
                let more = if i + 1 < frames { FLAG_MORE } else { 0 };
                if frame.len() > SHORT_FRAME {
                    buf.extend_from_slice(&[more | FLAG_LONG]);
                    buf.extend_from_slice(&(frame.len() as u64).to_be_bytes());
                } else {
                    buf.extend_from_slice(&[more, frame.len() as u8]);
                }
                buf.extend_from_slice(frame);
                size += frame.len();
            }
            // Write large messages as they come rather than gathering a batch of them.
            if buf.len() > 1 << 20 {
                writer.write_all(&buf).await?;
                buf.clear();
            }
        }
        writer.write_all(&buf).await?;
        buf.clear();
        let mut s = peer.lock();
        s.bytes = s.bytes.saturating_sub(size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(topic: &str, body: usize) -> ZmqMessage {
        let mut m = ZmqMessage::from(topic.to_string());
        m.push_back(Bytes::from(vec![b'x'; body]));
        m
    }

    #[test]
    fn a_full_queue_drops_output_but_keeps_status_up_to_twice_the_mark() {
        let mut s = Subscriber {
            topics: vec![Vec::new()],
            ..Subscriber::default()
        };
        let out = message("kernel.stream", 10);
        let status = message("kernel.status", 10);
        for _ in 0..HWM_MESSAGES {
            assert!(s.offer(&out, 10, true));
        }
        assert!(!s.offer(&out, 10, true));
        assert!(s.dropped.is_some());
        // While dropping, status still goes out, up to the hard limit.
        assert!(s.offer(&status, 10, false));
        while s.queue.len() < 2 * HWM_MESSAGES {
            assert!(s.offer(&status, 10, false));
        }
        assert!(!s.offer(&status, 10, false));
        // Drained below half the mark: output flows again.
        s.queue.clear();
        s.bytes = 0;
        assert!(s.offer(&out, 10, true));
        assert!(s.dropped.is_none());
    }

    #[test]
    fn the_mark_counts_bytes_too() {
        let mut s = Subscriber::default();
        let big = message("kernel.display_data", HWM_BYTES);
        assert!(s.offer(&big, HWM_BYTES, true));
        assert!(!s.offer(&big, HWM_BYTES, true));
    }

    #[test]
    fn topics_match_by_prefix() {
        let s = Subscriber {
            topics: vec![b"kernel.st".to_vec()],
            ..Subscriber::default()
        };
        assert!(s.wants(b"kernel.stream") && s.wants(b"kernel.status"));
        assert!(!s.wants(b"kernel.execute_result"));
        assert!(droppable(b"kernel.stream") && !droppable(b"kernel.status"));
    }

    /// Two subscribers over real TCP: one reads everything, the other never reads. The
    /// reader gets every message; the other's queue stops at its mark.
    #[test]
    fn a_subscriber_that_never_reads_does_not_hold_back_another() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = probe.local_addr().unwrap().port();
            drop(probe);
            let socket = PubSocket::bind(&format!("tcp://127.0.0.1:{port}"))
                .await
                .unwrap();
            let connect = || async {
                let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                s.write_all(&greeting()).await.unwrap();
                let mut g = [0u8; 64];
                s.read_exact(&mut g).await.unwrap();
                assert_eq!((g[0], g[9], g[10]), (0xFF, 0x7F, 3));
                let mut ready = vec![FLAG_COMMAND, 0];
                let body = b"\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB";
                ready[1] = body.len() as u8;
                ready.extend_from_slice(body);
                s.write_all(&ready).await.unwrap();
                // Subscribe to everything (ZMTP 3.0 style).
                s.write_all(&[0, 1, 1]).await.unwrap();
                s
            };
            let mut reader = connect().await;
            let stuck = connect().await;
            // Their READY frames and subscriptions reach the socket.
            while socket.queues().len() < 2
                || socket
                    .peers
                    .lock()
                    .iter()
                    .any(|p| p.lock().topics.is_empty())
            {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            let n = 5000;
            let payload = 4096;
            let read_all = tokio::spawn(async move {
                // Skip their READY command, then count the two-frame messages.
                let mut got = 0;
                let mut frames = 0;
                loop {
                    let flags = reader.read_u8().await.unwrap();
                    let size = if flags & FLAG_LONG != 0 {
                        reader.read_u64().await.unwrap() as usize
                    } else {
                        reader.read_u8().await.unwrap() as usize
                    };
                    let mut body = vec![0u8; size];
                    reader.read_exact(&mut body).await.unwrap();
                    if flags & FLAG_COMMAND != 0 {
                        continue;
                    }
                    frames += 1;
                    if flags & FLAG_MORE == 0 {
                        got += 1;
                        if got == n {
                            return frames;
                        }
                    }
                }
            });
            let mut socket = socket;
            for _ in 0..n {
                socket
                    .send(message("kernel.stream", payload))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
            let frames = tokio::time::timeout(std::time::Duration::from_secs(60), read_all)
                .await
                .expect("the reading subscriber got every message")
                .unwrap();
            assert_eq!(frames, 2 * n);
            let queues = socket.queues();
            let most = queues.iter().map(|q| q.0).max().unwrap();
            assert!(most <= HWM_MESSAGES, "{queues:?}");
            assert!(
                queues.iter().any(|q| q.2),
                "the stuck one drops: {queues:?}"
            );
            drop(stuck);
        });
    }
}
