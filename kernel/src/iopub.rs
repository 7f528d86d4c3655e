//! The IOPub publisher. One task owns the PUB socket; everything else (the
//! shell and control tasks, the evaluation thread) hands it messages through
//! an unbounded channel, which keeps them in the order they were produced:
//! a cell's streams always precede its reply's `idle`.
//!
//! A high-water mark bounds what output costs when a client reads slowly or
//! not at all (a subscriber needs no key): the PUB socket keeps a queue per
//! subscriber, and every message still queued for someone is counted here
//! ([`Backlog`]). Past the mark, stream and display output is dropped, as a
//! ZeroMQ PUB socket drops at its HWM, until the backlog falls to half of it;
//! a notice on stderr says so when dropping starts and how much was dropped
//! when it stops. Status, execute input and results, errors and replies are
//! never dropped.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jupyter_protocol::{JupyterMessage, JupyterMessageContent, StreamContent};
use jupyter_zmq_client::{Connection, KernelIoPubConnection};
use tokio::sync::mpsc;
use zeromq::{PubSocket, SocketSend, ZmqMessage, ZmqResult};

use crate::wire::child_of;

/// Messages still queued for a subscriber, at most (libzmq's default `SNDHWM`).
const HWM_MESSAGES: usize = 1000;
/// Bytes of messages still queued for a subscriber, at most.
const HWM_BYTES: usize = 32 << 20;
/// How long output waits for a reader to catch up before it is dropped (a healthy
/// client drains a burst well within it).
const CATCH_UP: Duration = Duration::from_millis(250);

#[derive(Clone)]
pub struct Iopub {
    queue: mpsc::UnboundedSender<JupyterMessage>,
}

impl Iopub {
    /// Start the publishing task on the current runtime.
    pub fn start(connection: KernelIoPubConnection) -> Iopub {
        let Connection {
            socket,
            mac,
            session_id,
        } = connection;
        // The same connection (key, session), its socket wrapped to count what stays queued.
        let mut connection = Connection {
            socket: TrackedPub {
                inner: socket,
                backlog: Backlog::default(),
            },
            mac,
            session_id,
        };
        let (queue, mut pending) = mpsc::unbounded_channel::<JupyterMessage>();
        tokio::spawn(async move {
            let mut dropping: Option<Dropped> = None;
            while let Some(message) = pending.recv().await {
                if droppable(&message.content) {
                    let over = connection.socket.backlog.over_hwm();
                    match &mut dropping {
                        Some(d) if connection.socket.backlog.under_low_mark() => {
                            let notice = d.resumed();
                            dropping = None;
                            send(&mut connection, notice_for(&message, &notice)).await;
                        }
                        Some(d) => {
                            d.count(&message);
                            continue;
                        }
                        None if over && !catch_up(&mut connection.socket.backlog).await => {
                            let mut d = Dropped::default();
                            d.count(&message);
                            let notice = "[devarray-kernel] IOPub high-water mark reached (a \
                                          client is not reading output): output is dropped \
                                          until it catches up\n";
                            send(&mut connection, notice_for(&message, notice)).await;
                            dropping = Some(d);
                            continue;
                        }
                        None => {}
                    }
                }
                send(&mut connection, message).await;
            }
        });
        Iopub { queue }
    }

    /// An Iopub whose messages go to the returned receiver instead of a socket.
    #[cfg(test)]
    pub fn to_channel() -> (Iopub, mpsc::UnboundedReceiver<JupyterMessage>) {
        let (queue, pending) = mpsc::unbounded_channel();
        (Iopub { queue }, pending)
    }

    /// Publish `content` as a child of `parent`. Callable from any thread.
    pub fn publish(&self, content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) {
        if self
            .queue
            .send(with_topic(child_of(content, parent)))
            .is_err()
        {
            eprintln!("[devarray-kernel] iopub is closed; dropped an output message");
        }
    }
}

/// On a PUB socket the first frame is the topic; ipykernel-style topics
/// instead of the requester's routing id.
fn with_topic(mut message: JupyterMessage) -> JupyterMessage {
    message.zmq_identities = vec![format!("kernel.{}", message.header.msg_type).into()];
    message
}

async fn send(connection: &mut Connection<TrackedPub>, message: JupyterMessage) {
    let msg_type = message.header.msg_type.clone();
    if let Err(error) = connection.send(message).await {
        eprintln!("[devarray-kernel] could not publish {msg_type} on iopub: {error}");
    }
}

/// Output a slow reader may lose: streams and displays. Everything that says where a request
/// stands (status, execute_input, results, errors, shutdown) always goes out.
fn droppable(content: &JupyterMessageContent) -> bool {
    matches!(
        content,
        JupyterMessageContent::StreamContent(_)
            | JupyterMessageContent::DisplayData(_)
            | JupyterMessageContent::UpdateDisplayData(_)
    )
}

/// A stderr notice under the same request as `message`.
fn notice_for(message: &JupyterMessage, text: &str) -> JupyterMessage {
    let mut notice = child_of(StreamContent::stderr(text), message);
    // `child_of` takes its parent from `message`'s header; the notice belongs to the request
    // `message` answers.
    notice.parent_header = message.parent_header.clone();
    with_topic(notice)
}

/// Waits up to [`CATCH_UP`] for the backlog to fall under the mark; whether it did.
async fn catch_up(backlog: &mut Backlog) -> bool {
    let deadline = Instant::now() + CATCH_UP;
    while Instant::now() < deadline {
        // The socket's own tasks run on this runtime: let them write.
        tokio::time::sleep(Duration::from_millis(5)).await;
        if !backlog.over_hwm() {
            return true;
        }
    }
    false
}

/// What one stretch of dropping has lost.
#[derive(Default)]
struct Dropped {
    messages: usize,
    bytes: usize,
}

impl Dropped {
    fn count(&mut self, message: &JupyterMessage) {
        self.messages += 1;
        if let JupyterMessageContent::StreamContent(s) = &message.content {
            self.bytes += s.text.len();
        }
    }

    fn resumed(&self) -> String {
        format!(
            "[devarray-kernel] output resumed; {} output messages ({} bytes of text) were dropped\n",
            self.messages, self.bytes
        )
    }
}

/// The messages sent and still held by the socket's queues: each entry keeps one frame of a
/// message, and the socket's copies share its buffer, so a frame that only this list holds has
/// been written out to every subscriber (or had none).
#[derive(Default)]
struct Backlog {
    frames: VecDeque<(Bytes, usize)>,
    bytes: usize,
}

impl Backlog {
    fn push(&mut self, message: &ZmqMessage) {
        let size = message.iter().map(Bytes::len).sum();
        // The largest frame (the content): never empty, so never a static buffer, which would
        // never read as unique.
        if let Some(frame) = message.iter().max_by_key(|f| f.len()) {
            self.frames.push_back((frame.clone(), size));
            self.bytes += size;
        }
    }

    /// Forgets the messages every subscriber has been sent (in order: one queue per
    /// subscriber is first in, first out).
    fn prune(&mut self) {
        while let Some((frame, size)) = self.frames.front_mut() {
            if !frame.is_unique() {
                break;
            }
            self.bytes -= *size;
            self.frames.pop_front();
        }
    }

    fn over_hwm(&mut self) -> bool {
        self.prune();
        self.frames.len() >= HWM_MESSAGES || self.bytes >= HWM_BYTES
    }

    fn under_low_mark(&mut self) -> bool {
        self.prune();
        self.frames.len() < HWM_MESSAGES / 2 && self.bytes < HWM_BYTES / 2
    }
}

/// The PUB socket, recording each message it is given in its [`Backlog`].
struct TrackedPub {
    inner: PubSocket,
    backlog: Backlog,
}

#[async_trait::async_trait]
impl SocketSend for TrackedPub {
    async fn send(&mut self, message: ZmqMessage) -> ZmqResult<()> {
        self.backlog.push(&message);
        self.inner.send(message).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_counts_only_messages_someone_still_holds() {
        let mut backlog = Backlog::default();
        let held: Vec<ZmqMessage> = (0..HWM_MESSAGES)
            .map(|i| ZmqMessage::from(format!("message {i}")))
            .collect();
        for m in &held {
            backlog.push(m);
        }
        assert!(backlog.over_hwm());
        // A subscriber's queue releases its copies in order as they are written out.
        drop(held);
        assert!(!backlog.over_hwm());
        assert!(backlog.under_low_mark());
        assert_eq!(backlog.bytes, 0);
    }

    #[test]
    fn large_unread_messages_reach_the_mark_by_size() {
        let mut backlog = Backlog::default();
        let big = ZmqMessage::from(vec![b'x'; HWM_BYTES]);
        backlog.push(&big);
        assert!(backlog.over_hwm());
        drop(big);
        assert!(backlog.under_low_mark());
    }
}
