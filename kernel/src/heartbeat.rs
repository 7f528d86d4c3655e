//! The heartbeat: a REP socket that echoes every ping, on a thread and runtime of its own, so
//! nothing the other channels do (a flood of output, a busy shell task) delays a beat.
//!
//! A peer that sends pings and never reads the echoes would block the reply to it once its
//! queue is full, and with it the beats of every other client; a reply that cannot be queued
//! at once is dropped instead, as a ZeroMQ socket at its high-water mark does.

use std::time::Duration;

use jupyter_protocol::ConnectionInfo;
use jupyter_zmq_client::create_kernel_heartbeat_connection;
use zeromq::{SocketRecv, SocketSend};

/// How long an echo may wait for room in its peer's queue before it is dropped.
const REPLY_WAIT: Duration = Duration::from_millis(20);

/// Binds the heartbeat socket and starts echoing on its own thread; the bind error, if any.
pub fn start(info: &ConnectionInfo) -> Result<(), String> {
    let info = info.clone();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = bound_tx.send(Err(format!("cannot start its runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut heartbeat = match create_kernel_heartbeat_connection(&info).await {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = bound_tx.send(Err(format!(
                            "cannot listen on {} (heartbeat): {e}",
                            info.hb_url()
                        )));
                        return;
                    }
                };
                let _ = bound_tx.send(Ok(()));
                loop {
                    match heartbeat.socket.recv().await {
                        Ok(ping) => {
                            match tokio::time::timeout(REPLY_WAIT, heartbeat.socket.send(ping))
                                .await
                            {
                                Ok(Ok(())) | Err(_) => {}
                                Ok(Err(e)) => {
                                    eprintln!("[devarray-kernel] heartbeat reply failed: {e}")
                                }
                            }
                        }
                        Err(e) => {
                            eprintln!("[devarray-kernel] heartbeat receive failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            });
        })
        .map_err(|e| format!("cannot start the heartbeat thread: {e}"))?;
    bound_rx
        .recv()
        .unwrap_or_else(|_| Err("the heartbeat thread ended before binding".into()))
}
