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
    // The one-letter colours are matplotlib's BASE_COLORS, in thirds and quarters exactly.
    let base = match t {
        "g" => Some(Rgba(0.0, 0.5, 0.0, 1.0)),
        "c" => Some(Rgba(0.0, 0.75, 0.75, 1.0)),
        "m" => Some(Rgba(0.75, 0.0, 0.75, 1.0)),
        "y" => Some(Rgba(0.75, 0.75, 0.0, 1.0)),
        _ => None,
    };
    if base.is_some() {
        return base;
    }
    let lower = t.to_ascii_lowercase();
    // Single letters are case-sensitive in matplotlib ('B' is not blue).
    let key = if t.len() == 1 { t } else { lower.as_str() };
    NAMED
        .iter()
        .find(|(n, _)| *n == key)
        .and_then(|(_, h)| parse(h))
}

use super::colormap_data as data;

/// How a colormap is defined in matplotlib: 256 listed colours, or segment data per
/// channel (x, value below x, value above x), or colours spaced evenly (`from_list`).
enum Source {
    Listed(&'static [[f64; 3]]),
    Segments([&'static [[f64; 3]]; 3]),
    Even(&'static [[f64; 3]]),
}

fn source(name: &str) -> Option<Source> {
    Some(match name {
        "viridis" => Source::Listed(&data::VIRIDIS),
        "plasma" => Source::Listed(&data::PLASMA),
        "inferno" => Source::Listed(&data::INFERNO),
        "magma" => Source::Listed(&data::MAGMA),
        "cividis" => Source::Listed(&data::CIVIDIS),
        "gray" | "grey" => Source::Segments(data::GRAY_SEGMENTS),
        "binary" => Source::Segments(data::BINARY_SEGMENTS),
        "jet" => Source::Segments(data::JET_SEGMENTS),
        "hot" => Source::Segments(data::HOT_SEGMENTS),
        "coolwarm" => Source::Segments(data::COOLWARM_SEGMENTS),
        "Blues" => Source::Even(data::BLUES_LIST),
        "Reds" => Source::Even(data::REDS_LIST),
        "Greys" => Source::Even(data::GREYS_LIST),
        "Greens" => Source::Even(data::GREENS_LIST),
        "Oranges" => Source::Even(data::ORANGES_LIST),
        "Purples" => Source::Even(data::PURPLES_LIST),
        _ => return None,
    })
}

/// The colormap names [`lut`] knows, in the order of matplotlib's registry; each also
/// reversed with `_r`.
pub const COLORMAPS: &[&str] = &[
    "magma", "inferno", "plasma", "viridis", "cividis", "Blues", "Greens", "Greys", "Oranges",
    "Purples", "Reds", "binary", "coolwarm", "gray", "hot", "jet", "grey",
];

/// Every colormap name, `_r` ones after the others, as `pyplot.colormaps()` lists them.
pub fn colormap_names() -> Vec<String> {
    COLORMAPS
        .iter()
        .map(|n| n.to_string())
        .chain(COLORMAPS.iter().map(|n| format!("{n}_r")))
        .collect()
}

/// `LinearSegmentedColormap`'s `_lutsize`-entry table from segment data (matplotlib's
/// `_create_lookup_table` with gamma 1).
fn segment_lut(points: &[[f64; 3]], n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![points.last().map_or(0.0, |p| p[1])];
    }
    // matplotlib scales both the points and the table positions by n - 1 (the table's
    // positions are numpy.linspace(0, 1, n): i times the step), and so does this, to the bit.
    let last = (n - 1) as f64;
    let xs: Vec<f64> = points.iter().map(|p| p[0] * last).collect();
    (0..n)
        .map(|i| {
            let x = last * (i as f64 * (1.0 / last));
            if i == 0 {
                return points.first().map_or(0.0, |p| p[2]);
            }
            if i == n - 1 {
                return points.last().map_or(0.0, |p| p[1]);
            }
            // searchsorted(xs, x) (left): the first point at or past x.
            let k = xs
                .iter()
                .position(|p| *p >= x)
                .unwrap_or(xs.len() - 1)
                .max(1);
            let d = (x - xs[k - 1]) / (xs[k] - xs[k - 1]);
            (d * (points[k][1] - points[k - 1][2]) + points[k - 1][2]).clamp(0.0, 1.0)
        })
        .collect()
}

/// The colormap `name` (or `name_r`) as matplotlib's lookup table of `n` colours.
pub fn lut(name: &str, n: usize) -> Option<Vec<[f64; 3]>> {
    let (base, reversed) = match name.strip_suffix("_r") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let n = n.max(1);
    let mut table: Vec<[f64; 3]> = match source(base)? {
        Source::Listed(colors) if n == colors.len() => colors.to_vec(),
        // `resampled(n)`: the colours at n evenly spaced points.
        Source::Listed(colors) => (0..n)
            .map(|i| {
                let x = if n == 1 {
                    0.0
                } else {
                    i as f64 / (n - 1) as f64
                };
                colors[index_of(x, colors.len())]
            })
            .collect(),
        Source::Segments(ch) => {
            let [r, g, b] = ch.map(|pts| segment_lut(pts, n));
            (0..n).map(|i| [r[i], g[i], b[i]]).collect()
        }
        Source::Even(colors) => {
            let m = colors.len().max(2) - 1;
            let channel = |c: usize| -> Vec<[f64; 3]> {
                colors
                    .iter()
                    .enumerate()
                    .map(|(i, col)| [i as f64 * (1.0 / m as f64), col[c], col[c]])
                    .collect()
            };
            let [r, g, b] = [0, 1, 2].map(|c| segment_lut(&channel(c), n));
            (0..n).map(|i| [r[i], g[i], b[i]]).collect()
        }
    };
    if reversed {
        table.reverse();
    }
    Some(table)
}

/// Where a value in [0, 1] falls in a table of `n`: matplotlib's `int(x * n)`, 1.0 in the
/// last entry.
pub fn index_of(x: f64, n: usize) -> usize {
    ((x * n as f64).floor().max(0.0) as usize).min(n.max(1) - 1)
}

thread_local! {
    /// Tables by name: the built-in ones once made, and those a program made
    /// (`ListedColormap`, `LinearSegmentedColormap.from_list`), which images and scatter
    /// plots then find by name.
    static TABLES: std::cell::RefCell<Vec<(String, Vec<[f64; 3]>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes `table` the colormap `name` (a program's own colormap).
pub fn register(name: &str, table: Vec<[f64; 3]>) {
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        t.retain(|(n, _)| n != name);
        t.push((name.to_string(), table));
    });
}

/// The colour of `t` in [0, 1] on the colormap `name` (its table; 256 colours for the
/// built-in ones, as matplotlib's); None for an unknown name. NaN takes the lowest colour.
pub fn colormap(name: &str, t: f64) -> Option<Rgba> {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    TABLES.with(|c| {
        let mut c = c.borrow_mut();
        let i = match c.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                c.push((name.to_string(), lut(name, 256)?));
                c.len() - 1
            }
        };
        let table = &c[i].1;
        let [r, g, b] = *table.get(index_of(t, table.len()))?;
        Some(Rgba(r, g, b, 1.0))
    })
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
        // cm.gray(0.5) is the 129th of 256 levels; cm.jet(0.3) as matplotlib gives it.
        assert_eq!(colormap("gray", 0.5).map(|c| c.0), Some(128.0 / 255.0));
        let jet = colormap("jet", 0.3).map(|c| (c.0, c.1, c.2));
        assert_eq!(jet, Some((0.0, 0.692156862745098, 1.0)));
    }
}
