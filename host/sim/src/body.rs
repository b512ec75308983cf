//! The HTTP response body: a complete buffer, or a stream of frames fed through a channel
//! (optionally altered by an injected fault).

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::fault::{Step, StreamFault};

/// Response body of every simulator answer.
pub(crate) enum SimBody {
    /// The whole body at once (JSON answers); `Content-Length` is known.
    Full(Option<Bytes>),
    /// SSE: frames arrive through `rx` as the scheduler produces them; `first` was
    /// received before the response head was returned.
    Stream {
        first: Option<Bytes>,
        rx: mpsc::UnboundedReceiver<Bytes>,
        fault: Option<Box<StreamFault>>,
    },
}

impl SimBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }
}

/// The error that aborts a connection (the `reset` and `stall` faults).
fn aborted() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "agentload-sim fault: connection aborted",
    )
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Self::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Stream { first, rx, fault } => {
                if let Some(f) = fault.as_mut().filter(|f| f.is_waiting()) {
                    ready!(f.poll_wait(cx));
                    return Poll::Ready(Some(Err(aborted())));
                }
                let frame = match first.take() {
                    Some(b) => b,
                    None => match ready!(rx.poll_recv(cx)) {
                        Some(b) => b,
                        None => return Poll::Ready(None),
                    },
                };
                let Some(f) = fault else {
                    return Poll::Ready(Some(Ok(Frame::data(frame))));
                };
                match f.step(frame) {
                    Step::Send(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                    Step::End => {
                        // The client sees a complete body; the generation is abandoned.
                        rx.close();
                        Poll::Ready(None)
                    }
                    Step::Abort => {
                        ready!(f.poll_wait(cx));
                        Poll::Ready(Some(Err(aborted())))
                    }
                }
            }
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
