//! Content negotiation: which encoding a client accepts and which one its
//! body is in. JSON is the stored form; YAML, protobuf and Table are
//! derived on request.

use kubeshard_core::status::ApiError;
pub use kubeshard_core::table::MetaVersion;

/// What the response should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// Kubernetes protobuf, for built-in kinds (the controllers, the
    /// scheduler and kubelets ask for it).
    Protobuf,
    /// A meta.k8s.io Table (kubectl's server-side printing).
    Table(MetaVersion),
    /// An object reduced to its metadata (PartialObjectMetadata).
    PartialObject(MetaVersion, Wire),
    /// A list reduced to its items' metadata (PartialObjectMetadataList).
    PartialList(MetaVersion, Wire),
}

/// How a metadata view is encoded: client-go's metadata informers ask for
/// protobuf first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Json,
    Protobuf,
}

impl Output {
    /// The response is derived from the stored object, not its encoding.
    pub fn is_transformed(self) -> bool {
        !matches!(self, Output::Json | Output::Yaml | Output::Protobuf)
    }

    /// The body goes out in protobuf.
    pub fn is_protobuf(self) -> bool {
        matches!(
            self,
            Output::Protobuf
                | Output::PartialObject(_, Wire::Protobuf)
                | Output::PartialList(_, Wire::Protobuf)
        )
    }

    /// The Content-Type of a response in this form.
    pub fn content_type(self) -> &'static str {
        use MetaVersion::{V1beta1, V1};
        match self {
            Output::Json => "application/json",
            Output::Yaml => "application/yaml",
            Output::Protobuf => kubeshard_core::protobuf::CONTENT_TYPE,
            Output::PartialObject(V1, Wire::Protobuf) => {
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
            }
            Output::PartialList(V1, Wire::Protobuf) => {
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
            }
            Output::Table(V1) => "application/json;as=Table;v=v1;g=meta.k8s.io",
            Output::Table(V1beta1) => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            Output::PartialObject(V1, _) => {
                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
            }
            Output::PartialObject(V1beta1, _) => {
                "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io"
            }
            Output::PartialList(V1, _) => {
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
            }
            Output::PartialList(V1beta1, _) => {
                "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io"
            }
        }
    }
}

/// The media types we can produce, for 406 messages.
pub const PRODUCIBLE: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The media types a custom resource can be served in (no protobuf, as
/// in kube).
pub const PRODUCIBLE_CUSTOM: &[&str] = &["application/json", "application/yaml"];

/// Picks the first acceptable entry of an Accept header, in the client's
/// order (kube ignores q-values in practice; clients list preferences in
/// order). `as=` transformations are offered in JSON, for meta.k8s.io v1
/// and v1beta1, and the metadata views also in protobuf (v1). `protobuf`
/// is false for custom resources, which have no protobuf form: a
/// protobuf-only client gets 406, one that lists JSON too gets JSON.
pub fn output(accept: Option<&str>, protobuf: bool) -> Result<Output, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Output::Json);
    };
    for clause in accept.split(',') {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut as_ = None;
        let mut group = None;
        let mut version = None;
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match k.trim() {
                "as" => as_ = Some(v.trim().to_string()),
                "g" => group = Some(v.trim().to_string()),
                "v" => version = Some(v.trim().to_string()),
                _ => {}
            }
        }
        let json_like = matches!(media.as_str(), "application/json" | "application/*" | "*/*");
        let proto = media == kubeshard_core::protobuf::CONTENT_TYPE;
        if let Some(as_) = as_ {
            let meta = version.as_deref().and_then(MetaVersion::parse);
            let (Some(v), true) = (meta, group.as_deref() == Some("meta.k8s.io")) else {
                continue;
            };
            // The metadata views exist in protobuf for v1 only (v1beta1's
            // list numbers its fields differently), for every kind.
            let wire = match (json_like, proto && v == MetaVersion::V1) {
                (true, _) => Wire::Json,
                (false, true) => Wire::Protobuf,
                (false, false) => continue,
            };
            match as_.as_str() {
                "Table" if wire == Wire::Json => return Ok(Output::Table(v)),
                "PartialObjectMetadata" => return Ok(Output::PartialObject(v, wire)),
                "PartialObjectMetadataList" => return Ok(Output::PartialList(v, wire)),
                _ => continue,
            }
        }
        match media.as_str() {
            "application/json" | "application/*" | "*/*" | "application/json-patch+json" => {
                return Ok(Output::Json)
            }
            "application/yaml" => return Ok(Output::Yaml),
            _ if proto && protobuf => return Ok(Output::Protobuf),
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable(if protobuf {
        PRODUCIBLE
    } else {
        PRODUCIBLE_CUSTOM
    }))
}

/// The encoding of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    Json,
    Yaml,
    /// Kubernetes protobuf (kubectl's typed clients send it); decoded to
    /// JSON on arrival, answered in JSON (clients list JSON as fallback).
    Protobuf,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
}

/// Body encodings a request may use.
pub const ACCEPTED_INPUT: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

pub fn input(content_type: Option<&str>) -> Result<Input, ApiError> {
    let raw = content_type.unwrap_or("application/json");
    let media = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/json" | "" => Ok(Input::Json),
        "application/yaml" => Ok(Input::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(Input::Protobuf),
        "application/json-patch+json" => Ok(Input::JsonPatch),
        "application/merge-patch+json" => Ok(Input::MergePatch),
        "application/strategic-merge-patch+json" => Ok(Input::StrategicMergePatch),
        "application/apply-patch+yaml" => Ok(Input::ApplyPatch),
        _ => Err(ApiError::unsupported_media_type(ACCEPTED_INPUT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output_any(accept: Option<&str>) -> Result<Output, ApiError> {
        output(accept, true)
    }

    #[test]
    fn kubectl_get_asks_for_table_first() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(output_any(Some(a)).unwrap(), Output::Table(MetaVersion::V1));
        let b = "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            output_any(Some(b)).unwrap(),
            Output::Table(MetaVersion::V1beta1)
        );
        let c = "application/json;as=Table;v=v2;g=meta.k8s.io,application/json";
        assert_eq!(output_any(Some(c)).unwrap(), Output::Json);
    }

    #[test]
    fn metadata_clients_get_partial_objects() {
        // client-go's metadata informers list and watch like this.
        let list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            output_any(Some(list)).unwrap(),
            Output::PartialList(MetaVersion::V1, Wire::Protobuf)
        );
        // Custom resources too: the metadata views are kube's own types.
        assert_eq!(
            output(Some(list), false).unwrap(),
            Output::PartialList(MetaVersion::V1, Wire::Protobuf)
        );
        let one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
        assert_eq!(
            output_any(Some(one)).unwrap(),
            Output::PartialObject(MetaVersion::V1beta1, Wire::Json)
        );
        let v1beta1_pb = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
        assert_eq!(output_any(Some(v1beta1_pb)).unwrap_err().code, 406);
        let table_pb = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(output_any(Some(table_pb)).unwrap_err().code, 406);
        assert_eq!(
            output_any(Some("application/json;as=Scale;g=autoscaling;v=v1"))
                .unwrap_err()
                .code,
            406
        );
    }

    #[test]
    fn plain_types() {
        assert_eq!(output_any(None).unwrap(), Output::Json);
        assert_eq!(output_any(Some("application/yaml")).unwrap(), Output::Yaml);
        assert_eq!(
            output_any(Some("application/json, */*")).unwrap(),
            Output::Json
        );
        assert_eq!(output_any(Some("text/html")).unwrap_err().code, 406);
        let pb = "application/vnd.kubernetes.protobuf";
        assert_eq!(output_any(Some(pb)).unwrap(), Output::Protobuf);
        let both = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(output_any(Some(both)).unwrap(), Output::Protobuf);
        // A custom resource: JSON when listed, else 406.
        assert_eq!(output(Some(both), false).unwrap(), Output::Json);
        assert_eq!(output(Some(pb), false).unwrap_err().code, 406);
    }

    #[test]
    fn inputs() {
        assert_eq!(input(None).unwrap(), Input::Json);
        assert_eq!(
            input(Some("application/json; charset=utf-8")).unwrap(),
            Input::Json
        );
        assert_eq!(
            input(Some("application/merge-patch+json")).unwrap(),
            Input::MergePatch
        );
        assert_eq!(input(Some("text/plain")).unwrap_err().code, 415);
    }
}
