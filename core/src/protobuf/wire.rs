//! Protocol-buffer wire primitives: varints, keys, length-delimited fields
//! and skipping of unknown fields.
//!
//! Request bodies are untrusted, so every read is bounds-checked and
//! returns an error instead of panicking; group skipping is depth-limited
//! because groups nest without a length prefix.

/// Wire type 0: a base-128 varint.
pub(super) const VARINT: u8 = 0;
/// Wire type 1: eight little-endian bytes.
pub(super) const FIXED64: u8 = 1;
/// Wire type 2: a varint length followed by that many bytes.
pub(super) const LEN: u8 = 2;
/// Wire type 3: start of a (deprecated) group.
const START_GROUP: u8 = 3;
/// Wire type 4: end of a group.
const END_GROUP: u8 = 4;
/// Wire type 5: four little-endian bytes.
pub(super) const FIXED32: u8 = 5;

/// Appends `v` as a base-128 varint.
pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key: (field number, wire type).
pub(super) fn key(out: &mut Vec<u8>, tag: u32, wire_type: u8) {
    varint(out, u64::from(tag) << 3 | u64::from(wire_type));
}

/// How many bytes `v` takes as a varint.
pub(super) fn varint_len(v: u64) -> usize {
    // One byte per started group of seven bits, and one for zero.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A cursor over one message's bytes.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a varint of at most ten bytes; longer or overflowing ones are
    /// errors, as in Go's generated unmarshallers.
    pub(super) fn varint(&mut self) -> Result<u64, String> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err("truncated varint".into());
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err("varint overflows 64 bits".into());
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("varint overflows 64 bits".into())
    }

    /// Reads a field key: (field number, wire type).
    pub(super) fn key(&mut self) -> Result<(u32, u8), String> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3)
            .map_err(|_| format!("field number {} out of range", key >> 3))?;
        if tag == 0 {
            return Err("illegal field number 0".into());
        }
        // The mask keeps only the low three bits, so the value fits in u8.
        Ok((tag, (key & 7) as u8))
    }

    /// Reads a length-delimited payload.
    pub(super) fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint()?;
        let remaining = self.buf.len() - self.pos;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= remaining)
            .ok_or_else(|| format!("length {len} runs past the end of the message"))?;
        let out = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.buf.len());
        let end = end.ok_or("truncated fixed-width value")?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..end]);
        self.pos = end;
        Ok(out)
    }

    pub(super) fn fixed64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take::<8>()?))
    }

    pub(super) fn fixed32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take::<4>()?))
    }

    /// Skips one value of an unknown field. `depth` bounds group nesting.
    pub(super) fn skip(&mut self, tag: u32, wire_type: u8, depth: usize) -> Result<(), String> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.fixed32().map(drop),
            START_GROUP => {
                if depth == 0 {
                    return Err("groups nested too deeply".into());
                }
                loop {
                    if self.is_empty() {
                        return Err(format!("group {tag} is not closed"));
                    }
                    let (inner, wt) = self.key()?;
                    if wt == END_GROUP {
                        if inner != tag {
                            return Err(format!("group {tag} closed by end of group {inner}"));
                        }
                        return Ok(());
                    }
                    self.skip(inner, wt, depth - 1)?;
                }
            }
            END_GROUP => Err(format!("unexpected end of group {tag}")),
            other => Err(format!("invalid wire type {other} for field {tag}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        assert_eq!(Reader::new(&[0x96, 0x01]).varint(), Ok(150));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&max).varint(), Ok(u64::MAX));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&over).varint().is_err());
        assert!(Reader::new(&[0x80, 0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
    }

    #[test]
    fn varints_round_trip() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            assert_eq!(Reader::new(&out).varint(), Ok(v));
        }
        let mut k = Vec::new();
        key(&mut k, 2, LEN);
        assert_eq!(k, [0x12]);
    }

    #[test]
    fn lengths_and_keys() {
        assert!(Reader::new(&[0x05, 1, 2]).bytes().is_err());
        assert_eq!(Reader::new(&[0x02, 1, 2, 3]).bytes(), Ok(&[1u8, 2][..]));
        assert!(Reader::new(&[0x00]).key().is_err());
        assert_eq!(Reader::new(&[0x0a]).key(), Ok((1, LEN)));
    }

    #[test]
    fn skips_groups_and_rejects_strays() {
        // group 1 { field 2 varint 7 } end group 1
        let mut r = Reader::new(&[0x10, 0x07, 0x0c]);
        assert_eq!(r.skip(1, START_GROUP, 8), Ok(()));
        assert!(r.is_empty());
        assert!(Reader::new(&[0x14]).skip(1, START_GROUP, 8).is_err());
        assert!(Reader::new(&[]).skip(1, START_GROUP, 8).is_err());
        assert!(Reader::new(&[]).skip(1, END_GROUP, 8).is_err());
        assert!(Reader::new(&[]).skip(1, 6, 8).is_err());
        assert!(Reader::new(&[1, 2, 3]).skip(1, FIXED32, 8).is_err());
    }
}
