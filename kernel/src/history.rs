//! The cells this kernel ran, for history_request (tail, range and search),
//! with IPython's meaning of each. Kept in memory: one kernel process is one
//! history session.

use jupyter_protocol::HistoryEntry;

use crate::wire::HISTORY_UNLIMITED;

/// The session number this kernel reports; a client passes it back in range requests.
pub const SESSION_NUMBER: usize = 1;

#[derive(Debug, Clone)]
struct Cell {
    line: usize,
    input: String,
    /// The text/plain of the cell's result, or "" when it had none.
    output: String,
}

#[derive(Debug, Default)]
pub struct History {
    cells: Vec<Cell>,
}

impl History {
    pub fn record(&mut self, line: usize, input: &str, output: Option<&str>) {
        self.cells.push(Cell {
            line,
            input: input.to_string(),
            output: output.unwrap_or_default().to_string(),
        });
    }

    /// The last `n` cells (all of them for a negative or oversized `n`).
    pub fn tail(&self, n: i32, output: bool) -> Vec<HistoryEntry> {
        let keep = usize::try_from(n).unwrap_or(usize::MAX);
        let skip = self.cells.len().saturating_sub(keep);
        self.entries(self.cells.iter().skip(skip), output)
    }

    /// Cells with `start <= line < stop` of `session` (IPython: 0 or a negative
    /// number is relative to the current session; the current one is 1).
    pub fn range(
        &self,
        session: Option<i32>,
        start: i32,
        stop: i32,
        output: bool,
    ) -> Vec<HistoryEntry> {
        let wanted = match session {
            None | Some(0) => SESSION_NUMBER as i64,
            Some(s) if s < 0 => SESSION_NUMBER as i64 + i64::from(s),
            Some(s) => i64::from(s),
        };
        if wanted != SESSION_NUMBER as i64 {
            return Vec::new();
        }
        let start = i64::from(start);
        let stop = if stop == HISTORY_UNLIMITED || stop <= 0 {
            i64::MAX
        } else {
            i64::from(stop)
        };
        let cells = self.cells.iter().filter(|c| {
            let line = c.line as i64;
            line >= start && line < stop
        });
        self.entries(cells, output)
    }

    /// Cells whose input matches the glob `pattern` (`*`, `?`), oldest first.
    /// `unique` keeps only the latest of equal inputs; `n` keeps the last n.
    pub fn search(&self, pattern: &str, unique: bool, n: i32, output: bool) -> Vec<HistoryEntry> {
        let pattern: Vec<char> = pattern.chars().collect();
        let mut matches: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| glob_matches(&pattern, &c.input.chars().collect::<Vec<_>>()))
            .collect();
        if unique {
            let mut seen = std::collections::HashSet::new();
            // Walk newest first so the latest of each input survives.
            matches = matches
                .into_iter()
                .rev()
                .filter(|c| seen.insert(c.input.as_str()))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
        }
        if n > 0 && n != HISTORY_UNLIMITED {
            let skip = matches.len().saturating_sub(n as usize);
            matches.drain(..skip);
        }
        self.entries(matches.into_iter(), output)
    }

    fn entries<'a>(
        &self,
        cells: impl Iterator<Item = &'a Cell>,
        output: bool,
    ) -> Vec<HistoryEntry> {
        cells
            .map(|c| {
                if output {
                    HistoryEntry::InputOutput(
                        SESSION_NUMBER,
                        c.line,
                        (c.input.clone(), c.output.clone()),
                    )
                } else {
                    HistoryEntry::Input(SESSION_NUMBER, c.line, c.input.clone())
                }
            })
            .collect()
    }
}

/// Glob matching as IPython's history search does it: `*` any run, `?` one character.
fn glob_matches(pattern: &[char], text: &[char]) -> bool {
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(entries: &[HistoryEntry]) -> Vec<(usize, String)> {
        entries
            .iter()
            .map(|e| match e {
                HistoryEntry::Input(_, line, input) => (*line, input.clone()),
                HistoryEntry::InputOutput(_, line, (input, _)) => (*line, input.clone()),
            })
            .collect()
    }

    fn sample() -> History {
        let mut h = History::default();
        h.record(1, "x = 1", None);
        h.record(2, "x + 1", Some("2"));
        h.record(3, "print(x)", None);
        h.record(4, "x + 1", Some("2"));
        h
    }

    #[test]
    fn glob() {
        let m = |p: &str, t: &str| {
            glob_matches(
                &p.chars().collect::<Vec<_>>(),
                &t.chars().collect::<Vec<_>>(),
            )
        };
        assert!(m("*", ""));
        assert!(m("x*", "x + 1"));
        assert!(m("*+*", "x + 1"));
        assert!(m("?rint(x)", "print(x)"));
        assert!(!m("x", "x + 1"));
        assert!(!m("y*", "x + 1"));
        assert!(m("a*b*c", "a123b456c"));
        assert!(!m("a*b*c", "a123b456"));
    }

    #[test]
    fn tail_range_search() {
        let h = sample();
        assert_eq!(
            inputs(&h.tail(2, false)),
            vec![(3, "print(x)".into()), (4, "x + 1".into())]
        );
        assert_eq!(h.tail(10, false).len(), 4);
        assert_eq!(
            inputs(&h.range(Some(1), 2, 3, false)),
            vec![(2, "x + 1".into())]
        );
        assert_eq!(h.range(Some(0), 0, HISTORY_UNLIMITED, false).len(), 4);
        assert!(h.range(Some(2), 0, 10, false).is_empty());
        assert_eq!(h.search("x*", false, HISTORY_UNLIMITED, false).len(), 3);
        assert_eq!(
            inputs(&h.search("x*", true, HISTORY_UNLIMITED, false)),
            vec![(1, "x = 1".into()), (4, "x + 1".into())]
        );
        assert_eq!(
            inputs(&h.search("x*", false, 1, false)),
            vec![(4, "x + 1".into())]
        );
    }

    #[test]
    fn output_pairs_carry_the_result_text() {
        let h = sample();
        match &h.tail(1, true)[0] {
            HistoryEntry::InputOutput(session, line, (input, output)) => {
                assert_eq!(
                    (*session, *line, input.as_str(), output.as_str()),
                    (1, 4, "x + 1", "2")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
