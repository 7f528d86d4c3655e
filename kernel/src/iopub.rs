//! The IOPub publisher. One task owns the PUB socket; everything else (the
//! shell and control tasks, the evaluation thread) hands it messages through
//! an unbounded channel, which keeps them in the order they were produced:
//! a cell's streams always precede its reply's `idle`.
//!
//! What output costs when a client reads slowly or not at all (a subscriber needs no key) is
//! bounded per subscriber by the socket's high-water mark (`pub_socket`): that client loses
//! output, every other client gets all of it.

use jupyter_protocol::{JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::Connection;
use tokio::sync::mpsc;

use crate::pub_socket::PubSocket;
use crate::wire::child_of;

#[derive(Clone)]
pub struct Iopub {
    queue: mpsc::UnboundedSender<JupyterMessage>,
}

impl Iopub {
    /// Start the publishing task on the current runtime.
    pub fn start(mut connection: Connection<PubSocket>) -> Iopub {
        let (queue, mut pending) = mpsc::unbounded_channel::<JupyterMessage>();
        tokio::spawn(async move {
            while let Some(message) = pending.recv().await {
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

async fn send(connection: &mut Connection<PubSocket>, message: JupyterMessage) {
    let msg_type = message.header.msg_type.clone();
    if let Err(error) = connection.send(message).await {
        eprintln!("[devarray-kernel] could not publish {msg_type} on iopub: {error}");
    }
}
