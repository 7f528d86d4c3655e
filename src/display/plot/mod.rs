//! Figures as plain data, and what turns them into pictures: matplotlib's Figure/Axes model
//! (what `matplotlib.pyplot` builds, `src/modules/matplotlib/`), its default style, tick
//! locators and formatters (`ticks.rs`), the SVG writer (`svg.rs`), PNG through resvg with the
//! shipped DejaVu Sans (`raster.rs`), and the terminal's braille drawing (`term.rs`).
//! Nothing here knows the language: coordinates are f64s, colours RGBA.

pub mod color;
mod colormap_data;
pub mod contour;
pub mod font;
pub mod layout;
pub mod raster;
pub mod svg;
pub mod term;
pub mod tickers;
pub mod ticks;

pub use color::Rgba;

/// matplotlib's default colour cycle (tab10).
pub const TAB10: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LineStyle {
    Solid,
    Dashed,
    DashDot,
    Dotted,
    None,
}

impl LineStyle {
    /// matplotlib's dash patterns (lines.dashed_pattern...), in multiples of the line width.
    pub fn dashes(self) -> Option<&'static [f64]> {
        match self {
            LineStyle::Dashed => Some(&[3.7, 1.6]),
            LineStyle::DashDot => Some(&[6.4, 1.6, 1.0, 1.6]),
            LineStyle::Dotted => Some(&[1.0, 1.65]),
            _ => None,
        }
    }
}

/// A marker as matplotlib's one-character codes name it.
pub type Marker = char;

#[derive(Clone, Debug)]
pub struct Line {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub color: Rgba,
    pub width: f64,
    pub style: LineStyle,
    pub marker: Option<Marker>,
    pub marker_size: f64,
    pub label: Option<String>,
    /// `transform=ax.transAxes`: the points are fractions of the axes box, not data.
    pub in_axes: bool,
    /// The markers' inside (`markerfacecolor`); None: the line's colour.
    pub marker_face: Option<Rgba>,
}

#[derive(Clone, Debug)]
pub struct Scatter {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    /// One colour, or one per point.
    pub colors: Vec<Rgba>,
    /// Marker area in pt².
    pub sizes: Vec<f64>,
    pub marker: Marker,
    pub label: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Bars {
    /// Left edge, width, bottom, height of each bar (data units).
    pub rects: Vec<[f64; 4]>,
    pub color: Rgba,
    pub edge: Option<Rgba>,
    pub label: Option<String>,
    /// `hist`'s bars stand on y=0 with no margin below; so do `bar`'s.
    pub vertical: bool,
}

/// The area between (xs, y1) and (xs, y2) (`fill_between`); with `y2` empty, the polygon
/// through (xs, y1) (`pie`'s wedges).
#[derive(Clone, Debug)]
pub struct Fill {
    pub xs: Vec<f64>,
    pub y1: Vec<f64>,
    pub y2: Vec<f64>,
    pub color: Rgba,
    pub label: Option<String>,
}

/// `axhspan`/`axvspan`: a band from `lo` to `hi` in data units across the axes, from
/// `across.0` to `across.1` of its box the other way.
#[derive(Clone, Debug)]
pub struct Span {
    pub lo: f64,
    pub hi: f64,
    pub horizontal: bool,
    pub across: (f64, f64),
    pub color: Rgba,
    /// `color=` colours the edge too (1pt); `facecolor=` only the inside.
    pub edge: bool,
    pub label: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RefLine {
    /// y for axhline, x for axvline.
    pub at: f64,
    pub horizontal: bool,
    pub color: Rgba,
    pub width: f64,
    pub style: LineStyle,
    pub label: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Text {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub color: Rgba,
    pub size: f64,
    pub ha: String,
    pub va: String,
    /// Points right and up from (x, y) (`annotate(textcoords='offset points')`).
    pub offset: (f64, f64),
    /// An annotation's arrow from the text to a point.
    pub arrow: Option<Arrow>,
    /// `transform=ax.transAxes`: x and y are fractions of the axes box, not data.
    pub in_axes: bool,
}

/// `annotate(arrowprops=...)`: a line from the text to the point it annotates.
#[derive(Clone, Debug)]
pub struct Arrow {
    /// The annotated point, in data coordinates.
    pub to: (f64, f64),
    pub color: Rgba,
    pub width: f64,
    pub head: ArrowHead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrowHead {
    None,
    /// `->`: two strokes.
    Open,
    /// `-|>` and the default arrow of `arrowprops=dict(facecolor=...)`: a filled triangle.
    Filled,
}

#[derive(Clone, Debug)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    /// Row-major RGBA, top row first.
    pub rgba: Vec<u8>,
    /// Where the image lies in data coordinates: left, right, bottom, top (`imshow(extent=)`);
    /// None for pixel centres at 0, 1, ... with the first row on top.
    pub extent: Option<[f64; 4]>,
    /// How scalar data became colours, for a colorbar.
    pub norm: Option<Norm>,
}

impl Image {
    /// left, right, bottom, top in data coordinates.
    pub fn extent(&self) -> [f64; 4] {
        let (w, h) = (self.width as f64, self.height as f64);
        self.extent.unwrap_or([-0.5, w - 0.5, h - 0.5, -0.5])
    }
}

/// A colormap and the data values at its two ends (matplotlib's `Normalize(vmin, vmax)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Norm {
    pub cmap: String,
    pub lo: f64,
    pub hi: f64,
    /// A contour set's levels: its colorbar shows one band per pair, ticked at the levels;
    /// empty for a continuous colorbar.
    pub levels: Vec<f64>,
    /// The colour of each band between `levels` (a filled contour set's layer colours).
    pub band_colors: Vec<Rgba>,
}

/// What makes an axes a colorbar: its parent's index and the `colorbar()` geometry, so
/// `tight_layout` can split the parent's cell again.
#[derive(Clone, Copy, Debug)]
pub struct ColorbarOf {
    pub parent: usize,
    pub fraction: f64,
    pub pad: f64,
    pub shrink: f64,
}

/// A vertical colorbar's cell beside its parent (matplotlib's `make_axes_gridspec`, location
/// 'right'): the parent keeps `1 - fraction - pad` of the width, a gap of `pad`, the colorbar
/// `fraction`, `shrink` of the height, centred. Returns (parent rect, colorbar cell).
pub fn colorbar_split(cell: [f64; 4], c: &ColorbarOf) -> ([f64; 4], [f64; 4]) {
    let [l, b, w, h] = cell;
    (
        [l, b, w * (1.0 - c.fraction - c.pad), h],
        [
            l + w * (1.0 - c.fraction),
            b + h * (1.0 - c.shrink) / 2.0,
            w * c.fraction,
            h * c.shrink,
        ],
    )
}

/// Filled polygons in data coordinates (`contourf`'s bands, `pcolormesh`'s quads), drawn
/// without antialiasing as matplotlib draws them, so neighbours meet without seams.
#[derive(Clone, Debug)]
pub struct Patches {
    pub rings: Vec<Vec<[f64; 2]>>,
    /// One colour for all rings (filled together as one path), or one per ring; none: the
    /// rings only claim their area for autoscaling (a line contour set's grid).
    pub colors: Vec<Rgba>,
    /// How data became colours, for `colorbar()` without a mappable.
    pub norm: Option<Norm>,
}

#[derive(Clone, Debug)]
pub enum Artist {
    Line(Line),
    Scatter(Scatter),
    Bars(Bars),
    Fill(Fill),
    RefLine(RefLine),
    Text(Text),
    Image(Image),
    Span(Span),
    Patches(Patches),
}

impl Artist {
    pub fn label(&self) -> Option<&str> {
        let l = match self {
            Artist::Line(l) => &l.label,
            Artist::Scatter(s) => &s.label,
            Artist::Bars(b) => &b.label,
            Artist::Fill(f) => &f.label,
            Artist::RefLine(r) => &r.label,
            Artist::Span(s) => &s.label,
            _ => return None,
        };
        // matplotlib leaves out labels starting with an underscore.
        l.as_deref().filter(|s| !s.starts_with('_'))
    }
}

/// One axis's settings: what the program set, the rest computed at draw time.
#[derive(Clone, Debug)]
pub struct AxisSpec {
    pub label: String,
    pub lim: (Option<f64>, Option<f64>),
    pub scale: Scale,
    pub ticks: Option<Vec<f64>>,
    pub ticklabels: Option<Vec<String>>,
    pub visible: bool,
    pub inverted: bool,
    /// False on the inner subplots of a shared axis (matplotlib's `label_outer`).
    pub ticklabels_on: bool,
    /// Sizes in points and the tick labels' rotation in degrees (counter-clockwise).
    pub label_size: f64,
    pub tick_size: f64,
    pub tick_rotation: f64,
    /// The tick labels' horizontal alignment when rotated ("center", "right", "left").
    pub tick_ha: Option<String>,
    /// Axes sharing this axis's limits carry the same group number (`subplots(sharex=)`).
    pub share: Option<usize>,
    /// Ticks and labels on the far side (right of a y axis, as a colorbar has them).
    pub opposite: bool,
    /// Ticks on both sides, labels on one (`set_ticks_position('both')`, as `matshow`'s x).
    pub mirror: bool,
    /// The autoscale margin, a fraction of the data interval (`margins()`).
    pub margin: f64,
    /// `set_major_locator`/`set_major_formatter`: where ticks go and how they read.
    pub locator: Option<tickers::Locator>,
    pub formatter: Option<tickers::Formatter>,
    /// `set_minor_locator`: minor ticks on a linear axis.
    pub minor_locator: Option<tickers::Locator>,
}

impl Default for AxisSpec {
    fn default() -> Self {
        AxisSpec {
            label: String::new(),
            lim: (None, None),
            scale: Scale::Linear,
            ticks: None,
            ticklabels: None,
            visible: true,
            inverted: false,
            ticklabels_on: true,
            label_size: layout::FONT,
            tick_size: layout::FONT,
            tick_rotation: 0.0,
            tick_ha: None,
            share: None,
            opposite: false,
            mirror: false,
            margin: 0.05,
            locator: None,
            formatter: None,
            minor_locator: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Legend {
    /// Labels given to `legend([...])`, for the artists in order.
    pub labels: Option<Vec<String>>,
    /// matplotlib's location code: 0 is 'best'.
    pub loc: u8,
    /// `legend(handles, labels)`: the artists (indices into the axes' artists) the labels name.
    pub artists: Option<Vec<usize>>,
    /// `legend(fontsize=)` in points: the text and every pad, which matplotlib measures in it.
    pub fontsize: f64,
}

#[derive(Clone, Debug)]
pub struct Axes {
    /// left, bottom, width, height as fractions of the figure.
    pub rect: [f64; 4],
    /// (nrows, ncols, row, col) for subplots laid out on a grid.
    pub grid: Option<(usize, usize, usize, usize)>,
    pub artists: Vec<Artist>,
    pub title: String,
    pub title_size: f64,
    pub x: AxisSpec,
    pub y: AxisSpec,
    pub grid_on: bool,
    pub legend: Option<Legend>,
    pub axis_on: bool,
    /// Equal aspect (imshow): the box shrinks to keep data units square.
    pub equal_aspect: bool,
    /// Height over width of the box, when fixed (a colorbar's `aspect`).
    pub box_aspect: Option<f64>,
    /// Where a shrunk box sits in its rect: (0, 0) bottom left, (1, 1) top right.
    pub anchor: (f64, f64),
    pub colorbar: Option<ColorbarOf>,
    /// The next colour of the property cycle.
    pub cycle: usize,
    /// Drawn over another axes (`twinx`): no background of its own, so that one shows.
    pub twin: bool,
    /// The background (`set_facecolor`).
    pub facecolor: Rgba,
    /// Which sides of the frame show: left, right, bottom, top (`ax.spines[...]`).
    pub spines: [bool; 4],
    /// The frame's colour (axes.edgecolor) and the grid's (grid.color).
    pub edgecolor: Rgba,
    pub grid_color: Rgba,
    /// The colour cycle (axes.prop_cycle); empty: tab10.
    pub colors: Vec<Rgba>,
    /// Taken off its figure (`fig.delaxes`): kept in place so other axes keep their index,
    /// but neither drawn nor listed.
    pub removed: bool,
}

impl Axes {
    pub fn new(rect: [f64; 4]) -> Axes {
        Axes {
            rect,
            grid: None,
            artists: Vec::new(),
            title: String::new(),
            title_size: layout::TITLE_FONT,
            x: AxisSpec::default(),
            y: AxisSpec::default(),
            grid_on: false,
            legend: None,
            axis_on: true,
            equal_aspect: false,
            box_aspect: None,
            anchor: (0.5, 0.5),
            colorbar: None,
            cycle: 0,
            twin: false,
            facecolor: Rgba::WHITE,
            spines: [true; 4],
            removed: false,
            edgecolor: Rgba::BLACK,
            grid_color: Rgba(0.690196, 0.690196, 0.690196, 1.0),
            colors: Vec::new(),
        }
    }

    /// `cla()`: everything but the position and the sharing.
    pub fn clear(&mut self) {
        let (rect, grid) = (self.rect, self.grid);
        let (xs, ys) = (
            (self.x.share, self.x.ticklabels_on),
            (self.y.share, self.y.ticklabels_on),
        );
        // A twin stays one: its hidden shared axis and its other axis on the far side.
        let twin = self.twin.then_some((
            (self.x.visible, self.x.opposite),
            (self.y.visible, self.y.opposite),
        ));
        // What rcParams gave it (a style's colours) stays.
        let style = (
            self.facecolor,
            self.edgecolor,
            self.grid_color,
            std::mem::take(&mut self.colors),
        );
        *self = Axes::new(rect);
        (self.facecolor, self.edgecolor, self.grid_color, self.colors) = style;
        self.grid = grid;
        (self.x.share, self.x.ticklabels_on) = xs;
        (self.y.share, self.y.ticklabels_on) = ys;
        if let Some(((xv, xo), (yv, yo))) = twin {
            self.twin = true;
            (
                self.x.visible,
                self.x.opposite,
                self.y.visible,
                self.y.opposite,
            ) = (xv, xo, yv, yo);
        }
    }

    pub fn next_color(&mut self) -> Rgba {
        let c = match self.colors.len() {
            0 => color::parse(TAB10[self.cycle % TAB10.len()]).unwrap_or(Rgba::BLACK),
            n => self.colors[self.cycle % n],
        };
        self.cycle += 1;
        c
    }
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub number: i64,
    /// Inches.
    pub size: (f64, f64),
    pub dpi: f64,
    pub axes: Vec<Axes>,
    pub suptitle: Option<String>,
    /// `suptitle(fontsize=)` in points (figure.titlesize, 'large', by default).
    pub suptitle_size: f64,
    pub facecolor: Rgba,
    /// Text placed in figure fractions (`figtext`, `fig.text`, `supxlabel`, `supylabel`).
    pub texts: Vec<FigText>,
    /// `fig.legend()`s, drawn over the axes.
    pub legends: Vec<FigLegend>,
}

/// A legend of the figure (`fig.legend`): its labels with copies of the artists they name.
#[derive(Clone, Debug)]
pub struct FigLegend {
    pub entries: Vec<(String, Artist)>,
    /// matplotlib's location code, inside the figure's box; 0 ('best') is 'upper right'.
    pub loc: u8,
    pub fontsize: f64,
}

/// Text at (x, y) in fractions of the figure, y up, as matplotlib's figure coordinates.
#[derive(Clone, Debug)]
pub struct FigText {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub size: f64,
    pub color: Rgba,
    pub ha: String,
    pub va: String,
    /// Turned 90° counter-clockwise (`supylabel`).
    pub vertical: bool,
    /// `supxlabel`/`supylabel`: a second call replaces the text of the same role.
    pub role: Option<&'static str>,
}

impl Figure {
    pub fn new(number: i64, size: (f64, f64), dpi: f64) -> Figure {
        Figure {
            number,
            size,
            dpi,
            axes: Vec::new(),
            suptitle: None,
            suptitle_size: layout::SUPTITLE_FONT,
            facecolor: Rgba::WHITE,
            texts: Vec::new(),
            legends: Vec::new(),
        }
    }

    /// The pixel size matplotlib reports in `<Figure size 640x480 with 1 Axes>`.
    pub fn pixels(&self) -> (f64, f64) {
        (self.size.0 * self.dpi, self.size.1 * self.dpi)
    }
}

/// The subplot grid's default parameters (figure.subplot.*).
pub const SUBPLOT_LEFT: f64 = 0.125;
pub const SUBPLOT_RIGHT: f64 = 0.9;
pub const SUBPLOT_BOTTOM: f64 = 0.11;
pub const SUBPLOT_TOP: f64 = 0.88;
pub const SUBPLOT_WSPACE: f64 = 0.2;
pub const SUBPLOT_HSPACE: f64 = 0.2;

/// The rectangle of cell (row, col) of an nrows x ncols grid, as GridSpec computes it.
pub fn grid_rect(
    nrows: usize,
    ncols: usize,
    row: usize,
    col: usize,
    margins: [f64; 4],
    wspace: f64,
    hspace: f64,
) -> [f64; 4] {
    let [left, bottom, right, top] = margins;
    let (nr, nc) = (nrows.max(1) as f64, ncols.max(1) as f64);
    let cell_w = (right - left) / (nc + wspace * (nc - 1.0));
    let cell_h = (top - bottom) / (nr + hspace * (nr - 1.0));
    let x0 = left + col as f64 * cell_w * (1.0 + wspace);
    let y_top = top - row as f64 * cell_h * (1.0 + hspace);
    [x0, y_top - cell_h, cell_w, cell_h]
}

/// The default subplot margins: [left, bottom, right, top].
pub const DEFAULT_MARGINS: [f64; 4] = [SUBPLOT_LEFT, SUBPLOT_BOTTOM, SUBPLOT_RIGHT, SUBPLOT_TOP];
