//! An open-loop phase's schedule, configured against delivered (`agentload.arrivals` in
//! `result_summary.json`, each rate level's `arrivals` in `sweep/summary.json`, lines in
//! `report.txt`): every arrival's first request keeps its due time (`scheduled_ns`), so
//! the harness's send lag, the delivered rate and the delivered gaps' fit to the configured
//! law are measured from the records; a harness or cap that fell behind is named, never
//! hidden by a stretched schedule.

use crate::fit::{ks, mean_cv, Ks, Law};
use crate::record::TurnFacts;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What the dispatcher did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    /// Arrivals released (their sessions ran).
    pub released: u64,
    /// Arrivals the in-flight cap held past their due time.
    pub held_back: u64,
    /// The longest and the total of those holds, ns.
    pub held_max_ns: u64,
    pub held_total_ns: u64,
}

/// What was configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Configured {
    /// `sessions` or `requests`.
    pub of: String,
    /// `constant`, `poisson`, `gamma` or `trace`.
    pub process: String,
    /// Arrivals per second after the ramp (a trace's: its arrivals over its span).
    pub rate: f64,
    /// The gaps' coefficient of variation (a trace's: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cv: Option<f64>,
    pub seed: u64,
    /// Arrivals in the schedule (none for a sweep level's endless one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// The ramp's end (s after the phase start): the measured arrivals are those due after it.
    pub ramp_s: f64,
}

impl Configured {
    /// The law of the configured gaps (none for a trace).
    pub fn law(&self) -> Option<Law> {
        let mean = 1.0 / self.rate;
        match self.process.as_str() {
            "constant" => Some(Law::Constant { mean }),
            "poisson" => Some(Law::Exponential { mean }),
            "gamma" => Some(Law::gamma_with(mean, self.cv?)),
            _ => None,
        }
    }
}

/// Send lag (issued minus due), ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Lag {
    pub n: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Lag {
    fn of(mut ms: Vec<f64>) -> Option<Self> {
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        let at = |p: f64| ms[((p / 100.0) * (ms.len() - 1) as f64).floor() as usize];
        Some(Self {
            n: ms.len(),
            p50: at(50.0),
            p99: at(99.0),
            max: ms[ms.len() - 1],
            mean: ms.iter().sum::<f64>() / ms.len() as f64,
        })
    }
}

/// What the harness delivered: its arrivals' first requests as it issued them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivered {
    /// Arrivals issued after the ramp.
    pub arrivals: usize,
    /// Their rate: arrivals after the first over the first to the last issue (per second).
    pub rate: Option<f64>,
    /// The delivered over the configured rate.
    pub rate_ratio: Option<f64>,
    /// The schedule's own rate over the same arrivals (their due times): an endless
    /// schedule's is a draw about the configured rate, and the delivered rate is held to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_rate: Option<f64>,
    /// The issued gaps' coefficient of variation.
    pub cv: Option<f64>,
    /// The issued gaps against the configured law (none for a constant rate or a trace).
    pub ks: Option<Ks>,
    /// The arrivals' first requests' send lag (ms), after the ramp.
    pub send_lag_ms: Option<Lag>,
    /// Every request's send lag (ms), later turns of the sessions included.
    pub all_send_lag_ms: Option<Lag>,
}

/// `agentload.arrivals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalsSummary {
    pub configured: Configured,
    pub dispatch: Dispatch,
    pub delivered: Delivered,
    /// Why the schedule was not delivered as configured, when it was not.
    pub behind: Vec<String>,
    /// The load delivered was lighter than the schedule's: the cap held arrivals back, or
    /// the delivered rate fell more than 1 % short (late sends alone delay arrivals without
    /// taking any away). A sweep level so delivered meets no SLO tier.
    #[serde(default)]
    pub lighter: bool,
}

/// A delivered rate more than this far below the configured one is behind.
const RATE_SHORTFALL: f64 = 0.01;

impl ArrivalsSummary {
    /// The summary of `records` (one phase's, its clock's ns) for `configured`.
    pub fn of(records: &[TurnFacts], configured: Configured, dispatch: Dispatch) -> Self {
        let ramp_ns = (configured.ramp_s * 1e9) as u64;
        // Each session's first request: the arrival.
        let mut first: HashMap<&str, &TurnFacts> = HashMap::new();
        for r in records {
            let (Some(due), Some(_)) = (r.scheduled_ns(), r.issued_ns()) else {
                continue;
            };
            first
                .entry(&r.session_id)
                .and_modify(|f| {
                    if f.scheduled_ns().is_some_and(|d| due < d) {
                        *f = r;
                    }
                })
                .or_insert(r);
        }
        let mut arrivals: Vec<(u64, u64)> = first
            .values()
            .filter_map(|r| Some((r.scheduled_ns()?, r.issued_ns()?)))
            .filter(|&(due, _)| due >= ramp_ns)
            .collect();
        arrivals.sort_unstable();
        let lag = |due: u64, issued: u64| issued.saturating_sub(due) as f64 / 1e6;
        let send_lag_ms = Lag::of(arrivals.iter().map(|&(d, i)| lag(d, i)).collect());
        let all_send_lag_ms = Lag::of(
            records
                .iter()
                .filter_map(|r| Some(lag(r.scheduled_ns()?, r.issued_ns()?)))
                .collect(),
        );
        let mut issued: Vec<u64> = arrivals.iter().map(|&(_, i)| i).collect();
        issued.sort_unstable();
        let gaps: Vec<f64> = issued
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e9)
            .collect();
        let rate_of = |t: &[u64]| match (t.first(), t.last()) {
            (Some(a), Some(b)) if b > a => Some((t.len() - 1) as f64 / ((b - a) as f64 / 1e9)),
            _ => None,
        };
        let rate = rate_of(&issued);
        let due: Vec<u64> = arrivals.iter().map(|&(d, _)| d).collect();
        let scheduled_rate = rate_of(&due);
        let law = configured.law().filter(Law::testable);
        let delivered = Delivered {
            arrivals: issued.len(),
            rate,
            rate_ratio: rate.map(|r| r / configured.rate),
            scheduled_rate,
            cv: mean_cv(&gaps).map(|(_, cv)| cv),
            ks: law.and_then(|law| ks(&gaps, |x| law.cdf(x))),
            send_lag_ms,
            all_send_lag_ms,
        };
        let mut behind = Vec::new();
        if dispatch.held_back > 0 {
            behind.push(format!(
                "the in-flight cap (max_in_flight = {}) held back {} arrivals, up to {:.1} ms \
                 past their due times",
                configured.max_in_flight.unwrap_or(0),
                dispatch.held_back,
                dispatch.held_max_ns as f64 / 1e6
            ));
        }
        // A planned schedule is scaled to its configured rate; an endless one's is a draw.
        let (wanted, of) = match (configured.planned, scheduled_rate) {
            (None, Some(s)) => (s, "scheduled"),
            _ => (configured.rate, "configured"),
        };
        if let Some(ratio) = rate
            .map(|r| r / wanted)
            .filter(|r| *r < 1.0 - RATE_SHORTFALL)
        {
            behind.push(format!(
                "delivered {:.3}/s of the {of} {wanted:.3}/s ({:.1} % short)",
                delivered.rate.unwrap_or(0.0),
                (1.0 - ratio) * 100.0
            ));
        }
        let lighter = !behind.is_empty();
        let gap_ms = 1e3 / configured.rate;
        if let Some(l) = delivered
            .send_lag_ms
            .filter(|l| l.p99 > (gap_ms / 10.0).max(1.0))
        {
            behind.push(format!(
                "arrivals were sent late: send lag p99 {:.2} ms, max {:.2} ms (the mean gap is \
                 {gap_ms:.2} ms)",
                l.p99, l.max
            ));
        }
        Self {
            configured,
            dispatch,
            delivered,
            behind,
            lighter,
        }
    }

    /// Its lines in `report.txt`.
    pub fn lines(&self) -> String {
        let c = &self.configured;
        let d = &self.delivered;
        let mut text = format!(
            "arrivals: {} {} of {}{}, configured {:.3}/s{}{}; {} released\n",
            d.arrivals,
            c.process,
            c.of,
            c.cv.map_or_else(String::new, |cv| format!(" (cv {cv})")),
            c.rate,
            c.planned
                .map_or_else(String::new, |n| format!(", {n} planned")),
            if c.ramp_s > 0.0 {
                format!(", measured after a {:.1} s ramp", c.ramp_s)
            } else {
                String::new()
            },
            self.dispatch.released
        );
        let rate = d
            .rate
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.3}/s"));
        let ratio = d.rate_ratio.map_or_else(String::new, |r| {
            format!(" ({:.2} % of configured)", r * 100.0)
        });
        text.push_str(&format!("  delivered rate {rate}{ratio}"));
        if let Some(cv) = d.cv {
            text.push_str(&format!(", gap cv {cv:.3}"));
        }
        if let Some(k) = d.ks {
            text.push_str(&format!(
                ", Kolmogorov-Smirnov D {:.4} p {:.3} against the configured law",
                k.d, k.p_value
            ));
        }
        text.push('\n');
        if let Some(l) = d.send_lag_ms {
            text.push_str(&format!(
                "  send lag of arrivals: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
                l.p50, l.p99, l.max
            ));
        }
        if self.dispatch.held_back > 0 {
            text.push_str(&format!(
                "  held back by the in-flight cap: {} arrivals (max {:.1} ms)\n",
                self.dispatch.held_back,
                self.dispatch.held_max_ns as f64 / 1e6
            ));
        }
        for why in &self.behind {
            text.push_str(&format!("BEHIND SCHEDULE: {why}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Interner, TurnRecord};

    fn fact(session: &str, turn: u32, due: u64, issued: u64) -> TurnFacts {
        let mut r = TurnRecord::aborted(session, turn, "item", "null");
        r.status = crate::record::TurnStatus::Completed;
        r.scheduled_ns = Some(due);
        r.issued_ns = Some(issued);
        r.complete_ns = Some(issued + 1_000);
        TurnFacts::of(&r, 0, &mut Interner::default())
    }

    fn configured(rate: f64) -> Configured {
        Configured {
            of: "sessions".into(),
            process: "poisson".into(),
            rate,
            cv: None,
            seed: 1,
            planned: Some(4),
            max_in_flight: None,
            ramp_s: 0.0,
        }
    }

    #[test]
    fn arrivals_are_first_turns_and_lag_is_issued_minus_due() {
        let records = vec![
            fact("a", 1, 1_000_000, 1_100_000),
            fact("a", 2, 50_000_000, 50_000_000),
            fact("b", 1, 11_000_000, 11_000_000),
            fact("c", 1, 21_000_000, 21_200_000),
        ];
        let s = ArrivalsSummary::of(&records, configured(100.0), Dispatch::default());
        assert_eq!(s.delivered.arrivals, 3);
        // 2 gaps over 20.1 ms.
        let rate = s.delivered.rate.unwrap();
        assert!((rate - 2.0 / 0.0201).abs() < 1e-9, "{rate}");
        let lag = s.delivered.send_lag_ms.unwrap();
        assert_eq!((lag.p50, lag.max), (0.1, 0.2));
        assert_eq!(s.delivered.all_send_lag_ms.unwrap().n, 4);
        assert!(s.behind.is_empty(), "{:?}", s.behind);
        // Configured at twice the delivered rate: behind, and said so.
        let s = ArrivalsSummary::of(&records, configured(200.0), Dispatch::default());
        assert!(
            s.behind.iter().any(|b| b.contains("short")),
            "{:?}",
            s.behind
        );
        assert!(s.lines().contains("BEHIND SCHEDULE"));
        // An endless schedule (a rate sweep's level) is held to its own draw: due times
        // drawn slower than configured and kept are on schedule...
        let endless = Configured {
            planned: None,
            ..configured(200.0)
        };
        let s = ArrivalsSummary::of(&records, endless.clone(), Dispatch::default());
        assert_eq!(s.delivered.scheduled_rate, Some(2.0 / 0.02));
        assert!(s.behind.is_empty() && !s.lighter, "{:?}", s.behind);
        // ...and sends that fall behind those due times are not.
        let late = vec![
            fact("a", 1, 1_000_000, 1_000_000),
            fact("b", 1, 11_000_000, 14_000_000),
            fact("c", 1, 21_000_000, 27_000_000),
        ];
        let s = ArrivalsSummary::of(&late, endless.clone(), Dispatch::default());
        assert!(
            s.behind
                .iter()
                .any(|b| b.contains("of the scheduled 100.000/s")),
            "{:?}",
            s.behind
        );
        assert!(s.lighter);
        // Sends late by the same few ms each keep the rate: late, not lighter.
        let shifted = vec![
            fact("a", 1, 1_000_000, 4_000_000),
            fact("b", 1, 11_000_000, 14_000_000),
            fact("c", 1, 21_000_000, 24_000_000),
        ];
        let s = ArrivalsSummary::of(&shifted, endless, Dispatch::default());
        assert!(
            s.behind.iter().any(|b| b.contains("sent late")) && !s.lighter,
            "{:?}",
            s.behind
        );
    }

    #[test]
    fn the_ramp_is_left_out_and_holds_are_named() {
        let records = vec![
            fact("a", 1, 100_000_000, 100_000_000),
            fact("b", 1, 2_000_000_000, 2_000_000_000),
            fact("c", 1, 2_010_000_000, 2_010_000_000),
        ];
        let c = Configured {
            ramp_s: 1.0,
            max_in_flight: Some(2),
            ..configured(100.0)
        };
        let held = Dispatch {
            released: 3,
            held_back: 1,
            held_max_ns: 5_000_000,
            held_total_ns: 5_000_000,
        };
        let s = ArrivalsSummary::of(&records, c, held);
        assert_eq!(s.delivered.arrivals, 2);
        assert!(s.behind[0].contains("max_in_flight = 2"), "{:?}", s.behind);
        assert!(s.lighter);
    }
}
