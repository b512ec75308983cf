//! The stream rules: SSE events in, an assembled completion (or the reason it is not one)
//! out. Token-bearing chunks are timestamped with their read's arrival time.

use super::assemble::{Assembled, CompletionAssembler, NotJson};
use super::sse::{SseEvent, SseParser};
use super::stream::{quote, Timeline, TurnError};
use std::time::Instant;

/// SSE events in, an assembled completion out, with the stream rules.
#[derive(Default)]
pub(super) struct StreamReader {
    parser: SseParser,
    events: Vec<SseEvent>,
    assembler: CompletionAssembler,
    /// `data:` events seen (for messages).
    seen: u32,
    /// `[DONE]` came.
    pub(super) done: bool,
}

impl StreamReader {
    /// A reader whose assembler reads first tokens as `first_token` says.
    pub(super) fn new(first_token: super::assemble::FirstToken) -> Self {
        Self {
            assembler: CompletionAssembler::new(first_token),
            ..Self::default()
        }
    }

    /// Parses `bytes` that arrived at `now`.
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        t: &mut Timeline,
        now: Instant,
    ) -> Result<(), TurnError> {
        self.parser.feed(bytes, &mut self.events);
        self.take_events(t, now)
    }

    /// The body ended at `now`: an event still being built is dispatched.
    pub(super) fn finish(&mut self, t: &mut Timeline, now: Instant) -> Result<(), TurnError> {
        self.parser.finish(&mut self.events);
        self.take_events(t, now)
    }

    fn take_events(&mut self, t: &mut Timeline, now: Instant) -> Result<(), TurnError> {
        // A stream's token stamps never go backwards: where the kernel merged
        // queued packets it keeps the newer stamp, so an earlier read can
        // carry a stamp a few hundred ns later than the next read's (seen
        // under load: last_token_ns 125 ns before first_token_ns).
        let now = t.last_token.map_or(now, |last| now.max(last));
        // Taken and given back, so that its room is reused.
        let mut events = std::mem::take(&mut self.events);
        let taken = self.take_each(&mut events, t, now);
        events.clear();
        self.events = events;
        taken
    }

    fn take_each(
        &mut self,
        events: &mut Vec<SseEvent>,
        t: &mut Timeline,
        now: Instant,
    ) -> Result<(), TurnError> {
        for event in events.drain(..) {
            if self.done {
                break; // anything after [DONE] is not part of the answer
            }
            match event.event.as_deref() {
                Some("error") => {
                    return Err(TurnError::stream(format!(
                        "the server sent an SSE error event: {}",
                        quote(event.data.as_bytes())
                    )))
                }
                // Other named events are not part of the Chat Completions stream.
                Some(name) if name != "message" => continue,
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
                continue;
            }
            match self.assembler.push_chunk(&event.data) {
                Ok(true) => {
                    t.first_token.get_or_insert(now);
                    t.last_token = Some(now);
                    t.token_chunks_ns
                        .push(now.duration_since(t.issued).as_nanos() as u64);
                }
                Ok(false) => {}
                Err(NotJson(e)) => {
                    return Err(TurnError::stream(format!(
                        "SSE data #{} is neither JSON nor [DONE] ({e}): {}",
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
        }
        Ok(())
    }

    /// The answer, once the stream is over.
    pub(super) fn end(self) -> Result<Assembled, TurnError> {
        let done = self.done;
        let chunks = self.assembler.chunks();
        let out = self.assembler.finish();
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
