//! The HTTP response body: a complete buffer, or a stream of frames fed through a channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// Response body of every simulator answer.
#[derive(Debug)]
pub(crate) enum SimBody {
    /// The whole body at once (JSON answers); `Content-Length` is known.
    Full(Option<Bytes>),
    /// SSE: frames arrive through `rx` as the scheduler produces them; `first` was
    /// received before the response head was returned.
    Stream {
        first: Option<Bytes>,
        rx: mpsc::UnboundedReceiver<Bytes>,
    },
}

impl SimBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Stream { first, rx } => match first.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Self::Stream { .. } => SizeHint::default(),
        }
    }
}
