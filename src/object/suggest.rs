//! "Did you mean" of CPython 3.11 (`Python/suggestions.c`): the nearest name by a Levenshtein
//! distance where a case change costs 1 and any other edit 2, within a third of the characters
//! involved; the first of equally near names wins. Computed only when a traceback is printed.

const MAX_CANDIDATE_ITEMS: usize = 750;
const MAX_STRING_SIZE: usize = 40;
const MOVE_COST: usize = 2;
const CASE_COST: usize = 1;

fn substitution_cost(a: u8, b: u8) -> usize {
    if a & 31 != b & 31 {
        return MOVE_COST;
    }
    if a == b {
        return 0;
    }
    if a.eq_ignore_ascii_case(&b) {
        CASE_COST
    } else {
        MOVE_COST
    }
}

/// `levenshtein_distance`: over the UTF-8 bytes, as CPython's; past `max_cost` it answers
/// `max_cost + 1`.
fn distance(a: &[u8], b: &[u8], max_cost: usize) -> usize {
    let common_prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (mut a, mut b) = (&a[common_prefix..], &b[common_prefix..]);
    let common_suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    a = &a[..a.len() - common_suffix];
    b = &b[..b.len() - common_suffix];
    if a.is_empty() || b.is_empty() {
        return (a.len() + b.len()) * MOVE_COST;
    }
    if a.len() > MAX_STRING_SIZE || b.len() > MAX_STRING_SIZE {
        return max_cost + 1;
    }
    if b.len() < a.len() {
        std::mem::swap(&mut a, &mut b);
    }
    if (b.len() - a.len()) * MOVE_COST > max_cost {
        return max_cost + 1;
    }
    // One row of the matrix, updated in place.
    let mut row: Vec<usize> = (1..=a.len()).map(|i| i * MOVE_COST).collect();
    let mut result = 0;
    for (b_index, &code) in b.iter().enumerate() {
        let mut dist = b_index * MOVE_COST;
        result = dist;
        let mut minimum = usize::MAX;
        for (index, &ch) in a.iter().enumerate() {
            let substitute = dist + substitution_cost(code, ch);
            dist = row[index];
            let insert_delete = result.min(dist) + MOVE_COST;
            result = insert_delete.min(substitute);
            row[index] = result;
            minimum = minimum.min(result);
        }
        if minimum > max_cost {
            return max_cost + 1;
        }
    }
    result
}

/// `calculate_suggestions`: the candidate nearest to `name`, if one is near enough. Lists of
/// 750 names or more are not searched.
pub fn nearest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if candidates.len() >= MAX_CANDIDATE_ITEMS {
        return None;
    }
    let mut best: Option<(&str, usize)> = None;
    for &item in candidates {
        if item == name {
            continue;
        }
        let mut max_distance = (name.len() + item.len() + 3) * MOVE_COST / 6;
        if let Some((_, d)) = best {
            max_distance = max_distance.min(d.saturating_sub(1));
        }
        let d = distance(name.as_bytes(), item.as_bytes(), max_distance);
        if d > max_distance {
            continue;
        }
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((item, d));
        }
    }
    best.map(|(item, _)| item)
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn finds_what_cpython_finds() {
        assert_eq!(nearest("pritn", &["print", "len"]), Some("print"));
        assert_eq!(nearest("apend", &["append", "extend"]), Some("append"));
        assert_eq!(nearest("Print", &["print"]), Some("print"));
        assert_eq!(nearest("xyz", &["print", "len"]), None);
        assert_eq!(nearest("a", &["b"]), None);
    }

    #[test]
    fn long_and_many_names_do_not_explode() {
        let long = "x".repeat(10_000);
        assert_eq!(nearest(&long, &["y"]), None);
        let many: Vec<String> = (0..800).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(nearest("n1", &refs), None);
    }
}
