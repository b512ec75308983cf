//! One turn: the request body, the exchange, the record.

use super::body::{BodyOptions, Layout, SessionBodies};
use super::stop::Stop;
use crate::{CompletionRecord, TurnRecord, TurnStatus};
use agentload_client::{Assembled, ChatClient, Exchange, RequestBody};
use agentload_plugin_host::types::{Completion, ToolCall, Usage};
use agentload_plugin_host::TurnRequest;
use std::sync::Arc;
use std::time::Instant;

/// Sends turns and builds their records; times are relative to `origin`.
pub struct TurnSender {
    pub client: ChatClient,
    pub body: BodyOptions,
    /// The time origin of this process's records.
    pub origin: Instant,
    /// Which process this is (0: the run, n: its n-th resume).
    pub segment: u32,
}

/// A sent turn: its record, and for a turn that reached the server (answered
/// or failed) what local token counting needs.
pub struct Sent {
    pub record: TurnRecord,
    /// The request body as sent, and the answer (empty for a failed turn).
    pub answered: Option<(RequestBody, Assembled)>,
    /// With a `not_before`: when the request was ready to write, before it waited.
    pub ready: Option<Instant>,
}

impl TurnSender {
    /// Sends `req`, due at `due`, its body written by the session's `bodies`;
    /// with `not_before`, everything but the write is done first, and the write
    /// waits for that instant (an open-loop arrival, woken just before it).
    /// Once the request is out, `meanwhile` runs (work that need not come
    /// before it). A hard stop cuts the exchange: the turn is recorded as
    /// interrupted.
    pub async fn send(
        &self,
        req: &Arc<TurnRequest>,
        bodies: &mut SessionBodies,
        due: Instant,
        not_before: Option<Instant>,
        stop: &Stop,
        meanwhile: impl FnOnce(),
    ) -> Sent {
        let body = match bodies.body(req, &self.body) {
            Ok(body) => body,
            Err(e) => {
                return Sent {
                    record: self.unsent(req, due, format!("cannot build request: {e}")),
                    answered: None,
                    ready: None,
                };
            }
        };
        let mut record =
            TurnRecord::aborted(&req.session_id, req.turn, &req.item_id, &req.expected_json);
        record.error = None;
        record.segment = self.segment;
        record.scheduled_ns = Some(self.ns(due));
        let issued = Instant::now();
        let exchange = self.client.send_json_at(
            body,
            self.body.stream,
            &req.session_id,
            not_before,
            meanwhile,
        );
        let Some(exchange) = stop.unless_hardened(exchange).await else {
            record.status = TurnStatus::Interrupted;
            record.issued_ns = Some(self.ns(issued));
            record.complete_ns = Some(self.ns(Instant::now()));
            record.error = Some(format!(
                "interrupted before the answer ended ({})",
                stop.reason()
                    .map_or_else(|| "stopped".into(), |(r, _)| r.to_string())
            ));
            return Sent {
                record,
                answered: None,
                ready: None,
            };
        };
        let Exchange {
            timeline: t,
            result,
            body: sent,
        } = exchange;
        record.issued_ns = Some(self.ns(t.issued));
        record.issued_mono_ns = Some(agentload_wire::clock::mono_ns(t.issued));
        record.first_byte_ns = t.first_byte.map(|i| self.ns(i));
        record.first_token_ns = t.first_token.map(|i| self.ns(i));
        record.first_token_read_lag_ns = t
            .first_token_read
            .zip(t.first_token)
            .map(|(read, arrived)| read.saturating_duration_since(arrived).as_nanos() as u64);
        record.last_token_ns = t.last_token.map(|i| self.ns(i));
        record.complete_ns = Some(self.ns(t.complete));
        record.token_chunks = t.token_chunks_ns.len() as u32;
        record.opened_connection = t.opened.map(Box::new);
        let agentperf = self.body.layout == Layout::AgentperfLocal;
        match result {
            Ok(answer) => {
                record.status = TurnStatus::Completed;
                // agentperf-local's check of the answer: a turn it fails is failed, with
                // its answer kept.
                if let Some(why) = agentperf
                    .then(|| crate::agentperf::judge(req, &answer, None))
                    .flatten()
                {
                    record.status = TurnStatus::Failed;
                    record.error = Some(why);
                }
                record.set_answer(answer.clone());
                Sent {
                    record,
                    answered: Some((sent, answer)),
                    ready: t.ready,
                }
            }
            Err(e) => {
                record.status = TurnStatus::Failed;
                record.error = Some(e.to_string());
                // The reference counts a failed turn's prompt too (its ISL
                // is taken at ISSUED); the empty answer counts 0.
                Sent {
                    record,
                    answered: Some((sent, Assembled::default())),
                    ready: t.ready,
                }
            }
        }
    }

    /// The record of a turn due at `due` that failed before it was sent.
    pub fn unsent(&self, req: &TurnRequest, due: Instant, error: String) -> TurnRecord {
        let mut record =
            TurnRecord::aborted(&req.session_id, req.turn, &req.item_id, &req.expected_json);
        record.status = TurnStatus::Failed;
        record.error = Some(error);
        record.segment = self.segment;
        record.scheduled_ns = Some(self.ns(due));
        record
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }
}

/// The completion in WIT form, for the workload; `record`'s `usage` gives its counts.
pub fn completion_for_plugin(c: &CompletionRecord, record: &TurnRecord) -> Completion {
    Completion {
        content: c.content.clone(),
        reasoning_content: c.reasoning_content.clone(),
        tool_calls: c
            .tool_calls
            .iter()
            .map(|t| ToolCall {
                id: t.id.clone(),
                name: t.name.clone(),
                arguments: t.arguments.clone(),
            })
            .collect(),
        finish_reason: c.finish_reason.clone(),
        usage: usage_for_plugin(record.usage_counts()),
    }
}

/// Server usage in WIT form, from its prompt, completion and cached tokens: none without
/// the first two.
fn usage_for_plugin([prompt, completion, cached]: [Option<u64>; 3]) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: prompt? as u32,
        completion_tokens: completion? as u32,
        cached_tokens: cached.map(|v| v as u32),
    })
}
