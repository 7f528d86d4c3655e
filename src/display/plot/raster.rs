//! Figures as PNG: the SVG this module writes, rasterised by resvg at the figure's dpi with
//! the shipped DejaVu Sans as the only font.

use std::sync::Arc;

use super::{font, svg, Figure};

fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    thread_local! {
        static DB: Arc<resvg::usvg::fontdb::Database> = {
            let mut db = resvg::usvg::fontdb::Database::new();
            db.load_font_data(font::DEJAVU_SANS.to_vec());
            db.set_sans_serif_family(font::FAMILY);
            Arc::new(db)
        };
    }
    DB.with(Arc::clone)
}

/// The PNG bytes of `fig` at `dpi` (matplotlib's savefig default is the figure's dpi), cut to
/// its content with `tight`.
pub fn png(fig: &Figure, dpi: f64, tight: Option<f64>) -> Result<Vec<u8>, String> {
    let opts = svg::Options {
        pixel_rects: true,
        tight,
    };
    let doc = svg::render(fig, opts);
    let [x0, y0, x1, y1] = svg::page(fig, opts);
    let opt = resvg::usvg::Options {
        font_family: font::FAMILY.to_string(),
        fontdb: fonts(),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(&doc, &opt).map_err(|e| e.to_string())?;
    let (w, h) = (
        ((x1 - x0) / 72.0 * dpi).round().max(1.0),
        ((y1 - y0) / 72.0 * dpi).round().max(1.0),
    );
    if w * h > 1.0e8 {
        return Err(format!(
            "Image size of {w}x{h} pixels is too large. It must be less than 2^16 in each direction."
        ));
    }
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w as u32, h as u32)
        .ok_or_else(|| format!("cannot make a {w}x{h} image"))?;
    // The tree's size is in CSS pixels (96 per inch); the picture has `dpi` per inch.
    let scale = (w / f64::from(tree.size().width())) as f32;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}
