//! NCCL: communicators over the emulated cards and all-reduce. Each rank's call queues a job on
//! its stream; the jobs meet (every stream thread blocks until all ranks of that collective have
//! arrived), the last one reduces, and all go on: ordered on every stream like a real collective.
use crate::driver::{emu, lock};
use crate::report;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

pub type Result_ = u32;
pub const SUCCESS: Result_ = 0;
pub const UNHANDLED_CUDA_ERROR: Result_ = 1;
pub const INVALID_ARGUMENT: Result_ = 4;

struct Part {
    send: u64,
    recv: u64,
    count: usize,
    dtype: c_int,
    op: c_int,
}

#[derive(Default)]
struct Rendezvous {
    /// Collective number -> the parts that arrived (by rank).
    arrived: HashMap<u64, Vec<Option<Part>>>,
    finished: HashMap<u64, (usize, Result<(), u32>)>,
}

struct Group {
    size: usize,
    state: Mutex<Rendezvous>,
    done: Condvar,
    /// Each rank's count of collectives issued.
    issued: Mutex<Vec<u64>>,
}

struct Comm {
    group: Arc<Group>,
    rank: usize,
}

fn comms() -> &'static Mutex<HashMap<u64, Comm>> {
    static C: OnceLock<Mutex<HashMap<u64, Comm>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommInitAll(
    comms_out: *mut u64,
    ndev: c_int,
    devlist: *const c_int,
) -> Result_ {
    let Ok(n) = usize::try_from(ndev) else {
        return INVALID_ARGUMENT;
    };
    if comms_out.is_null() || n == 0 {
        return INVALID_ARGUMENT;
    }
    let group = Arc::new(Group {
        size: n,
        state: Mutex::new(Rendezvous::default()),
        done: Condvar::new(),
        issued: Mutex::new(vec![0; n]),
    });
    for rank in 0..n {
        let dev = if devlist.is_null() {
            rank as c_int
        } else {
            *devlist.add(rank)
        };
        if usize::try_from(dev).map_or(true, |d| d >= emu().cards.len()) {
            return INVALID_ARGUMENT;
        }
        let h = emu().handle();
        lock(comms()).insert(
            h,
            Comm {
                group: Arc::clone(&group),
                rank,
            },
        );
        *comms_out.add(rank) = h;
    }
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommDestroy(comm: u64) -> Result_ {
    lock(comms())
        .remove(&comm)
        .map_or(INVALID_ARGUMENT, |_| SUCCESS)
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupStart() -> Result_ {
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupEnd() -> Result_ {
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetVersion(version: *mut c_int) -> Result_ {
    if version.is_null() {
        return INVALID_ARGUMENT;
    }
    *version = 22_603;
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetErrorString(result: Result_) -> *const c_char {
    match result {
        SUCCESS => c"no error".as_ptr(),
        INVALID_ARGUMENT => c"invalid argument".as_ptr(),
        _ => c"unhandled cuda error".as_ptr(),
    }
}

fn width(dtype: c_int) -> Option<usize> {
    Some(match dtype {
        0 | 1 => 1,
        2 | 3 | 7 => 4,
        4 | 5 | 8 => 8,
        _ => return None,
    })
}

fn reduce(parts: &[Option<Part>]) -> Result<(), u32> {
    let mem = &emu().memory;
    let first = parts[0].as_ref().ok_or(1u32)?;
    let w = width(first.dtype).ok_or(1u32)?;
    let n = first.count;
    let mut inputs = Vec::new();
    for p in parts.iter().flatten() {
        let mut raw = vec![0u8; n * w];
        mem.read(p.send, &mut raw)?;
        inputs.push(raw);
    }
    let mut acc = inputs[0].clone();
    for other in &inputs[1..] {
        for (i, (a, b)) in acc
            .chunks_exact_mut(w)
            .zip(other.chunks_exact(w))
            .enumerate()
        {
            let _ = i;
            macro_rules! combine {
                ($t:ty) => {{
                    let x = <$t>::from_le_bytes(a.try_into().unwrap_or_default());
                    let y = <$t>::from_le_bytes(b.try_into().unwrap_or_default());
                    let r: $t = match first.op {
                        1 => x * y,
                        2 => {
                            if x >= y {
                                x
                            } else {
                                y
                            }
                        }
                        3 => {
                            if x <= y {
                                x
                            } else {
                                y
                            }
                        }
                        _ => x + y,
                    };
                    a.copy_from_slice(&r.to_le_bytes());
                }};
            }
            match first.dtype {
                2 => combine!(i32),
                3 => combine!(u32),
                4 => combine!(i64),
                5 => combine!(u64),
                7 => combine!(f32),
                8 => combine!(f64),
                _ => return Err(1),
            }
        }
    }
    for p in parts.iter().flatten() {
        mem.write(p.recv, &acc)?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn ncclAllReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    comm: u64,
    stream: u64,
) -> Result_ {
    let (group, rank) = match lock(comms()).get(&comm) {
        Some(c) => (Arc::clone(&c.group), c.rank),
        None => return INVALID_ARGUMENT,
    };
    if width(dtype).is_none() || !(0..=3).contains(&op) {
        report("ncclAllReduce: only sum/prod/max/min over integer and float types are emulated");
        return INVALID_ARGUMENT;
    }
    let Ok(s) = emu().stream(stream) else {
        return UNHANDLED_CUDA_ERROR;
    };
    let seq = {
        let mut issued = lock(&group.issued);
        issued[rank] += 1;
        issued[rank]
    };
    let part = Part {
        send: send as u64,
        recv: recv as u64,
        count,
        dtype,
        op,
    };
    let job = move || {
        let mut state = lock(&group.state);
        let size = group.size;
        let slots = state
            .arrived
            .entry(seq)
            .or_insert_with(|| (0..size).map(|_| None).collect());
        slots[rank] = Some(part);
        if slots.iter().all(Option::is_some) {
            let parts = state.arrived.remove(&seq).unwrap_or_default();
            let same = parts
                .iter()
                .flatten()
                .all(|p| p.count == count && p.dtype == dtype && p.op == op);
            let result = if same { reduce(&parts) } else { Err(1) };
            if !same {
                report("ncclAllReduce: the ranks disagree on count, type or operation");
            }
            state.finished.insert(seq, (size, result));
            group.done.notify_all();
        }
        loop {
            if let Some((left, result)) = state.finished.get_mut(&seq) {
                let r = *result;
                *left -= 1;
                if *left == 0 {
                    state.finished.remove(&seq);
                }
                return r;
            }
            state = group.done.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    };
    match s.submit(Box::new(job)) {
        Ok(_) => SUCCESS,
        Err(_) => UNHANDLED_CUDA_ERROR,
    }
}
