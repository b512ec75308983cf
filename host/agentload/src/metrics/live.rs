//! Streaming aggregation for progress lines: HDR histograms that take every
//! sample in O(1) while the run goes on (the reported numbers are exact order
//! statistics computed at the end, see [`super::Series`]).

use hdrhistogram::Histogram;

/// Live TTFT and latency distributions, in microseconds.
pub struct LiveStats {
    ttft_us: Histogram<u64>,
    latency_us: Histogram<u64>,
}

impl Default for LiveStats {
    fn default() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        Self {
            ttft_us: h(),
            latency_us: h(),
        }
    }
}

impl LiveStats {
    /// Adds one completed turn.
    pub fn record(&mut self, ttft_ns: u64, latency_ns: u64) {
        self.ttft_us.saturating_record((ttft_ns / 1000).max(1));
        self.latency_us
            .saturating_record((latency_ns / 1000).max(1));
    }

    /// `ttft p50/p99, latency p50` as a short progress string.
    pub fn line(&self) -> String {
        if self.ttft_us.is_empty() {
            return String::new();
        }
        format!(
            "ttft p50 {:.1} ms p99 {:.1} ms, latency p50 {:.1} ms",
            self.ttft_us.value_at_quantile(0.5) as f64 / 1000.0,
            self.ttft_us.value_at_quantile(0.99) as f64 / 1000.0,
            self.latency_us.value_at_quantile(0.5) as f64 / 1000.0,
        )
    }
}
