//! A request body as a list of shared byte slices: the parts of a chat
//! request (its head, each message's JSON written once and shared by every
//! request that carries it, its tail) are never joined into one buffer that
//! a session keeps. hyper writes them as frames; small parts are joined into
//! frames of up to [`FRAME`] bytes, so a body of hundreds of messages costs a
//! handful of writes, not one per part. The joining is done before the
//! request is stamped issued ([`RequestBody::frames`]), and its copy is
//! dropped once the request is out.

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Parts at least this long go out as frames of their own, not copied.
const WHOLE: usize = 16 << 10;
/// The most bytes joined into one frame.
const FRAME: usize = 64 << 10;

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

    /// What hyper writes: each long part whole, the short ones between them
    /// joined up to [`FRAME`] bytes a frame. Made before the request is
    /// stamped issued, so no copy happens between the stamp and the write.
    pub(crate) fn frames(&self) -> Frames {
        let mut frames = Vec::new();
        let mut rest = &self.parts[..];
        while let Some(first) = rest.iter().position(|p| !p.is_empty()) {
            let part = &rest[first];
            if part.len() >= WHOLE {
                frames.push(part.clone());
                rest = &rest[first + 1..];
                continue;
            }
            let mut frame = BytesMut::with_capacity(FRAME.min(self.len));
            let mut taken = first;
            for p in &rest[first..] {
                if p.len() >= WHOLE || frame.len() + p.len() > FRAME {
                    break;
                }
                frame.extend_from_slice(p);
                taken += 1;
            }
            frames.push(frame.freeze());
            rest = &rest[taken..];
        }
        Frames {
            frames: frames.into(),
            next: 0,
            left: self.len,
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

/// A [`RequestBody`] as hyper writes it: its frames, in order, with the
/// exact length announced (`Content-Length`). Cloning (for a request sent
/// again on a new connection) copies no byte.
#[derive(Debug, Clone)]
pub(crate) struct Frames {
    frames: Arc<[Bytes]>,
    next: usize,
    left: usize,
}

impl Frames {
    /// The next frame, one of those [`RequestBody::frames`] made.
    fn next_frame(&mut self) -> Option<Bytes> {
        let frame = self.frames.get(self.next)?.clone();
        self.next += 1;
        Some(frame)
    }
}

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = self.next_frame();
        if let Some(f) = &frame {
            self.left -= f.len();
        }
        Poll::Ready(frame.map(|f| Ok(Frame::data(f))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(body: &RequestBody) -> Vec<Bytes> {
        let mut frames = body.frames();
        std::iter::from_fn(|| frames.next_frame()).collect()
    }

    #[test]
    fn frames_carry_every_byte_in_order_long_parts_uncopied() {
        let long = Bytes::from(vec![b'x'; WHOLE]);
        let parts = vec![
            Bytes::from_static(b"{\"messages\":["),
            Bytes::new(),
            Bytes::from_static(b"{\"a\":1}"),
            Bytes::from_static(b","),
            long.clone(),
            Bytes::from_static(b","),
            Bytes::from(vec![b'y'; FRAME - 10]),
            Bytes::from(vec![b'z'; 20]),
            Bytes::from_static(b"]}"),
        ];
        let body = RequestBody::from_parts(parts.clone());
        let whole: Vec<u8> = parts.concat();
        assert_eq!(body.len(), whole.len());
        assert_eq!(&body.to_bytes()[..], &whole[..]);
        let got = frames(&body);
        assert_eq!(got.concat(), whole);
        // Writing copies nothing: the frames polled are the ones made before.
        let made = body.frames();
        let mut polled = made.clone();
        for f in made.frames.iter() {
            assert_eq!(polled.next_frame().unwrap().as_ptr(), f.as_ptr());
        }
        // Short parts joined up to a long one; long parts whole (the same
        // buffer).
        assert_eq!(&got[0][..], b"{\"messages\":[{\"a\":1},");
        assert_eq!(got[1].as_ptr(), long.as_ptr());
        let lengths: Vec<usize> = got.iter().map(Bytes::len).collect();
        assert_eq!(lengths, [21, WHOLE, 1, FRAME - 10, 22]);
        assert!(got.iter().all(|f| f.len() <= FRAME));
        let mut f = body.frames();
        assert_eq!(f.size_hint().exact(), Some(whole.len() as u64));
        while f.next_frame().is_some() {}
        assert!(RequestBody::default().frames().next_frame().is_none());
    }

    #[test]
    fn one_part_is_not_copied() {
        let bytes = Bytes::from_static(b"{}");
        let body = RequestBody::from(bytes.clone());
        assert_eq!(body.to_bytes().as_ptr(), bytes.as_ptr());
    }
}
