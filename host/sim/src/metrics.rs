//! `GET /metrics`: llama.cpp's Prometheus page (`llama-server --metrics`),
//! with the counters and gauges agentload's telemetry maps: prompt tokens
//! processed and reused from the cache, tokens generated, requests
//! processing and deferred.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the page reports, updated by the scheduler.
#[derive(Debug, Default)]
pub(crate) struct ServerMetrics {
    prompt_processed: AtomicU64,
    prompt_cached: AtomicU64,
    predicted: AtomicU64,
    processing: AtomicU64,
    deferred: AtomicU64,
}

impl ServerMetrics {
    /// A finished generation's tokens (its `usage`).
    pub(crate) fn finished(&self, prompt: u32, cached: u32, predicted: u32) {
        let processed = prompt.saturating_sub(cached);
        self.prompt_processed
            .fetch_add(u64::from(processed), Ordering::Relaxed);
        self.prompt_cached
            .fetch_add(u64::from(cached), Ordering::Relaxed);
        self.predicted
            .fetch_add(u64::from(predicted), Ordering::Relaxed);
    }

    /// Requests in a slot and requests waiting for one.
    pub(crate) fn queue(&self, processing: usize, deferred: usize) {
        self.processing.store(processing as u64, Ordering::Relaxed);
        self.deferred.store(deferred as u64, Ordering::Relaxed);
    }

    /// The page, in llama.cpp's names, HELP and TYPE lines.
    pub(crate) fn page(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut page = String::new();
        for (kind, name, help, value) in [
            (
                "counter",
                "prompt_tokens_total",
                "Number of prompt tokens processed, excluding cached tokens",
                load(&self.prompt_processed),
            ),
            (
                "counter",
                "prompt_tokens_cached_total",
                "Number of prompt tokens reused from the cache",
                load(&self.prompt_cached),
            ),
            (
                "counter",
                "tokens_predicted_total",
                "Number of generation tokens processed",
                load(&self.predicted),
            ),
            (
                "gauge",
                "requests_processing",
                "Number of requests processing",
                load(&self.processing),
            ),
            (
                "gauge",
                "requests_deferred",
                "Number of requests deferred",
                load(&self.deferred),
            ),
        ] {
            let _ = write!(
                page,
                "# HELP llamacpp:{name} {help}\n# TYPE llamacpp:{name} {kind}\nllamacpp:{name} {value}\n"
            );
        }
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_counts_processed_and_cached_prompt_tokens_apart() {
        let m = ServerMetrics::default();
        m.finished(100, 60, 7);
        m.finished(50, 0, 3);
        m.queue(2, 5);
        let page = m.page();
        for line in [
            "llamacpp:prompt_tokens_total 90\n",
            "llamacpp:prompt_tokens_cached_total 60\n",
            "llamacpp:tokens_predicted_total 10\n",
            "llamacpp:requests_processing 2\n",
            "llamacpp:requests_deferred 5\n",
            "# TYPE llamacpp:prompt_tokens_total counter\n",
        ] {
            assert!(page.contains(line), "{line:?} in\n{page}");
        }
    }
}
