//! What the kernel says about itself in kernel_info_reply.

use jupyter_protocol::{CodeMirrorMode, KernelInfoReply, LanguageInfo, ReplyStatus};

pub const LANGUAGE: &str = "devarray";
pub const FILE_EXTENSION: &str = ".dva";
pub const MIMETYPE: &str = "text/x-devarray";

pub fn kernel_info_reply() -> KernelInfoReply {
    let version = env!("CARGO_PKG_VERSION");
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "devarray-kernel".to_string(),
        implementation_version: version.to_string(),
        language_info: LanguageInfo {
            name: LANGUAGE.to_string(),
            version: version.to_string(),
            mimetype: Some(MIMETYPE.to_string()),
            file_extension: Some(FILE_EXTENSION.to_string()),
            // The language is Python-shaped, so Python highlighting fits it.
            pygments_lexer: Some("python".to_string()),
            codemirror_mode: Some(CodeMirrorMode::python()),
            nbconvert_exporter: None,
        },
        banner: format!(
            "devarray {version}: a device-aware array language (MXNet NDArray / PyTorch semantics).\n\
             Arrays live on devices: ones(2, 3) @ gpu(0). Try %devices."
        ),
        help_links: Vec::new(),
        debugger: false,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_info_on_the_wire() {
        let reply = serde_json::to_value(kernel_info_reply()).unwrap();
        assert_eq!(reply["status"], "ok");
        assert_eq!(reply["protocol_version"], "5.3");
        assert_eq!(
            reply["language_info"],
            serde_json::json!({
                "name": "devarray",
                "version": env!("CARGO_PKG_VERSION"),
                "mimetype": "text/x-devarray",
                "file_extension": ".dva",
                "pygments_lexer": "python",
                "codemirror_mode": "python",
            })
        );
    }
}
