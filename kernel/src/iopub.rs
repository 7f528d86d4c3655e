//! The IOPub publisher. One task owns the PUB socket; everything else (the
//! shell and control tasks, the evaluation thread) hands it messages through
//! an unbounded channel, which keeps them in the order they were produced:
//! a cell's streams always precede its reply's `idle`.

use jupyter_protocol::{JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::KernelIoPubConnection;
use tokio::sync::mpsc;

use crate::wire::child_of;

#[derive(Clone)]
pub struct Iopub {
    queue: mpsc::UnboundedSender<JupyterMessage>,
}

impl Iopub {
    /// Start the publishing task on the current runtime.
    pub fn start(mut connection: KernelIoPubConnection) -> Iopub {
        let (queue, mut pending) = mpsc::unbounded_channel::<JupyterMessage>();
        tokio::spawn(async move {
            while let Some(message) = pending.recv().await {
                let msg_type = message.header.msg_type.clone();
                if let Err(error) = connection.send(message).await {
                    eprintln!("[devarray-kernel] could not publish {msg_type} on iopub: {error}");
                }
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
        let mut message = child_of(content, parent);
        // On a PUB socket the first frame is the topic; ipykernel-style topics
        // instead of the requester's routing id.
        message.zmq_identities = vec![format!("kernel.{}", message.header.msg_type).into()];
        if self.queue.send(message).is_err() {
            eprintln!("[devarray-kernel] iopub is closed; dropped an output message");
        }
    }
}
