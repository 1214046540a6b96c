//! Sampling and order statistics.
//!
//! Every row is measured in this process: a short warm-up estimates the cost of one call, then
//! samples are taken until the row's time budget or sample cap is reached. An operation that
//! costs less than [`MIN_SAMPLE_NS`] is timed over several calls per sample (the sample is the
//! mean of those calls) so that the clock's own cost stays below a few percent; anything
//! slower is timed one call per sample, so its p99 is the p99 of single calls.

use std::time::{Duration, Instant};

/// The shortest sample: operations cheaper than this are timed in groups.
pub const MIN_SAMPLE_NS: f64 = 5_000.0;

/// Summary of one row's samples, in nanoseconds per operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The median (p50).
    pub median_ns: f64,
    /// The 99th percentile (nearest rank).
    pub p99_ns: f64,
    /// The mean.
    pub mean_ns: f64,
    /// Number of samples.
    pub samples: usize,
    /// Operations timed per sample.
    pub iters_per_sample: u64,
}

/// The `q`-quantile of sorted values by the nearest-rank method (`q` in `[0, 1]`).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarises per-operation samples (nanoseconds), each the mean of `iters` operations.
pub fn summarize(samples: &[f64], iters: u64) -> Stats {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let mean = if sorted.is_empty() {
        f64::NAN
    } else {
        sorted.iter().sum::<f64>() / sorted.len() as f64
    };
    Stats {
        median_ns: percentile(&sorted, 0.5),
        p99_ns: percentile(&sorted, 0.99),
        mean_ns: mean,
        samples: sorted.len(),
        iters_per_sample: iters,
    }
}

/// How long and how often to sample one row.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Time to spend sampling (after warm-up).
    pub time: Duration,
    /// Fewest samples, even past the time budget.
    pub min_samples: usize,
    /// Most samples.
    pub max_samples: usize,
}

impl Budget {
    /// A budget of `time_ms` milliseconds and between `min` and `max` samples.
    pub const fn new(time_ms: u64, min: usize, max: usize) -> Budget {
        Budget {
            time: Duration::from_millis(time_ms),
            min_samples: min,
            max_samples: max,
        }
    }
}

/// Measures `f`, one operation per call, within `budget`.
pub fn measure<F: FnMut()>(budget: &Budget, mut f: F) -> Stats {
    // Warm-up: at least 3 calls and up to ~1/10 of the budget, to estimate one call's cost.
    let warm_limit = (budget.time / 10).max(Duration::from_millis(2));
    let start = Instant::now();
    let mut calls = 0u64;
    while calls < 3 || (start.elapsed() < warm_limit && calls < 100_000) {
        f();
        calls += 1;
    }
    let per_call = start.elapsed().as_nanos() as f64 / calls as f64;
    let iters = if per_call < MIN_SAMPLE_NS {
        (MIN_SAMPLE_NS / per_call.max(1.0)).ceil() as u64
    } else {
        1
    };
    let mut samples = Vec::with_capacity(budget.max_samples.min(100_000));
    let began = Instant::now();
    while samples.len() < budget.max_samples
        && (samples.len() < budget.min_samples || began.elapsed() < budget.time)
    {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        samples.push(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    summarize(&samples, iters)
}

/// Times one call of `f`, returning its result and the elapsed nanoseconds.
pub fn time_once<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_nanos() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn summary_sorts_and_counts() {
        let s = summarize(&[3.0, 1.0, 2.0, f64::NAN], 4);
        assert_eq!(s.samples, 3);
        assert_eq!(s.median_ns, 2.0);
        assert_eq!(s.p99_ns, 3.0);
        assert_eq!(s.mean_ns, 2.0);
        assert_eq!(s.iters_per_sample, 4);
    }

    #[test]
    fn measure_respects_sample_bounds() {
        let mut n = 0u64;
        let s = measure(&Budget::new(1, 5, 8), || n = std::hint::black_box(n + 1));
        assert!(s.samples >= 5 && s.samples <= 8, "{s:?}");
        assert!(s.iters_per_sample >= 1);
        assert!(s.median_ns >= 0.0);
    }
}
