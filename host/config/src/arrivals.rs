//! `[load.arrivals]` and `[load.ramp]`: open-loop load (sessions or requests arriving on a
//! seeded schedule of their own, whatever the server does) and ramps of rate or concurrency.
//! See `docs/load-shapes.md`.

use serde::{Deserialize, Serialize};

/// Open-loop arrivals: the performance phase's sessions (or requests) start at the due times
/// of one seeded schedule, not when a slot frees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Arrivals {
    /// What arrives: `sessions` (default: each arrival starts the next planned session, which
    /// then runs closed-loop, its turns after their answers and tool delays) or `requests`
    /// (each arrival sends one request, the first turn of the next planned session; the rest
    /// of that session is not sent).
    #[serde(default)]
    pub of: ArrivalUnit,
    /// The arrival process: `constant` (a fixed gap), `poisson` (exponential gaps), `gamma`
    /// (gamma gaps with coefficient of variation `cv`) or `trace` (the times of the trace file
    /// granted to the workload as `trace`, Mooncake's JSONL format).
    pub process: Process,
    /// Arrivals per second (not with `trace`; a rate sweep sets it per level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// `gamma` only: the coefficient of variation of the gaps (1 is Poisson; above 1 burstier,
    /// below 1 more regular).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv: Option<f64>,
    /// Seed of the schedule: the same seed gives the same due times, on one host or split over
    /// shards.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Arrivals in the phase (default: one per planned session; `trace`: one per line). The
    /// drawn gaps are scaled so that the last one is due at exactly `count / rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// At most this many sessions (`of = "sessions"`) or requests (`of = "requests"`) in
    /// flight; an arrival beyond it waits for one to end, keeps its due time, and is reported
    /// as held back (absent: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<i64>,
    /// `trace` only: the trace's times are multiplied by this (0.5 replays it twice as fast).
    #[serde(default = "one")]
    pub time_scale: f64,
}

fn default_seed() -> u64 {
    1
}

fn one() -> f64 {
    1.0
}

/// What an arrival is.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalUnit {
    #[default]
    Sessions,
    Requests,
}

/// An arrival process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Process {
    Constant,
    Poisson,
    Gamma,
    Trace,
}

impl Process {
    /// Its name in the config.
    pub fn name(self) -> &'static str {
        match self {
            Self::Constant => "constant",
            Self::Poisson => "poisson",
            Self::Gamma => "gamma",
            Self::Trace => "trace",
        }
    }
}

/// A ramp at the start of the performance phase (and of each sweep level); the measured
/// window starts when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ramp {
    /// `rate` (open-loop arrivals: the rate climbs to `load.arrivals.rate`, or to each rate
    /// level of a sweep) or `concurrency` (closed loop: sessions start one by one until
    /// `load.concurrency`, or each concurrency level of a sweep, is reached).
    pub of: RampOf,
    /// `linear` (default) or `exponential` (the same factor every equal step of time).
    #[serde(default)]
    pub shape: RampShape,
    /// Where it starts: a rate (arrivals per second; above 0 for an exponential ramp) or a
    /// concurrency (at least 1).
    pub from: f64,
    /// How long it lasts (s).
    pub duration_s: f64,
}

/// What a ramp raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RampOf {
    Rate,
    Concurrency,
}

/// A ramp's curve.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RampShape {
    #[default]
    Linear,
    Exponential,
}

/// A refused value: its key under `load.` and why.
type Refusal = (String, String);

fn refuse(key: &str, message: impl Into<String>) -> Result<(), Refusal> {
    Err((key.to_owned(), message.into()))
}

/// A positive, finite number.
fn positive(v: f64) -> bool {
    v > 0.0 && v.is_finite()
}

impl Arrivals {
    /// Checks values; `sweep_rates` says a rate sweep sets the rate. The error names the key.
    pub fn check(&self, sweep_rates: bool) -> Result<(), Refusal> {
        match (self.process, self.rate) {
            (Process::Trace, Some(_)) => {
                return refuse(
                    "load.arrivals.rate",
                    "a trace brings its own times (scale them with load.arrivals.time_scale)",
                )
            }
            (Process::Trace, None) => {}
            (_, Some(_)) if sweep_rates => {
                return refuse(
                    "load.arrivals.rate",
                    "a rate sweep sets each level's rate (sweep.rates): leave this out",
                )
            }
            (_, Some(rate)) if !positive(rate) => {
                return refuse(
                    "load.arrivals.rate",
                    format!("must be a positive number of arrivals per second (got {rate})"),
                )
            }
            (_, None) if !sweep_rates => {
                return refuse(
                    "load.arrivals.rate",
                    format!(
                        "process = \"{}\" needs a rate (arrivals per second)",
                        self.process.name()
                    ),
                )
            }
            _ => {}
        }
        match (self.process, self.cv) {
            (Process::Gamma, None) => {
                return refuse(
                    "load.arrivals.cv",
                    "process = \"gamma\" needs cv (the gaps' coefficient of variation)",
                )
            }
            (Process::Gamma, Some(cv)) if !positive(cv) => {
                return refuse("load.arrivals.cv", format!("must be above 0 (got {cv})"))
            }
            (Process::Gamma, Some(cv)) if !(1e-3..=100.0).contains(&cv) => {
                return refuse(
                    "load.arrivals.cv",
                    format!("must be within [0.001, 100] (got {cv})"),
                )
            }
            (Process::Gamma, Some(_)) => {}
            (other, Some(_)) => {
                return refuse(
                    "load.arrivals.cv",
                    format!(
                        "only a gamma process has a cv (process = \"{}\")",
                        other.name()
                    ),
                )
            }
            (_, None) => {}
        }
        if let Some(count) = self.count {
            if count < 1 {
                return refuse(
                    "load.arrivals.count",
                    format!("must be at least 1 (got {count})"),
                );
            }
        }
        if let Some(cap) = self.max_in_flight {
            if cap < 1 {
                return refuse(
                    "load.arrivals.max_in_flight",
                    format!("must be at least 1 (got {cap})"),
                );
            }
        }
        if !positive(self.time_scale) {
            return refuse(
                "load.arrivals.time_scale",
                format!("must be a positive number (got {})", self.time_scale),
            );
        }
        if self.time_scale != 1.0 && self.process != Process::Trace {
            return refuse(
                "load.arrivals.time_scale",
                "only a trace's times are scaled (set rate instead)",
            );
        }
        Ok(())
    }

    /// The cap on arrivals in flight.
    pub fn cap(&self) -> Option<usize> {
        self.max_in_flight.map(|c| c.max(1) as usize)
    }
}

impl Ramp {
    /// Checks values; `open_loop` says the phase has arrivals (a rate ramp needs them, a
    /// concurrency ramp needs closed-loop load). The error names the key.
    pub fn check(&self, open_loop: bool, trace: bool) -> Result<(), Refusal> {
        if !(positive(self.duration_s)
            && std::time::Duration::try_from_secs_f64(self.duration_s).is_ok())
        {
            return refuse(
                "load.ramp.duration_s",
                format!(
                    "must be a positive number of seconds (got {})",
                    self.duration_s
                ),
            );
        }
        match self.of {
            RampOf::Rate if !open_loop => {
                return refuse(
                    "load.ramp.of",
                    "a rate ramp needs open-loop arrivals ([load.arrivals] or sweep.rates)",
                )
            }
            RampOf::Rate if trace => {
                return refuse(
                    "load.ramp.of",
                    "a trace brings its own times: it cannot be ramped",
                )
            }
            RampOf::Concurrency if open_loop => {
                return refuse(
                    "load.ramp.of",
                    "a concurrency ramp is for closed-loop load (load.concurrency or sweep \
                     levels); ramp open-loop arrivals with of = \"rate\"",
                )
            }
            _ => {}
        }
        let least = match (self.of, self.shape) {
            (RampOf::Concurrency, _) => 1.0,
            (RampOf::Rate, RampShape::Exponential) => f64::MIN_POSITIVE,
            (RampOf::Rate, RampShape::Linear) => 0.0,
        };
        if !(self.from.is_finite() && self.from >= least) {
            let what = match (self.of, self.shape) {
                (RampOf::Concurrency, _) => "a concurrency of at least 1",
                (RampOf::Rate, RampShape::Exponential) => {
                    "a rate above 0 (an exponential ramp cannot start at 0)"
                }
                (RampOf::Rate, RampShape::Linear) => "a rate of 0 or more",
            };
            return refuse(
                "load.ramp.from",
                format!("must be {what} (got {})", self.from),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(text: &str) -> Arrivals {
        toml::from_str(text).unwrap()
    }

    fn key(r: Result<(), Refusal>) -> String {
        r.unwrap_err().0
    }

    #[test]
    fn bad_arrivals_name_their_key() {
        let ok = arrivals("process = \"gamma\"\nrate = 5.0\ncv = 2.0");
        assert_eq!(ok.check(false), Ok(()));
        assert_eq!(ok.seed, 1);
        for (text, bad) in [
            ("process = \"poisson\"\nrate = 0.0", "load.arrivals.rate"),
            ("process = \"poisson\"\nrate = -3.0", "load.arrivals.rate"),
            ("process = \"poisson\"\nrate = inf", "load.arrivals.rate"),
            ("process = \"poisson\"", "load.arrivals.rate"),
            (
                "process = \"gamma\"\nrate = 1.0\ncv = 0.0",
                "load.arrivals.cv",
            ),
            (
                "process = \"gamma\"\nrate = 1.0\ncv = -1.0",
                "load.arrivals.cv",
            ),
            ("process = \"gamma\"\nrate = 1.0", "load.arrivals.cv"),
            (
                "process = \"poisson\"\nrate = 1.0\ncv = 2.0",
                "load.arrivals.cv",
            ),
            (
                "process = \"poisson\"\nrate = 1.0\nmax_in_flight = 0",
                "load.arrivals.max_in_flight",
            ),
            (
                "process = \"poisson\"\nrate = 1.0\nmax_in_flight = -2",
                "load.arrivals.max_in_flight",
            ),
            (
                "process = \"poisson\"\nrate = 1.0\ncount = 0",
                "load.arrivals.count",
            ),
            ("process = \"trace\"\nrate = 1.0", "load.arrivals.rate"),
            (
                "process = \"trace\"\ntime_scale = 0.0",
                "load.arrivals.time_scale",
            ),
            (
                "process = \"poisson\"\nrate = 1.0\ntime_scale = 2.0",
                "load.arrivals.time_scale",
            ),
        ] {
            assert_eq!(key(arrivals(text).check(false)), bad, "{text}");
        }
        // A rate sweep sets the rate.
        assert_eq!(arrivals("process = \"poisson\"").check(true), Ok(()));
        assert_eq!(
            key(arrivals("process = \"poisson\"\nrate = 2.0").check(true)),
            "load.arrivals.rate"
        );
        assert!(toml::from_str::<Arrivals>("process = \"poisson\"\nrat = 1.0").is_err());
    }

    #[test]
    fn bad_ramps_name_their_key() {
        let ramp = |text: &str| -> Ramp { toml::from_str(text).unwrap() };
        let rate = ramp("of = \"rate\"\nfrom = 0.0\nduration_s = 10.0");
        assert_eq!(rate.check(true, false), Ok(()));
        assert_eq!(key(rate.check(false, false)), "load.ramp.of");
        assert_eq!(key(rate.check(true, true)), "load.ramp.of");
        let exp = ramp("of = \"rate\"\nshape = \"exponential\"\nfrom = 0.0\nduration_s = 1.0");
        assert_eq!(key(exp.check(true, false)), "load.ramp.from");
        let conc = ramp("of = \"concurrency\"\nfrom = 1.0\nduration_s = 5.0");
        assert_eq!(conc.check(false, false), Ok(()));
        assert_eq!(key(conc.check(true, false)), "load.ramp.of");
        let zero = ramp("of = \"concurrency\"\nfrom = 0.0\nduration_s = 5.0");
        assert_eq!(key(zero.check(false, false)), "load.ramp.from");
        let short = ramp("of = \"concurrency\"\nfrom = 1.0\nduration_s = 0.0");
        assert_eq!(key(short.check(false, false)), "load.ramp.duration_s");
    }
}
