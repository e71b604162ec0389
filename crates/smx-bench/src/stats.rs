//! Order statistics and a least-squares line, for summarising repeated runs.
//!
//! Benchmarks on shared machines have long right tails (a descheduled thread, a page fault), so
//! the figures we print are order statistics, not means: the median as the typical value and the
//! min-max range as the honest spread. Percentiles use the **nearest-rank** definition by
//! default, so every reported percentile is a value that was actually observed: for `n` sorted
//! values and `p` in (0, 100], the result is the value at 1-based rank `ceil(p/100 * n)`; `p = 0`
//! gives the minimum. [`percentile_interpolated`] is the linear-interpolation variant (the
//! "R-7" rule of spreadsheets and NumPy's default) for when a smooth estimate is wanted.
//!
//! Every function returns `None` for an empty input or a value it cannot define (NaN input,
//! `p` outside 0..=100) instead of panicking.

use serde::{Deserialize, Serialize};

/// Sorts a copy of `values`; `None` when empty or when a value is NaN.
pub fn sorted(values: &[f64]) -> Option<Vec<f64>> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v)
}

/// Median: the middle value, or the mean of the two middle values for an even count.
pub fn median(values: &[f64]) -> Option<f64> {
    let v = sorted(values)?;
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub fn min(values: &[f64]) -> Option<f64> {
    sorted(values).map(|v| v[0])
}

pub fn max(values: &[f64]) -> Option<f64> {
    sorted(values).map(|v| v[v.len() - 1])
}

pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Nearest-rank percentile of already sorted values (ascending). See the module docs.
pub fn percentile_of_sorted<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let n = sorted.len();
    // p/100*n carries binary rounding error (99.9% of 1000 is 999.0000000000001), which must
    // not push the rank up by one; a relative 1e-9 is far below any real rank step.
    let exact = p * n as f64 / 100.0;
    let rank = (exact - exact * 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// Nearest-rank percentile (see the module docs).
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    percentile_of_sorted(&sorted(values)?, p)
}

/// Linearly interpolated percentile: position `h = (n - 1) * p / 100` between the two closest
/// ranks (0-based), as NumPy's default and spreadsheets' PERCENTILE.INC.
pub fn percentile_interpolated(values: &[f64], p: f64) -> Option<f64> {
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    let v = sorted(values)?;
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    Some(v[lo] + (h - lo as f64) * (v[hi] - v[lo]))
}

/// Median, range and mean of repeated runs of one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

impl Summary {
    /// `None` for no values or a NaN among them.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let v = sorted(values)?;
        Some(Summary {
            n: v.len(),
            median: median(&v)?,
            min: v[0],
            max: v[v.len() - 1],
            mean: mean(&v)?,
        })
    }

    /// (max - min) / median: how far apart the runs were, relative to the typical one.
    pub fn spread(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median.abs()
        }
    }
}

/// Percentiles of a latency or lateness distribution, in the unit of the samples (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    /// Sorts `samples` in place and reads the percentiles; `None` when empty.
    pub fn of(samples: &mut [u64]) -> Option<Percentiles> {
        samples.sort_unstable();
        Some(Percentiles {
            count: samples.len() as u64,
            min: *samples.first()?,
            p50: percentile_of_sorted(samples, 50.0)?,
            p90: percentile_of_sorted(samples, 90.0)?,
            p99: percentile_of_sorted(samples, 99.0)?,
            p999: percentile_of_sorted(samples, 99.9)?,
            max: *samples.last()?,
        })
    }

    /// The labelled values, in order, for tables and plots.
    pub fn labelled(&self) -> [(&'static str, u64); 5] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// A straight line `y = slope * x + intercept` fitted by ordinary least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination: 1 is a perfect line, 0 no better than the mean of `y`.
    pub r_squared: f64,
    pub n: usize,
}

impl LinearFit {
    /// Fits `ys` against `xs`. `None` when the lengths differ, fewer than two points are given,
    /// a value is not finite, or all `xs` are equal (the slope is undefined).
    pub fn fit(xs: &[f64], ys: &[f64]) -> Option<LinearFit> {
        let n = xs.len();
        if n < 2 || ys.len() != n || xs.iter().chain(ys).any(|v| !v.is_finite()) {
            return None;
        }
        let mx = xs.iter().sum::<f64>() / n as f64;
        let my = ys.iter().sum::<f64>() / n as f64;
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        if sxx == 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        let ss_res: f64 = xs
            .iter()
            .zip(ys)
            .map(|(x, y)| (y - (slope * x + intercept)).powi(2))
            .sum();
        let ss_tot: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
        let r_squared = if ss_tot == 0.0 { 1.0 } else { 1.0 - ss_res / ss_tot };
        Some(LinearFit {
            slope,
            intercept,
            r_squared,
            n,
        })
    }

    pub fn at(&self, x: f64) -> f64 {
        self.slope * x + self.intercept
    }
}
