//! The clock model: latencies are durations on one process's monotonic
//! clock, exact under any skew; times that compare shards (the start
//! barrier, the merged time line) are mapped into the coordinator's
//! monotonic clock by an offset estimated from pings.
//!
//! A ping is sent at `t0` and answered at `t1` on the shard's clock, with
//! the coordinator's reading `c` taken in between. The coordinator's clock
//! minus the shard's is then `c - (t0 + t1) / 2`, wrong by at most half the
//! round trip, so the sample with the smallest round trip is the estimate
//! and `rtt / 2` its uncertainty (Cristian's algorithm; AIPerf's workers do
//! the same with 20 samples).

use serde::{Deserialize, Serialize};

/// One ping: both ends' monotonic readings, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Sent, on the shard's clock.
    pub sent_ns: u64,
    /// The coordinator's reading.
    pub coordinator_ns: u64,
    /// Answered, on the shard's clock.
    pub received_ns: u64,
}

impl Sample {
    /// The round trip, ns.
    pub fn rtt_ns(&self) -> u64 {
        self.received_ns.saturating_sub(self.sent_ns)
    }

    /// Coordinator minus shard, ns, as this sample sees it.
    pub fn offset_ns(&self) -> i64 {
        let mid = self.sent_ns as i128 + (self.rtt_ns() / 2) as i128;
        (self.coordinator_ns as i128 - mid) as i64
    }
}

/// The coordinator's clock minus the shard's, with its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    pub offset_ns: i64,
    /// Half the round trip of the sample it came from: the true offset is
    /// within `offset_ns ± uncertainty_ns`.
    pub uncertainty_ns: u64,
    /// Samples it was chosen from.
    pub samples: u32,
}

impl Offset {
    /// The estimate from the sample with the smallest round trip (`None`
    /// without samples).
    pub fn estimate(samples: &[Sample]) -> Option<Offset> {
        let best = samples.iter().min_by_key(|s| s.rtt_ns())?;
        Some(Offset {
            offset_ns: best.offset_ns(),
            uncertainty_ns: best.rtt_ns().div_ceil(2),
            samples: samples.len() as u32,
        })
    }

    /// A shard reading on the coordinator's clock.
    pub fn to_coordinator(&self, shard_ns: u64) -> u64 {
        (shard_ns as i128 + self.offset_ns as i128).max(0) as u64
    }

    /// A coordinator reading on the shard's clock.
    pub fn to_shard(&self, coordinator_ns: u64) -> u64 {
        (coordinator_ns as i128 - self.offset_ns as i128).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_round_trip_wins_and_bounds_the_error() {
        // The coordinator runs 5 s ahead; the second ping is the fastest.
        let truth = 5_000_000_000i64;
        let ping = |sent: u64, out: u64, back: u64| Sample {
            sent_ns: sent,
            coordinator_ns: (sent + out) + truth as u64,
            received_ns: sent + out + back,
        };
        let samples = [
            ping(0, 900, 100),
            ping(10_000, 60, 40),
            ping(20_000, 30, 500),
        ];
        let o = Offset::estimate(&samples).unwrap();
        assert_eq!(o.uncertainty_ns, 50);
        assert_eq!(o.samples, 3);
        assert!((o.offset_ns - truth).unsigned_abs() <= o.uncertainty_ns);
        assert_eq!(o.to_shard(o.to_coordinator(123)), 123);
        assert!(Offset::estimate(&[]).is_none());
    }

    #[test]
    fn an_asymmetric_path_stays_within_half_the_round_trip() {
        for (out, back) in [(1, 999), (999, 1), (500, 500)] {
            let s = Sample {
                sent_ns: 1_000,
                coordinator_ns: 1_000 + out,
                received_ns: 1_000 + out + back,
            };
            let o = Offset::estimate(&[s]).unwrap();
            assert!(o.offset_ns.unsigned_abs() <= o.uncertainty_ns, "{o:?}");
        }
    }
}
