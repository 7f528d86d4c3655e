//! HTML for Jupyter (inline styles only, no scripts) and boxed text tables.

use super::arrayprint::{
    element_formatter, shape_tuple, shown_indices, strides, ArrayView, EDGE_ITEMS, THRESHOLD,
};

/// Escape text for HTML element content and attribute values.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

// Greys with transparency and muted text by opacity, not fixed colours, so
// the output reads on JupyterLab's light and dark themes alike.
const CELL: &str = "padding:1px 6px;text-align:right;border:1px solid rgba(128,128,128,0.35)";
const ELLIPSIS_CELL: &str =
    "padding:1px 6px;text-align:center;border:1px solid rgba(128,128,128,0.35);opacity:0.6";
const TABLE: &str = "border-collapse:collapse;font-family:monospace;font-size:12px";
const MUTED: &str = "opacity:0.75";

/// The device badge: green for GPUs, slate for the CPU.
fn device_badge(device: &str, on_gpu: bool) -> String {
    let background = if on_gpu { "#2e7d32" } else { "#546e7a" };
    format!(
        "<span style=\"background:{background};color:#fff;border-radius:3px;padding:1px 6px;font-weight:bold\">{}</span>",
        html_escape(device)
    )
}

/// Positions along one axis: `Some(index)` or `None` for the elision mark.
fn axis_positions(len: usize, summarize: bool) -> Vec<Option<usize>> {
    let indices = shown_indices(len, summarize, EDGE_ITEMS);
    let mut positions = Vec::with_capacity(indices.len() + 1);
    for (n, &i) in indices.iter().enumerate() {
        if n > 0 && indices.get(n - 1).is_some_and(|&prev| i != prev + 1) {
            positions.push(None);
        }
        positions.push(Some(i));
    }
    positions
}

/// One 2-D (or 1-D as a single row) table of the elements at `base`.
fn matrix_table(
    a: &ArrayView,
    format: &dyn Fn(usize) -> String,
    base: usize,
    row_axis: Option<usize>,
    summarize: bool,
) -> String {
    let strides = strides(a.shape);
    let col_axis = a.shape.len() - 1;
    let cols = axis_positions(a.shape[col_axis], summarize);
    let rows = match row_axis {
        Some(axis) => axis_positions(a.shape[axis], summarize),
        None => vec![Some(0)],
    };
    let row_stride = row_axis.map_or(0, |axis| strides[axis]);
    let mut html = format!("<table style=\"{TABLE}\">");
    for row in &rows {
        html.push_str("<tr>");
        for col in &cols {
            match (row, col) {
                (Some(r), Some(c)) => {
                    let text = format(base + r * row_stride + c * strides[col_axis]);
                    html.push_str(&format!(
                        "<td style=\"{CELL}\">{}</td>",
                        html_escape(text.trim())
                    ));
                }
                (None, Some(_)) => html.push_str(&format!("<td style=\"{ELLIPSIS_CELL}\">⋮</td>")),
                (Some(_), None) => html.push_str(&format!("<td style=\"{ELLIPSIS_CELL}\">…</td>")),
                (None, None) => html.push_str(&format!("<td style=\"{ELLIPSIS_CELL}\">⋱</td>")),
            }
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

/// Every index tuple of the leading (all but the last two) axes, with `None`
/// where a run of slices is elided.
fn leading_slices(shape: &[usize], summarize: bool) -> Vec<Option<Vec<usize>>> {
    let mut slices: Vec<Option<Vec<usize>>> = vec![Some(Vec::new())];
    for &len in shape {
        let positions = axis_positions(len, summarize);
        let mut next = Vec::new();
        for prefix in &slices {
            match prefix {
                None => next.push(None),
                Some(prefix) => {
                    for position in &positions {
                        match position {
                            Some(i) => {
                                let mut index = prefix.clone();
                                index.push(*i);
                                next.push(Some(index));
                            }
                            None => next.push(None),
                        }
                    }
                }
            }
        }
        // collapse neighbouring elisions into one mark
        next.dedup_by(|a, b| a.is_none() && b.is_none());
        slices = next;
    }
    slices
}

/// A compact, self-contained HTML view of an array for Jupyter: a header with
/// a device badge, the shape and dtype, then the values as a table, elided
/// like the text form (edge items and `…` beyond 1000 elements). Arrays of 3
/// or more dimensions show one table per 2-D slice, captioned with its index.
pub fn array_html(a: &ArrayView, dtype_name: &str, device: &str) -> String {
    let details = format!("shape {} · {}", shape_tuple(a.shape), dtype_name);
    array_html_with(a, Some((device, !device.starts_with("cpu"))), &details)
}

/// How a framework names what the HTML header shows: the device badge's
/// text (None: no badge, as numpy arrays have no device), whether that
/// device is a GPU (the badge's colour), the type and the dtype's spelling.
pub struct ArrayCaption<'a> {
    pub kind: &'a str,
    pub device: Option<&'a str>,
    pub on_gpu: bool,
    pub dtype: &'a str,
}

/// The table of `a` under a header in its framework's words, e.g.
/// `device='cuda:0'  tensor · shape (2, 3) · torch.float32` for PyTorch.
pub fn array_html_captioned(a: &ArrayView, caption: &ArrayCaption) -> String {
    let details = format!(
        "{} · shape {} · {}",
        caption.kind,
        shape_tuple(a.shape),
        caption.dtype
    );
    array_html_with(a, caption.device.map(|d| (d, caption.on_gpu)), &details)
}

fn array_html_with(a: &ArrayView, badge: Option<(&str, bool)>, details: &str) -> String {
    let badge = badge.map_or(String::new(), |(text, on_gpu)| {
        format!("{} ", device_badge(text, on_gpu))
    });
    let header = format!(
        "<div style=\"margin-bottom:4px\">{badge}<span style=\"{MUTED}\">{}</span></div>",
        html_escape(details)
    );
    let mut html = format!("<div style=\"font-family:monospace;font-size:12px\">{header}");
    if !a.is_consistent() {
        html.push_str(&html_escape(&a.inconsistency_note()));
    } else if a.size() == 0 {
        html.push_str(&format!("<span style=\"{MUTED}\">(empty)</span>"));
    } else {
        let format = element_formatter(a);
        let summarize = a.size() > THRESHOLD;
        match a.shape.len() {
            0 => html.push_str(&format!(
                "<table style=\"{TABLE}\"><tr><td style=\"{CELL}\">{}</td></tr></table>",
                html_escape(format(0).trim())
            )),
            1 => html.push_str(&matrix_table(a, &format, 0, None, summarize)),
            2 => html.push_str(&matrix_table(a, &format, 0, Some(0), summarize)),
            ndim => {
                let strides = strides(a.shape);
                let leading = &a.shape[..ndim - 2];
                for slice in leading_slices(leading, summarize) {
                    match slice {
                        None => {
                            html.push_str(&format!("<div style=\"{MUTED};margin:2px 0\">⋮</div>"))
                        }
                        Some(index) => {
                            let base: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
                            let parts: Vec<String> = index.iter().map(usize::to_string).collect();
                            html.push_str(&format!(
                                "<div style=\"{MUTED};margin:4px 0 2px\">[{}, :, :]</div>",
                                parts.join(", ")
                            ));
                            html.push_str(&matrix_table(
                                a,
                                &format,
                                base,
                                Some(ndim - 2),
                                summarize,
                            ));
                        }
                    }
                }
            }
        }
    }
    html.push_str("</div>");
    html
}

/// A plain HTML table with a header row; every cell is escaped. Columns whose
/// cells are all numbers (memory sizes, counts) are aligned right, so their
/// digits line up.
pub fn table_html(headers: &[&str], rows: &[Vec<String>]) -> String {
    let align = |column: usize| {
        let numeric = !rows.is_empty()
            && rows.iter().all(|row| {
                row.get(column)
                    .and_then(|cell| cell.chars().next())
                    .is_some_and(|c| c.is_ascii_digit())
            });
        if numeric {
            "right"
        } else {
            "left"
        }
    };
    let mut html = format!("<table style=\"{TABLE}\"><tr>");
    for (column, header) in headers.iter().enumerate() {
        html.push_str(&format!(
            "<th style=\"padding:2px 8px;text-align:{};border-bottom:2px solid rgba(128,128,128,0.8)\">{}</th>",
            align(column),
            html_escape(header)
        ));
    }
    html.push_str("</tr>");
    for row in rows {
        html.push_str("<tr>");
        for (column, cell) in row.iter().enumerate() {
            html.push_str(&format!(
                "<td style=\"padding:2px 8px;text-align:{};border-bottom:1px solid rgba(128,128,128,0.35)\">{}</td>",
                align(column),
                html_escape(cell)
            ));
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

/// A boxed text table in the style of nvidia-smi:
///
/// ```text
/// +--------+---------+
/// | device | backend |
/// +--------+---------+
/// | cpu(0) | host    |
/// +--------+---------+
/// ```
pub fn table_text(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = rows
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(headers.len()))
        .max()
        .unwrap_or(0);
    let cell = |row: &[String], i: usize| row.get(i).map_or("", String::as_str).to_string();
    let header_row: Vec<String> = headers.iter().map(|h| (*h).to_string()).collect();
    let mut widths = vec![0usize; columns];
    for row in std::iter::once(&header_row).chain(rows) {
        for (i, width) in widths.iter_mut().enumerate() {
            *width = (*width).max(cell(row, i).chars().count());
        }
    }
    let border: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+";
    let line = |row: &[String]| {
        let cells: String = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let text = cell(row, i);
                let pad = w - text.chars().count();
                format!("| {text}{} ", " ".repeat(pad))
            })
            .collect();
        format!("{cells}|")
    };
    let mut out = vec![border.clone(), line(&header_row), border.clone()];
    out.extend(rows.iter().map(|row| line(row)));
    if !rows.is_empty() {
        out.push(border);
    }
    out.join("\n")
}

/// A progress bar for notebooks, drawn as tqdm.notebook draws one: the
/// description, a bar filled to `done / total`, and the count.
pub fn progress_html(desc: &str, done: usize, total: usize) -> String {
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    let label = if desc.is_empty() {
        String::new()
    } else {
        format!("<span>{}</span> ", html_escape(desc))
    };
    format!(
        "<div class=\"devarray-progress\" style=\"display:flex;align-items:center;gap:0.5em;font-family:var(--jp-code-font-family,monospace)\">\
         {label}<progress value=\"{done}\" max=\"{total}\" style=\"width:20em\"></progress> \
         <span>{percent}% {done}/{total}</span></div>"
    )
}

#[cfg(test)]
mod tests {
    use super::super::arrayprint::HostValues;
    use super::*;

    fn view<'a>(values: &'a [f32], shape: &'a [usize]) -> ArrayView<'a> {
        ArrayView {
            values: HostValues::F32(values),
            shape,
        }
    }

    #[test]
    fn small_matrix_with_gpu_badge() {
        let html = array_html(&view(&[1.0, 2.0, 3.0, 4.5], &[2, 2]), "float32", "gpu(0)");
        assert!(html.starts_with("<div style=\"font-family:monospace;font-size:12px\"><div style=\"margin-bottom:4px\"><span style=\"background:#2e7d32;"));
        assert!(html
            .contains(">gpu(0)</span> <span style=\"opacity:0.75\">shape (2, 2) · float32</span>"));
        assert_eq!(html.matches("<tr>").count(), 2);
        assert!(html.contains(&format!("<td style=\"{CELL}\">4.5</td>")));
        assert!(html.contains(&format!("<td style=\"{CELL}\">1.</td>")));
        assert!(!html.contains("<script"));
    }

    #[test]
    fn cpu_badge_differs_from_gpu() {
        let html = array_html(&view(&[1.0], &[1]), "float32", "cpu(0)");
        assert!(html.contains("background:#546e7a"));
    }

    #[test]
    fn large_matrix_is_elided_like_text() {
        let values: Vec<f32> = (0..10_000).map(|i| i as f32).collect();
        let html = array_html(&view(&values, &[100, 100]), "float32", "cpu(0)");
        // 3 + 1 + 3 rows, each 3 + 1 + 3 cells
        assert_eq!(html.matches("<tr>").count(), 7);
        assert_eq!(html.matches("<td").count(), 49);
        assert_eq!(html.matches(">…</td>").count(), 6);
        assert_eq!(html.matches(">⋮</td>").count(), 6);
        assert_eq!(html.matches(">⋱</td>").count(), 1);
        assert!(html.contains(">9.999e+03</td>"));
    }

    #[test]
    fn three_dimensional_arrays_list_their_slices() {
        let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let html = array_html(&view(&values, &[2, 3, 4]), "float32", "cpu(0)");
        assert!(html.contains(">[0, :, :]</div>"));
        assert!(html.contains(">[1, :, :]</div>"));
        assert_eq!(html.matches("<table").count(), 2);
        assert!(html.contains(">23.</td>"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(html_escape("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
        let html = array_html(&view(&[1.0], &[1]), "<b>", "gpu\"x");
        assert!(html.contains("&lt;b&gt;") && html.contains("gpu&quot;x"));
        assert_eq!(
            table_html(&["a<"], &[vec!["x&y".into()]]),
            format!("<table style=\"{TABLE}\"><tr><th style=\"padding:2px 8px;text-align:left;border-bottom:2px solid rgba(128,128,128,0.8)\">a&lt;</th></tr><tr><td style=\"padding:2px 8px;text-align:left;border-bottom:1px solid rgba(128,128,128,0.35)\">x&amp;y</td></tr></table>")
        );
    }

    #[test]
    fn empty_and_scalar_arrays() {
        let html = array_html(&view(&[], &[0, 3]), "float32", "cpu(0)");
        assert!(html.contains("shape (0, 3)") && html.contains("(empty)"));
        let html = array_html(&view(&[6.0], &[]), "float32", "cpu(0)");
        assert!(html.contains("shape ()") && html.contains(">6.</td>"));
    }

    #[test]
    fn numeric_columns_align_right() {
        let rows = vec![
            vec!["cpu(0)".to_string(), "12 B / 23.5 GiB".to_string()],
            vec!["gpu(0)".to_string(), "0 B / 4.0 GiB".to_string()],
        ];
        let html = table_html(&["device", "memory"], &rows);
        assert_eq!(html.matches("text-align:left").count(), 3, "{html}");
        assert_eq!(html.matches("text-align:right").count(), 3, "{html}");
        assert!(html.contains(
            "text-align:right;border-bottom:1px solid rgba(128,128,128,0.35)\">0 B / 4.0 GiB</td>"
        ));
    }

    #[test]
    fn muted_text_uses_opacity_so_dark_themes_read_it() {
        let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let html = array_html(&view(&values, &[2, 3, 4]), "float32", "gpu(1)");
        assert!(
            !html.contains("color:#5") && !html.contains("color:#8"),
            "{html}"
        );
        assert!(html.contains("<div style=\"opacity:0.75;margin:4px 0 2px\">[1, :, :]</div>"));
    }

    #[test]
    fn boxed_text_table() {
        let rows = vec![
            vec![
                "cpu(0)".to_string(),
                "host".to_string(),
                "12 KiB".to_string(),
            ],
            vec!["gpu(0)".to_string(), "simulated".to_string()],
        ];
        assert_eq!(
            table_text(&["device", "backend", "memory"], &rows),
            "+--------+-----------+--------+\n\
             | device | backend   | memory |\n\
             +--------+-----------+--------+\n\
             | cpu(0) | host      | 12 KiB |\n\
             | gpu(0) | simulated |        |\n\
             +--------+-----------+--------+"
        );
    }
}
