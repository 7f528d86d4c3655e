//! Colours as matplotlib names them: hex, single letters, `C0`..`C9`, gray levels ('0.5'),
//! CSS/X11 names programs use, `tab:` names; and the colormaps images and scatter use.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rgba(pub f64, pub f64, pub f64, pub f64);

impl Rgba {
    pub const BLACK: Rgba = Rgba(0.0, 0.0, 0.0, 1.0);
    pub const WHITE: Rgba = Rgba(1.0, 1.0, 1.0, 1.0);

    pub fn with_alpha(self, a: f64) -> Rgba {
        Rgba(self.0, self.1, self.2, a)
    }

    /// `#rrggbb`, as SVG fill/stroke values (alpha goes in an opacity attribute).
    pub fn hex(self) -> String {
        let c = |v: f64| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        format!("#{:02x}{:02x}{:02x}", c(self.0), c(self.1), c(self.2))
    }

    pub fn bytes(self) -> [u8; 4] {
        let c = |v: f64| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        [c(self.0), c(self.1), c(self.2), c(self.3)]
    }
}

const NAMED: &[(&str, &str)] = &[
    ("b", "#0000ff"),
    ("g", "#008000"),
    ("r", "#ff0000"),
    ("c", "#00bfbf"),
    ("m", "#bf00bf"),
    ("y", "#bfbf00"),
    ("k", "#000000"),
    ("w", "#ffffff"),
    ("black", "#000000"),
    ("white", "#ffffff"),
    ("red", "#ff0000"),
    ("green", "#008000"),
    ("blue", "#0000ff"),
    ("orange", "#ffa500"),
    ("purple", "#800080"),
    ("brown", "#a52a2a"),
    ("pink", "#ffc0cb"),
    ("gray", "#808080"),
    ("grey", "#808080"),
    ("olive", "#808000"),
    ("cyan", "#00ffff"),
    ("magenta", "#ff00ff"),
    ("yellow", "#ffff00"),
    ("navy", "#000080"),
    ("teal", "#008080"),
    ("lime", "#00ff00"),
    ("maroon", "#800000"),
    ("gold", "#ffd700"),
    ("silver", "#c0c0c0"),
    ("darkblue", "#00008b"),
    ("darkgreen", "#006400"),
    ("darkred", "#8b0000"),
    ("darkorange", "#ff8c00"),
    ("lightblue", "#add8e6"),
    ("lightgreen", "#90ee90"),
    ("lightgray", "#d3d3d3"),
    ("lightgrey", "#d3d3d3"),
    ("darkgray", "#a9a9a9"),
    ("darkgrey", "#a9a9a9"),
    ("skyblue", "#87ceeb"),
    ("steelblue", "#4682b4"),
    ("salmon", "#fa8072"),
    ("coral", "#ff7f50"),
    ("crimson", "#dc143c"),
    ("violet", "#ee82ee"),
    ("indigo", "#4b0082"),
    ("tomato", "#ff6347"),
    ("tab:blue", "#1f77b4"),
    ("tab:orange", "#ff7f0e"),
    ("tab:green", "#2ca02c"),
    ("tab:red", "#d62728"),
    ("tab:purple", "#9467bd"),
    ("tab:brown", "#8c564b"),
    ("tab:pink", "#e377c2"),
    ("tab:gray", "#7f7f7f"),
    ("tab:grey", "#7f7f7f"),
    ("tab:olive", "#bcbd22"),
    ("tab:cyan", "#17becf"),
    ("none", "#00000000"),
];

/// A colour from matplotlib's string forms; None when the string names none.
pub fn parse(s: &str) -> Option<Rgba> {
    let t = s.trim();
    if let Some(hex) = t.strip_prefix('#') {
        let h = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
        let f = |v: u8| f64::from(v) / 255.0;
        return match hex.len() {
            6 => Some(Rgba(f(h(0)?), f(h(2)?), f(h(4)?), 1.0)),
            8 => Some(Rgba(f(h(0)?), f(h(2)?), f(h(4)?), f(h(6)?))),
            3 => {
                let d = |i: usize| u8::from_str_radix(hex.get(i..i + 1)?, 16).ok();
                Some(Rgba(f(d(0)? * 17), f(d(1)? * 17), f(d(2)? * 17), 1.0))
            }
            _ => None,
        };
    }
    if let Some(n) = t.strip_prefix('C') {
        if let Ok(i) = n.parse::<usize>() {
            return parse(super::TAB10[i % 10]);
        }
    }
    // A gray level: '0.5'.
    if let Ok(v) = t.parse::<f64>() {
        if (0.0..=1.0).contains(&v) && !t.starts_with('+') {
            return Some(Rgba(v, v, v, 1.0));
        }
        return None;
    }
    let lower = t.to_ascii_lowercase();
    // Single letters are case-sensitive in matplotlib ('B' is not blue).
    let key = if t.len() == 1 { t } else { lower.as_str() };
    NAMED
        .iter()
        .find(|(n, _)| *n == key)
        .and_then(|(_, h)| parse(h))
}

/// Anchor colours of the colormaps learners use, evenly spaced from 0 to 1; values between
/// are interpolated linearly (matplotlib's LinearSegmentedColormap does the same with 256
/// entries; viridis's anchors are its listed colours at k/8).
fn anchors(name: &str) -> Option<&'static [[f64; 3]]> {
    Some(match name {
        "viridis" => &[
            [0.267004, 0.004874, 0.329415],
            [0.275191, 0.194905, 0.496005],
            [0.212395, 0.359683, 0.55171],
            [0.153364, 0.497, 0.557724],
            [0.122312, 0.633153, 0.530398],
            [0.288921, 0.758394, 0.428426],
            [0.626579, 0.854645, 0.223353],
            [0.993248, 0.906157, 0.143936],
        ],
        "gray" | "Greys_r" | "binary_r" => &[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
        "gray_r" | "Greys" | "binary" => &[[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]],
        "hot" => &[
            [0.0416, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [1.0, 1.0, 1.0],
        ],
        "coolwarm" => &[
            [0.2298, 0.2987, 0.7537],
            [0.8654, 0.8654, 0.8654],
            [0.7057, 0.0156, 0.1502],
        ],
        "Blues" => &[[0.9686, 0.9843, 1.0], [0.0314, 0.1882, 0.4196]],
        "Reds" => &[[1.0, 0.9608, 0.9412], [0.4039, 0.0, 0.0510]],
        _ => return None,
    })
}

/// The colormap names [`colormap`] knows.
pub const COLORMAPS: &[&str] = &[
    "viridis", "gray", "gray_r", "Greys", "Greys_r", "binary", "binary_r", "hot", "coolwarm",
    "Blues", "Reds",
];

/// The colour of `t` in [0, 1] on the colormap `name`; None for an unknown name.
pub fn colormap(name: &str, t: f64) -> Option<Rgba> {
    let a = anchors(name)?;
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (a.len() - 1) as f64;
    let i = (pos.floor() as usize).min(a.len() - 2);
    let f = pos - i as f64;
    let mix = |k: usize| a[i][k] + (a[i + 1][k] - a[i][k]) * f;
    Some(Rgba(mix(0), mix(1), mix(2), 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels() {
        assert_eq!(parse("r"), Some(Rgba(1.0, 0.0, 0.0, 1.0)));
        assert_eq!(parse("C1").map(|c| c.hex()), Some("#ff7f0e".into()));
        assert_eq!(parse("0.5"), Some(Rgba(0.5, 0.5, 0.5, 1.0)));
        assert_eq!(parse("nonsense"), None);
        assert_eq!(colormap("gray", 1.0), Some(Rgba(1.0, 1.0, 1.0, 1.0)));
    }
}
