//! Contouring on a quadrilateral grid, as plain numbers: the lines of one level by marching
//! squares (`lines`), the region between two levels as polygons (`band`), and the point
//! tests the terminal's drawing of filled areas needs (`inside`).
//!
//! The lines follow contourpy's `mpl2014` conventions, which matplotlib 3.10 uses: a corner
//! is above a level when its value is strictly greater; a crossing lies on the grid edge by
//! linear interpolation; a quad with two opposite corners above (a saddle) is decided by the
//! mean of its four corners; each line runs with the values above it on its left (in index
//! space), open lines from the grid's boundary, closed ones back to their first point.

/// Values `z` (row-major, `ny` rows of `nx`) at points (`x`, `y`) of the same shape.
pub struct Grid<'a> {
    pub x: &'a [f64],
    pub y: &'a [f64],
    pub z: &'a [f64],
    pub nx: usize,
    pub ny: usize,
}

/// A grid edge: from corner (i, j) along x (`along_x`) or along y, one step.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Edge {
    i: usize,
    j: usize,
    along_x: bool,
}

impl<'a> Grid<'a> {
    fn at(&self, i: usize, j: usize) -> usize {
        j * self.nx + i
    }

    fn quad_ok(&self, i: usize, j: usize) -> bool {
        [(i, j), (i + 1, j), (i, j + 1), (i + 1, j + 1)]
            .iter()
            .all(|&(a, b)| self.z[self.at(a, b)].is_finite())
    }

    fn ends(&self, e: Edge) -> (usize, usize) {
        let a = self.at(e.i, e.j);
        let b = if e.along_x {
            self.at(e.i + 1, e.j)
        } else {
            self.at(e.i, e.j + 1)
        };
        (a, b)
    }

    /// Where `level` crosses edge `e`, interpolated as contourpy does.
    fn crossing(&self, e: Edge, level: f64) -> [f64; 2] {
        let (a, b) = self.ends(e);
        let frac = (self.z[b] - level) / (self.z[b] - self.z[a]);
        [
            self.x[a] * frac + self.x[b] * (1.0 - frac),
            self.y[a] * frac + self.y[b] * (1.0 - frac),
        ]
    }

    /// Quad (i, j)'s edges counter-clockwise in index space from its first corner, each with
    /// the corner it starts from.
    fn quad_edges(i: usize, j: usize) -> [(Edge, (usize, usize)); 4] {
        [
            (
                Edge {
                    i,
                    j,
                    along_x: true,
                },
                (i, j),
            ),
            (
                Edge {
                    i: i + 1,
                    j,
                    along_x: false,
                },
                (i + 1, j),
            ),
            (
                Edge {
                    i,
                    j: j + 1,
                    along_x: true,
                },
                (i + 1, j + 1),
            ),
            (
                Edge {
                    i,
                    j,
                    along_x: false,
                },
                (i, j + 1),
            ),
        ]
    }

    /// The segments of `level` in quad (i, j), each from the edge it enters to the edge it
    /// leaves, the values above it on its left.
    fn quad_segments(&self, i: usize, j: usize, level: f64) -> Vec<(Edge, Edge)> {
        let edges = Self::quad_edges(i, j);
        let above: Vec<bool> = edges
            .iter()
            .map(|(_, (a, b))| self.z[self.at(*a, *b)] > level)
            .collect();
        // Counter-clockwise, an edge going from above to below is where a line enters.
        let enters: Vec<usize> = (0..4)
            .filter(|&k| above[k] && !above[(k + 1) % 4])
            .collect();
        let leaves = |k: usize| !above[k] && above[(k + 1) % 4];
        match enters.as_slice() {
            [k] => {
                let out = (1..4).map(|d| (k + d) % 4).find(|&m| leaves(m));
                out.map(|m| vec![(edges[*k].0, edges[m].0)])
                    .unwrap_or_default()
            }
            [k1, k2] => {
                let mean = edges
                    .iter()
                    .map(|(_, (a, b))| self.z[self.at(*a, *b)])
                    .sum::<f64>()
                    / 4.0;
                // Middle above: the above corners join, each entry leaves by the next edge.
                let step = if mean > level { 1 } else { 3 };
                vec![
                    (edges[*k1].0, edges[(k1 + step) % 4].0),
                    (edges[*k2].0, edges[(k2 + step) % 4].0),
                ]
            }
            _ => Vec::new(),
        }
    }
}

/// The lines of `level`: open ones first walked from the boundary, then closed ones, each a
/// list of points (a closed line repeats its first point at its end, as contourpy's do).
pub fn lines(g: &Grid, level: f64) -> Vec<Vec<[f64; 2]>> {
    if g.nx < 2 || g.ny < 2 || g.x.len() < g.nx * g.ny || g.z.len() < g.nx * g.ny {
        return Vec::new();
    }
    // Each edge is entered by at most one segment (its neighbour sees it reversed).
    let mut next = std::collections::HashMap::new();
    let mut order = Vec::new();
    let mut ended = std::collections::HashSet::new();
    for j in 0..g.ny - 1 {
        for i in 0..g.nx - 1 {
            if !g.quad_ok(i, j) {
                continue;
            }
            for (from, to) in g.quad_segments(i, j, level) {
                next.insert(from, to);
                ended.insert(to);
                order.push(from);
            }
        }
    }
    let mut out = Vec::new();
    let walk = |start: Edge, next: &mut std::collections::HashMap<Edge, Edge>| {
        let mut pts = vec![g.crossing(start, level)];
        let mut at = start;
        while let Some(to) = next.remove(&at) {
            pts.push(g.crossing(to, level));
            at = to;
            if at == start {
                break;
            }
        }
        pts
    };
    // Open lines start where no segment ends: on the boundary or beside a missing value.
    for &start in order.iter().filter(|e| !ended.contains(e)) {
        if next.contains_key(&start) {
            out.push(walk(start, &mut next));
        }
    }
    // A closed line's first quad in scan order is its lowest row's leftmost, so its segment
    // there crosses the quad's top and right edges: contourpy starts on the right one.
    for &first in &order {
        if let Some(&to) = next.get(&first) {
            let start = if first.along_x { to } else { first };
            out.push(walk(start, &mut next));
        }
    }
    out
}

/// A vertex of a band's boundary, named exactly so that neighbouring quads agree on it: a
/// grid corner, or where an edge crosses the band's lower (`upper` false) or upper level.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Vertex {
    Corner(usize, usize),
    Cross(Edge, bool),
}

impl<'a> Grid<'a> {
    /// A vertex in index space (corner (i, j) at (i, j)) and in data space.
    fn place(&self, v: Vertex, lo: f64, hi: f64) -> ([f64; 2], [f64; 2]) {
        match v {
            Vertex::Corner(i, j) => {
                let k = self.at(i, j);
                ([i as f64, j as f64], [self.x[k], self.y[k]])
            }
            Vertex::Cross(e, upper) => {
                let level = if upper { hi } else { lo };
                let (a, b) = self.ends(e);
                let t = (level - self.z[a]) / (self.z[b] - self.z[a]);
                let index = if e.along_x {
                    [e.i as f64 + t, e.j as f64]
                } else {
                    [e.i as f64, e.j as f64 + t]
                };
                (index, self.crossing(e, level))
            }
        }
    }

    /// The boundary of lo <= z <= hi inside quad (i, j), counter-clockwise in index space.
    fn band_in_quad(&self, i: usize, j: usize, lo: f64, hi: f64) -> Vec<Vertex> {
        let inside = |z: f64| lo <= z && z <= hi;
        let mut out = Vec::new();
        for (e, (ci, cj)) in Self::quad_edges(i, j) {
            let (a, b) = self.ends(e);
            // Walking counter-clockwise, the bottom and right edges run from their first
            // corner, the top and left ones toward it.
            let forward = (ci, cj) == (e.i, e.j);
            let (from, to) = if forward { (a, b) } else { (b, a) };
            let (zf, zt) = (self.z[from], self.z[to]);
            if inside(zf) {
                out.push(Vertex::Corner(ci, cj));
            }
            let mut cuts: Vec<(f64, bool)> = [(lo, false), (hi, true)]
                .into_iter()
                .filter(|(level, upper)| {
                    let side = |z: f64| if *upper { z <= *level } else { z >= *level };
                    side(zf) != side(zt)
                })
                .map(|(level, upper)| ((level - zf) / (zt - zf), upper))
                .collect();
            cuts.sort_by(|p, q| p.0.total_cmp(&q.0));
            out.extend(cuts.into_iter().map(|(_, upper)| Vertex::Cross(e, upper)));
        }
        out
    }
}

/// The region lo <= z <= hi as contourpy's `OuterCode` fill gives it: one entry per outer
/// boundary (counter-clockwise in index space, closed by repeating its first point) followed
/// by the holes inside it (clockwise, closed), each ring starting at its lowest point.
pub fn band(g: &Grid, lo: f64, hi: f64) -> Vec<Vec<[f64; 2]>> {
    use std::collections::HashMap;
    if g.nx < 2 || g.ny < 2 || g.x.len() < g.nx * g.ny || g.z.len() < g.nx * g.ny {
        return Vec::new();
    }
    // Every quad's piece, its edges inside the region cancelling their neighbours'.
    let mut edges: HashMap<(Vertex, Vertex), usize> = HashMap::new();
    let mut order = Vec::new();
    for j in 0..g.ny - 1 {
        for i in 0..g.nx - 1 {
            if !g.quad_ok(i, j) {
                continue;
            }
            let ring = g.band_in_quad(i, j, lo, hi);
            if ring.len() < 3 {
                continue;
            }
            for k in 0..ring.len() {
                let (a, b) = (ring[k], ring[(k + 1) % ring.len()]);
                if a == b {
                    continue;
                }
                if let Some(n) = edges.get_mut(&(b, a)) {
                    *n -= 1;
                    if *n == 0 {
                        edges.remove(&(b, a));
                    }
                } else {
                    *edges.entry((a, b)).or_insert(0) += 1;
                    order.push((a, b));
                }
            }
        }
    }
    let mut next: HashMap<Vertex, Vec<Vertex>> = HashMap::new();
    for e in order.iter().filter(|e| edges.contains_key(e)) {
        next.entry(e.0).or_default().push(e.1);
    }
    // Chain the boundary into rings.
    let mut rings: Vec<Vec<Vertex>> = Vec::new();
    for &(start, _) in &order {
        while next.get(&start).is_some_and(|v| !v.is_empty()) {
            let mut ring = vec![start];
            let mut at = start;
            while let Some(to) = next
                .get_mut(&at)
                .and_then(|v| (!v.is_empty()).then(|| v.remove(0)))
            {
                if to == start {
                    break;
                }
                ring.push(to);
                at = to;
            }
            rings.push(ring);
        }
    }
    // In index space: orientation, the lowest point, containment.
    let placed: Vec<Vec<([f64; 2], [f64; 2])>> = rings
        .iter()
        .map(|r| r.iter().map(|v| g.place(*v, lo, hi)).collect())
        .collect();
    let area = |r: &[([f64; 2], [f64; 2])]| {
        (0..r.len())
            .map(|k| {
                let (a, b) = (r[k].0, r[(k + 1) % r.len()].0);
                a[0] * b[1] - b[0] * a[1]
            })
            .sum::<f64>()
    };
    let lowest = |r: &[([f64; 2], [f64; 2])]| {
        (0..r.len())
            .min_by(|&p, &q| {
                let (a, b) = (r[p].0, r[q].0);
                a[1].total_cmp(&b[1]).then(a[0].total_cmp(&b[0]))
            })
            .unwrap_or(0)
    };
    let starting_low = |r: &[([f64; 2], [f64; 2])]| {
        let k = lowest(r);
        let mut out: Vec<([f64; 2], [f64; 2])> = r[k..].iter().chain(&r[..k]).copied().collect();
        out.extend(out.first().copied());
        out
    };
    let (mut outers, mut holes) = (Vec::new(), Vec::new());
    for r in placed.iter().filter(|r| r.len() >= 3) {
        if area(r) > 0.0 {
            outers.push(starting_low(r));
        } else {
            holes.push(starting_low(r));
        }
    }
    let key = |r: &Vec<([f64; 2], [f64; 2])>| r.first().map_or([0.0, 0.0], |p| p.0);
    outers.sort_by(|a, b| {
        let (p, q) = (key(a), key(b));
        p[1].total_cmp(&q[1]).then(p[0].total_cmp(&q[0]))
    });
    holes.sort_by(|a, b| {
        let (p, q) = (key(a), key(b));
        p[1].total_cmp(&q[1]).then(p[0].total_cmp(&q[0]))
    });
    let index_ring = |r: &[([f64; 2], [f64; 2])]| r.iter().map(|p| p.0).collect::<Vec<_>>();
    let mut out: Vec<Vec<[f64; 2]>> = outers
        .iter()
        .map(|r| r.iter().map(|p| p.1).collect())
        .collect();
    for h in &holes {
        // A hole belongs to the outer boundary around a point just inside it.
        let probe = {
            let (a, b) = (h[0].0, h[1].0);
            [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0]
        };
        let owner = outers
            .iter()
            .position(|o| inside(&index_ring(o), probe[0], probe[1]));
        match owner {
            Some(k) => out[k].extend(h.iter().map(|p| p.1)),
            None => out.push(h.iter().map(|p| p.1).collect()),
        }
    }
    out
}

/// Whether (px, py) lies inside the polygon (even-odd rule).
pub fn inside(poly: &[[f64; 2]], px: f64, py: f64) -> bool {
    let mut yes = false;
    for (k, a) in poly.iter().enumerate() {
        let b = poly[(k + 1) % poly.len()];
        if (a[1] > py) != (b[1] > py) && px < a[0] + (py - a[1]) / (b[1] - a[1]) * (b[0] - a[0]) {
            yes = !yes;
        }
    }
    yes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(nx: usize, ny: usize, f: impl Fn(f64, f64) -> f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new());
        for j in 0..ny {
            for i in 0..nx {
                x.push(i as f64);
                y.push(j as f64);
                z.push(f(i as f64, j as f64));
            }
        }
        (x, y, z)
    }

    #[test]
    fn a_bump_gives_one_closed_line_counter_clockwise() {
        let (x, y, z) = grid(3, 3, |i, j| if (i, j) == (1.0, 1.0) { 1.0 } else { 0.0 });
        let g = Grid {
            x: &x,
            y: &y,
            z: &z,
            nx: 3,
            ny: 3,
        };
        let ls = lines(&g, 0.5);
        assert_eq!(ls.len(), 1);
        let l = &ls[0];
        assert_eq!(l.first(), l.last());
        assert_eq!(l.len(), 5);
        // It starts on its first quad's right edge, as contourpy's closed lines do.
        assert_eq!(l[0], [1.0, 0.5]);
        // Values above (the centre) on the left: counter-clockwise, positive area.
        let area: f64 = l
            .windows(2)
            .map(|w| w[0][0] * w[1][1] - w[1][0] * w[0][1])
            .sum();
        assert!(area > 0.0, "{l:?}");
        for p in l {
            assert!(
                ((p[0] - 1.0).abs() - 0.5).abs() < 1e-12
                    || ((p[1] - 1.0).abs() - 0.5).abs() < 1e-12
            );
        }
    }

    #[test]
    fn a_ramp_gives_one_open_line_at_the_interpolated_place() {
        let (x, y, z) = grid(4, 3, |i, _| i);
        let g = Grid {
            x: &x,
            y: &y,
            z: &z,
            nx: 4,
            ny: 3,
        };
        assert_eq!(
            lines(&g, 1.25),
            vec![vec![[1.25, 2.0], [1.25, 1.0], [1.25, 0.0]]]
        );
        assert!(lines(&g, 5.0).is_empty());
    }

    #[test]
    fn a_band_covers_the_quads_between_its_levels() {
        let (x, y, z) = grid(3, 2, |i, _| i);
        let g = Grid {
            x: &x,
            y: &y,
            z: &z,
            nx: 3,
            ny: 2,
        };
        let polys = band(&g, 0.5, 1.5);
        let area: f64 = polys
            .iter()
            .map(|p| {
                (0..p.len())
                    .map(|k| {
                        let (a, b) = (p[k], p[(k + 1) % p.len()]);
                        a[0] * b[1] - b[0] * a[1]
                    })
                    .sum::<f64>()
                    / 2.0
            })
            .sum();
        assert!((area - 1.0).abs() < 1e-12, "{polys:?}");
        assert!(inside(&polys[0], 0.75, 0.5));
        assert!(!inside(&polys[0], 0.25, 0.5));
    }

    #[test]
    fn missing_values_leave_their_quads_out() {
        let (x, y, mut z) = grid(3, 2, |i, _| i);
        z[0] = f64::NAN;
        let g = Grid {
            x: &x,
            y: &y,
            z: &z,
            nx: 3,
            ny: 2,
        };
        assert_eq!(lines(&g, 0.5), Vec::<Vec<[f64; 2]>>::new());
        assert_eq!(lines(&g, 1.5).len(), 1);
        assert_eq!(band(&g, -1.0, 3.0).len(), 1);
    }
}
