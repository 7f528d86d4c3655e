//! Image resizing for `transforms.Resize` (torchvision and Gluon): separable bilinear
//! resampling with half-pixel centres, the triangle filter widened when shrinking (PIL's
//! antialiasing, which torchvision uses; when enlarging it is plain bilinear, as OpenCV's
//! INTER_LINEAR that Gluon uses).
use super::data::HostImage;

/// The (height, width) an image of `shape` is resized to: (`height`, `width`), or with
/// `height == 0` the shorter edge to `width` keeping the aspect ratio (rounded down, as
/// torchvision does).
pub fn target(shape: &[usize], height: usize, width: usize) -> Result<(usize, usize), String> {
    if height > 0 {
        return Ok((height, width));
    }
    let (h, w) = match *shape {
        [a, h, w] if matches!(a, 1 | 3) && !matches!(w, 1 | 3) => (h, w),
        [h, w, _] | [h, w] => (h, w),
        _ => {
            return Err(format!(
                "Resize: expects an image of shape (H, W, C), got {shape:?}"
            ))
        }
    };
    let n = width;
    Ok(if h <= w {
        (n, (n as f64 * w as f64 / h.max(1) as f64) as usize)
    } else {
        ((n as f64 * h as f64 / w.max(1) as f64) as usize, n)
    })
}

/// Weights of the input samples for each output position along one axis of `len_in` samples.
fn axis_weights(len_in: usize, len_out: usize) -> Vec<(usize, Vec<f64>)> {
    let scale = len_in as f64 / len_out as f64;
    let filter = scale.max(1.0);
    let support = filter;
    (0..len_out)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale;
            let lo = ((center - support + 0.5).floor().max(0.0)) as usize;
            let hi = ((center + support + 0.5).floor() as usize).min(len_in);
            let mut w: Vec<f64> = (lo..hi)
                .map(|j| {
                    let x = (j as f64 - center + 0.5) / filter;
                    (1.0 - x.abs()).max(0.0)
                })
                .collect();
            let total: f64 = w.iter().sum();
            if total > 0.0 {
                for v in &mut w {
                    *v /= total;
                }
            }
            (lo, w)
        })
        .collect()
}

/// OpenCV's INTER_LINEAR on a uint8 image (Gluon's Resize): two taps per axis with 11-bit
/// fixed-point weights, the horizontal pass kept unrounded, one rounding at the end.
fn opencv_linear(src: &[f32], h: usize, w: usize, c: usize, oh: usize, ow: usize) -> Vec<f32> {
    let taps = |len_in: usize, len_out: usize| -> Vec<(usize, usize, i64, i64)> {
        let scale = len_in as f64 / len_out as f64;
        (0..len_out)
            .map(|d| {
                // OpenCV computes the position in float32 and rounds weights half to even.
                let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
                let mut s = f.floor() as i64;
                let mut frac = f - s as f32;
                if s < 0 {
                    s = 0;
                    frac = 0.0;
                }
                if s >= len_in as i64 - 1 {
                    s = len_in as i64 - 1;
                    frac = 0.0;
                }
                let a1 = (frac * 2048.0).round_ties_even() as i64;
                let a0 = ((1.0 - frac) * 2048.0).round_ties_even() as i64;
                let s = s as usize;
                (s, (s + 1).min(len_in - 1), a0, a1)
            })
            .collect()
    };
    let (tx, ty) = (taps(w, ow), taps(h, oh));
    let mut rows = vec![0i64; h * ow * c];
    for y in 0..h {
        for (ox, &(x0, x1, a0, a1)) in tx.iter().enumerate() {
            for ch in 0..c {
                let p = |x: usize| src[(y * w + x) * c + ch] as i64;
                rows[(y * ow + ox) * c + ch] = p(x0) * a0 + p(x1) * a1;
            }
        }
    }
    let mut out = vec![0f32; oh * ow * c];
    for (oy, &(y0, y1, b0, b1)) in ty.iter().enumerate() {
        for i in 0..ow * c {
            // OpenCV's vectorised VResizeLinear for 8 bits (what its x86 builds run).
            let (r0, r1) = (rows[y0 * ow * c + i], rows[y1 * ow * c + i]);
            let v = (((b0 * (r0 >> 4)) >> 16) + ((b1 * (r1 >> 4)) >> 16) + 2) >> 2;
            out[oy * ow * c + i] = v.clamp(0, 255) as f32;
        }
    }
    out
}

/// PIL's bilinear resample of an 8-bit image (torchvision's Resize on a PIL image): 22-bit
/// fixed-point weights, each pass rounded to 8 bits.
const PIL_ONE: f64 = (1u64 << 22) as f64;

fn pil_round(v: f64) -> f64 {
    ((v * PIL_ONE + PIL_ONE / 2.0) / PIL_ONE)
        .floor()
        .clamp(0.0, 255.0)
}

/// Resizes the two spatial axes of an (H, W, C) image (values rounded to integers in
/// 0..=255, as a uint8 image's: PIL's arithmetic, or OpenCV's with `opencv`) or a (C, H, W)
/// tensor (kept as floats).
pub fn resize_with(
    img: HostImage,
    height: usize,
    width: usize,
    opencv: bool,
    eight_bit: bool,
) -> Result<HostImage, String> {
    if !eight_bit {
        return resize_float(img, height, width, false);
    }
    if opencv
        && img.shape.len() == 3
        && (!matches!(img.shape[0], 1 | 3) || matches!(img.shape[2], 1 | 3))
    {
        let (h, w, c) = (img.shape[0], img.shape[1], img.shape[2]);
        if height == 0 || width == 0 || h == 0 || w == 0 {
            return Err("Resize: the size must be at least 1".into());
        }
        if img.values.len() != h * w * c {
            return Err("Resize: the values do not fill the image's shape".into());
        }
        let values = opencv_linear(&img.values, h, w, c, height, width);
        return Ok(HostImage {
            shape: vec![height, width, c],
            values,
        });
    }
    resize(img, height, width)
}

/// Resizes the two spatial axes of an (H, W, C) image (values rounded to integers in
/// 0..=255, as a uint8 image's) or a (C, H, W) tensor (kept as floats).
pub fn resize(img: HostImage, height: usize, width: usize) -> Result<HostImage, String> {
    resize_float(img, height, width, true)
}

/// The separable resample; `eight_bit` rounds an (H, W, C) image as PIL does.
fn resize_float(
    img: HostImage,
    height: usize,
    width: usize,
    eight_bit: bool,
) -> Result<HostImage, String> {
    if height == 0 || width == 0 {
        return Err("Resize: the size must be at least 1".into());
    }
    let (chw, c, h, w) = match *img.shape.as_slice() {
        [a, h, w] if matches!(a, 1 | 3) && !matches!(w, 1 | 3) => (true, a, h, w),
        [h, w, c] => (false, c, h, w),
        [h, w] => (false, 1, h, w),
        _ => {
            return Err(format!(
                "Resize: expects an image of shape (H, W, C) or (C, H, W), got {:?}",
                img.shape
            ))
        }
    };
    if img.values.len() != c * h * w {
        return Err("Resize: the values do not fill the image's shape".into());
    }
    let at = |y: usize, x: usize, ch: usize| -> usize {
        if chw {
            (ch * h + y) * w + x
        } else {
            (y * w + x) * c + ch
        }
    };
    let (wy, wx) = (axis_weights(h, height), axis_weights(w, width));
    // Horizontal pass first, then vertical, as PIL does; an 8-bit image is rounded after
    // each pass with PIL's 22-bit fixed-point weights.
    let round = !chw && eight_bit;
    let q = |wt: f64| {
        if round {
            (wt * PIL_ONE + 0.5).floor() / PIL_ONE
        } else {
            wt
        }
    };
    let mut tmp = vec![0f64; h * width * c];
    for y in 0..h {
        for (ox, (lo, ws)) in wx.iter().enumerate() {
            for ch in 0..c {
                let s: f64 = ws
                    .iter()
                    .enumerate()
                    .map(|(k, wt)| q(*wt) * f64::from(img.values[at(y, lo + k, ch)]))
                    .sum();
                tmp[(y * width + ox) * c + ch] = if round { pil_round(s) } else { s };
            }
        }
    }
    let mut out = vec![0f32; height * width * c];
    for (oy, (lo, ws)) in wy.iter().enumerate() {
        for ox in 0..width {
            for ch in 0..c {
                let s: f64 = ws
                    .iter()
                    .enumerate()
                    .map(|(k, wt)| q(*wt) * tmp[((lo + k) * width + ox) * c + ch])
                    .sum();
                let v = if round { pil_round(s) } else { s };
                let idx = if chw {
                    (ch * height + oy) * width + ox
                } else {
                    (oy * width + ox) * c + ch
                };
                out[idx] = v as f32;
            }
        }
    }
    let shape = if chw {
        vec![c, height, width]
    } else if img.shape.len() == 2 {
        vec![height, width]
    } else {
        vec![height, width, c]
    };
    Ok(HostImage { shape, values: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enlarging_is_half_pixel_bilinear() {
        let img = HostImage {
            shape: vec![2, 2, 1],
            values: vec![0.0, 100.0, 200.0, 40.0],
        };
        let out = resize(img, 4, 4).expect("resize");
        // Row 0: clamped edge, then 1/4 and 3/4 of the way between 0 and 100.
        assert_eq!(&out.values[..4], &[0.0, 25.0, 75.0, 100.0]);
        assert_eq!(out.shape, vec![4, 4, 1]);
    }

    #[test]
    fn shrinking_averages() {
        let img = HostImage {
            shape: vec![1, 2, 2],
            values: vec![0.0, 1.0, 2.0, 3.0],
        };
        let out = resize(img, 1, 1).expect("resize");
        assert_eq!(out.values, vec![1.5]);
        assert!(resize(
            HostImage {
                shape: vec![4],
                values: vec![0.0; 4]
            },
            2,
            2
        )
        .is_err());
    }
}
