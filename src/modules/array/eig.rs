//! The eigenvalues and eigenvectors of a general real square matrix (`numpy.linalg.eig`,
//! `eigvals`), in double precision on the host: reduction to upper Hessenberg form by
//! elimination with pivoting, then the shifted double-step QR iteration (EISPACK's `hqr`, the
//! algorithm LAPACK's `dlahqr` refines), which leaves the eigenvalues in the order the Schur
//! form deflates them, as LAPACK's `dgeev` returns them. Each eigenvector is found by inverse
//! iteration and scaled to unit length; its sign is the iteration's, not necessarily LAPACK's.

// Matrix code reads clearest with index loops over rows and columns.
#![allow(clippy::needless_range_loop)]

/// An eigenvalue: its real and imaginary parts.
pub type Eigenvalue = (f64, f64);

/// The eigenvalues of the n x n row-major matrix `a`, or None when the iteration does not
/// converge (30 sweeps for one eigenvalue, as EISPACK allows).
pub fn eigenvalues(n: usize, a: &[f64]) -> Option<Vec<Eigenvalue>> {
    // 1-based, as the algorithm is written: h[i][j] for i, j in 1..=n.
    let mut h = vec![vec![0.0f64; n + 1]; n + 1];
    for i in 0..n {
        for j in 0..n {
            h[i + 1][j + 1] = a.get(i * n + j).copied().unwrap_or(0.0);
        }
    }
    to_hessenberg(&mut h, n);
    hqr(&mut h, n)
}

/// Gaussian elimination with pivoting to upper Hessenberg form (a similarity transform).
fn to_hessenberg(a: &mut [Vec<f64>], n: usize) {
    for m in 2..n {
        let mut x = 0.0f64;
        let mut i = m;
        for j in m..=n {
            if a[j][m - 1].abs() > x.abs() {
                x = a[j][m - 1];
                i = j;
            }
        }
        if i != m {
            for j in m - 1..=n {
                let t = a[i][j];
                a[i][j] = a[m][j];
                a[m][j] = t;
            }
            for row in a.iter_mut().skip(1).take(n) {
                row.swap(i, m);
            }
        }
        if x != 0.0 {
            for i in m + 1..=n {
                let mut y = a[i][m - 1];
                if y != 0.0 {
                    y /= x;
                    a[i][m - 1] = y;
                    for j in m..=n {
                        a[i][j] -= y * a[m][j];
                    }
                    for j in 1..=n {
                        a[j][m] += y * a[j][i];
                    }
                }
            }
        }
    }
    // The multipliers left below the subdiagonal are not part of the Hessenberg matrix.
    for i in 3..=n {
        for j in 1..i - 1 {
            a[i][j] = 0.0;
        }
    }
}

fn sign(a: f64, b: f64) -> f64 {
    if b >= 0.0 {
        a.abs()
    } else {
        -a.abs()
    }
}

/// The eigenvalues of the upper Hessenberg matrix `a` (destroyed).
fn hqr(a: &mut [Vec<f64>], n: usize) -> Option<Vec<Eigenvalue>> {
    let mut wr = vec![0.0; n + 1];
    let mut wi = vec![0.0; n + 1];
    let mut anorm = 0.0;
    for i in 1..=n {
        for j in (i.max(2) - 1)..=n {
            anorm += a[i][j].abs();
        }
    }
    let mut nn = n;
    let mut t = 0.0;
    while nn >= 1 {
        let mut its = 0;
        loop {
            let mut l = nn;
            while l >= 2 {
                let mut s = a[l - 1][l - 1].abs() + a[l][l].abs();
                if s == 0.0 {
                    s = anorm;
                }
                if a[l][l - 1].abs() + s == s {
                    a[l][l - 1] = 0.0;
                    break;
                }
                l -= 1;
            }
            let mut x = a[nn][nn];
            if l == nn {
                wr[nn] = x + t;
                wi[nn] = 0.0;
                nn -= 1;
                break;
            }
            let mut y = a[nn - 1][nn - 1];
            let mut w = a[nn][nn - 1] * a[nn - 1][nn];
            if l == nn - 1 {
                let p = 0.5 * (y - x);
                let q = p * p + w;
                let mut z = q.abs().sqrt();
                x += t;
                if q >= 0.0 {
                    z = p + sign(z, p);
                    wr[nn - 1] = x + z;
                    wr[nn] = x + z;
                    if z != 0.0 {
                        wr[nn] = x - w / z;
                    }
                    wi[nn - 1] = 0.0;
                    wi[nn] = 0.0;
                } else {
                    wr[nn - 1] = x + p;
                    wr[nn] = x + p;
                    wi[nn - 1] = z;
                    wi[nn] = -z;
                }
                nn = nn.saturating_sub(2);
                break;
            }
            if its == 30 {
                return None;
            }
            if its == 10 || its == 20 {
                // An exceptional shift.
                t += x;
                for i in 1..=nn {
                    a[i][i] -= x;
                }
                let s = a[nn][nn - 1].abs() + a[nn - 1][nn - 2].abs();
                x = 0.75 * s;
                y = x;
                w = -0.4375 * s * s;
            }
            its += 1;
            let (mut p, mut q, mut r): (f64, f64, f64);
            let mut m = nn - 2;
            loop {
                let z = a[m][m];
                let r0 = x - z;
                let s0 = y - z;
                p = (r0 * s0 - w) / a[m + 1][m] + a[m][m + 1];
                q = a[m + 1][m + 1] - z - r0 - s0;
                r = a[m + 2][m + 1];
                let s = p.abs() + q.abs() + r.abs();
                p /= s;
                q /= s;
                r /= s;
                if m == l {
                    break;
                }
                let u = a[m][m - 1].abs() * (q.abs() + r.abs());
                let v = p.abs() * (a[m - 1][m - 1].abs() + z.abs() + a[m + 1][m + 1].abs());
                if u + v == v {
                    break;
                }
                m -= 1;
            }
            for i in m + 2..=nn {
                a[i][i - 2] = 0.0;
                if i != m + 2 {
                    a[i][i - 3] = 0.0;
                }
            }
            let mut k = m;
            while k < nn {
                if k != m {
                    p = a[k][k - 1];
                    q = a[k + 1][k - 1];
                    r = 0.0;
                    if k != nn - 1 {
                        r = a[k + 2][k - 1];
                    }
                    x = p.abs() + q.abs() + r.abs();
                    if x != 0.0 {
                        p /= x;
                        q /= x;
                        r /= x;
                    }
                }
                let s = sign((p * p + q * q + r * r).sqrt(), p);
                if s != 0.0 {
                    if k == m {
                        if l != m {
                            a[k][k - 1] = -a[k][k - 1];
                        }
                    } else {
                        a[k][k - 1] = -s * x;
                    }
                    p += s;
                    x = p / s;
                    y = q / s;
                    let z = r / s;
                    q /= p;
                    r /= p;
                    for j in k..=nn {
                        p = a[k][j] + q * a[k + 1][j];
                        if k != nn - 1 {
                            p += r * a[k + 2][j];
                            a[k + 2][j] -= p * z;
                        }
                        a[k + 1][j] -= p * y;
                        a[k][j] -= p * x;
                    }
                    let mmin = if nn < k + 3 { nn } else { k + 3 };
                    for i in l..=mmin {
                        p = x * a[i][k] + y * a[i][k + 1];
                        if k != nn - 1 {
                            p += z * a[i][k + 2];
                            a[i][k + 2] -= p * r;
                        }
                        a[i][k + 1] -= p * q;
                        a[i][k] -= p;
                    }
                }
                k += 1;
            }
            if l >= nn - 1 {
                break;
            }
        }
    }
    Some((1..=n).map(|i| (wr[i], wi[i])).collect())
}

/// A unit eigenvector of the n x n row-major `a` for its real eigenvalue `lambda`, by inverse
/// iteration on a - (lambda - a small shift) I.
pub fn eigenvector(n: usize, a: &[f64], lambda: f64) -> Vec<f64> {
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    let shift = lambda - scale * 1e-10;
    let mut m: Vec<f64> = a.to_vec();
    for i in 0..n {
        m[i * n + i] -= shift;
    }
    // LU with partial pivoting; a zero pivot becomes tiny (the matrix is nearly singular by
    // construction).
    let mut perm: Vec<usize> = (0..n).collect();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&x, &y| m[x * n + c].abs().total_cmp(&m[y * n + c].abs()))
            .unwrap_or(c);
        if p != c {
            for j in 0..n {
                m.swap(c * n + j, p * n + j);
            }
            perm.swap(c, p);
        }
        if m[c * n + c] == 0.0 {
            m[c * n + c] = scale * 1e-300;
        }
        for r in c + 1..n {
            let f = m[r * n + c] / m[c * n + c];
            m[r * n + c] = f;
            for j in c + 1..n {
                m[r * n + j] -= f * m[c * n + j];
            }
        }
    }
    let mut x = vec![1.0; n];
    for _ in 0..3 {
        let mut y: Vec<f64> = perm.iter().map(|&p| x[p]).collect();
        for r in 0..n {
            for c in 0..r {
                y[r] -= m[r * n + c] * y[c];
            }
        }
        for r in (0..n).rev() {
            for c in r + 1..n {
                y[r] -= m[r * n + c] * y[c];
            }
            y[r] /= m[r * n + r];
        }
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm == 0.0 || !norm.is_finite() {
            break;
        }
        x = y.iter().map(|v| v / norm).collect();
    }
    // What is left of the other eigenvectors after the iterations is rounding noise.
    for v in x.iter_mut() {
        if v.abs() < 1e-15 {
            *v = 0.0;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn real_eigenvalues_in_lapack_order() {
        let w = eigenvalues(2, &[1.0, 2.0, 3.0, 4.0]).unwrap_or_default();
        assert!(close(w[0].0, -0.372_281_323_269_014_3) && close(w[1].0, 5.372_281_323_269_014));
        let w = eigenvalues(2, &[4.0, 1.0, 2.0, 3.0]).unwrap_or_default();
        assert!(close(w[0].0, 5.0) && close(w[1].0, 2.0));
    }

    #[test]
    fn complex_pairs_and_vectors() {
        let w = eigenvalues(2, &[0.0, 1.0, -1.0, 0.0]).unwrap_or_default();
        assert!(close(w[0].1, 1.0) && close(w[1].1, -1.0));
        let a = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        let v = eigenvector(3, &a, 3.0);
        for r in 0..3 {
            let av: f64 = (0..3).map(|c| a[r * 3 + c] * v[c]).sum();
            assert!((av - 3.0 * v[r]).abs() < 1e-8);
        }
    }
}
