//! Where ticks go and what they say, as matplotlib decides: autoscaling with 5% margins and
//! sticky edges, `MaxNLocator` with nbins 'auto' for linear axes, `LogLocator` for log axes,
//! `ScalarFormatter` and `LogFormatterSciNotation` for the labels.

use super::Scale;

/// Python's float `divmod`, which `_Edge_integer` relies on.
pub(crate) fn py_divmod(x: f64, y: f64) -> (f64, f64) {
    let mut m = x % y;
    let mut div = (x - m) / y;
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            m += y;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(y);
    }
    let fl = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(x / y)
    };
    (fl, m)
}

/// `mtransforms.nonsingular`: widen an empty or degenerate interval.
pub fn nonsingular(v0: f64, v1: f64) -> (f64, f64) {
    nonsingular_with(v0, v1, 0.05, 1e-15)
}

/// `transforms.nonsingular(v0, v1, expander, tiny)` (`MaxNLocator.tick_values` uses 1e-13
/// and 1e-14).
pub fn nonsingular_with(mut v0: f64, mut v1: f64, expander: f64, tiny: f64) -> (f64, f64) {
    if !v0.is_finite() || !v1.is_finite() {
        return (-expander, expander);
    }
    let swapped = v1 < v0;
    if swapped {
        std::mem::swap(&mut v0, &mut v1);
    }
    let maxabs = v0.abs().max(v1.abs());
    if maxabs < (1e6 * f64::MIN_POSITIVE) {
        v0 = -expander;
        v1 = expander;
    } else if v1 - v0 <= maxabs * tiny {
        if v1 == 0.0 && v0 == 0.0 {
            v0 = -expander;
            v1 = expander;
        } else {
            v0 -= expander * v0.abs();
            v1 += expander * v1.abs();
        }
    }
    if swapped {
        (v1, v0)
    } else {
        (v0, v1)
    }
}

/// The view interval of one axis from its data: matplotlib's `autoscale_view` with
/// `axes.xmargin`/`ymargin` 0.05, never expanding past a sticky edge (bars' baseline, an
/// image's border). Log axes take their margins in log space and ignore values <= 0.
pub fn autoscale(data: &[f64], sticky: &[f64], scale: Scale, margin: f64) -> (f64, f64) {
    let finite = data
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0));
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in finite {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return match scale {
            Scale::Linear => (0.0, 1.0),
            Scale::Log => (1.0, 10.0),
        };
    }
    type Map = fn(f64) -> f64;
    let (tf, inv): (Map, Map) = match scale {
        Scale::Linear => (|v| v, |v| v),
        Scale::Log => (f64::log10, |v| 10f64.powf(v)),
    };
    let (x0, x1) = match scale {
        Scale::Linear => nonsingular(lo, hi),
        Scale::Log => {
            if lo == hi {
                (lo / 10.0, hi * 10.0)
            } else {
                (lo, hi)
            }
        }
    };
    // Sticky edges inside [x0, x1] limit how far the margins reach.
    let x0_bound = sticky
        .iter()
        .copied()
        .filter(|s| *s <= x0 + 1e-12 * x0.abs().max(1.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let x1_bound = sticky
        .iter()
        .copied()
        .filter(|s| *s >= x1 - 1e-12 * x1.abs().max(1.0))
        .fold(f64::INFINITY, f64::min);
    let (t0, t1) = (tf(x0), tf(x1));
    let delta = (t1 - t0) * margin;
    let mut n0 = inv(t0 - delta);
    let mut n1 = inv(t1 + delta);
    if x0_bound.is_finite() {
        n0 = n0.max(x0_bound);
    }
    if x1_bound.is_finite() {
        n1 = n1.min(x1_bound);
    }
    (n0, n1)
}

/// How many ticks an axis of `length_pt` has room for (`Axis.get_tick_space`): tick labels
/// are 10pt, at most 3:1 wide on the x axis and 2 lines tall on the y axis.
pub fn tick_space(length_pt: f64, is_x: bool, font_size: f64) -> usize {
    let size = font_size * if is_x { 3.0 } else { 2.0 };
    (length_pt / size).floor().max(0.0) as usize
}

fn scale_range(vmin: f64, vmax: f64, n: f64) -> (f64, f64) {
    let dv = (vmax - vmin).abs();
    let meanv = (vmax + vmin) / 2.0;
    let offset = if meanv.abs() / dv < 100.0 {
        0.0
    } else {
        10f64.powf(meanv.abs().log10().floor()).copysign(meanv)
    };
    let scale = 10f64.powf((dv / n).log10().floor());
    (scale, offset)
}

/// `MaxNLocator(nbins='auto', steps=[1, 2, 2.5, 5, 10])`'s tick values for the view
/// (vmin, vmax); `nbins` is the axis's tick space clipped to 1..=9. Ticks just outside the
/// view are included, as matplotlib returns them; the axis draws only those inside.
pub fn max_n_locator(vmin: f64, vmax: f64, tick_space: usize) -> Vec<f64> {
    max_n(
        vmin,
        vmax,
        tick_space.clamp(1, 9) as f64,
        &AUTO_STEPS,
        false,
    )
}

/// `AutoLocator`'s steps; `MaxNLocator`'s own default is [`MAXN_STEPS`].
pub const AUTO_STEPS: [f64; 5] = [1.0, 2.0, 2.5, 5.0, 10.0];
pub const MAXN_STEPS: [f64; 10] = [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];

/// `MaxNLocator(nbins, steps, integer=)`: at most `nbins` intervals of a step from `steps`
/// (1 to 10) times a power of ten; with `integer`, whole steps of at least 1.
pub fn max_n(vmin: f64, vmax: f64, nbins: f64, steps: &[f64], integer: bool) -> Vec<f64> {
    max_n_with(vmin, vmax, nbins, steps, integer, 2)
}

/// `MaxNLocator` with `min_n_ticks`: the largest step leaving at least that many ticks in
/// the view (contour levels ask for 1).
pub fn max_n_with(
    vmin: f64,
    vmax: f64,
    nbins: f64,
    steps: &[f64],
    integer: bool,
    min_n_ticks: usize,
) -> Vec<f64> {
    let (vmin, vmax) = nonsingular(vmin.min(vmax), vmin.max(vmax));
    let (scale, offset) = scale_range(vmin, vmax, nbins);
    let (v0, v1) = (vmin - offset, vmax - offset);
    // `_staircase`: a tenth of each step below 10, the steps, ten times the second.
    let mut extended: Vec<f64> = steps[..steps.len().saturating_sub(1)]
        .iter()
        .map(|s| 0.1 * s)
        .collect();
    extended.extend(steps);
    extended.extend(steps.get(1).map(|s| 10.0 * s));
    let steps: Vec<f64> = extended
        .iter()
        .map(|s| s * scale)
        .filter(|s| !integer || *s < 1.0 || (s - s.round()).abs() < 0.001)
        .collect();
    if steps.is_empty() {
        return Vec::new();
    }
    let whole = integer && v1.floor() - v0.ceil() >= 1.0;
    let raw_step = (v1 - v0) / nbins;
    let istep = steps
        .iter()
        .position(|s| *s >= raw_step)
        .unwrap_or(steps.len() - 1);
    let mut ticks = Vec::new();
    for &step in steps[..=istep].iter().rev() {
        let step = if whole { step.max(1.0) } else { step };
        let best_vmin = (v0 / step).floor() * step;
        // _Edge_integer with offset `best_vmin`.
        let tol = if best_vmin > 0.0 {
            let digits = (best_vmin / step).log10();
            10f64.powf(digits - 12.0).clamp(1e-10, 0.4999)
        } else {
            1e-10
        };
        let closeto = |ms: f64, edge: f64| (ms - edge).abs() < tol;
        let le = {
            let (d, m) = py_divmod(v0 - best_vmin, step);
            if closeto(m / step, 1.0) {
                d + 1.0
            } else {
                d
            }
        };
        let ge = {
            let (d, m) = py_divmod(v1 - best_vmin, step);
            if closeto(m / step, 0.0) {
                d
            } else {
                d + 1.0
            }
        };
        ticks = (le as i64..=ge as i64)
            .map(|k| k as f64 * step + best_vmin)
            .collect();
        let n = ticks.iter().filter(|t| **t <= v1 && **t >= v0).count();
        if n >= min_n_ticks {
            break;
        }
    }
    ticks.iter().map(|t| t + offset).collect()
}

/// `LogLocator(base=10)`'s major ticks (decades, every `stride`-th when there are many) and
/// its minor ticks (2..9 times each decade) for the view (vmin, vmax), vmin > 0.
pub fn log_locator(vmin: f64, vmax: f64, tick_space: usize) -> (Vec<f64>, Vec<f64>) {
    let (vmin, vmax) = (vmin.min(vmax), vmin.max(vmax));
    let (lv0, lv1) = (vmin.log10(), vmax.log10());
    let numticks = tick_space.clamp(2, 9) as f64;
    let numdec = lv1.floor() - lv0.ceil();
    let stride = ((numdec / (numticks - 1.0)).ceil() as i64).max(1);
    let first = lv0.floor() as i64 - stride;
    let last = lv1.ceil() as i64 + 2 * stride;
    let major: Vec<f64> = (first..last)
        .step_by(stride as usize)
        .map(|d| 10f64.powi(d as i32))
        .collect();
    let mut minor = Vec::new();
    if numdec <= 10.0 {
        for d in lv0.floor() as i64 - 1..=lv1.ceil() as i64 {
            for s in 2..10 {
                minor.push(f64::from(s) * 10f64.powi(d as i32));
            }
        }
    }
    (major, minor)
}

/// matplotlib's minus sign (axes.unicode_minus).
pub(crate) fn minus(s: String) -> String {
    s.replace('-', "\u{2212}")
}

/// `ScalarFormatter`'s labels for the visible ticks `locs`: the fewest decimals that show
/// every tick exactly, the same for all (`%1.{n}f`). Returns the labels and the offset text
/// ("1e6" when the ticks are scaled by a power of ten, else empty).
pub fn scalar_labels(locs: &[f64], view: (f64, f64)) -> (Vec<String>, String) {
    if locs.is_empty() {
        return (Vec::new(), String::new());
    }
    // orderOfMagnitude with power limits (-5, 6).
    let vmin = view.0.min(view.1);
    let vmax = view.0.max(view.1);
    let in_view: Vec<f64> = locs
        .iter()
        .copied()
        .filter(|l| *l >= vmin && *l <= vmax)
        .collect();
    let oom = {
        let m = in_view.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        if m == 0.0 {
            0
        } else {
            let o = m.log10().floor() as i32;
            if o <= -5 || o >= 6 {
                o
            } else {
                0
            }
        }
    };
    let div = 10f64.powi(oom);
    let mut all: Vec<f64> = locs.to_vec();
    if locs.len() < 2 {
        all.push(view.0);
        all.push(view.1);
    }
    let scaled: Vec<f64> = all.iter().map(|l| l / div).collect();
    let (lo, hi) = scaled
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let mut range = hi - lo;
    if range == 0.0 {
        range = scaled.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    }
    if range == 0.0 {
        range = 1.0;
    }
    let check: &[f64] = if locs.len() < 2 {
        &scaled[..scaled.len() - 2]
    } else {
        &scaled
    };
    let range_oom = range.log10().floor() as i32;
    let mut sigfigs: i32 = (3 - range_oom).max(0);
    let thresh = 1e-3 * 10f64.powi(range_oom);
    while sigfigs >= 0 {
        let p = 10f64.powi(sigfigs);
        let err = check
            .iter()
            .fold(0.0f64, |a, v| a.max((v - round_half_even(v * p) / p).abs()));
        if err < thresh {
            sigfigs -= 1;
        } else {
            break;
        }
    }
    sigfigs += 1;
    let labels = locs
        .iter()
        .map(|l| {
            let mut v = l / div;
            if v.abs() < 1e-8 {
                v = 0.0;
            }
            minus(format!("{:.*}", sigfigs as usize, v))
        })
        .collect();
    let offset = if oom != 0 {
        minus(format!("1e{oom}"))
    } else {
        String::new()
    };
    (labels, offset)
}

/// numpy.round's rounding (half to even).
fn round_half_even(v: f64) -> f64 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 {
        2.0 * (v / 2.0).round()
    } else {
        r
    }
}

/// A log axis's label for the decade tick `v`: the exponent, drawn as a superscript of 10.
pub fn log_exponent(v: f64) -> Option<String> {
    let e = v.log10();
    ((e - e.round()).abs() < 1e-10).then(|| minus(format!("{}", e.round() as i64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_as_matplotlib() {
        // plt.plot([1, 2, 3], [4, 5, 7]): x view (0.9, 3.1), y view (3.85, 7.15).
        let t = max_n_locator(0.9, 3.1, 9);
        let (l, _) = scalar_labels(&t, (0.9, 3.1));
        assert_eq!(
            l,
            [
                "0.75", "1.00", "1.25", "1.50", "1.75", "2.00", "2.25", "2.50", "2.75", "3.00",
                "3.25"
            ]
        );
        let t = max_n_locator(3.85, 7.15, 9);
        let (l, _) = scalar_labels(&t, (3.85, 7.15));
        assert_eq!(
            l,
            ["3.5", "4.0", "4.5", "5.0", "5.5", "6.0", "6.5", "7.0", "7.5"]
        );
        let t = max_n_locator(-0.45, 9.45, 9);
        let (l, _) = scalar_labels(&t, (-0.45, 9.45));
        assert_eq!(l, ["\u{2212}2", "0", "2", "4", "6", "8", "10"]);
    }

    #[test]
    fn autoscale_margins_and_sticky_edges() {
        let (a, b) = autoscale(&[1.0, 3.0], &[], Scale::Linear, 0.05);
        assert!((a - 0.9).abs() < 1e-12 && (b - 3.1).abs() < 1e-12);
        let (a, _) = autoscale(&[0.0, 4.0], &[0.0], Scale::Linear, 0.05);
        assert_eq!(a, 0.0);
    }
}
