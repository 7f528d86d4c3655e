//! Reading and building Jupyter messages on top of jupyter-zmq-client.
//!
//! jupyter-zmq-client verifies the HMAC signature of every incoming message
//! (`RawMessage::from_multipart`), but its typed decoding rejects requests that
//! leave out optional fields (jupyter_client's `history()` sends only the keys
//! it was given). So we let the library check framing and signature, then
//! decode the JSON parts ourselves, filling in the protocol's defaults.

use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError};
use serde_json::{Map, Value};
use zeromq::SocketRecv;

/// Why a read produced no message.
#[derive(Debug)]
pub enum ReadError {
    /// The socket itself failed; the caller may retry after a pause.
    Socket(String),
    /// A message arrived but was dropped: bad or missing signature, broken
    /// framing, or JSON that does not parse. The text says which.
    Dropped(String),
}

/// Receive one message, verify its signature and decode it.
pub async fn read_message<S: SocketRecv>(
    connection: &mut Connection<S>,
) -> Result<JupyterMessage, ReadError> {
    let multipart = connection
        .socket
        .recv()
        .await
        .map_err(|e| ReadError::Socket(e.to_string()))?;
    // The frame after the delimiter is the signature; the library checks it but drops it.
    let signature = multipart
        .iter()
        .position(|part| &part[..] == b"<IDS|MSG>")
        .and_then(|i| multipart.get(i + 1))
        .map(|s| s.to_vec());
    let raw = RawMessage::from_multipart(multipart, &connection.mac)
        .map_err(|e| ReadError::Dropped(describe_frame_error(&e)))?;
    if connection.mac.is_some() {
        if let Some(signature) = signature {
            if !DIGESTS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .first_time(signature)
            {
                return Err(ReadError::Dropped(
                    "it repeats the signature of an earlier message (a replay)".to_string(),
                ));
            }
        }
    }
    decode(raw).map_err(ReadError::Dropped)
}

/// Signatures of the signed messages already accepted, on every channel, as ipykernel keeps
/// them (`Session.digest_history`): a correctly signed message sent again is a replay and is
/// dropped, not run twice. Bounded like ipykernel's (2**16 entries); the oldest go first.
struct DigestHistory {
    seen: std::collections::HashSet<Vec<u8>>,
    order: std::collections::VecDeque<Vec<u8>>,
}

const DIGEST_HISTORY_SIZE: usize = 1 << 16;

static DIGESTS: std::sync::LazyLock<std::sync::Mutex<DigestHistory>> =
    std::sync::LazyLock::new(|| {
        std::sync::Mutex::new(DigestHistory {
            seen: std::collections::HashSet::new(),
            order: std::collections::VecDeque::new(),
        })
    });

impl DigestHistory {
    /// Records `signature`; false when it was seen before.
    fn first_time(&mut self, signature: Vec<u8>) -> bool {
        if self.seen.contains(&signature) {
            return false;
        }
        if self.order.len() >= DIGEST_HISTORY_SIZE {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        self.seen.insert(signature.clone());
        self.order.push_back(signature);
        true
    }
}

fn describe_frame_error(error: &RuntimeError) -> String {
    match error {
        RuntimeError::VerifyError(_) => {
            "its HMAC signature does not match the connection key".to_string()
        }
        RuntimeError::DecodeError(_) => "its signature is not a hex digest".to_string(),
        RuntimeError::MissingHmac => "it has no signature frame".to_string(),
        RuntimeError::MissingDelimiter => "it has no <IDS|MSG> delimiter frame".to_string(),
        RuntimeError::InsufficientMessageParts(n) => {
            format!("it has {n} JSON frames after the signature; 4 are required")
        }
        other => format!("malformed frames: {other}"),
    }
}

/// Turn verified frames into a message, tolerating omitted optional fields.
pub fn decode(raw: RawMessage) -> Result<JupyterMessage, String> {
    let part = |index: usize, name: &str| {
        raw.jparts
            .get(index)
            .ok_or_else(|| format!("the {name} frame is missing"))
    };
    let header: Header = serde_json::from_slice(part(0, "header")?)
        .map_err(|e| format!("the header is not a valid Jupyter header: {e}"))?;
    // An empty parent header (`{}`) means "no parent".
    let parent_header: Option<Header> = serde_json::from_slice(part(1, "parent header")?).ok();
    let metadata: Value = serde_json::from_slice(part(2, "metadata")?)
        .map_err(|e| format!("the metadata of {} is not JSON: {e}", header.msg_type))?;
    let mut content: Value = serde_json::from_slice(part(3, "content")?)
        .map_err(|e| format!("the content of {} is not JSON: {e}", header.msg_type))?;
    fill_request_defaults(&header.msg_type, &mut content);
    let content = JupyterMessageContent::from_type_and_content(&header.msg_type, content)
        .map_err(|e| format!("the content of {} is invalid: {e}", header.msg_type))?;
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities.clone(),
        header,
        parent_header,
        metadata,
        content,
        buffers: raw.jparts.get(4..).map(<[_]>::to_vec).unwrap_or_default(),
        channel: None,
    })
}

/// Sentinel for "no limit" in history requests that leave out `n` or `stop`.
pub const HISTORY_UNLIMITED: i32 = i32::MAX;

/// Insert the protocol's defaults for keys a client may leave out.
fn fill_request_defaults(msg_type: &str, content: &mut Value) {
    let Some(fields) = content.as_object_mut() else {
        return;
    };
    let defaults: &[(&str, Value)] = match msg_type {
        "execute_request" => &[
            ("silent", Value::Bool(false)),
            ("store_history", Value::Bool(true)),
            ("user_expressions", Value::Object(Map::new())),
        ],
        "history_request" => &[
            ("output", Value::Bool(false)),
            ("raw", Value::Bool(true)),
            ("unique", Value::Bool(false)),
            ("start", Value::from(0)),
            ("stop", Value::from(HISTORY_UNLIMITED)),
            ("n", Value::from(HISTORY_UNLIMITED)),
            ("pattern", Value::from("*")),
        ],
        "inspect_request" => &[("detail_level", Value::from(0))],
        "shutdown_request" => &[("restart", Value::Bool(false))],
        _ => &[],
    };
    for (key, value) in defaults {
        if fields.get(*key).is_none_or(Value::is_null) {
            fields.insert((*key).to_string(), value.clone());
        }
    }
    // IPython's tail defaults to the last 10 entries, not to everything.
    if msg_type == "history_request"
        && fields.get("hist_access_type").and_then(Value::as_str) == Some("tail")
        && fields.get("n").and_then(Value::as_i64) == Some(i64::from(HISTORY_UNLIMITED))
    {
        fields.insert("n".to_string(), Value::from(10));
    }
}

/// A reply or broadcast caused by `parent`, signed with our username.
pub fn child_of(
    content: impl Into<JupyterMessageContent>,
    parent: &JupyterMessage,
) -> JupyterMessage {
    let mut message = JupyterMessage::new(content, Some(parent));
    message.header.username = "devarray".to_string();
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use jupyter_protocol::HistoryRequest;

    fn raw(msg_type: &str, content: &str) -> RawMessage {
        let header = format!(
            r#"{{"msg_id":"m1","username":"u","session":"s","date":"2024-01-01T00:00:00Z","msg_type":"{msg_type}","version":"5.3"}}"#
        );
        RawMessage {
            zmq_identities: vec![Bytes::from_static(b"peer")],
            jparts: vec![
                Bytes::from(header),
                Bytes::from_static(b"{}"),
                Bytes::from_static(b"{}"),
                Bytes::from(content.to_string()),
            ],
        }
    }

    #[test]
    fn history_search_without_n_or_unique_decodes() {
        let message = decode(raw(
            "history_request",
            r#"{"raw":true,"output":false,"hist_access_type":"search","pattern":"a*"}"#,
        ))
        .unwrap();
        match message.content {
            JupyterMessageContent::HistoryRequest(HistoryRequest::Search {
                pattern,
                unique,
                n,
                ..
            }) => {
                assert_eq!(pattern, "a*");
                assert!(!unique);
                assert_eq!(n, HISTORY_UNLIMITED);
            }
            other => panic!("decoded as {other:?}"),
        }
        assert!(message.parent_header.is_none());
        assert_eq!(message.zmq_identities, vec![Bytes::from_static(b"peer")]);
    }

    #[test]
    fn history_tail_without_n_takes_ten() {
        let message = decode(raw(
            "history_request",
            r#"{"raw":true,"output":false,"hist_access_type":"tail"}"#,
        ))
        .unwrap();
        assert!(matches!(
            message.content,
            JupyterMessageContent::HistoryRequest(HistoryRequest::Tail { n: 10, .. })
        ));
    }

    #[test]
    fn broken_json_is_reported_not_panicked() {
        let error = decode(raw("execute_request", "{not json")).unwrap_err();
        assert!(
            error.starts_with("the content of execute_request is not JSON"),
            "{error}"
        );
        let error = decode(raw("execute_request", r#"{"silent":true}"#)).unwrap_err();
        assert!(error.contains("missing field `code`"), "{error}");
    }

    #[test]
    fn unknown_message_types_decode_as_unknown() {
        let message = decode(raw("frobnicate_request", "{}")).unwrap();
        assert_eq!(message.header.msg_type, "frobnicate_request");
        assert!(matches!(
            message.content,
            JupyterMessageContent::UnknownMessage(_)
        ));
    }
}
