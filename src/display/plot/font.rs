//! The one font figures use, DejaVu Sans (matplotlib's default), shipped in the binary so
//! that nothing is looked up or downloaded at run time; and text widths for layout.

use skrifa::instance::{LocationRef, Size};
use skrifa::{FontRef, MetadataProvider};

/// DejaVu Sans, from Debian's fonts-dejavu-core (licence in assets/fonts).
pub static DEJAVU_SANS: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// The family name the SVG asks for; the PNG renderer has exactly this font loaded.
pub const FAMILY: &str = "DejaVu Sans";

/// Advance widths per 1pt of font size for the characters met so far, computed once.
fn advance(ch: char) -> f64 {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<char, f64>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    CACHE.with(|c| {
        if let Some(w) = c.borrow().get(&ch) {
            return *w;
        }
        let w = FontRef::new(DEJAVU_SANS)
            .ok()
            .and_then(|f| {
                let gid = f.charmap().map(ch)?;
                f.glyph_metrics(Size::new(1.0), LocationRef::default())
                    .advance_width(gid)
            })
            .map(f64::from)
            // A character the font lacks: about an average letter.
            .unwrap_or(0.6);
        c.borrow_mut().insert(ch, w);
        w
    })
}

/// The width in points of `text` set at `size` pt (no kerning, as matplotlib's Agg layout).
pub fn width(text: &str, size: f64) -> f64 {
    text.chars().map(advance).sum::<f64>() * size
}

/// DejaVu Sans's ascent and descent per 1pt of size (from its hhea table).
pub const ASCENT: f64 = 0.928;
pub const DESCENT: f64 = 0.236;

/// The height of a line of text at `size` pt.
pub fn height(size: f64) -> f64 {
    (ASCENT + DESCENT) * size
}

#[cfg(test)]
mod tests {
    #[test]
    fn widths_follow_the_font() {
        // DejaVu Sans's digits are 0.636 em wide.
        let w = super::width("10", 10.0);
        assert!((w - 12.72).abs() < 0.05, "{w}");
    }
}
