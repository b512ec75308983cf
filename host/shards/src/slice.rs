//! Which sessions and how much concurrency a shard owns.
//!
//! Session `k` of a phase's plan belongs to shard `k mod N`: a session never
//! crosses shards, every shard's slice is spread over the whole plan (a
//! dataset sorted by length does not put the long sessions on one shard),
//! and the union of the slices is the plan. Concurrency `C` is split as
//! evenly as it divides: the first `C mod N` shards take one slot more.

use serde::{Deserialize, Serialize};

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub index: u32,
    pub count: u32,
}

/// A split that cannot run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SliceError {
    #[error("--shards must be at least 1")]
    NoShards,
    #[error("shard index {index} is not below the shard count {count}")]
    IndexOutOfRange { index: u32, count: u32 },
    #[error(
        "load.concurrency = {concurrency} cannot be split over {count} shards: every shard needs \
         at least one slot (use at most {concurrency} shards)"
    )]
    TooFewSlots { concurrency: usize, count: u32 },
}

impl Slice {
    /// Shard `index` of `count`, checked.
    pub fn new(index: u32, count: u32) -> Result<Self, SliceError> {
        if count == 0 {
            return Err(SliceError::NoShards);
        }
        if index >= count {
            return Err(SliceError::IndexOutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// Whether session `k` (its place in the phase's plan) is this shard's.
    pub fn owns(&self, k: usize) -> bool {
        k % self.count as usize == self.index as usize
    }

    /// This shard's share of `total` slots.
    pub fn concurrency(&self, total: usize) -> Result<usize, SliceError> {
        let n = self.count as usize;
        if total < n {
            return Err(SliceError::TooFewSlots {
                concurrency: total,
                count: self.count,
            });
        }
        Ok(total / n + usize::from((self.index as usize) < total % n))
    }

    /// This shard's items of `plan`, in plan order.
    pub fn take<T>(&self, plan: Vec<T>) -> Vec<T> {
        plan.into_iter()
            .enumerate()
            .filter(|(k, _)| self.owns(*k))
            .map(|(_, t)| t)
            .collect()
    }
}

impl std::fmt::Display for Slice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard {} of {}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slices_partition_the_plan() {
        let plan: Vec<usize> = (0..103).collect();
        let mut seen: Vec<usize> = (0..7)
            .flat_map(|i| Slice::new(i, 7).unwrap().take(plan.clone()))
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, plan);
        assert_eq!(Slice::new(2, 7).unwrap().take(plan)[..2], [2, 9]);
    }

    #[test]
    fn concurrency_splits_exactly() {
        let shares: Vec<usize> = (0..4)
            .map(|i| Slice::new(i, 4).unwrap().concurrency(10).unwrap())
            .collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        assert_eq!(shares.iter().sum::<usize>(), 10);
        assert_eq!(Slice::new(0, 1).unwrap().concurrency(5).unwrap(), 5);
    }

    #[test]
    fn bad_splits_are_refused_with_the_numbers() {
        assert_eq!(Slice::new(0, 0), Err(SliceError::NoShards));
        assert!(Slice::new(4, 4).is_err());
        let e = Slice::new(0, 8).unwrap().concurrency(4).unwrap_err();
        assert!(e.to_string().contains("load.concurrency = 4"), "{e}");
    }
}
