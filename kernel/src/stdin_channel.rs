//! The stdin channel: `input()`, `getpass()` and `sys.stdin` reads of a cell whose
//! execute_request said `allow_stdin: true` become an `input_request` sent on the stdin ROUTER
//! socket to the client that sent the cell (the request's routing identity), answered by that
//! client's `input_reply`, as ipykernel's `_input_request`. The evaluation thread waits for the
//! answer and gives up when the cell is interrupted ("KeyboardInterrupt: Interrupted by user").

use std::time::Duration;

use devarray::{InterruptHandle, StdinReply, StdinRequest};
use jupyter_protocol::{InputRequest, JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::KernelStdinConnection;
use tokio::sync::{mpsc, oneshot};

use crate::wire::{child_of, read_message, ReadError};

/// One input request on its way to the socket task.
struct Ask {
    request: JupyterMessage,
    answer: oneshot::Sender<String>,
}

/// The evaluation thread's handle on the stdin task.
#[derive(Clone)]
pub struct StdinAsker(mpsc::UnboundedSender<Ask>);

impl StdinAsker {
    /// Starts the task that serves the stdin socket.
    pub fn start(connection: KernelStdinConnection) -> StdinAsker {
        let (asks, queue) = mpsc::unbounded_channel();
        tokio::spawn(serve(connection, queue));
        StdinAsker(asks)
    }

    /// Asks the client for a line on behalf of the cell `parent`, waiting until it answers or
    /// `interrupt` is set. The value `"\x04"` is the user ending input (ipykernel's EOFError).
    pub fn read_line(
        &self,
        parent: &JupyterMessage,
        request: StdinRequest<'_>,
        interrupt: &InterruptHandle,
    ) -> StdinReply {
        let content = InputRequest {
            prompt: request.prompt.unwrap_or("").to_string(),
            password: request.password,
        };
        let (answer, mut answered) = oneshot::channel();
        let ask = Ask {
            request: child_of(content, parent),
            answer,
        };
        if self.0.send(ask).is_err() {
            return StdinReply::Eof("");
        }
        loop {
            match answered.try_recv() {
                Ok(value) if value == "\x04" => return StdinReply::Eof(""),
                Ok(mut value) => {
                    value.push('\n');
                    return StdinReply::Line(value.into_bytes());
                }
                Err(oneshot::error::TryRecvError::Closed) => return StdinReply::Eof(""),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if interrupt.take() {
                return StdinReply::Interrupted("Interrupted by user");
            }
            // ipykernel polls its socket every 10 ms the same way.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Sends each request and hands the next input_reply to the request waiting for it. A reply
/// that no request waits for (its cell was interrupted) is dropped, as ipykernel purges stale
/// replies before asking again.
async fn serve(mut connection: KernelStdinConnection, mut queue: mpsc::UnboundedReceiver<Ask>) {
    let mut waiting: Option<oneshot::Sender<String>> = None;
    loop {
        tokio::select! {
            ask = queue.recv() => {
                let Some(ask) = ask else { return };
                if let Err(e) = connection.send(ask.request).await {
                    eprintln!("[devarray-kernel] stdin: could not send input_request: {e}");
                    // Dropping the answer ends the wait: the read finds no input.
                    continue;
                }
                waiting = Some(ask.answer);
            }
            message = read_message(&mut connection) => match message {
                Ok(message) => match message.content {
                    JupyterMessageContent::InputReply(reply) => {
                        if let Some(answer) = waiting.take() {
                            let _ = answer.send(reply.value);
                        }
                    }
                    other => eprintln!(
                        "[devarray-kernel] stdin: ignoring unexpected {}",
                        other.message_type()
                    ),
                },
                Err(ReadError::Dropped(why)) => {
                    eprintln!("[devarray-kernel] stdin: dropped a message: {why}");
                }
                Err(ReadError::Socket(why)) => {
                    eprintln!("[devarray-kernel] stdin: receive failed: {why}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}
