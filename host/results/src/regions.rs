//! The MLPerf Endpoints Rules v1.0 concurrency regions and the checks on a
//! set of points (one full run per concurrency): the region math of §5 with
//! its rounding (round-half-to-even) and the reference's f64 margin, the
//! point count, coverage and duration rules (see
//! `../shared/spec/reference-datacenter-agentic.md` §6, §8 rows 11-12).

use serde::Serialize;

/// Ultra Low is `[1, ULTRA_LOW_MAX]`; the smallest concurrency is clamped to it.
pub const ULTRA_LOW_MAX: u64 = 32;
/// Points a submission has at least and at most.
pub const MIN_POINTS: usize = 7;
pub const MAX_POINTS: usize = 32;
/// Minimum steady-state duration: Ultra Low, and every other region.
pub const MIN_DURATION_ULTRA_LOW_S: f64 = 600.0;
pub const MIN_DURATION_S: f64 = 1200.0;

/// An inclusive range of concurrencies (empty when `lo > hi`: colliding
/// boundaries give a region of zero width).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

impl Range {
    pub fn contains(&self, c: u64) -> bool {
        self.lo <= c && c <= self.hi
    }
}

/// The regions for a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Regions {
    pub c_min: u64,
    pub c_max: u64,
    pub ultra_low: Range,
    pub low: Range,
    pub medium: Range,
    pub high: Range,
    /// In range, but it does not cover High.
    pub margin: Range,
}

/// A region's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    UltraLow,
    Low,
    Medium,
    High,
    Margin,
}

impl Region {
    pub fn name(self) -> &'static str {
        match self {
            Region::UltraLow => "Ultra Low",
            Region::Low => "Low",
            Region::Medium => "Medium",
            Region::High => "High",
            Region::Margin => "margin",
        }
    }
}

/// Region math that cannot be done.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegionError {
    #[error("max_supported_concurrency must be above {ULTRA_LOW_MAX} (it is {0})")]
    CMaxTooSmall(u64),
    #[error("no points")]
    NoPoints,
}

impl Regions {
    /// The regions from the smallest submitted concurrency and the declared
    /// `max_supported_concurrency`.
    pub fn new(smallest: u64, c_max: u64) -> Result<Regions, RegionError> {
        if c_max <= ULTRA_LOW_MAX {
            return Err(RegionError::CMaxTooSmall(c_max));
        }
        let c_min = smallest.clamp(1, ULTRA_LOW_MAX);
        let i = ((c_max - c_min) as f64).log2() / 3.0;
        let end = |k: f64| (c_min as f64 + 2f64.powf(k * i)).round_ties_even() as u64;
        let (low_end, med_end) = (end(1.0), end(2.0));
        Ok(Regions {
            c_min,
            c_max,
            ultra_low: Range {
                lo: 1,
                hi: ULTRA_LOW_MAX,
            },
            low: Range {
                lo: c_min + 1,
                hi: low_end,
            },
            medium: Range {
                lo: low_end + 1,
                hi: med_end,
            },
            high: Range {
                lo: med_end + 1,
                hi: c_max,
            },
            // The reference's f64 product: 1.10 * 100 is 110.00000000000001.
            margin: Range {
                lo: c_max + 1,
                hi: (1.10 * c_max as f64).ceil() as u64,
            },
        })
    }

    /// The regions `c` is in (Ultra Low overlaps Low when C_min < 32).
    pub fn of(&self, c: u64) -> Vec<Region> {
        [
            (Region::UltraLow, self.ultra_low),
            (Region::Low, self.low),
            (Region::Medium, self.medium),
            (Region::High, self.high),
            (Region::Margin, self.margin),
        ]
        .into_iter()
        .filter(|(_, r)| r.contains(c))
        .map(|(name, _)| name)
        .collect()
    }
}

/// One point as the checks see it.
#[derive(Debug, Clone, Serialize)]
pub struct PointRun {
    /// Its directory name (`r<C>`).
    pub dir: String,
    pub concurrency: u64,
    /// The steady-state duration the rules measure, s.
    pub duration_s: Option<f64>,
    /// The inline scorer's score (`scores.json`), a fraction.
    pub inline_score: Option<f64>,
    /// `output_sequence_lengths_full_run.output_sequence_lengths.avg`.
    pub osl_full_run_avg: Option<f64>,
    /// The SWE-bench score (`accuracy_results.json`, the `swe_bench`
    /// entry), a fraction.
    pub swe_bench_score: Option<f64>,
}

/// A model's accuracy gates (`../shared/spec/reference-datacenter-agentic.md`
/// §5.4): data, with both known OSL band sets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Gates {
    pub model: &'static str,
    /// The model's name in the checker's catalog (`point.yaml` `model_name`).
    pub catalog: &'static str,
    /// Inline score × 100 at least this, per point.
    pub inline_min_pct: f64,
    /// The OSL per-turn mean band of the reference's README (E), inclusive.
    pub osl_band_readme: Option<(f64, f64)>,
    /// The OSL band of the checker's catalog (EV `@131fe1b2`), inclusive.
    pub osl_band_checker: (f64, f64),
    /// The SWE-bench mean of the four band means, at least this (%).
    pub swe_bench_mean_min_pct: f64,
}

/// The three models with published gates.
pub const GATES: [Gates; 3] = [
    Gates {
        model: "kimi-k3",
        catalog: "kimi-k3",
        inline_min_pct: 58.32,
        osl_band_readme: Some((390.0, 475.0)),
        osl_band_checker: (425.0, 520.0),
        swe_bench_mean_min_pct: 93.5,
    },
    Gates {
        model: "qwen3.6-35b-a3b",
        catalog: "qwen3_6-35b-a3b",
        inline_min_pct: 55.86,
        osl_band_readme: Some((355.0, 434.0)),
        osl_band_checker: (344.0, 422.0),
        swe_bench_mean_min_pct: 69.0,
    },
    Gates {
        model: "deepseek-v4.1-flash",
        catalog: "deepseek-v4_1-flash",
        inline_min_pct: 52.36,
        osl_band_readme: None,
        osl_band_checker: (793.0, 970.0),
        swe_bench_mean_min_pct: 96.4,
    },
];

/// Which OSL band set a check uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OslBands {
    /// The checker's catalog (what the automated checks apply).
    Checker,
    /// The reference README's.
    Readme,
}

/// A model's gates by name or catalog name (as in [`GATES`]).
pub fn gates(model: &str) -> Option<&'static Gates> {
    GATES
        .iter()
        .find(|g| g.model == model || g.catalog == model)
}

/// The accuracy gates of the 2026-10-C1 curve checks: per point the inline
/// score and the OSL band (on the full-run block, with no fallback to the
/// windowed OSL), and over the curve the SWE-bench mean of band means. As
/// there, a point without a score or an OSL block is a warning, not a
/// failure.
pub fn check_gates(
    points: &[PointRun],
    regions: &Regions,
    g: &Gates,
    bands: OslBands,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let low: Vec<String> = points
        .iter()
        .filter_map(|p| match p.inline_score {
            Some(s) if (0.0..=1.0).contains(&s) && s * 100.0 >= g.inline_min_pct => None,
            Some(s) => Some(format!("{} {:.2} %", p.dir, s * 100.0)),
            None => None,
        })
        .collect();
    checks.push(Check {
        name: "inline-accuracy",
        passed: low.is_empty(),
        detail: with_missing(
            if low.is_empty() {
                format!("every point's inline score >= {} %", g.inline_min_pct)
            } else {
                format!("below {} %: {}", g.inline_min_pct, low.join("; "))
            },
            points.iter().filter(|p| p.inline_score.is_none()),
            "no inline score (scores.json)",
        ),
    });
    let band = match bands {
        OslBands::Checker => Some(g.osl_band_checker),
        OslBands::Readme => g.osl_band_readme,
    };
    let Some((lo, hi)) = band else {
        checks.push(Check {
            name: "osl-band",
            passed: false,
            detail: format!("{} has no OSL band in this set", g.model),
        });
        return checks;
    };
    let outside: Vec<String> = points
        .iter()
        .filter_map(|p| match p.osl_full_run_avg {
            Some(a) if (lo..=hi).contains(&a) => None,
            Some(a) => Some(format!("{} {a:.1}", p.dir)),
            None => None,
        })
        .collect();
    checks.push(Check {
        name: "osl-band",
        passed: outside.is_empty(),
        detail: with_missing(
            if outside.is_empty() {
                format!("every point's full-run OSL mean in [{lo}, {hi}]")
            } else {
                format!("outside [{lo}, {hi}]: {}", outside.join("; "))
            },
            points.iter().filter(|p| p.osl_full_run_avg.is_none()),
            "no output_sequence_lengths_full_run",
        ),
    });
    checks.push(swe_bench_gate(points, regions, g));
    checks
}

/// `detail`, and a warning naming the points in `missing`.
fn with_missing<'a>(
    detail: String,
    missing: impl Iterator<Item = &'a PointRun>,
    what: &str,
) -> String {
    let missing: Vec<&str> = missing.map(|p| p.dir.as_str()).collect();
    if missing.is_empty() {
        detail
    } else {
        format!("{detail}; warning: {what} at {}", missing.join(", "))
    }
}

/// The SWE-bench gate (`agentic-accuracy-swebench`): the mean over the four
/// mandatory bands (Ultra Low, Low, Medium, High; not the margin) of each
/// band's mean score, a point counting in every band its concurrency lies
/// in; several results in a band are averaged and missing bands leave the
/// mean of the others, each with a warning; no result at all is a warning.
/// The rules' other two readings (R1: the mean over every point; R2: over
/// the four mandatory points) are reported beside it.
fn swe_bench_gate(points: &[PointRun], regions: &Regions, g: &Gates) -> Check {
    let name = "swe-bench-accuracy";
    let scored: Vec<(&PointRun, f64)> = points
        .iter()
        .filter_map(|p| Some((p, p.swe_bench_score?)))
        .collect();
    if scored.is_empty() {
        return Check {
            name,
            passed: true,
            detail: "warning: no point has a SWE-bench result (accuracy_results.json, swe_bench)"
                .into(),
        };
    }
    let bad: Vec<String> = scored
        .iter()
        .filter(|(_, s)| !(0.0..=1.0).contains(s))
        .map(|(p, s)| format!("{} {s}", p.dir))
        .collect();
    if !bad.is_empty() {
        return Check {
            name,
            passed: false,
            detail: format!("scores outside [0, 1]: {}", bad.join("; ")),
        };
    }
    let bands = [
        (Region::UltraLow, regions.ultra_low),
        (Region::Low, regions.low),
        (Region::Medium, regions.medium),
        (Region::High, regions.high),
    ];
    let mut warnings = Vec::new();
    let mut means = Vec::new();
    let mut shown = Vec::new();
    for (region, range) in bands {
        let of: Vec<f64> = scored
            .iter()
            .filter(|(p, _)| range.contains(p.concurrency))
            .map(|(_, s)| *s)
            .collect();
        match of.len() {
            0 => warnings.push(format!("no result in {}", region.name())),
            n => {
                if n > 1 {
                    warnings.push(format!("{n} results in {} averaged", region.name()));
                }
                let mean = of.iter().sum::<f64>() / n as f64;
                shown.push(format!("{} {:.2}", region.name(), mean * 100.0));
                means.push(mean);
            }
        }
    }
    let all = scored.iter().map(|(_, s)| s).sum::<f64>() / scored.len() as f64;
    if means.is_empty() {
        return Check {
            name,
            passed: true,
            detail: format!(
                "warning: no SWE-bench result in a mandatory band (R1, every point: {:.2} %)",
                all * 100.0
            ),
        };
    }
    let mean = means.iter().sum::<f64>() / means.len() as f64 * 100.0;
    let mut detail = format!(
        "mean of band means {mean:.2} % ({}) against {} %; R1 (every point) {:.2} %",
        shown.join(", "),
        g.swe_bench_mean_min_pct,
        all * 100.0
    );
    if !warnings.is_empty() {
        detail.push_str(&format!("; warning: {}", warnings.join(", ")));
    }
    Check {
        name,
        passed: mean >= g.swe_bench_mean_min_pct,
        detail,
    }
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// The 2026-10-C1 point and curve checks agentload can make from result
/// files: directory names, count, C_max, every point in range, coverage of
/// the four regions, and each point's duration against its region's
/// minimum times `duration_scale` (1 for the rules; less for development
/// runs, which the check then says).
pub fn check_points(
    points: &[PointRun],
    c_max: u64,
    duration_scale: f64,
) -> Result<(Regions, Vec<Check>), RegionError> {
    let smallest = points
        .iter()
        .map(|p| p.concurrency)
        .min()
        .ok_or(RegionError::NoPoints)?;
    let regions = Regions::new(smallest, c_max)?;
    let mut checks = Vec::new();
    let mut push = |name, passed, detail: String| {
        checks.push(Check {
            name,
            passed,
            detail,
        })
    };
    let misnamed: Vec<&str> = points
        .iter()
        .filter(|p| p.dir != format!("r{}", p.concurrency))
        .map(|p| p.dir.as_str())
        .collect();
    push(
        "point-directories",
        misnamed.is_empty(),
        if misnamed.is_empty() {
            "every point is r<its concurrency>".into()
        } else {
            format!("not r<concurrency>: {}", misnamed.join(", "))
        },
    );
    let n = points.len();
    push(
        "point-count",
        (MIN_POINTS..=MAX_POINTS).contains(&n),
        format!("{n} points (between {MIN_POINTS} and {MAX_POINTS})"),
    );
    let outside: Vec<String> = points
        .iter()
        .filter(|p| p.concurrency < 1 || p.concurrency > regions.margin.hi)
        .map(|p| p.concurrency.to_string())
        .collect();
    push(
        "concurrency-in-range",
        outside.is_empty(),
        if outside.is_empty() {
            format!(
                "every point in [1, {}] (margin included)",
                regions.margin.hi
            )
        } else {
            format!("outside [1, {}]: {}", regions.margin.hi, outside.join(", "))
        },
    );
    let covered = |r: Region| {
        points
            .iter()
            .any(|p| regions.of(p.concurrency).contains(&r))
    };
    let missing: Vec<&str> = [Region::UltraLow, Region::Low, Region::Medium, Region::High]
        .into_iter()
        .filter(|r| !covered(*r))
        .map(Region::name)
        .collect();
    push(
        "region-coverage",
        missing.is_empty(),
        if missing.is_empty() {
            "a point in each of Ultra Low, Low, Medium and High".into()
        } else {
            format!("no point in {}", missing.join(", "))
        },
    );
    let lmh = points
        .iter()
        .filter(|p| {
            regions
                .of(p.concurrency)
                .iter()
                .any(|r| matches!(r, Region::Low | Region::Medium | Region::High))
        })
        .count();
    push(
        "low-medium-high-points",
        lmh >= 6,
        format!("{lmh} points in Low/Medium/High (one each and 3 more: at least 6)"),
    );
    let short: Vec<String> = points
        .iter()
        .filter_map(|p| {
            let need = duration_scale
                * if regions.of(p.concurrency) == [Region::UltraLow] {
                    MIN_DURATION_ULTRA_LOW_S
                } else {
                    MIN_DURATION_S
                };
            match p.duration_s {
                Some(d) if d >= need => None,
                Some(d) => Some(format!("{} {d:.0} s < {need:.0} s", p.dir)),
                None => Some(format!("{} has no duration", p.dir)),
            }
        })
        .collect();
    let scaled = if duration_scale == 1.0 {
        String::new()
    } else {
        format!(" (minimums scaled by {duration_scale}: a development check, not the rules')")
    };
    push(
        "point-duration",
        short.is_empty(),
        if short.is_empty() {
            format!("every point ran its region's minimum (600 s Ultra Low, 1200 s others){scaled}")
        } else {
            format!("{}{scaled}", short.join("; "))
        },
    );
    Ok((regions, checks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(r: &Regions) -> [(u64, u64); 4] {
        [r.low, r.medium, r.high, r.margin].map(|x| (x.lo, x.hi))
    }

    #[test]
    fn the_verified_vectors() {
        // §6: C_max, C_min -> Low / Med / High / margin.
        let cases = [
            (1024, 16, [(17, 26), (27, 117), (118, 1024), (1025, 1127)]),
            (8192, 32, [(33, 52), (53, 437), (438, 8192), (8193, 9012)]),
            (256, 1, [(2, 7), (8, 41), (42, 256), (257, 282)]),
            (64, 2, [(3, 6), (7, 18), (19, 64), (65, 71)]),
        ];
        for (c_max, c_min, want) in cases {
            assert_eq!(
                spans(&Regions::new(c_min, c_max).unwrap()),
                want,
                "{c_max} {c_min}"
            );
        }
    }

    #[test]
    fn the_margin_is_the_f64_product_and_c_min_is_clamped() {
        for (c_max, end) in [(50, 56), (100, 111), (200, 221)] {
            assert_eq!(Regions::new(1, c_max).unwrap().margin.hi, end, "{c_max}");
        }
        // It is one above the exact ceil(1.1 * C_max) for 925 of [33, 20000].
        let above = (33..=20000u64)
            .filter(|&c| Regions::new(1, c).unwrap().margin.hi == (11 * c).div_ceil(10) + 1)
            .count();
        assert_eq!(above, 925);
        assert_eq!(Regions::new(64, 1024).unwrap().c_min, 32);
        assert_eq!(Regions::new(32, 32), Err(RegionError::CMaxTooSmall(32)));
    }

    fn point(c: u64, s: f64) -> PointRun {
        PointRun {
            dir: format!("r{c}"),
            concurrency: c,
            duration_s: Some(s),
            inline_score: Some(0.6),
            osl_full_run_avg: Some(400.0),
            swe_bench_score: None,
        }
    }

    fn regions() -> Regions {
        Regions::new(16, 1024).unwrap()
    }

    #[test]
    fn the_accuracy_gates_per_point() {
        let qwen = gates("qwen3.6-35b-a3b").unwrap();
        let mut pts = vec![point(16, 1300.0), point(20, 1300.0)];
        let failed = |pts: &[PointRun], bands| -> Vec<String> {
            check_gates(pts, &regions(), qwen, bands)
                .into_iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect()
        };
        assert!(failed(&pts, OslBands::Checker).is_empty());
        // 433 is inside the README's band, outside the checker's.
        pts[1].osl_full_run_avg = Some(433.0);
        assert_eq!(
            failed(&pts, OslBands::Checker),
            ["osl-band: outside [344, 422]: r20 433.0"]
        );
        assert!(failed(&pts, OslBands::Readme).is_empty());
        pts[0].inline_score = Some(0.5585);
        pts[1].osl_full_run_avg = None;
        let f = failed(&pts, OslBands::Readme);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("r16 55.85 %"), "{f:?}");
        // A point without the block is a warning, as in the checker.
        let all = check_gates(&pts, &regions(), qwen, OslBands::Readme);
        let osl = all.iter().find(|c| c.name == "osl-band").unwrap();
        assert!(osl.passed, "{osl:?}");
        assert!(
            osl.detail
                .contains("warning: no output_sequence_lengths_full_run at r20"),
            "{osl:?}"
        );
        // Bounds are inclusive; a score is a fraction.
        pts[0].inline_score = Some(0.5586);
        pts[1].osl_full_run_avg = Some(422.0);
        assert!(failed(&pts, OslBands::Checker).is_empty());
        pts[0].inline_score = Some(55.86);
        assert_eq!(failed(&pts, OslBands::Checker).len(), 1);
        assert!(check_gates(
            &pts,
            &regions(),
            gates("deepseek-v4.1-flash").unwrap(),
            OslBands::Readme
        )
        .iter()
        .any(|c| !c.passed && c.detail.contains("no OSL band")));
    }

    #[test]
    fn a_complete_curve_passes_and_each_rule_bites() {
        let good: Vec<PointRun> = [16, 20, 26, 60, 100, 117, 1024]
            .into_iter()
            .map(|c| point(c, 1300.0))
            .collect();
        let (regions, checks) = check_points(&good, 1024, 1.0).unwrap();
        assert_eq!(regions.of(20), [Region::UltraLow, Region::Low]);
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");
        let failed = |points: &[PointRun], c_max| -> Vec<&'static str> {
            check_points(points, c_max, 1.0)
                .unwrap()
                .1
                .into_iter()
                .filter(|c| !c.passed)
                .map(|c| c.name)
                .collect()
        };
        // No High point: the margin is in range but does not cover High.
        let mut no_high = good.clone();
        no_high[6] = point(1100, 1300.0);
        assert_eq!(
            failed(&no_high, 1024),
            ["region-coverage", "low-medium-high-points"]
        );
        let mut short = good.clone();
        short[3].duration_s = Some(1199.0);
        short[0].duration_s = Some(600.0);
        assert_eq!(failed(&short, 1024), ["point-duration"]);
        // A development check scales the minimums, and says so.
        let (_, scaled) = check_points(&short, 1024, 0.5).unwrap();
        let duration = scaled.iter().find(|c| c.name == "point-duration").unwrap();
        assert!(
            duration.passed && duration.detail.contains("scaled by 0.5"),
            "{duration:?}"
        );
        short[3].duration_s = Some(599.0);
        assert!(!check_points(&short, 1024, 0.5)
            .unwrap()
            .1
            .iter()
            .all(|c| c.passed));
        let mut renamed = good.clone();
        renamed[2].dir = "r25".into();
        assert_eq!(failed(&renamed, 1024), ["point-directories"]);
        let mut beyond = good.clone();
        beyond.push(point(1200, 1300.0));
        assert_eq!(failed(&beyond, 1024), ["concurrency-in-range"]);
        // Six points: the smallest is C_min, below Low, so one fewer in L/M/H too.
        assert_eq!(
            failed(&good[1..], 1024),
            ["point-count", "low-medium-high-points"]
        );
    }

    /// The SWE-bench gate is the mean of the four band means: a point counts
    /// in every band its concurrency lies in (r20 is Ultra Low and Low),
    /// several in a band are averaged, missing bands leave the mean of the
    /// others; warnings say which. No result at all is a warning only.
    #[test]
    fn the_swe_bench_gate_is_the_mean_of_band_means() {
        let qwen = gates("qwen3.6-35b-a3b").unwrap();
        let swe = |pts: &[PointRun]| {
            check_gates(pts, &regions(), qwen, OslBands::Checker)
                .into_iter()
                .find(|c| c.name == "swe-bench-accuracy")
                .unwrap()
        };
        let mut pts: Vec<PointRun> = [16, 20, 26, 60, 100, 117, 1024]
            .into_iter()
            .map(|c| point(c, 1300.0))
            .collect();
        let none = swe(&pts);
        assert!(
            none.passed && none.detail.starts_with("warning: no point"),
            "{none:?}"
        );
        // Ultra Low {16: 0.60, 20: 0.80, 26: 0.70} -> 0.70; Low {20, 26} -> 0.75;
        // Medium {60: 0.70}; High {1024: 0.66}: (0.70 + 0.75 + 0.70 + 0.66) / 4 = 70.25 %.
        for (i, s) in [(0, 0.60), (1, 0.80), (2, 0.70), (3, 0.70), (6, 0.66)] {
            pts[i].swe_bench_score = Some(s);
        }
        let c = swe(&pts);
        assert!(c.passed, "{c:?}");
        assert!(c.detail.starts_with("mean of band means 70.25 %"), "{c:?}");
        assert!(
            c.detail.contains("3 results in Ultra Low averaged"),
            "{c:?}"
        );
        assert!(c.detail.contains("2 results in Low averaged"), "{c:?}");
        assert!(c.detail.contains("R1 (every point) 69.20 %"), "{c:?}");
        // Below 69 %, it fails; a missing band is a warning.
        pts[6].swe_bench_score = None;
        pts[3].swe_bench_score = Some(0.5);
        let c = swe(&pts);
        assert!(!c.passed, "{c:?}");
        assert!(c.detail.contains("no result in High"), "{c:?}");
        // A percentage where a fraction belongs fails.
        pts[3].swe_bench_score = Some(70.0);
        assert!(swe(&pts).detail.contains("outside [0, 1]"));
    }
}
