//! Behaviour of the runtime API on small arrays, with exact values.
use super::*;

fn rt() -> Runtime {
    Runtime::new(RuntimeConfig::default())
}

fn cpu() -> Device {
    Device::cpu(0)
}

fn f32s(rt: &Runtime, data: &[f64], shape: &[usize]) -> Array {
    rt.from_f64(data.to_vec(), shape, DType::Float32, cpu())
        .unwrap()
}

fn ints(rt: &Runtime, data: &[f64], shape: &[usize]) -> Array {
    rt.from_f64(data.to_vec(), shape, DType::Int32, cpu())
        .unwrap()
}

fn values(a: &Array) -> Vec<f64> {
    a.to_host().to_f64_vec()
}

fn bin(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    Array::binary(op, Operand::Array(a), Operand::Array(b))
}

fn bin_s(op: BinaryOp, a: &Array, s: Scalar) -> Array {
    Array::binary(op, Operand::Array(a), Operand::Scalar(s)).unwrap()
}

#[test]
fn broadcasting_add() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = f32s(&rt, &[10., 20., 30.], &[3]);
    let c = bin(BinaryOp::Add, &a, &b).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(values(&c), vec![11., 22., 33., 14., 25., 36.]);
    let col = f32s(&rt, &[1., 2.], &[2, 1]);
    let d = bin(BinaryOp::Mul, &col, &b).unwrap();
    assert_eq!(d.shape(), &[2, 3]);
    assert_eq!(values(&d), vec![10., 20., 30., 20., 40., 60.]);
    let bad = f32s(&rt, &[1., 2., 3., 4.], &[4]);
    let e = bin(BinaryOp::Add, &a, &bad).unwrap_err();
    assert_eq!(e.ename(), "ShapeError");
    assert_eq!(
        e.to_string(),
        "operands could not be broadcast together with shapes (2,3) (4,)"
    );
}

#[test]
fn promotion_rules() {
    let rt = rt();
    let f = f32s(&rt, &[1., 2.], &[2]);
    let i = ints(&rt, &[1., 2.], &[2]);
    assert_eq!(
        bin_s(BinaryOp::Mul, &f, Scalar::Float(2.5)).dtype(),
        DType::Float32
    );
    let scaled = bin_s(BinaryOp::Mul, &i, Scalar::Float(2.5));
    assert_eq!(scaled.dtype(), DType::Float32);
    assert_eq!(values(&scaled), vec![2.5, 5.0]);
    assert_eq!(
        bin_s(BinaryOp::Add, &i, Scalar::Int(1)).dtype(),
        DType::Int32
    );
    assert_eq!(bin(BinaryOp::Add, &f, &i).unwrap().dtype(), DType::Float32);
    let l = rt
        .from_f64(vec![1., 2.], &[2], DType::Int64, cpu())
        .unwrap();
    assert_eq!(bin(BinaryOp::Add, &l, &f).unwrap().dtype(), DType::Float32);
    assert_eq!(bin(BinaryOp::Add, &l, &i).unwrap().dtype(), DType::Int64);
    let d = rt
        .from_f64(vec![1., 2.], &[2], DType::Float64, cpu())
        .unwrap();
    assert_eq!(bin(BinaryOp::Add, &d, &f).unwrap().dtype(), DType::Float64);
    let q = bin(BinaryOp::Div, &i, &i).unwrap();
    assert_eq!(q.dtype(), DType::Float32);
    assert_eq!(values(&q), vec![1., 1.]);
    let cmp = bin(BinaryOp::Lt, &f, &i).unwrap();
    assert_eq!(cmp.dtype(), DType::Bool);
    assert_eq!(cmp.to_host(), HostData::Bool(vec![false, false]));
}

#[test]
fn binary_ops_exact_values() {
    let rt = rt();
    let a = f32s(&rt, &[-7., 7., 2.5], &[3]);
    let b = f32s(&rt, &[2., -2., 0.5], &[3]);
    let v = |op| values(&bin(op, &a, &b).unwrap());
    assert_eq!(v(BinaryOp::Sub), vec![-9., 9., 2.]);
    assert_eq!(v(BinaryOp::Div), vec![-3.5, -3.5, 5.]);
    assert_eq!(v(BinaryOp::FloorDiv), vec![-4., -4., 5.]);
    assert_eq!(v(BinaryOp::Mod), vec![1., -1., 0.]);
    assert_eq!(
        v(BinaryOp::Pow),
        vec![49., f64::from(7f32.powf(-2.)), f64::from(2.5f32.sqrt())]
    );
    assert_eq!(v(BinaryOp::Maximum), vec![2., 7., 2.5]);
    assert_eq!(v(BinaryOp::Minimum), vec![-7., -2., 0.5]);
    assert_eq!(v(BinaryOp::Eq), vec![0., 0., 0.]);
    assert_eq!(v(BinaryOp::Ne), vec![1., 1., 1.]);
    assert_eq!(v(BinaryOp::Gt), vec![0., 1., 1.]);
    assert_eq!(v(BinaryOp::Ge), vec![0., 1., 1.]);
    assert_eq!(v(BinaryOp::Le), vec![1., 0., 0.]);
    let i = ints(&rt, &[-7., 7., 6.], &[3]);
    let j = ints(&rt, &[2., -2., 0.], &[3]);
    let iv = |op| values(&bin(op, &i, &j).unwrap());
    assert_eq!(iv(BinaryOp::FloorDiv), vec![-4., -4., 0.]);
    assert_eq!(iv(BinaryOp::Mod), vec![1., -1., 0.]);
    assert_eq!(iv(BinaryOp::And), vec![0., 6., 0.]);
    assert_eq!(iv(BinaryOp::Or), vec![-5., -1., 6.]);
    assert_eq!(iv(BinaryOp::Xor), vec![-5., -7., 6.]);
    let e = bin(BinaryOp::And, &a, &b).unwrap_err();
    assert_eq!(e.ename(), "TypeError");
    // scalar on the left
    let r = Array::binary(
        BinaryOp::Sub,
        Operand::Scalar(Scalar::Int(1)),
        Operand::Array(&a),
    )
    .unwrap();
    assert_eq!(values(&r), vec![8., -6., -1.5]);
    // float32 arithmetic rounds in float32
    let t = f32s(&rt, &[0.1], &[1]);
    let s = bin_s(BinaryOp::Add, &t, Scalar::Float(0.2));
    assert_eq!(values(&s), vec![f64::from(0.1f32 + 0.2f32)]);
}

#[test]
fn unary_ops_exact_values() {
    let rt = rt();
    let a = f32s(&rt, &[-1.5, 0., 2.5], &[3]);
    let u = |op| values(&a.unary(op).unwrap());
    let each = |f: fn(f32) -> f32| {
        [-1.5f32, 0., 2.5]
            .iter()
            .map(|&x| f64::from(f(x)))
            .collect::<Vec<_>>()
    };
    assert_eq!(u(UnaryOp::Neg), vec![1.5, -0., -2.5]);
    assert_eq!(u(UnaryOp::Abs), vec![1.5, 0., 2.5]);
    assert_eq!(u(UnaryOp::Square), vec![2.25, 0., 6.25]);
    assert_eq!(u(UnaryOp::Relu), vec![0., 0., 2.5]);
    assert_eq!(u(UnaryOp::Sign), vec![-1., 0., 1.]);
    assert_eq!(u(UnaryOp::Floor), vec![-2., 0., 2.]);
    assert_eq!(u(UnaryOp::Ceil), vec![-1., 0., 3.]);
    assert_eq!(u(UnaryOp::Round), vec![-2., 0., 2.]);
    assert_eq!(u(UnaryOp::Trunc), vec![-1., 0., 2.]);
    assert_eq!(u(UnaryOp::Exp), each(f32::exp));
    assert_eq!(u(UnaryOp::Tanh), each(f32::tanh));
    assert_eq!(u(UnaryOp::Sin), each(f32::sin));
    assert_eq!(u(UnaryOp::Cos), each(f32::cos));
    assert_eq!(u(UnaryOp::Sigmoid), each(|x| 1.0 / (1.0 + (-x).exp())));
    assert_eq!(u(UnaryOp::Not), vec![0., 1., 0.]);
    let p = f32s(&rt, &[1., 4., 100.], &[3]);
    assert_eq!(values(&p.unary(UnaryOp::Sqrt).unwrap()), vec![1., 2., 10.]);
    assert_eq!(
        values(&p.unary(UnaryOp::Log10).unwrap()),
        vec![0., 4f32.log10() as f64, 2.]
    );
    assert_eq!(
        values(&p.unary(UnaryOp::Reciprocal).unwrap()),
        vec![1., 0.25, 0.01f32 as f64]
    );
    assert_eq!(values(&p.unary(UnaryOp::Log).unwrap())[0], 0.);
    let i = ints(&rt, &[-3., 4.], &[2]);
    let e = i.unary(UnaryOp::Exp).unwrap();
    assert_eq!(e.dtype(), DType::Float32);
    assert_eq!(i.unary(UnaryOp::Abs).unwrap().dtype(), DType::Int32);
    assert_eq!(values(&i.unary(UnaryOp::Neg).unwrap()), vec![3., -4.]);
    let b = rt
        .from_host(HostData::Bool(vec![true]), &[1], cpu())
        .unwrap();
    assert_eq!(b.unary(UnaryOp::Neg).unwrap_err().ename(), "TypeError");
}

#[test]
fn reductions_with_axes_and_keepdims() {
    let rt = rt();
    let a = f32s(&rt, &[1., 5., 3., 4., 2., 6.], &[2, 3]);
    let all = a.reduce(ReduceOp::Sum, None, false).unwrap();
    assert_eq!(all.shape(), &[] as &[usize]);
    assert_eq!(all.to_scalar("item").unwrap(), Scalar::Float(21.));
    let rows = a.reduce(ReduceOp::Sum, Some(&[1]), false).unwrap();
    assert_eq!(
        (rows.shape(), values(&rows)),
        (&[2usize][..], vec![9., 12.])
    );
    let cols = a.reduce(ReduceOp::Max, Some(&[0]), true).unwrap();
    assert_eq!(
        (cols.shape(), values(&cols)),
        (&[1usize, 3][..], vec![4., 5., 6.])
    );
    let neg = a.reduce(ReduceOp::Min, Some(&[-1]), true).unwrap();
    assert_eq!(
        (neg.shape(), values(&neg)),
        (&[2usize, 1][..], vec![1., 2.])
    );
    let mean = a.reduce(ReduceOp::Mean, Some(&[0]), false).unwrap();
    assert_eq!(values(&mean), vec![2.5, 3.5, 4.5]);
    assert_eq!(
        values(&a.reduce(ReduceOp::Prod, None, false).unwrap()),
        vec![720.]
    );
    let am = a.reduce(ReduceOp::ArgMax, Some(&[1]), false).unwrap();
    assert_eq!((am.dtype(), values(&am)), (DType::Int64, vec![1., 2.]));
    let flat = a.reduce(ReduceOp::ArgMin, None, false).unwrap();
    assert_eq!(values(&flat), vec![0.]);
    let keep_all = a.reduce(ReduceOp::Sum, None, true).unwrap();
    assert_eq!(keep_all.shape(), &[1, 1]);
    // 3-D over two axes
    let c = f32s(&rt, &(0..24).map(f64::from).collect::<Vec<_>>(), &[2, 3, 4]);
    let s = c.reduce(ReduceOp::Sum, Some(&[0, 2]), false).unwrap();
    assert_eq!(values(&s), vec![60., 92., 124.]);
    // dtypes
    let i = ints(&rt, &[1., 2.], &[2]);
    let im = i.reduce(ReduceOp::Mean, None, false).unwrap();
    assert_eq!((im.dtype(), values(&im)), (DType::Float32, vec![1.5]));
    let b = rt
        .from_host(HostData::Bool(vec![true, true, false]), &[3], cpu())
        .unwrap();
    let bs = b.reduce(ReduceOp::Sum, None, false).unwrap();
    assert_eq!((bs.dtype(), values(&bs)), (DType::Int64, vec![2.]));
    // empty arrays
    let z = rt.zeros(&[0, 3], DType::Float32, cpu()).unwrap();
    assert_eq!(
        values(&z.reduce(ReduceOp::Sum, None, false).unwrap()),
        vec![0.]
    );
    assert_eq!(
        values(&z.reduce(ReduceOp::Sum, Some(&[0]), false).unwrap()),
        vec![0., 0., 0.]
    );
    let e = z.reduce(ReduceOp::Max, None, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "max: zero-size array has no maximum; reduce over a non-empty axis or check the shape"
    );
    assert_eq!(
        a.reduce(ReduceOp::Sum, Some(&[2]), false)
            .unwrap_err()
            .ename(),
        "IndexError"
    );
    assert_eq!(
        a.reduce(ReduceOp::ArgMax, Some(&[0, 1]), false)
            .unwrap_err()
            .ename(),
        "ValueError"
    );
}

#[test]
fn float32_sum_is_pairwise_like_numpy() {
    let rt = rt();
    // 0.1f32 summed 1000 times: a plain loop drifts to 99.99905; numpy's pairwise blocks of
    // eight accumulators stay at 100.000015 (the value pinned here).
    let data = vec![0.1f64; 1000];
    let a = f32s(&rt, &data, &[1000]);
    let got = a
        .reduce(ReduceOp::Sum, None, false)
        .unwrap()
        .to_scalar("item")
        .unwrap();
    let sequential = (0..1000).fold(0f32, |acc, _| acc + 0.1f32);
    assert_eq!(sequential, 99.99905f32);
    assert_eq!(got, Scalar::Float(f64::from(100.000_015f32)));
}

#[test]
fn matmul_and_dot() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = f32s(&rt, &[7., 8., 9., 10., 11., 12.], &[3, 2]);
    let c = a.matmul(&b).unwrap();
    assert_eq!(
        (c.shape(), values(&c)),
        (&[2usize, 2][..], vec![58., 64., 139., 154.])
    );
    assert_eq!(values(&a.dot(&b).unwrap()), vec![58., 64., 139., 154.]);
    let v = f32s(&rt, &[1., 1., 1.], &[3]);
    let av = a.matmul(&v).unwrap();
    assert_eq!((av.shape(), values(&av)), (&[2usize][..], vec![6., 15.]));
    let inner = v.dot(&v).unwrap();
    assert_eq!((inner.shape(), values(&inner)), (&[] as &[usize], vec![3.]));
    // batched with broadcasting
    let batch = f32s(&rt, &(0..12).map(f64::from).collect::<Vec<_>>(), &[2, 2, 3]);
    let bb = batch.matmul(&b).unwrap();
    assert_eq!(bb.shape(), &[2, 2, 2]);
    assert_eq!(values(&bb)[4..], [193., 214., 274., 304.]);
    // MXNet dot contracts last with first: (2,2,3) . (3,2) -> (2,2,2)
    assert_eq!(batch.dot(&b).unwrap().shape(), &[2, 2, 2]);
    let ia = ints(&rt, &[1., 2., 3., 4.], &[2, 2]);
    let ic = ia.matmul(&ia).unwrap();
    assert_eq!(
        (ic.dtype(), values(&ic)),
        (DType::Int32, vec![7., 10., 15., 22.])
    );
    let e = a.matmul(&a).unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: shapes (2,3) and (2,3) are not aligned: 3 (last axis of the first) != 2 (second-to-last axis of the second)"
    );
    assert_eq!(a.dot(&a).unwrap_err().ename(), "ShapeError");
}

#[test]
fn reshape_shares_and_checks() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let r = a.reshape(&[3, -1]).unwrap();
    assert_eq!(r.shape(), &[3, 2]);
    assert!(r.shares_buffer(&a));
    assert_eq!(rt.live_arrays(cpu()), 1);
    assert_eq!(a.reshape(&[-1]).unwrap().shape(), &[6]);
    assert_eq!(
        a.reshape(&[4]).unwrap_err().to_string(),
        "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4,)"
    );
    assert_eq!(a.reshape(&[-1, -1]).unwrap_err().ename(), "ValueError");
    assert_eq!(a.reshape(&[4, -1]).unwrap_err().ename(), "ShapeError");
}

#[test]
fn transpose_values() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let t = a.transpose(None).unwrap();
    assert_eq!(
        (t.shape(), values(&t)),
        (&[3usize, 2][..], vec![1., 4., 2., 5., 3., 6.])
    );
    let c = f32s(&rt, &(0..6).map(f64::from).collect::<Vec<_>>(), &[1, 2, 3]);
    let p = c.transpose(Some(&[2, 0, 1])).unwrap();
    assert_eq!(
        (p.shape(), values(&p)),
        (&[3usize, 1, 2][..], vec![0., 3., 1., 4., 2., 5.])
    );
    assert_eq!(
        c.transpose(Some(&[0, 1])).unwrap_err().ename(),
        "ValueError"
    );
    assert_eq!(
        c.transpose(Some(&[0, 0, 1])).unwrap_err().ename(),
        "ValueError"
    );
}

fn sl(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

#[test]
fn indexing_and_slicing() {
    let rt = rt();
    let a = f32s(&rt, &(0..12).map(f64::from).collect::<Vec<_>>(), &[3, 4]);
    let row = a.index(&[IndexItem::Int(-1)]).unwrap();
    assert_eq!(
        (row.shape(), values(&row)),
        (&[4usize][..], vec![8., 9., 10., 11.])
    );
    let el = a.index(&[IndexItem::Int(1), IndexItem::Int(2)]).unwrap();
    assert_eq!((el.shape(), values(&el)), (&[] as &[usize], vec![6.]));
    let block = a
        .index(&[sl(Some(1), Some(3), None), sl(None, None, Some(2))])
        .unwrap();
    assert_eq!(
        (block.shape(), values(&block)),
        (&[2usize, 2][..], vec![4., 6., 8., 10.])
    );
    let rev = a
        .index(&[IndexItem::Ellipsis, sl(None, None, Some(-1))])
        .unwrap();
    assert_eq!(values(&rev)[..4], [3., 2., 1., 0.]);
    let col = a
        .index(&[sl(None, None, None), IndexItem::Int(1), IndexItem::NewAxis])
        .unwrap();
    assert_eq!(
        (col.shape(), values(&col)),
        (&[3usize, 1][..], vec![1., 5., 9.])
    );
    let e = a.index(&[IndexItem::Int(3)]).unwrap_err();
    assert_eq!(
        (e.ename(), e.to_string()),
        (
            "IndexError",
            "index 3 is out of bounds for axis 0 with size 3".to_string()
        )
    );
    // integer array and bool mask
    let idx = rt
        .from_f64(vec![2., 0.], &[2], DType::Int64, cpu())
        .unwrap();
    let picked = a.index(&[IndexItem::Array(idx)]).unwrap();
    assert_eq!(
        (picked.shape(), values(&picked)[..5].to_vec()),
        (&[2usize, 4][..], vec![8., 9., 10., 11., 0.])
    );
    let mask = bin_s(BinaryOp::Gt, &a, Scalar::Int(8));
    let m = a.index(&[IndexItem::Array(mask)]).unwrap();
    assert_eq!(values(&m), vec![9., 10., 11.]);
}

#[test]
fn set_index_writes_in_place() {
    let rt = rt();
    let a = rt.zeros(&[2, 3], DType::Float32, cpu()).unwrap();
    a.set_index(&[IndexItem::Int(0)], Operand::Scalar(Scalar::Int(5)))
        .unwrap();
    assert_eq!(values(&a), vec![5., 5., 5., 0., 0., 0.]);
    let y = f32s(&rt, &[1., 2., 3.], &[3]);
    a.set_index(&[sl(None, None, None)], Operand::Array(&y))
        .unwrap();
    assert_eq!(values(&a), vec![1., 2., 3., 1., 2., 3.]);
    a.set_index(
        &[sl(Some(0), Some(2), None), IndexItem::Int(0)],
        Operand::Scalar(Scalar::Float(0.)),
    )
    .unwrap();
    assert_eq!(values(&a), vec![0., 2., 3., 0., 2., 3.]);
    let v = f32s(&rt, &[1., 2., 3., 4.], &[4]);
    let e = a
        .set_index(&[sl(None, None, None)], Operand::Array(&v))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "could not broadcast input array from shape (4,) into shape (2,3)"
    );
    // overlapping source and destination
    let s = f32s(&rt, &[1., 2., 3., 4.], &[4]);
    let head = s.reshape(&[4]).unwrap();
    s.set_index(
        &[sl(Some(1), None, None)],
        Operand::Array(&head.index(&[sl(None, Some(-1), None)]).unwrap()),
    )
    .unwrap();
    assert_eq!(values(&s), vec![1., 1., 2., 3.]);
    // bool mask assignment
    let mask = bin_s(BinaryOp::Gt, &s, Scalar::Int(1));
    s.set_index(&[IndexItem::Array(mask)], Operand::Scalar(Scalar::Int(0)))
        .unwrap();
    assert_eq!(values(&s), vec![1., 1., 0., 0.]);
}

#[test]
fn inplace_keeps_identity() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2.], &[2]);
    let alias = a.clone();
    a.binary_inplace(BinaryOp::Add, Operand::Scalar(Scalar::Int(1)))
        .unwrap();
    assert!(alias.same(&a));
    assert_eq!(values(&alias), vec![2., 3.]);
    a.binary_inplace(BinaryOp::Mul, Operand::Array(&alias))
        .unwrap();
    assert_eq!(values(&a), vec![4., 9.]);
    let wide = rt.zeros(&[2, 2], DType::Float32, cpu()).unwrap();
    assert_eq!(
        a.binary_inplace(BinaryOp::Add, Operand::Array(&wide))
            .unwrap_err()
            .ename(),
        "ShapeError"
    );
}

#[test]
fn concat_and_stack() {
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3., 4.], &[2, 2]);
    let b = f32s(&rt, &[5., 6.], &[1, 2]);
    let c = Array::concat(&[a.clone(), b.clone()], 0).unwrap();
    assert_eq!(
        (c.shape(), values(&c)),
        (&[3usize, 2][..], vec![1., 2., 3., 4., 5., 6.])
    );
    let d = Array::concat(&[a.clone(), a.clone()], -1).unwrap();
    assert_eq!(
        (d.shape(), values(&d)),
        (&[2usize, 4][..], vec![1., 2., 1., 2., 3., 4., 3., 4.])
    );
    let e = Array::concat(&[a.clone(), b.clone()], 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "concat: all the input array dimensions except for the concatenation axis must match exactly, but along dimension 0, the array at index 0 has size 2 and the array at index 1 has size 1"
    );
    let s = Array::stack(&[a.clone(), a.clone()], 0).unwrap();
    assert_eq!(s.shape(), &[2, 2, 2]);
    let s1 = Array::stack(&[a.clone(), a.clone()], 2).unwrap();
    assert_eq!(
        (s1.shape(), values(&s1)[..4].to_vec()),
        (&[2usize, 2, 2][..], vec![1., 1., 2., 2.])
    );
    assert_eq!(
        Array::stack(&[a.clone(), b], 0).unwrap_err().ename(),
        "ShapeError"
    );
}

#[test]
fn norm_astype_clip() {
    let rt = rt();
    let a = f32s(&rt, &[3., -4.], &[2]);
    assert_eq!(values(&a.norm(None, None, false).unwrap()), vec![5.]);
    assert_eq!(values(&a.norm(Some(1.), None, false).unwrap()), vec![7.]);
    assert_eq!(
        values(&a.norm(Some(f64::INFINITY), None, false).unwrap()),
        vec![4.]
    );
    let m = f32s(&rt, &[1., 2., 2., 4.], &[2, 2]);
    assert_eq!(values(&m.norm(None, None, false).unwrap()), vec![5.]);
    let rows = m.norm(None, Some(&[1]), true).unwrap();
    assert_eq!(rows.shape(), &[2, 1]);
    assert_eq!(
        m.norm(Some(1.), None, false).unwrap_err().ename(),
        "ValueError"
    );
    let i = a.astype(DType::Int32).unwrap();
    assert_eq!((i.dtype(), values(&i)), (DType::Int32, vec![3., -4.]));
    let same = a.astype(DType::Float32).unwrap();
    assert!(!same.shares_buffer(&a));
    let c = f32s(&rt, &[-2., 0.5, 9.], &[3])
        .clip(Some(0.), Some(1.))
        .unwrap();
    assert_eq!(values(&c), vec![0., 0.5, 1.]);
    assert_eq!(a.clip(None, None).unwrap_err().ename(), "ValueError");
}

#[test]
fn creation() {
    let rt = rt();
    let o = rt.ones(&[2, 3], DType::Float32, cpu()).unwrap();
    assert_eq!(
        (o.shape(), o.dtype(), o.device()),
        (&[2usize, 3][..], DType::Float32, cpu())
    );
    assert_eq!(o.nbytes(), 24);
    let r = rt.arange(0., 5., 2., DType::Float32, cpu()).unwrap();
    assert_eq!(values(&r), vec![0., 2., 4.]);
    assert_eq!(
        values(&rt.arange(3., 0., -1., DType::Int64, cpu()).unwrap()),
        vec![3., 2., 1.]
    );
    assert_eq!(
        rt.arange(0., 1., 0., DType::Float32, cpu())
            .unwrap_err()
            .ename(),
        "ValueError"
    );
    let e = rt.eye(2, 3, 1, DType::Float32, cpu()).unwrap();
    assert_eq!(values(&e), vec![0., 1., 0., 0., 0., 1.]);
    let e2 = rt.eye(3, 3, 0, DType::Int32, cpu()).unwrap();
    assert_eq!(values(&e2), vec![1., 0., 0., 0., 1., 0., 0., 0., 1.]);
    let bad = rt
        .from_f64(vec![1., 2.], &[3], DType::Float32, cpu())
        .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "array: 2 values do not fill shape (3,) (3 elements)"
    );
    let s = f32s(&rt, &[1., 2., 3., 4., 5., 6.], &[2, 3]);
    assert_eq!(
        s.to_scalar("asscalar").unwrap_err().to_string(),
        "asscalar: the array has 6 elements; only a 1-element array converts to a scalar"
    );
}

#[test]
fn absurd_sizes_are_clean_errors() {
    let rt = rt();
    let e = rt
        .ones(&[1 << 40, 1 << 40], DType::Float32, cpu())
        .unwrap_err();
    assert_eq!(e.ename(), "ValueError");
    let e = rt
        .ones(&[1 << 40, 1 << 10], DType::Float32, cpu())
        .unwrap_err();
    assert_eq!(e.ename(), "OutOfMemoryError");
    assert!(e
        .to_string()
        .starts_with("out of memory on cpu(0): cannot allocate 4 PiB"));
}

#[test]
fn devices_and_memory() {
    let rt = Runtime::new(RuntimeConfig {
        sim_gpus: 2,
        sim_gpu_memory: 1 << 20,
        ..RuntimeConfig::default()
    });
    assert_eq!(rt.num_gpus(), 2);
    let g = rt.ones(&[2, 3], DType::Float32, Device::gpu(0)).unwrap();
    assert_eq!(g.device(), Device::gpu(0));
    assert_eq!(
        (
            rt.memory_used(Device::gpu(0)),
            rt.live_arrays(Device::gpu(0))
        ),
        (24, 1)
    );
    let c = rt.ones(&[2, 3], DType::Float32, cpu()).unwrap();
    let e = bin(BinaryOp::Add, &c, &g).unwrap_err();
    assert_eq!(
        e.to_string(),
        "add: inputs are on different devices: the first is on cpu(0), the second on gpu(0). Move one explicitly, e.g. x.copyto(gpu(0)) or y.as_in_context(cpu(0))"
    );
    assert_eq!(c.dot(&g).unwrap_err().ename(), "DeviceError");
    assert_eq!(
        Array::concat(&[c.clone(), g.clone()], 0)
            .unwrap_err()
            .ename(),
        "DeviceError"
    );
    let g1 = g.copy_to(&rt, Device::gpu(1)).unwrap();
    assert_eq!(
        bin(BinaryOp::Add, &g, &g1).unwrap_err().ename(),
        "DeviceError"
    );
    assert!(g.as_in_device(&rt, Device::gpu(0)).unwrap().same(&g));
    let back = g.as_in_device(&rt, cpu()).unwrap();
    assert!(!back.same(&g));
    assert_eq!(values(&back), vec![1.; 6]);
    let r = bin_s(BinaryOp::Mul, &g, Scalar::Int(2));
    assert_eq!(r.device(), Device::gpu(0));
    // copyto(other_array) across devices, with a dtype conversion
    let dst = rt.zeros(&[2, 3], DType::Float64, cpu()).unwrap();
    r.copy_into(&dst).unwrap();
    assert_eq!(values(&dst), vec![2.; 6]);
    let wrong = rt.zeros(&[3, 2], DType::Float32, cpu()).unwrap();
    assert_eq!(
        r.copy_into(&wrong).unwrap_err().to_string(),
        "copyto: the source has shape (2, 3) but the destination has shape (3, 2); copy into an array of the same shape"
    );
    drop((r, g, g1));
    assert_eq!(rt.memory_used(Device::gpu(0)), 0);
    let big = rt
        .zeros(&[1 << 20], DType::Float32, Device::gpu(0))
        .unwrap_err();
    assert_eq!(
        big.to_string(),
        "out of memory on gpu(0): cannot allocate 4 MiB, only 1 MiB of 1 MiB is free. Free arrays you no longer need (del x), use a smaller shape, or raise DEVARRAY_SIM_GPU_MEMORY"
    );
    let missing = rt.ones(&[1], DType::Float32, Device::gpu(10)).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "gpu(10) does not exist: this machine has 2 GPUs (gpu(0), gpu(1)); try_gpu(10) falls back to cpu(0)"
    );
    let none = Runtime::new(RuntimeConfig::default());
    assert_eq!(none.num_gpus(), 0);
    assert_eq!(
        none.check_device(Device::gpu(0)).unwrap_err().ename(),
        "DeviceError"
    );
}

#[test]
fn random_reproduces_mxnet() {
    let rt = rt();
    rt.seed(0);
    let u = rt.uniform(0., 1., &[2, 3], DType::Float32, cpu()).unwrap();
    assert_eq!(
        u.to_host(),
        HostData::F32(vec![
            0.5488135, 0.5928446, 0.71518934, 0.84426576, 0.60276335, 0.8579456
        ])
    );
    // The reference prints 8 decimals: 0.00628365 and 0.04861524.
    let w = rt
        .uniform(-0.07, 0.07, &[1, 2], DType::Float32, cpu())
        .unwrap();
    assert_eq!(
        w.to_host(),
        HostData::F32(vec![0.006_283_648_3, 0.04861524])
    );
    let printed: Vec<String> = values(&w).iter().map(|v| format!("{v:.8}")).collect();
    assert_eq!(printed, vec!["0.00628365", "0.04861524"]);
    rt.seed(0);
    let again = rt.uniform(0., 1., &[2, 3], DType::Float32, cpu()).unwrap();
    assert_eq!(again.to_host(), u.to_host());
    let n = rt.normal(0., 1., &[1000], DType::Float32, cpu()).unwrap();
    let mean = values(&n.reduce(ReduceOp::Mean, None, false).unwrap())[0];
    assert!(mean.abs() < 0.1, "mean {mean}");
    assert_eq!(
        rt.uniform(1., 0., &[1], DType::Float32, cpu())
            .unwrap_err()
            .ename(),
        "ValueError"
    );
    assert_eq!(
        rt.uniform(0., 1., &[1], DType::Int32, cpu())
            .unwrap_err()
            .ename(),
        "TypeError"
    );
}

#[test]
fn arrays_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Array>();
    check::<Runtime>();
}

#[test]
fn sessions_are_independent() {
    let a = rt();
    let b = rt();
    let _x = a.ones(&[10], DType::Float32, cpu()).unwrap();
    assert_eq!(a.memory_used(cpu()), 40);
    assert_eq!(b.memory_used(cpu()), 0);
    a.seed(1);
    b.seed(1);
    let u = a.uniform(0., 1., &[3], DType::Float32, cpu()).unwrap();
    let v = b.uniform(0., 1., &[3], DType::Float32, cpu()).unwrap();
    assert_eq!(u.to_host(), v.to_host());
}

#[test]
fn large_arrays_take_the_parallel_paths() {
    let rt = rt();
    let n = 200_000;
    let a = rt.arange(0., n as f64, 1., DType::Float32, cpu()).unwrap();
    let b = bin_s(BinaryOp::Mul, &a, Scalar::Int(2));
    let host = values(&b);
    assert_eq!((host[0], host[n - 1]), (0., 2. * (n - 1) as f64));
    let copy = b.copy_to(&rt, cpu()).unwrap();
    assert_eq!(values(&copy), host);
    let ones = rt.ones(&[n], DType::Float64, cpu()).unwrap();
    let s = ones.reduce(ReduceOp::Sum, None, false).unwrap();
    assert_eq!(values(&s), vec![n as f64]);
}

/// Timings for the report; run with
/// `cargo test --release --lib runtime::tests::perf_smoke -- --ignored --nocapture`.
#[test]
#[ignore]
fn perf_smoke() {
    use std::time::Instant;
    let rt = rt();
    let a = f32s(&rt, &[1., 2., 3.], &[3]);
    let b = f32s(&rt, &[4., 5., 6.], &[3]);
    let start = Instant::now();
    for _ in 0..100_000 {
        let _c = bin(BinaryOp::Add, &a, &b).unwrap();
    }
    eprintln!(
        "add 3 elements: {:.3} us",
        start.elapsed().as_secs_f64() * 10.0
    );
    let start = Instant::now();
    for _ in 0..100_000 {
        let _s = a
            .reduce(ReduceOp::Sum, None, false)
            .unwrap()
            .to_scalar("item")
            .unwrap();
    }
    eprintln!(
        "sum+item 3 elements: {:.3} us",
        start.elapsed().as_secs_f64() * 10.0
    );
    let big = rt.ones(&[10_000_000], DType::Float32, cpu()).unwrap();
    let start = Instant::now();
    let e = bin_s(BinaryOp::Add, &big, Scalar::Int(2))
        .unary(UnaryOp::Exp)
        .unwrap();
    let _r = bin(BinaryOp::Mul, &e, &big).unwrap();
    eprintln!(
        "(z + 2).exp() * y on 1e7: {:.2} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    for n in [100usize, 1024] {
        let m = rt.ones(&[n, n], DType::Float32, cpu()).unwrap();
        let reps = if n == 100 { 1000 } else { 5 };
        let start = Instant::now();
        for _ in 0..reps {
            let _p = m.matmul(&m).unwrap();
        }
        let dt = start.elapsed().as_secs_f64() / reps as f64;
        eprintln!(
            "sgemm {n}: {:.1} us, {:.1} GFLOP/s",
            dt * 1e6,
            2.0 * (n * n * n) as f64 / dt / 1e9
        );
    }
    let huge = rt.ones(&[64 << 20], DType::Float32, cpu()).unwrap();
    let start = Instant::now();
    let _copy = huge.copy_to(&rt, cpu()).unwrap();
    let dt = start.elapsed().as_secs_f64();
    eprintln!("copyto 256 MiB: {:.2} GB/s", 268_435_456.0 / dt / 1e9);
}

// ---- simulated GPUs: the asynchronous engine -----------------------------------------------

fn sim_rt(gpus: usize, memory: u64) -> Runtime {
    Runtime::new(RuntimeConfig {
        sim_gpus: gpus,
        sim_gpu_memory: memory,
        ..RuntimeConfig::default()
    })
}

/// Occupies `device`'s stream for `ms` milliseconds, so the work queued after it is pending.
fn block_stream(rt: &Runtime, device: Device, ms: u64) {
    let ctx = rt.ctx(device).unwrap();
    let stream = ctx.stream.as_ref().unwrap();
    stream
        .submit(
            Box::new(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(())
            }),
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
}

#[test]
fn sim_gpus_run_on_their_own_worker_and_calls_return_before_the_work() {
    let rt = sim_rt(2, 1 << 30);
    assert!(rt.is_async(Device::gpu(0)));
    assert!(!rt.is_async(cpu()));
    block_stream(&rt, Device::gpu(0), 300);
    let start = std::time::Instant::now();
    let x = rt.ones(&[2, 3], DType::Float32, Device::gpu(0)).unwrap();
    let y = bin_s(BinaryOp::Add, &x, Scalar::Int(1));
    let s = y.reduce(ReduceOp::Sum, None, false).unwrap();
    assert!(
        start.elapsed() < std::time::Duration::from_millis(150),
        "queueing waited for the device"
    );
    // Shape checks still happen at the call, while the device is busy.
    let bad = rt.ones(&[4], DType::Float32, Device::gpu(0)).unwrap();
    assert_eq!(
        bin(BinaryOp::Add, &x, &bad).unwrap_err().ename(),
        "ShapeError"
    );
    assert_eq!(s.to_scalar("asscalar").unwrap(), Scalar::Float(12.0));
    assert!(start.elapsed() >= std::time::Duration::from_millis(250));
    assert_eq!(values(&y), vec![2.; 6]);
}

#[test]
fn sim_in_place_writes_and_reads_keep_program_order() {
    let rt = sim_rt(1, 1 << 30);
    let g = Device::gpu(0);
    block_stream(&rt, g, 50);
    let x = rt.zeros(&[4], DType::Float32, g).unwrap();
    let before = bin_s(BinaryOp::Add, &x, Scalar::Int(1));
    x.set_index(
        &[sl(Some(1), Some(3), None)],
        Operand::Scalar(Scalar::Int(5)),
    )
    .unwrap();
    x.binary_inplace(BinaryOp::Mul, Operand::Scalar(Scalar::Int(2)))
        .unwrap();
    let eye = rt.eye(2, 2, 0, DType::Float32, g).unwrap();
    assert_eq!(values(&before), vec![1.; 4]);
    assert_eq!(values(&x), vec![0., 10., 10., 0.]);
    assert_eq!(values(&eye), vec![1., 0., 0., 1.]);
    x.wait_to_read().unwrap();
    rt.synchronize().unwrap();
}

#[test]
fn sim_to_sim_copies_go_direct_and_wait_for_the_source() {
    let rt = sim_rt(2, 1 << 30);
    let (g0, g1) = (Device::gpu(0), Device::gpu(1));
    let x = rt.zeros(&[3], DType::Float32, g0).unwrap();
    block_stream(&rt, g0, 100);
    // The write is queued behind the sleep; the copy must see it.
    x.set_index(&[], Operand::Scalar(Scalar::Int(7))).unwrap();
    let y = x.copy_to(&rt, g1).unwrap();
    // A later write to the source must not reach the copy.
    x.set_index(&[], Operand::Scalar(Scalar::Int(9))).unwrap();
    assert_eq!(y.device(), g1);
    assert_eq!(values(&y), vec![7.; 3]);
    // copyto(array) between GPUs, with a dtype conversion.
    let z = rt.zeros(&[3], DType::Float64, g1).unwrap();
    x.copy_into(&z).unwrap();
    assert_eq!(values(&z), vec![9.; 3]);
    let records: Vec<(Device, Device, TransferKind, u64, u64)> = rt
        .transfers()
        .iter()
        .map(|r| (r.from, r.to, r.kind, r.count, r.bytes))
        .collect();
    assert_eq!(
        records,
        vec![
            (g0, g1, TransferKind::Explicit, 2, 24),
            (g1, cpu(), TransferKind::Implicit, 2, 36),
        ]
    );
    rt.reset_transfers();
    assert!(rt.transfers().is_empty());
    assert_eq!(rt.bytes_copied(g1), (24, 36));
}

#[test]
fn host_reads_and_explicit_copies_are_in_the_ledger() {
    let rt = sim_rt(1, 1 << 30);
    let g = Device::gpu(0);
    let c = rt.ones(&[2, 3], DType::Float32, cpu()).unwrap();
    let x = c.copy_to(&rt, g).unwrap();
    let _ = x.to_host();
    let _ = x.to_host_uncounted();
    let s = x.reduce(ReduceOp::Sum, None, false).unwrap();
    assert_eq!(s.to_scalar("item").unwrap(), Scalar::Float(6.0));
    let h = x.to_host_array(&rt).unwrap();
    assert_eq!(h.device(), cpu());
    // Same device: no transfer.
    let _ = c.copy_to(&rt, cpu()).unwrap();
    let _ = c.to_host();
    let summary: Vec<(String, String, &str, u64, u64)> = rt
        .transfers()
        .iter()
        .map(|r| {
            (
                r.from.to_string(),
                r.to.to_string(),
                r.kind.name(),
                r.count,
                r.bytes,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("cpu(0)".into(), "gpu(0)".into(), "explicit", 1, 24),
            ("gpu(0)".into(), "cpu(0)".into(), "implicit", 3, 52),
        ]
    );
    assert!(rt.transfers()[0].time > std::time::Duration::ZERO);
}

#[test]
fn sim_memory_returns_when_the_last_reference_goes_even_while_queued() {
    let rt = sim_rt(1, 64 << 20);
    let g = Device::gpu(0);
    block_stream(&rt, g, 100);
    let x = rt.ones(&[1 << 20], DType::Float32, g).unwrap();
    let y = bin_s(BinaryOp::Add, &x, Scalar::Int(1));
    assert_eq!(rt.memory_used(g), 8 << 20);
    drop((x, y));
    rt.synchronize().unwrap();
    assert_eq!((rt.memory_used(g), rt.live_arrays(g)), (0, 0));
}

#[test]
fn a_loop_allocating_far_more_than_the_budget_runs() {
    // 64 MiB of device memory, 160 iterations of 2 x 4 MiB = 1.25 GiB allocated in total.
    let rt = sim_rt(1, 64 << 20);
    let g = Device::gpu(0);
    let keep = rt.ones(&[6 << 20], DType::Float32, g).unwrap(); // 24 MiB held throughout
    let mut t = rt.zeros(&[1 << 20], DType::Float32, g).unwrap();
    for _ in 0..160 {
        let fresh = rt.ones(&[1 << 20], DType::Float32, g).unwrap();
        t = Array::binary(BinaryOp::Add, Operand::Array(&t), Operand::Array(&fresh)).unwrap();
    }
    let total = t.reduce(ReduceOp::Sum, None, false).unwrap();
    assert_eq!(
        total.to_scalar("item").unwrap(),
        Scalar::Float(160.0 * (1 << 20) as f64)
    );
    // Over the budget in one request is still an error naming the device, request and free.
    let err = rt.ones(&[16 << 20], DType::Float32, g).unwrap_err();
    assert_eq!(
        err.to_string(),
        "out of memory on gpu(0): cannot allocate 64 MiB, only 36 MiB of 64 MiB is free. Free arrays you no longer need (del x), use a smaller shape, or raise DEVARRAY_SIM_GPU_MEMORY"
    );
    drop((keep, t, total));
    rt.synchronize().unwrap();
    assert_eq!(rt.memory_used(g), 0);
    // ... and the device still works.
    let again = rt.ones(&[16 << 20], DType::Float32, g).unwrap();
    assert_eq!(again.size(), 16 << 20);
}

#[test]
fn an_interrupt_ends_a_device_wait_and_leaves_arrays_valid() {
    let rt = sim_rt(1, 1 << 30);
    let g = Device::gpu(0);
    block_stream(&rt, g, 400);
    let x = rt.ones(&[3], DType::Float32, g).unwrap();
    let flag = rt.interrupt_flag();
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let start = std::time::Instant::now();
    assert_eq!(x.wait_to_read(), Err(RuntimeError::Interrupted));
    assert_eq!(rt.synchronize(), Ok(()), "the interrupt was consumed");
    assert!(start.elapsed() >= std::time::Duration::from_millis(300));
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let y = bin_s(BinaryOp::Add, &x, Scalar::Int(1));
    assert_eq!(RuntimeError::Interrupted.ename(), "KeyboardInterrupt");
    flag.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(values(&y), vec![2.; 3]);
}

#[test]
fn interrupted_waits_return_promptly() {
    let rt = sim_rt(1, 1 << 30);
    let g = Device::gpu(0);
    block_stream(&rt, g, 500);
    let x = rt.ones(&[3], DType::Float32, g).unwrap();
    rt.interrupt_flag()
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let start = std::time::Instant::now();
    assert_eq!(rt.synchronize(), Err(RuntimeError::Interrupted));
    assert!(start.elapsed() < std::time::Duration::from_millis(200));
    // Still valid: reading waits for the queued work.
    assert_eq!(values(&x), vec![1.; 3]);
}

#[test]
fn seeds_reproduce_across_devices_and_order_with_queued_samples() {
    let rt = sim_rt(2, 1 << 30);
    rt.seed(3);
    let on_cpu = rt.uniform(0., 1., &[5], DType::Float32, cpu()).unwrap();
    let first = rt
        .uniform(0., 1., &[5], DType::Float32, Device::gpu(0))
        .unwrap();
    // Reseeding while the sample above may still be queued must not change it.
    rt.seed(3);
    let second = rt
        .uniform(0., 1., &[5], DType::Float32, Device::gpu(0))
        .unwrap();
    let other = rt
        .uniform(0., 1., &[5], DType::Float32, Device::gpu(1))
        .unwrap();
    assert_eq!(first.to_host(), on_cpu.to_host());
    assert_eq!(second.to_host(), on_cpu.to_host());
    assert_eq!(other.to_host(), on_cpu.to_host());
}

#[test]
fn without_a_driver_there_are_no_cuda_gpus_and_sim_gpus_are_simulated() {
    let plain = rt();
    if crate::backend::cuda::device_count() == 0 {
        assert_eq!(plain.num_gpus(), 0);
        assert!(plain.check_device(Device::gpu(0)).is_err());
    }
    assert_eq!(plain.backend_name(cpu()), "host");
    assert_eq!(plain.device_name(cpu()), None);
    assert!(!plain.is_async(cpu()));
    let sim = Runtime::new(RuntimeConfig {
        sim_gpus: 2,
        ..RuntimeConfig::default()
    });
    // Simulated GPUs replace the cards: exactly the number asked for, never CUDA.
    assert_eq!(sim.num_gpus(), 2);
    assert_eq!(sim.backend_name(Device::gpu(1)), "simulated");
    assert_eq!(sim.device_name(Device::gpu(1)), None);
    assert!(sim.is_async(Device::gpu(1)));
}

#[test]
fn an_error_deferred_on_a_device_is_reported_once_by_the_next_sync() {
    let rt = rt();
    let ctx = rt.ctx(cpu()).unwrap();
    ctx.defer_error(RuntimeError::Value("first".into()));
    ctx.defer_error(RuntimeError::Value("second".into()));
    assert_eq!(rt.synchronize(), Err(RuntimeError::Value("first".into())));
    assert_eq!(rt.synchronize(), Ok(()));
}

#[test]
fn scalar_fill_values_match_the_host_scalars() {
    use super::array::scalar_fill_value;
    assert_eq!(
        scalar_fill_value(Scalar::Float(0.1), DType::Float32),
        f64::from(0.1f32)
    );
    assert_eq!(scalar_fill_value(Scalar::Float(2.7), DType::Int32), 2.0);
    assert_eq!(scalar_fill_value(Scalar::Int(-3), DType::Int64), -3.0);
    assert_eq!(scalar_fill_value(Scalar::Bool(true), DType::Bool), 1.0);
    assert_eq!(scalar_fill_value(Scalar::Float(0.5), DType::Bool), 1.0);
    assert_eq!(
        scalar_fill_value(Scalar::Int(1 << 40), DType::Float64),
        (1u64 << 40) as f64
    );
}

/// Issue 29, finding 4: a simulated GPU's job whose host allocation fails marks its output
/// failed; every later use (a sync, a read, an op on it, a copy from it, a copy into another
/// array) raises that error naming the GPU, and nothing reads as zeros or panics.
#[test]
fn a_failed_sim_gpu_job_fails_every_later_use_of_its_output() {
    let rt = sim_rt(2, 1 << 30);
    let g = Device::gpu(1);
    let ctx = rt.ctx(g).unwrap();
    // What the host allocator reports when a buffer cannot be had (it names the host).
    let host_oom = RuntimeError::OutOfMemory {
        device: cpu(),
        requested: 1 << 40,
        free: 0,
        total: 0,
        setting: None,
    };
    let expected = RuntimeError::OutOfMemory {
        device: g,
        requested: 1 << 40,
        free: 0,
        total: 0,
        setting: None,
    };
    let failing = host_oom.clone();
    let a = array::allocate(&ctx, [4usize].as_slice(), DType::Float32, move || {
        Err(failing)
    })
    .expect("the job is queued");
    // An op queued on it before it ran, and one after.
    let early = bin_s(BinaryOp::Add, &a, Scalar::Int(1));
    assert_eq!(a.wait_to_read(), Err(expected.clone()));
    assert_eq!(a.wait_to_read(), Err(expected.clone()));
    assert_eq!(a.try_to_host(), Err(expected.clone()));
    assert_eq!(a.failure(), Some(expected.clone()));
    assert_eq!(early.try_to_host(), Err(expected.clone()));
    let late = bin_s(BinaryOp::Mul, &a, Scalar::Int(2));
    assert_eq!(late.try_to_host(), Err(expected.clone()));
    assert_eq!(
        a.copy_to(&rt, cpu()).and_then(|c| c.try_to_host()),
        Err(expected.clone())
    );
    assert_eq!(
        a.copy_to(&rt, Device::gpu(0)).and_then(|c| c.try_to_host()),
        Err(expected.clone())
    );
    let dst = rt.zeros(&[4], DType::Float32, g).unwrap();
    let copied = a.copy_into(&dst).and_then(|()| dst.try_to_host());
    assert_eq!(copied, Err(expected.clone()));
    assert!(a.to_scalar("asscalar").is_err());
    // The device itself keeps working for other arrays.
    let fine = rt.ones(&[2], DType::Float32, g).unwrap();
    rt.synchronize().ok();
    assert_eq!(values(&fine), vec![1.0; 2]);
}
