//! A protobuf client as client-go speaks it, on `k8s-pb` (prost types
//! generated from kube's .proto files, independent of kubeshard's own
//! codec): GETs and LISTs answered with `k8s\0` envelopes, and watch
//! streams of length-prefixed WatchEvents.

use super::Server;
use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use std::io::Read;

pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// What client-go's typed clients send as Accept.
pub const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";

/// A decoded envelope: the TypeMeta and the raw message.
#[derive(Debug)]
pub struct Envelope {
    pub api_version: String,
    pub kind: String,
    pub raw: Vec<u8>,
}

impl Envelope {
    /// The raw message as the prost type `T`.
    pub fn decode<T: Message + Default>(&self) -> T {
        T::decode(&self.raw[..])
            .unwrap_or_else(|e| panic!("{} {}: {e}", self.api_version, self.kind))
    }
}

/// Reads `k8s\0` + runtime.Unknown.
pub fn envelope(body: &[u8]) -> Envelope {
    let rest = body
        .strip_prefix(b"k8s\x00")
        .unwrap_or_else(|| panic!("no protobuf magic: {:?}", String::from_utf8_lossy(body)));
    let u = Unknown::decode(rest).expect("a runtime.Unknown");
    let tm = u.type_meta.clone().unwrap_or_default();
    assert_eq!(u.content_encoding(), "");
    assert_eq!(u.content_type(), "");
    Envelope {
        api_version: tm.api_version().to_string(),
        kind: tm.kind().to_string(),
        raw: u.raw().to_vec(),
    }
}

impl Server {
    /// GET with `accept`: (code, Content-Type, body bytes).
    pub fn get_bytes(&self, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
        self.agent_request("GET", path, "application/json", accept, b"")
    }

    /// Any request with a body of `content_type`, asking for `accept`:
    /// (code, Content-Type, body bytes).
    pub fn agent_request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        accept: &str,
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        let req = http::Request::builder()
            .method(method)
            .uri(self.url(path))
            .header("Content-Type", content_type)
            .header("Accept", accept)
            .body(body.to_vec())
            .unwrap();
        let mut resp = self.agent.run(req).expect("request failed");
        let ct = super::content_type(&resp);
        let mut bytes = Vec::new();
        resp.body_mut()
            .as_reader()
            .read_to_end(&mut bytes)
            .expect("body");
        (resp.status().as_u16(), ct, bytes)
    }

    /// A GET in protobuf that must succeed: its envelope.
    pub fn get_protobuf(&self, path: &str) -> Envelope {
        let (code, ct, body) = self.get_bytes(path, PROTOBUF);
        assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
        assert_eq!(ct, PROTOBUF, "{path}");
        envelope(&body)
    }

    /// Opens a watch that asks for `accept` (a protobuf type).
    pub fn watch_protobuf(&self, path: &str, accept: &str) -> ProtobufWatch {
        let resp = self
            .agent
            .get(&self.url(path))
            .header("Accept", accept)
            .call()
            .expect("watch request");
        assert_eq!(resp.status().as_u16(), 200, "watch status");
        assert_eq!(
            super::content_type(&resp),
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
        ProtobufWatch {
            body: Box::new(resp.into_body().into_reader()),
        }
    }
}

/// A protobuf watch stream: frames of a 4-byte big-endian length and a
/// WatchEvent whose object is an envelope.
pub struct ProtobufWatch {
    body: Box<dyn Read + Send>,
}

impl ProtobufWatch {
    /// The next event (type, object), or None at the end of the stream.
    pub fn next_event(&mut self) -> Option<(String, Envelope)> {
        let mut len = [0u8; 4];
        self.body.read_exact(&mut len).ok()?;
        let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
        self.body.read_exact(&mut frame).expect("a whole frame");
        let event = WatchEvent::decode(&frame[..]).expect("a WatchEvent");
        let object = event.object.clone().expect("an object");
        Some((event.r#type().to_string(), envelope(object.raw())))
    }
}
