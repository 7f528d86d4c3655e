//! The kernel's sockets and the tasks that serve them.
//!
//! Each channel has its own task on one tokio runtime; evaluation runs on its
//! own thread (see `evaluator`). So while a cell runs, the control task still
//! answers interrupt, shutdown and kernel_info. The heartbeat has a thread of
//! its own (`heartbeat`).

use std::time::Duration;

use jupyter_protocol::{
    CommClose, CommInfoReply, ConnectionInfo, ErrorOutput, ExecuteInput, ExecuteReply,
    ExecuteRequest, ExecutionCount, HistoryReply, HistoryRequest, InterruptReply, JupyterMessage,
    JupyterMessageContent, ReplyError, ReplyStatus, ShutdownReply, Status, Transport,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_shell_connection,
    create_kernel_stdin_connection, Connection, KernelControlConnection, KernelShellConnection,
};
use tokio::sync::{mpsc, oneshot};

use crate::evaluator::{Evaluator, ExecuteJob, Job};
use crate::history::History;
use crate::iopub::Iopub;
use crate::kernel_info::kernel_info_reply;
use crate::parent_watch::ParentWatch;
use crate::pub_socket::PubSocket;
use crate::stdin_channel::StdinAsker;
use crate::wire::{child_of, read_message, ReadError};

/// Why the kernel stops.
#[derive(Debug)]
enum Exit {
    Shutdown { restart: bool },
    ParentDied(String),
    ChannelFailed(&'static str),
}

/// Check the connection file before binding anything.
pub fn validate(info: &ConnectionInfo) -> Result<(), String> {
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "the connection file asks for signature scheme {:?}; devarray-kernel supports only \
             \"hmac-sha256\"",
            info.signature_scheme
        ));
    }
    if info.transport == Transport::TCP && info.ip.trim().is_empty() {
        return Err("the connection file has an empty \"ip\"; expected e.g. \"127.0.0.1\"".into());
    }
    Ok(())
}

/// Serve the connection until shutdown or parent death, then exit the process.
pub async fn serve(info: ConnectionInfo) -> Result<(), String> {
    validate(&info)?;
    if info.key.is_empty() {
        eprintln!(
            "[devarray-kernel] warning: the connection key is empty, so messages are not \
             signed and anyone who can reach the ports can run code"
        );
    }
    let session_id = uuid::Uuid::new_v4().to_string();
    fn bind_error(
        channel: &'static str,
        url: String,
    ) -> impl FnOnce(jupyter_zmq_client::RuntimeError) -> String {
        move |e| format!("cannot listen on {url} ({channel}): {e}")
    }
    // Every socket binds only to the address the connection file names.
    crate::heartbeat::start(&info)?;
    let shell = create_kernel_shell_connection(&info, &session_id)
        .await
        .map_err(bind_error("shell", info.shell_url()))?;
    let control = create_kernel_control_connection(&info, &session_id)
        .await
        .map_err(bind_error("control", info.control_url()))?;
    let stdin = create_kernel_stdin_connection(&info, &session_id)
        .await
        .map_err(bind_error("stdin", info.stdin_url()))?;
    // IOPub is our own PUB socket (a high-water mark per subscriber), signed as the others.
    let socket = PubSocket::bind(&info.iopub_url())
        .await
        .map_err(|e| format!("cannot listen on {} (iopub): {e}", info.iopub_url()))?;
    let Connection { mac, .. } = Connection::new(
        <zeromq::PubSocket as zeromq::Socket>::new(),
        &info.key,
        &session_id,
    );
    let iopub_connection = Connection {
        socket,
        mac,
        session_id: session_id.clone(),
    };

    let iopub = Iopub::start(iopub_connection);
    let evaluator = std::sync::Arc::new(
        Evaluator::start(iopub.clone()).map_err(|e| format!("cannot start the evaluator: {e}"))?,
    );
    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel::<Exit>();

    let control_task = ControlChannel {
        connection: control,
        iopub: iopub.clone(),
        evaluator: evaluator.clone(),
        exit: exit_tx.clone(),
    };
    tokio::spawn(control_task.run());

    let shell_task = ShellChannel {
        connection: shell,
        stdin: StdinAsker::start(stdin),
        iopub: iopub.clone(),
        evaluator,
        exit: exit_tx.clone(),
        execution_count: 0,
        history: History::default(),
        deferred: Default::default(),
    };
    tokio::spawn(shell_task.run());

    let watch = ParentWatch::from_environment();
    let parent_exit = exit_tx.clone();
    tokio::spawn(async move {
        let reason = watch.wait_for_parent_death().await;
        let _ = parent_exit.send(Exit::ParentDied(reason));
    });

    let exit = exit_rx
        .recv()
        .await
        .unwrap_or(Exit::ChannelFailed("all channels"));
    match &exit {
        Exit::Shutdown { restart } => {
            eprintln!("[devarray-kernel] shutting down (restart requested: {restart})")
        }
        Exit::ParentDied(reason) => eprintln!("[devarray-kernel] exiting: {reason}"),
        Exit::ChannelFailed(channel) => eprintln!("[devarray-kernel] exiting: {channel} failed"),
    }
    // Give the sockets a moment to deliver the last replies.
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(())
}

/// Read the next message, logging and skipping the ones that must be dropped.
async fn next_message(
    connection: &mut jupyter_zmq_client::Connection<zeromq::RouterSocket>,
    channel: &str,
) -> JupyterMessage {
    loop {
        match read_message(connection).await {
            Ok(message) => return message,
            Err(ReadError::Dropped(why)) => {
                eprintln!("[devarray-kernel] {channel}: dropped a message: {why}");
            }
            Err(ReadError::Socket(why)) => {
                eprintln!("[devarray-kernel] {channel}: receive failed: {why}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

struct ControlChannel {
    connection: KernelControlConnection,
    iopub: Iopub,
    evaluator: std::sync::Arc<Evaluator>,
    exit: mpsc::UnboundedSender<Exit>,
}

impl ControlChannel {
    async fn run(mut self) {
        loop {
            let request = next_message(&mut self.connection, "control").await;
            self.iopub.publish(Status::busy(), &request);
            let reply: Option<JupyterMessageContent> = match &request.content {
                JupyterMessageContent::KernelInfoRequest(_) => Some(kernel_info_reply().into()),
                JupyterMessageContent::InterruptRequest(_) => {
                    self.evaluator.interrupt();
                    Some(InterruptReply::new().into())
                }
                JupyterMessageContent::ShutdownRequest(shutdown) => {
                    // Stop a running cell too, in case the process lingers.
                    self.evaluator.interrupt();
                    let reply = ShutdownReply {
                        restart: shutdown.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    // ipykernel also broadcasts it, so every frontend learns of it.
                    self.iopub.publish(reply.clone(), &request);
                    Some(reply.into())
                }
                other => {
                    eprintln!(
                        "[devarray-kernel] control: ignoring unsupported {}",
                        other.message_type()
                    );
                    None
                }
            };
            if let Some(reply) = reply {
                if let Err(e) = self.connection.send(child_of(reply, &request)).await {
                    eprintln!("[devarray-kernel] control: reply failed: {e}");
                }
            }
            self.iopub.publish(Status::idle(), &request);
            if let JupyterMessageContent::ShutdownRequest(shutdown) = &request.content {
                let _ = self.exit.send(Exit::Shutdown {
                    restart: shutdown.restart,
                });
            }
        }
    }
}

struct ShellChannel {
    connection: KernelShellConnection,
    /// Where a cell's `input()` asks the client that sent it.
    stdin: StdinAsker,
    iopub: Iopub,
    evaluator: std::sync::Arc<Evaluator>,
    exit: mpsc::UnboundedSender<Exit>,
    execution_count: usize,
    history: History,
    /// Requests read while aborting queued cells, to be handled next.
    deferred: std::collections::VecDeque<JupyterMessage>,
}

impl ShellChannel {
    async fn run(mut self) {
        loop {
            let request = match self.deferred.pop_front() {
                Some(request) => request,
                None => next_message(&mut self.connection, "shell").await,
            };
            self.handle(&request).await;
        }
    }

    /// Answer one request between its busy and idle statuses.
    async fn handle(&mut self, request: &JupyterMessage) {
        self.iopub.publish(Status::busy(), request);
        let reply: Option<JupyterMessageContent> = match &request.content {
            JupyterMessageContent::KernelInfoRequest(_) => Some(kernel_info_reply().into()),
            JupyterMessageContent::ExecuteRequest(execute) => {
                let (reply, failed) = self.execute(execute, request).await;
                // Drain the queue before replying: whatever is queued now was
                // sent before the client could know this cell failed. But
                // answer this cell first (as ipykernel does), so a client
                // waiting for its reply does not read the aborted ones first.
                let aborted = if failed && execute.stop_on_error && !execute.silent {
                    self.take_queued_executes().await
                } else {
                    Vec::new()
                };
                self.send(reply.into(), request).await;
                for queued in aborted {
                    self.answer_aborted(&queued).await;
                }
                None
            }
            JupyterMessageContent::CompleteRequest(complete) => {
                let (done, reply) = oneshot::channel();
                self.ask(
                    Job::Complete {
                        code: complete.code.clone(),
                        cursor_pos: complete.cursor_pos,
                        done,
                    },
                    reply,
                )
                .await
                .map(Into::into)
            }
            JupyterMessageContent::InspectRequest(inspect) => {
                let (done, reply) = oneshot::channel();
                self.ask(
                    Job::Inspect {
                        code: inspect.code.clone(),
                        cursor_pos: inspect.cursor_pos,
                        detail_level: inspect.detail_level.unwrap_or(0).min(1) as u8,
                        done,
                    },
                    reply,
                )
                .await
                .map(Into::into)
            }
            JupyterMessageContent::IsCompleteRequest(is_complete) => {
                let (done, reply) = oneshot::channel();
                self.ask(
                    Job::IsComplete {
                        code: is_complete.code.clone(),
                        done,
                    },
                    reply,
                )
                .await
                .map(Into::into)
            }
            JupyterMessageContent::HistoryRequest(history) => {
                Some(HistoryReply::new(self.history_entries(history)).into())
            }
            JupyterMessageContent::CommInfoRequest(_) => Some(CommInfoReply::default().into()),
            JupyterMessageContent::CommOpen(open) => {
                // No comm targets exist; the protocol says to close it at once.
                let close = CommClose {
                    comm_id: open.comm_id.clone(),
                    data: Default::default(),
                };
                self.iopub.publish(close, request);
                None
            }
            JupyterMessageContent::CommMsg(_) | JupyterMessageContent::CommClose(_) => None,
            JupyterMessageContent::ShutdownRequest(shutdown) => {
                self.evaluator.interrupt();
                let _ = self.exit.send(Exit::Shutdown {
                    restart: shutdown.restart,
                });
                Some(
                    ShutdownReply {
                        restart: shutdown.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    }
                    .into(),
                )
            }
            other => {
                eprintln!(
                    "[devarray-kernel] shell: ignoring unsupported {}",
                    other.message_type()
                );
                None
            }
        };
        if let Some(reply) = reply {
            self.send(reply, request).await;
        }
        self.iopub.publish(Status::idle(), request);
    }

    async fn send(&mut self, reply: JupyterMessageContent, request: &JupyterMessage) {
        if let Err(e) = self.connection.send(child_of(reply, request)).await {
            eprintln!(
                "[devarray-kernel] shell: could not send the reply to {}: {e}",
                request.header.msg_type
            );
        }
    }

    /// Hand a job to the evaluation thread and wait for its answer.
    async fn ask<T>(&self, job: Job, reply: oneshot::Receiver<T>) -> Option<T> {
        if !self.evaluator.submit(job) {
            eprintln!("[devarray-kernel] shell: the evaluation thread has stopped");
            let _ = self.exit.send(Exit::ChannelFailed("the evaluation thread"));
            return None;
        }
        reply.await.ok()
    }

    async fn execute(
        &mut self,
        execute: &ExecuteRequest,
        request: &JupyterMessage,
    ) -> (ExecuteReply, bool) {
        let store_history = execute.store_history && !execute.silent;
        if store_history {
            self.execution_count += 1;
        }
        let execution_count = ExecutionCount::new(self.execution_count);
        if !execute.silent {
            self.iopub.publish(
                ExecuteInput {
                    code: execute.code.clone(),
                    execution_count,
                },
                request,
            );
        }
        let (done, outcome) = oneshot::channel();
        let job = Job::Execute(Box::new(ExecuteJob {
            code: execute.code.clone(),
            silent: execute.silent,
            execution_count,
            user_expressions: execute.user_expressions.clone().unwrap_or_default(),
            parent: request.clone(),
            stdin: execute.allow_stdin.then(|| self.stdin.clone()),
            done,
        }));
        let outcome =
            self.ask(job, outcome)
                .await
                .unwrap_or_else(|| crate::evaluator::ExecuteOutcome {
                    error: Some(ErrorOutput {
                        ename: "KernelError".into(),
                        evalue: "the devarray evaluator stopped; restart the kernel".into(),
                        traceback: vec![
                            "KernelError: the devarray evaluator stopped; restart the kernel"
                                .into(),
                        ],
                    }),
                    ..Default::default()
                });
        if store_history {
            self.history.record(
                self.execution_count,
                &execute.code,
                outcome.result_plain.as_deref(),
            );
        }
        let mut reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count,
            payload: outcome.payload,
            // The official test suite rejects a reply without this object.
            user_expressions: Some(outcome.user_expressions),
            error: None,
        };
        let failed = outcome.error.is_some();
        if let Some(error) = outcome.error {
            // Errors are shown even for silent requests, as IPython does.
            self.iopub.publish(error.clone(), request);
            reply.status = ReplyStatus::Error;
            reply.error = Some(Box::new(ReplyError {
                ename: error.ename,
                evalue: error.evalue,
                traceback: error.traceback,
            }));
        }
        (reply, failed)
    }

    /// After a failed cell with stop_on_error, cells already queued (e.g. by
    /// "Run All") are answered "aborted" instead of run, as ipykernel does.
    /// This takes the queued execute requests out of the socket; other
    /// requests found there are kept for afterwards.
    async fn take_queued_executes(&mut self) -> Vec<JupyterMessage> {
        let mut executes = Vec::new();
        loop {
            let queued =
                tokio::time::timeout(Duration::ZERO, read_message(&mut self.connection)).await;
            let request = match queued {
                Err(_elapsed) => return executes,
                Ok(Err(ReadError::Dropped(why))) => {
                    eprintln!("[devarray-kernel] shell: dropped a message: {why}");
                    continue;
                }
                // A failing socket is the main loop's to report; stop draining.
                Ok(Err(ReadError::Socket(_))) => return executes,
                Ok(Ok(request)) => request,
            };
            if matches!(request.content, JupyterMessageContent::ExecuteRequest(_)) {
                executes.push(request);
            } else {
                self.deferred.push_back(request);
            }
        }
    }

    async fn answer_aborted(&mut self, request: &JupyterMessage) {
        self.iopub.publish(Status::busy(), request);
        // A skipped cell never ran, so it has no execution count: ipykernel's
        // reply is only `{"status": "aborted"}`, and JupyterLab then shows `[ ]:`
        // (a count would show the failed cell's number on a cell that never ran).
        let reply = jupyter_protocol::UnknownMessage {
            msg_type: "execute_reply".to_string(),
            content: serde_json::json!({"status": "aborted"}),
        };
        self.send(reply.into(), request).await;
        self.iopub.publish(Status::idle(), request);
    }

    fn history_entries(&self, request: &HistoryRequest) -> Vec<jupyter_protocol::HistoryEntry> {
        match request {
            HistoryRequest::Tail { n, output, .. } => self.history.tail(*n, *output),
            HistoryRequest::Range {
                session,
                start,
                stop,
                output,
                ..
            } => self.history.range(*session, *start, *stop, *output),
            HistoryRequest::Search {
                pattern,
                unique,
                output,
                n,
                ..
            } => self.history.search(pattern, *unique, *n, *output),
        }
    }
}
