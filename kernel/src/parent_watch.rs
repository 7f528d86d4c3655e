//! Exit when the process that started us dies, so a crashed or killed
//! Jupyter server does not leave orphan kernels holding ports and memory.

use std::time::Duration;

/// How the parent was identified at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParentWatch {
    /// Our parent's pid when we started (`getppid`).
    original_ppid: Option<u32>,
    /// `JPY_PARENT_PID`, which jupyter_client sets to the launching process.
    jupyter_parent: Option<u32>,
}

impl ParentWatch {
    pub fn from_environment() -> ParentWatch {
        ParentWatch {
            original_ppid: current_ppid(),
            jupyter_parent: std::env::var("JPY_PARENT_PID")
                .ok()
                .and_then(|pid| pid.trim().parse().ok())
                .filter(|&pid| pid > 1),
        }
    }

    /// Why the parent counts as dead now, or None while it lives.
    pub fn parent_gone(
        &self,
        ppid_now: Option<u32>,
        process_alive: impl Fn(u32) -> bool,
    ) -> Option<String> {
        if let (Some(before), Some(now)) = (self.original_ppid, ppid_now) {
            // Re-parenting (to init or a subreaper) means the parent exited.
            if before != now {
                return Some(format!("parent process {before} exited"));
            }
        }
        match self.jupyter_parent {
            Some(pid) if !process_alive(pid) => Some(format!("JPY_PARENT_PID {pid} exited")),
            _ => None,
        }
    }

    /// Poll once a second; resolve with the reason when the parent is gone.
    pub async fn wait_for_parent_death(self) -> String {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if let Some(reason) = self.parent_gone(current_ppid(), process_alive) {
                return reason;
            }
        }
    }
}

#[cfg(unix)]
fn current_ppid() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn current_ppid() -> Option<u32> {
    None
}

/// Whether `pid` still exists; assumes it does where we cannot tell.
fn process_alive(pid: u32) -> bool {
    let proc_root = std::path::Path::new("/proc");
    if cfg!(target_os = "linux") && proc_root.join("self").exists() {
        proc_root.join(pid.to_string()).exists()
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reparenting_means_the_parent_died() {
        let watch = ParentWatch {
            original_ppid: Some(4242),
            jupyter_parent: None,
        };
        assert_eq!(watch.parent_gone(Some(4242), |_| true), None);
        assert_eq!(
            watch.parent_gone(Some(1), |_| true).as_deref(),
            Some("parent process 4242 exited")
        );
    }

    #[test]
    fn jupyter_parent_pid_is_watched() {
        let watch = ParentWatch {
            original_ppid: Some(10),
            jupyter_parent: Some(77),
        };
        assert_eq!(watch.parent_gone(Some(10), |pid| pid == 77), None);
        assert_eq!(
            watch.parent_gone(Some(10), |_| false).as_deref(),
            Some("JPY_PARENT_PID 77 exited")
        );
    }

    #[test]
    fn this_process_is_alive() {
        assert!(process_alive(std::process::id()));
    }
}
