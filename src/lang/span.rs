//! Byte spans into the source text, and the caret rendering that every error uses.

/// A half-open byte range `start..end` into the source of one `Session::eval` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Shift by `offset` bytes: used when a piece of source (an f-string
    /// expression, a `%time` argument) is parsed on its own.
    pub fn shifted(self, offset: usize) -> Span {
        Span {
            start: self.start + offset,
            end: self.end + offset,
        }
    }
}

/// Where a span starts, as a 1-based line and column (in characters), with the
/// text of that line. Spans past the end of `source` are clamped, never panic.
pub fn locate(source: &str, span: Span) -> (usize, usize, &str) {
    let start = floor_char_boundary(source, span.start.min(source.len()));
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let line_no = source[..line_start].matches('\n').count() + 1;
    let col = source[line_start..start].chars().count() + 1;
    (line_no, col, &source[line_start..line_end])
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The source line of `span` with carets under it:
///
/// ```text
///   line 2
///     y = x + q
///             ^
/// ```
/// A span that runs over several lines is underlined to the end of its first line.
pub fn caret_lines(source: &str, span: Span) -> (usize, String, String) {
    let (line_no, col, line) = locate(source, span);
    let line_chars = line.chars().count();
    let start_col = col - 1;
    let span_chars = source
        .get(span.start.min(source.len())..span.end.min(source.len()))
        .map_or(1, |s| s.split('\n').next().unwrap_or("").chars().count());
    let width = span_chars
        .max(1)
        .min(line_chars.saturating_sub(start_col).max(1));
    let carets = format!("{}{}", " ".repeat(start_col), "^".repeat(width));
    (line_no, line.to_string(), carets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_second_line() {
        let src = "a = 1\nb = a + q\n";
        let (line, col, text) = locate(src, Span::new(14, 15));
        assert_eq!((line, col, text), (2, 9, "b = a + q"));
    }

    #[test]
    fn carets_clamp_past_end() {
        let (line, text, carets) = caret_lines("x +", Span::new(3, 10));
        assert_eq!((line, text.as_str(), carets.as_str()), (1, "x +", "   ^"));
    }
}
