//! Live-reply replay's reviews, from the workload's WIT record to the
//! turn record's.

use agentload_plugin_host::{Divergence as Wit, LiveAction as WitAction, TurnReview};
use agentload_results::live::{Divergence, LiveAction, LiveReview};

/// The record of a workload's review.
pub fn review_record(review: &TurnReview) -> LiveReview {
    LiveReview {
        divergence: match review.divergence {
            Wit::Error => Divergence::Error,
            Wit::Truncated => Divergence::Truncated,
            Wit::Empty => Divergence::Empty,
            Wit::MalformedArgs => Divergence::MalformedArgs,
            Wit::TextForCall => Divergence::TextForCall,
            Wit::CallForText => Divergence::CallForText,
            Wit::MissingCalls => Divergence::MissingCalls,
            Wit::ExtraCalls => Divergence::ExtraCalls,
            Wit::NameDiff => Divergence::NameDiff,
            Wit::ArgsDiff => Divergence::ArgsDiff,
            Wit::Match => Divergence::Match,
        },
        action: match review.action {
            WitAction::Kept => LiveAction::Kept,
            WitAction::Substituted => LiveAction::Substituted,
            WitAction::Ended => LiveAction::Ended,
            WitAction::Failed => LiveAction::Failed,
        },
        paired_results: review.paired_results,
        dropped_results: review.dropped_results,
        placeholder_results: review.placeholder_results,
        detail: review.detail.clone(),
    }
}
