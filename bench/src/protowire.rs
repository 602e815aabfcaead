//! Just enough of Kubernetes' protobuf encoding to measure a server that
//! answers in it (`--protobuf`): walking length-delimited fields to a watch
//! event's type and resourceVersion, and a list's item count and continue
//! token, without decoding whole objects (as the JSON paths search text).

/// Every protobuf-encoded object starts with these bytes.
const MAGIC: &[u8] = b"k8s\x00";

/// Reads a varint at `*at`, advancing it.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The length-delimited fields of `msg` with number `tag`, in order.
fn fields(msg: &[u8], tag: u64) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let key = varint(msg, &mut at)?;
        match key & 7 {
            0 => {
                varint(msg, &mut at)?;
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let len = usize::try_from(varint(msg, &mut at)?).ok()?;
                let value = msg.get(at..at.checked_add(len)?)?;
                at += len;
                if key >> 3 == tag {
                    return Some(value);
                }
            }
            _ => return None,
        }
    })
}

fn field(msg: &[u8], tag: u64) -> Option<&[u8]> {
    fields(msg, tag).next()
}

/// The raw message of an enveloped object (`k8s\0` + Unknown{2: raw}).
fn raw(object: &[u8]) -> Option<&[u8]> {
    field(object.strip_prefix(MAGIC)?, 2)
}

/// A watch frame's length from its 4-byte big-endian prefix.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let len: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(len) as usize)
}

/// (type, resourceVersion) of a WatchEvent{1: type, 2: {1: object}}; the
/// object's ObjectMeta is field 1 of every kind, its resourceVersion 6.
pub fn watch_event(event: &[u8]) -> Option<(&[u8], Option<u64>)> {
    let kind = field(event, 1)?;
    let rv = field(event, 2)
        .and_then(|ext| field(ext, 1))
        .and_then(raw)
        .and_then(|obj| field(obj, 1))
        .and_then(|meta| field(meta, 6))
        .and_then(|rv| std::str::from_utf8(rv).ok()?.parse().ok());
    Some((kind, rv))
}

/// (items, continue token) of an enveloped list: ListMeta is field 1
/// (continue is its field 3), items field 2.
pub fn list_shape(body: &[u8]) -> Option<(usize, Option<String>)> {
    let list = raw(body)?;
    let token = field(list, 1)
        .and_then(|meta| field(meta, 3))
        .map(|t| String::from_utf8_lossy(t).into_owned());
    Some((fields(list, 2).count(), token))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited field.
    fn ld(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag << 3 | 2, value.len() as u8];
        out.extend_from_slice(value);
        out
    }

    fn envelope(raw: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(ld(1, &[ld(1, b"v1"), ld(2, b"ConfigMap")].concat()));
        out.extend(ld(2, raw));
        out
    }

    #[test]
    fn reads_watch_events_and_lists() {
        let meta = [ld(1, b"name"), vec![0x28, 0x05], ld(6, b"42")].concat();
        let object = envelope(&ld(1, &meta));
        let event = [ld(1, b"ADDED"), ld(2, &ld(1, &object))].concat();
        assert_eq!(watch_event(&event), Some((&b"ADDED"[..], Some(42))));
        let list_meta = ld(1, &[ld(2, b"9"), ld(3, b"tok")].concat());
        let list = envelope(&[list_meta, ld(2, &ld(1, &meta)), ld(2, &ld(1, &meta))].concat());
        assert_eq!(list_shape(&list), Some((2, Some("tok".into()))));
        assert_eq!(frame_len(&[0, 0, 1, 2]), Some(258));
        assert_eq!(list_shape(b"{}"), None);
    }
}
