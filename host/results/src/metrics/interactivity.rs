//! Interactivity, three ways. The definitions disagree (one is a ratio of
//! sums, one a percentile of per-turn ratios, one a low percentile of
//! decode speed), so agentload reports each, named:
//!
//! - **MLPerf Endpoints Rules v1.0** (§4.1/4.2, and the submission
//!   checker's `point_summary.py`): `e2e_interactivity` = Σ output tokens
//!   per turn / Σ turn seconds from issue to complete response (tool time
//!   is never inside a turn), over completed turns; `tps_per_user` = 1000 /
//!   TPOT p90 (ms), TPOT with the reference's "lower" percentile.
//! - **InferenceX AgentX** (`request_metrics.py`): E2E-normalized
//!   interactivity = 1 / P90(E2EL_i / OSL_i) over completed turns with
//!   output, the percentile numpy's default (linear interpolation).
//! - **AA-AgentPerf**: per-request output speed = tokens after the first /
//!   (last token − first token), reported at P25 ("lower" percentile, as
//!   the sweep's other per-request figures).

use serde::{Deserialize, Serialize};

/// One completed turn, as the definitions read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnTimes {
    pub issued_ns: u64,
    pub first_token_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub complete_ns: u64,
    /// Output tokens.
    pub osl: u64,
    /// Output tokens after the first token-bearing chunk.
    pub after_first: u64,
}

/// The three definitions, each named by its source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interactivity {
    /// Completed turns counted.
    pub turns: usize,
    /// MLPerf: `output_tokens_per_turn_total / e2e_turn_time_seconds_total`
    /// (the checker's `e2e_avg_interactivity`), tokens/s.
    pub mlperf_e2e_interactivity: Option<f64>,
    pub output_tokens_per_turn_total: u64,
    pub e2e_turn_time_seconds_total: f64,
    /// MLPerf: `1000 / tpot_p90_ms`, tokens/s.
    pub mlperf_tps_per_user: Option<f64>,
    pub tpot_p90_ms: Option<f64>,
    /// InferenceX AgentX: `1 / P90(E2EL_i / OSL_i)`, tokens/s.
    pub agentx_e2e_normalized_p90: Option<f64>,
    /// AA-AgentPerf: P25 of per-request output speed after the first token,
    /// tokens/s.
    pub aa_output_speed_p25: Option<f64>,
}

/// Selects one definition (the Pareto chart's x axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Definition {
    /// MLPerf `e2e_interactivity`.
    MlperfE2e,
    /// MLPerf `tps_per_user`.
    MlperfTpsPerUser,
    /// InferenceX AgentX E2E-normalized P90.
    AgentxP90,
    /// AA-AgentPerf P25 output speed.
    #[default]
    AaP25,
}

impl Definition {
    /// Its value in `i`.
    pub fn of(self, i: &Interactivity) -> Option<f64> {
        match self {
            Definition::MlperfE2e => i.mlperf_e2e_interactivity,
            Definition::MlperfTpsPerUser => i.mlperf_tps_per_user,
            Definition::AgentxP90 => i.agentx_e2e_normalized_p90,
            Definition::AaP25 => i.aa_output_speed_p25,
        }
    }

    /// The axis label.
    pub fn label(self) -> &'static str {
        match self {
            Definition::MlperfE2e => "MLPerf e2e interactivity (tok/s)",
            Definition::MlperfTpsPerUser => "MLPerf tps_per_user = 1000 / TPOT p90 (tok/s)",
            Definition::AgentxP90 => "AgentX E2E-normalized interactivity P90 (tok/s)",
            Definition::AaP25 => "AA output speed P25 (tok/s)",
        }
    }
}

/// "Lower" percentile of unsorted values.
fn lower(mut v: Vec<f64>, p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((p / 100.0) * (v.len() - 1) as f64).floor() as usize])
}

/// numpy's default percentile (linear interpolation between ranks).
fn linear(mut v: Vec<f64>, p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

impl Interactivity {
    /// The three definitions over `turns` (completed turns). `tpot_p90_ns`
    /// is the phase's TPOT p90 where the caller already has it (the run
    /// summary's series); else it is computed from the turns.
    pub fn of(turns: &[TurnTimes], tpot_p90_ns: Option<f64>) -> Self {
        let osl: u64 = turns.iter().map(|t| t.osl).sum();
        let e2e_s: f64 = turns
            .iter()
            .map(|t| t.complete_ns.saturating_sub(t.issued_ns) as f64 / 1e9)
            .sum();
        let tpot_p90_ns = tpot_p90_ns.or_else(|| {
            lower(
                turns
                    .iter()
                    .filter(|t| t.after_first > 0)
                    .filter_map(|t| {
                        let decode = t.complete_ns.checked_sub(t.first_token_ns?)?;
                        Some(decode as f64 / t.after_first as f64)
                    })
                    .collect(),
                90.0,
            )
        });
        let tpot_p90_ms = tpot_p90_ns
            .map(|ns| ns / 1e6)
            .filter(|ms| *ms > 0.0 && ms.is_finite());
        let normalized: Vec<f64> = turns
            .iter()
            .filter(|t| t.osl > 0)
            .map(|t| t.complete_ns.saturating_sub(t.issued_ns) as f64 / 1e9 / t.osl as f64)
            .collect();
        let speeds: Vec<f64> = turns
            .iter()
            .filter(|t| t.after_first > 0)
            .filter_map(|t| {
                let span = t.last_token_ns?.checked_sub(t.first_token_ns?)?;
                (span > 0).then(|| t.after_first as f64 / (span as f64 / 1e9))
            })
            .collect();
        Self {
            turns: turns.len(),
            mlperf_e2e_interactivity: (e2e_s > 0.0).then(|| osl as f64 / e2e_s),
            output_tokens_per_turn_total: osl,
            e2e_turn_time_seconds_total: e2e_s,
            mlperf_tps_per_user: tpot_p90_ms.map(|ms| 1000.0 / ms),
            tpot_p90_ms,
            agentx_e2e_normalized_p90: linear(normalized, 90.0)
                .filter(|r| *r > 0.0)
                .map(|r| 1.0 / r),
            aa_output_speed_p25: lower(speeds, 25.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn turn(issued_s: f64, first_s: f64, last_s: f64, complete_s: f64, osl: u64) -> TurnTimes {
        let ns = |s: f64| (s * 1e9).round() as u64;
        TurnTimes {
            issued_ns: ns(issued_s),
            first_token_ns: Some(ns(first_s)),
            last_token_ns: Some(ns(last_s)),
            complete_ns: ns(complete_s),
            osl,
            after_first: osl - 1,
        }
    }

    /// Worked by hand:
    ///
    /// | turn | e2e s | OSL | e2e/OSL | TPOT ms = (complete − first)/(OSL − 1) | speed = (OSL − 1)/(last − first) |
    /// | a | 2.0 | 101 | 0.0198019.. | 1000·1.5/100 = 15 | 100/1.4 = 71.43 |
    /// | b | 1.0 | 11 | 0.0909.. | 1000·0.5/10 = 50 | 10/0.5 = 20 |
    /// | c | 4.0 | 51 | 0.0784313.. | 1000·2.0/50 = 40 | 50/2.0 = 25 |
    /// | d | 0.5 | 26 | 0.0192307.. | 1000·0.25/25 = 10 | 25/0.2 = 125 |
    ///
    /// - MLPerf e2e: (101+11+51+26) / (2+1+4+0.5) = 189 / 7.5 = 25.2.
    /// - TPOT p90, lower of [10, 15, 40, 50]: index floor(0.9·3) = 2 → 40 ms,
    ///   so tps_per_user = 25.
    /// - AgentX: e2e/OSL sorted [0.019231, 0.019802, 0.078431, 0.090909];
    ///   linear P90 at rank 2.7 = 0.078431 + 0.7·(0.090909 − 0.078431)
    ///   = 0.0871658; 1 / that = 11.4724.
    /// - AA P25, lower of [20, 25, 71.43, 125]: index floor(0.25·3) = 0 → 20.
    #[test]
    fn the_three_definitions_on_a_hand_computed_fixture() {
        let turns = [
            turn(0.0, 0.5, 1.9, 2.0, 101),
            turn(10.0, 10.5, 11.0, 11.0, 11),
            turn(20.0, 22.0, 24.0, 24.0, 51),
            turn(30.0, 30.25, 30.45, 30.5, 26),
        ];
        let i = Interactivity::of(&turns, None);
        assert_eq!(i.turns, 4);
        assert_eq!(i.output_tokens_per_turn_total, 189);
        assert!((i.e2e_turn_time_seconds_total - 7.5).abs() < 1e-9);
        assert!((i.mlperf_e2e_interactivity.unwrap() - 25.2).abs() < 1e-9);
        assert!((i.tpot_p90_ms.unwrap() - 40.0).abs() < 1e-9);
        assert!((i.mlperf_tps_per_user.unwrap() - 25.0).abs() < 1e-9);
        let r: [f64; 4] = [0.5 / 26.0, 2.0 / 101.0, 4.0 / 51.0, 1.0 / 11.0];
        let p90 = r[2] + 0.7 * (r[3] - r[2]);
        assert!((p90 - 0.087_165_8).abs() < 1e-6, "{p90}");
        assert!((i.agentx_e2e_normalized_p90.unwrap() - 1.0 / p90).abs() < 1e-9);
        assert!((i.agentx_e2e_normalized_p90.unwrap() - 11.4724).abs() < 1e-3);
        assert!((i.aa_output_speed_p25.unwrap() - 20.0).abs() < 1e-9);
        // A given TPOT p90 (the run summary's series) is used as it is.
        let given = Interactivity::of(&turns, Some(20.0 * 1e6));
        assert_eq!(given.mlperf_tps_per_user, Some(50.0));
        assert_eq!(Definition::MlperfTpsPerUser.of(&given), Some(50.0));
    }

    #[test]
    fn no_turns_no_values_and_zero_outputs_are_left_out() {
        assert_eq!(Interactivity::of(&[], None), Interactivity::default());
        let empty = TurnTimes {
            issued_ns: 0,
            first_token_ns: None,
            last_token_ns: None,
            complete_ns: S,
            osl: 0,
            after_first: 0,
        };
        let i = Interactivity::of(&[empty], None);
        assert_eq!(i.mlperf_e2e_interactivity, Some(0.0));
        assert_eq!(i.agentx_e2e_normalized_p90, None);
        assert_eq!(i.mlperf_tps_per_user, None);
        assert_eq!(i.aa_output_speed_p25, None);
    }
}
