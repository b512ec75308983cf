//! The HTTP response body: a complete buffer, or a stream of frames fed through a channel
//! (optionally altered by an injected fault).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::fault::{Step, StreamFault};
use crate::stream::Out;
use crate::wire::WireStamps;

/// Response body of every simulator answer.
pub(crate) enum SimBody {
    /// The whole body at once (JSON answers); `Content-Length` is known.
    Full(Option<Bytes>),
    /// SSE: frames arrive through `rx` as the scheduler produces them; `first` was
    /// received before the response head was returned. The closing events are rendered once
    /// the first write of the response returned (`wire`), with its stamp as the first token's.
    Stream {
        first: Option<Out>,
        rx: mpsc::UnboundedReceiver<Out>,
        fault: Option<Box<StreamFault>>,
        wire: Arc<WireStamps>,
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
            Self::Stream {
                first,
                rx,
                fault,
                wire,
            } => {
                if let Some(f) = fault.as_mut().filter(|f| f.is_waiting()) {
                    ready!(f.poll_wait(cx));
                    return Poll::Ready(Some(Err(aborted())));
                }
                let out = match first.take() {
                    Some(out) => out,
                    None => match ready!(rx.poll_recv(cx)) {
                        Some(out) => out,
                        None => return Poll::Ready(None),
                    },
                };
                let frame = match out {
                    Out::Frame(b) => b,
                    Out::Closing(mut closing) => {
                        if closing.after_tokens {
                            let Poll::Ready(written) = wire.poll_first_write(cx) else {
                                // Until the head and first token are written (woken then).
                                *first = Some(Out::Closing(closing));
                                return Poll::Pending;
                            };
                            let s = &mut closing.stamps;
                            let arrived = s.received_mono_ns;
                            s.first_token_ns =
                                agentload_wire::clock::mono_ns(written).saturating_sub(arrived);
                            // A one-token answer's last token is its first.
                            s.last_token_ns = s.last_token_ns.max(s.first_token_ns);
                        }
                        Bytes::from(closing.render())
                    }
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
