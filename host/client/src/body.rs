//! A request body as a list of shared byte slices: the parts of a chat
//! request (its head, each message's JSON written once and shared by every
//! request that carries it, its tail) are never joined into one buffer that
//! a session keeps, nor copied to be sent: the connection hands the slices to
//! `writev(2)` as they are ([`super::connection`]).

use bytes::{Bytes, BytesMut};
use std::sync::Arc;

/// A request body: its parts in order, shared (cloning copies no byte).
#[derive(Debug, Clone, Default)]
pub struct RequestBody {
    parts: Arc<[Bytes]>,
    len: usize,
}

impl RequestBody {
    /// The body made of `parts`, in order.
    pub fn from_parts(parts: Vec<Bytes>) -> Self {
        let len = parts.iter().map(Bytes::len).sum();
        Self {
            parts: parts.into(),
            len,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its parts, in order.
    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// Its bytes in one buffer (no copy for a body of one part).
    pub fn to_bytes(&self) -> Bytes {
        match &*self.parts {
            [] => Bytes::new(),
            [one] => one.clone(),
            parts => {
                let mut out = BytesMut::with_capacity(self.len);
                parts.iter().for_each(|p| out.extend_from_slice(p));
                out.freeze()
            }
        }
    }
}

impl From<Bytes> for RequestBody {
    fn from(bytes: Bytes) -> Self {
        Self::from_parts(vec![bytes])
    }
}

impl From<Vec<u8>> for RequestBody {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes::from(bytes).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_its_parts_in_order() {
        let parts = vec![
            Bytes::from_static(b"{\"messages\":["),
            Bytes::new(),
            Bytes::from_static(b"{\"a\":1}"),
            Bytes::from_static(b"]}"),
        ];
        let body = RequestBody::from_parts(parts.clone());
        let whole: Vec<u8> = parts.concat();
        assert_eq!(body.len(), whole.len());
        assert_eq!(&body.to_bytes()[..], &whole[..]);
        // Cloning shares the parts.
        assert_eq!(body.clone().parts()[2].as_ptr(), parts[2].as_ptr());
        assert!(RequestBody::default().is_empty());
    }

    #[test]
    fn one_part_is_not_copied() {
        let bytes = Bytes::from_static(b"{}");
        let body = RequestBody::from(bytes.clone());
        assert_eq!(body.to_bytes().as_ptr(), bytes.as_ptr());
    }
}
