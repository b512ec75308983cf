//! The stream rules: SSE events in, an assembled completion (or the reason it is not one)
//! out. Token-bearing chunks are timestamped with their read's arrival time.

use super::assemble::{Assembled, BadChunk, CompletionAssembler, FirstToken};
use super::request::ClientStyle;
use super::sse::{SseEvent, SseParser};
use super::stream::{quote, Timeline, TurnError};
use std::time::Instant;

/// SSE events in, an assembled completion out, with the stream rules.
#[derive(Default)]
pub(super) struct StreamReader {
    parser: SseParser,
    /// The rest of the stream's state, apart from the parser: events borrowed from the
    /// parser's buffer are taken while the parser is borrowed.
    taker: Taker,
}

/// What takes each event.
#[derive(Default)]
struct Taker {
    assembler: CompletionAssembler,
    /// `data:` events seen (for messages).
    seen: u32,
    /// Of them, JSON chunks taken.
    chunks: u32,
    /// `[DONE]` came.
    done: bool,
    /// agentperf-local's stream rules: an answer needs neither `[DONE]` nor a
    /// `finish_reason` (its own check of the answer judges what came).
    lenient: bool,
}

impl StreamReader {
    /// A reader whose assembler reads first tokens as `first_token` says.
    pub(super) fn new(first_token: FirstToken, style: ClientStyle) -> Self {
        Self {
            parser: SseParser::default(),
            taker: Taker {
                assembler: CompletionAssembler::new(first_token),
                lenient: style == ClientStyle::AgentperfLocal,
                ..Taker::default()
            },
        }
    }

    /// `[DONE]` came.
    pub(super) fn done(&self) -> bool {
        self.taker.done
    }

    /// Parses `bytes` that arrived at `now`.
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        t: &mut Timeline,
        now: Instant,
    ) -> Result<(), TurnError> {
        let now = monotonic(t, now);
        let taker = &mut self.taker;
        self.parser.feed(bytes, |event| taker.take(event, t, now))
    }

    /// The body ended at `now`: an event still being built is dispatched.
    pub(super) fn finish(&mut self, t: &mut Timeline, now: Instant) -> Result<(), TurnError> {
        let now = monotonic(t, now);
        let taker = &mut self.taker;
        self.parser.finish(|event| taker.take(event, t, now))
    }

    /// The answer, once the stream is over.
    pub(super) fn end(self) -> Result<Assembled, TurnError> {
        let Taker {
            assembler,
            done,
            chunks: data_events,
            lenient,
            ..
        } = self.taker;
        let chunks = assembler.chunks();
        let mut out = assembler.finish();
        out.data_events = data_events;
        if lenient {
            return Ok(out);
        }
        let reason = out.finish_reason.clone();
        match (chunks, reason, done) {
            (0, _, true) => Err(TurnError::stream(
                "the stream carried no completion chunk, only [DONE]",
            )),
            (0, _, false) => Err(TurnError::stream(
                "the stream ended without any completion chunk or [DONE]",
            )),
            (n, None, false) => Err(TurnError::stream(format!(
                "the stream ended without a finish_reason or [DONE] after {n} chunks"
            ))),
            (_, Some(reason), false) => Err(TurnError::stream(format!(
                "the stream ended without [DONE] after finish_reason {reason:?}"
            ))),
            (n, None, true) => Err(TurnError::stream(format!(
                "the stream ended with [DONE] but none of its {n} chunks had a finish_reason"
            ))),
            (_, Some(_), true) => Ok(out),
        }
    }
}

/// A stream's token stamps never go backwards: where the kernel merged queued packets it keeps
/// the newer stamp, so an earlier read can carry a stamp a few hundred ns later than the next
/// read's (seen under load: last_token_ns 125 ns before first_token_ns).
fn monotonic(t: &Timeline, now: Instant) -> Instant {
    t.last_token.map_or(now, |last| now.max(last))
}

impl Taker {
    /// One event, stamped `now`.
    fn take(
        &mut self,
        event: SseEvent<'_>,
        t: &mut Timeline,
        now: Instant,
    ) -> Result<(), TurnError> {
        if self.done {
            return Ok(()); // anything after [DONE] is not part of the answer
        }
        match event.event {
            Some("error") => {
                return Err(TurnError::stream(format!(
                    "the server sent an SSE error event: {}",
                    quote(event.data.as_bytes())
                )))
            }
            // Other named events are not part of the Chat Completions stream.
            Some(name) if name != "message" => return Ok(()),
            _ => {}
        }
        self.seen += 1;
        if event.invalid_utf8 {
            return Err(TurnError::stream(format!(
                "SSE data #{} is not valid UTF-8 (recording it would change what the server \
                 sent): {}",
                self.seen,
                quote(event.data.as_bytes())
            )));
        }
        if event.is_done() {
            self.done = true;
            return Ok(());
        }
        let taken = self.assembler.push_chunk(event.data);
        self.chunks += u32::from(taken.is_ok());
        match taken {
            Ok(true) => {
                t.first_token.get_or_insert(now);
                t.last_token = Some(now);
                t.token_chunks_ns
                    .push(now.duration_since(t.issued).as_nanos() as u64);
            }
            Ok(false) => {}
            Err(BadChunk::NotJson(e)) => {
                return Err(TurnError::stream(format!(
                    "SSE data #{} is neither JSON nor [DONE] ({e}): {}",
                    self.seen,
                    quote(event.data.as_bytes())
                )))
            }
            Err(e @ BadChunk::BadIndex { .. }) => {
                return Err(TurnError::stream(format!(
                    "SSE data #{}: {e}: {}",
                    self.seen,
                    quote(event.data.as_bytes())
                )))
            }
        }
        if let Some(message) = self.assembler.stream_error() {
            return Err(TurnError::stream(format!(
                "the server sent an error in the stream: {message}"
            )));
        }
        Ok(())
    }
}
