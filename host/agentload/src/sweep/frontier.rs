//! Across phases (and across runs): the Pareto frontier of total server
//! throughput vs interactivity (AA-AgentPerf's P25 output speed by default,
//! or another definition), throughput normalized per accelerator / MW /
//! rental dollar, and the most agents meeting each SLO.

use agentload_config::{Normalize, SloTier};
use agentload_results::metrics::{Definition, Interactivity};
use agentload_telemetry::PowerSummary;
use serde::{Deserialize, Serialize};

/// One (configuration, level) point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// The run it comes from (its config name).
    pub run: String,
    /// Concurrent agents (0 for a rate level).
    pub level: usize,
    /// Arrivals per second (a rate level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub total_tps: f64,
    /// P25 per-request output speed (tokens/s after the first token).
    pub speed_p25_tps: f64,
    /// The phase's interactivity by every definition (older files: none).
    #[serde(default)]
    pub interactivity: Interactivity,
    /// From a live-reply sweep: not official.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
}

impl Point {
    /// Its interactivity by definition `d` (AA's P25 is `speed_p25_tps`).
    pub fn x(&self, d: Definition) -> Option<f64> {
        match d {
            Definition::AaP25 => Some(self.speed_p25_tps),
            _ => d.of(&self.interactivity),
        }
    }
}

/// The points no other point beats on both throughput and AA's P25 speed,
/// by increasing throughput.
pub fn pareto(points: &[Point]) -> Vec<Point> {
    pareto_by(points, Definition::AaP25)
}

/// The points no other point beats on both throughput and interactivity by
/// definition `d` (points without it are left out), by increasing
/// throughput.
pub fn pareto_by(points: &[Point], d: Definition) -> Vec<Point> {
    let with: Vec<(&Point, f64)> = points.iter().filter_map(|p| Some((p, p.x(d)?))).collect();
    let mut front: Vec<(Point, f64)> = with
        .iter()
        .filter(|(p, x)| {
            !with.iter().any(|(q, qx)| {
                q.total_tps >= p.total_tps && qx >= x && (q.total_tps > p.total_tps || qx > x)
            })
        })
        .map(|(p, x)| ((*p).clone(), *x))
        .collect();
    front.sort_by(|a, b| a.0.total_tps.total_cmp(&b.0.total_tps));
    front.dedup_by(|a, b| a.0.total_tps == b.0.total_tps && a.1 == b.1);
    front.into_iter().map(|(p, _)| p).collect()
}

/// Throughput normalized by the configured inputs (absent inputs: absent).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Normalized {
    pub tps_per_accelerator: Option<f64>,
    /// Tokens per second per MW of mean measured power.
    pub tps_per_mw: Option<f64>,
    /// Tokens per dollar of accelerator rental.
    pub tokens_per_dollar: Option<f64>,
}

/// `total_tps` normalized by `power`'s mean over the steady-state window
/// (else over the phase); the accelerators are `n.accelerators`, else the
/// GPUs the power source read.
pub fn normalize(total_tps: f64, power: Option<&PowerSummary>, n: &Normalize) -> Normalized {
    let power_w = power.and_then(|p| p.window_mean_w.or(p.mean_w));
    let measured = power.map(|p| p.gpus.len()).filter(|g| *g > 0);
    let acc = n.accelerators.map(f64::from).or(measured.map(|g| g as f64));
    Normalized {
        tps_per_accelerator: acc.map(|a| total_tps / a),
        tps_per_mw: power_w.filter(|w| *w > 0.0).map(|w| total_tps / (w / 1e6)),
        tokens_per_dollar: acc
            .zip(n.price_per_accelerator_hour)
            .filter(|(a, p)| a * p > 0.0)
            .map(|(a, p)| total_tps * 3600.0 / (a * p)),
    }
}

/// One phase as the SLO check sees it.
#[derive(Debug, Clone, Copy)]
pub struct LevelResult {
    pub level: usize,
    /// A rate level's arrivals per second.
    pub rate: Option<f64>,
    pub ttft_p90_ms: f64,
    pub speed_p25_tps: f64,
    /// The level's load was delivered as scheduled (a rate level whose cap held arrivals
    /// back, or whose delivered rate fell short, measured a lighter load than its own).
    pub on_schedule: bool,
}

impl LevelResult {
    /// Whether the level meets `tier`: its TTFT p90 and P25 speed do, and its load was
    /// delivered on schedule.
    pub fn meets(&self, tier: &SloTier) -> bool {
        self.on_schedule
            && self.ttft_p90_ms <= tier.ttft_p90_ms
            && self.speed_p25_tps >= tier.speed_p25_tps
    }
}

/// The largest level meeting a tier.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SloResult {
    pub tier: String,
    pub ttft_p90_ms: f64,
    pub speed_p25_tps: f64,
    /// The most agents meeting it (none when no level does, or in a rate sweep).
    pub max_agents: Option<usize>,
    /// A rate sweep's highest rate meeting it (none when no rate does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
}

/// For each tier, the most concurrent agents (or the highest rate) whose phase met it.
pub fn max_agents(levels: &[LevelResult], tiers: &[SloTier]) -> Vec<SloResult> {
    tiers
        .iter()
        .map(|t| {
            let meets = || levels.iter().filter(|l| l.meets(t));
            SloResult {
                tier: t.name.clone(),
                ttft_p90_ms: t.ttft_p90_ms,
                speed_p25_tps: t.speed_p25_tps,
                max_agents: meets().filter(|l| l.rate.is_none()).map(|l| l.level).max(),
                max_rate: meets().filter_map(|l| l.rate).reduce(f64::max),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(level: usize, tps: f64, speed: f64) -> Point {
        Point {
            run: "r".into(),
            level,
            rate: None,
            total_tps: tps,
            speed_p25_tps: speed,
            interactivity: Interactivity::default(),
            live: false,
        }
    }

    #[test]
    fn another_definition_draws_another_frontier() {
        let with = |level, tps, speed, e2e: Option<f64>| Point {
            interactivity: Interactivity {
                mlperf_e2e_interactivity: e2e,
                ..Interactivity::default()
            },
            ..p(level, tps, speed)
        };
        // By P25 speed, level 2 is dominated by level 1; by MLPerf e2e
        // interactivity it is not, and level 4 (no value) is left out.
        let pts = [
            with(1, 200.0, 50.0, Some(10.0)),
            with(2, 150.0, 40.0, Some(30.0)),
            with(4, 100.0, 60.0, None),
        ];
        let by_speed: Vec<usize> = pareto(&pts).iter().map(|x| x.level).collect();
        assert_eq!(by_speed, [4, 1]);
        let by_e2e: Vec<usize> = pareto_by(&pts, Definition::MlperfE2e)
            .iter()
            .map(|x| x.level)
            .collect();
        assert_eq!(by_e2e, [2, 1]);
    }

    #[test]
    fn frontier_keeps_only_undominated_points() {
        let pts = [
            p(1, 100.0, 50.0),
            p(2, 180.0, 45.0),
            p(4, 170.0, 30.0),
            p(8, 300.0, 20.0),
            p(16, 290.0, 10.0),
        ];
        let levels: Vec<usize> = pareto(&pts).iter().map(|x| x.level).collect();
        assert_eq!(levels, [1, 2, 8]);
    }

    #[test]
    fn normalization_and_slo() {
        let n = Normalize {
            accelerators: Some(8),
            price_per_accelerator_hour: Some(2.0),
            ..Normalize::default()
        };
        // The power over the steady-state window, not over the phase.
        let power = PowerSummary {
            mean_w: Some(3000.0),
            window_mean_w: Some(4000.0),
            ..PowerSummary::default()
        };
        let r = normalize(1600.0, Some(&power), &n);
        assert_eq!(r.tps_per_accelerator, Some(200.0));
        assert_eq!(r.tps_per_mw, Some(400_000.0));
        assert_eq!(r.tokens_per_dollar, Some(360_000.0));
        // Without a configured count, the GPUs the power source read.
        let read = PowerSummary {
            mean_w: Some(2000.0),
            gpus: (0..4)
                .map(|index| agentload_telemetry::summary::GpuPower {
                    index,
                    mean_w: Some(500.0),
                    max_w: None,
                    energy_j: None,
                })
                .collect(),
            ..PowerSummary::default()
        };
        let r = normalize(1600.0, Some(&read), &Normalize::default());
        assert_eq!(r.tps_per_accelerator, Some(400.0));
        assert_eq!(r.tps_per_mw, Some(800_000.0));
        assert_eq!(
            normalize(1.0, None, &Normalize::default()),
            Normalized::default()
        );
        let levels = [
            LevelResult {
                level: 1,
                rate: None,
                on_schedule: true,
                ttft_p90_ms: 100.0,
                speed_p25_tps: 60.0,
            },
            LevelResult {
                level: 8,
                rate: None,
                on_schedule: true,
                ttft_p90_ms: 400.0,
                speed_p25_tps: 35.0,
            },
            LevelResult {
                level: 32,
                rate: None,
                on_schedule: true,
                ttft_p90_ms: 2500.0,
                speed_p25_tps: 12.0,
            },
        ];
        let tiers = [
            SloTier {
                name: "interactive".into(),
                ttft_p90_ms: 500.0,
                speed_p25_tps: 30.0,
            },
            SloTier {
                name: "impossible".into(),
                ttft_p90_ms: 10.0,
                speed_p25_tps: 100.0,
            },
        ];
        let r = max_agents(&levels, &tiers);
        assert_eq!(r[0].max_agents, Some(8));
        assert_eq!(r[1].max_agents, None);
        assert_eq!(r[0].max_rate, None);
        // A rate sweep: the highest rate meeting the tier.
        let rate = |rate, ttft, speed, on_schedule| LevelResult {
            level: 0,
            rate: Some(rate),
            ttft_p90_ms: ttft,
            speed_p25_tps: speed,
            on_schedule,
        };
        let mut rates = vec![
            rate(2.0, 90.0, 70.0, true),
            rate(8.0, 300.0, 40.0, true),
            rate(4.0, 200.0, 50.0, true),
        ];
        let tight = SloTier {
            name: "tight".into(),
            ttft_p90_ms: 250.0,
            speed_p25_tps: 45.0,
        };
        let r = max_agents(&rates, &[tight.clone(), tiers[1].clone()]);
        assert_eq!((r[0].max_rate, r[0].max_agents), (Some(4.0), None));
        assert_eq!(r[1].max_rate, None);
        // A level delivered behind schedule measured a lighter load: it meets nothing.
        rates.push(rate(6.0, 100.0, 60.0, false));
        assert_eq!(max_agents(&rates, &[tight])[0].max_rate, Some(4.0));
    }
}
