//! Decisions per second of `MemoryRateLimiter` from 1, 2 and 8 threads sharing one limiter,
//! on random keys out of 10 000 (capacity 100, one token per 100 000 us, like the Redis
//! benchmarks). One criterion iteration is one decision on every thread, so the reported
//! throughput (elements/s) is decisions per second of the whole process.
//!
//! `cargo bench -p shortener-bench --bench memory_limiter`; `cargo xtask bench --only memory`
//! runs it in rounds and reads criterion's medians from `target/criterion`.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shortener_bench::{IDENTITIES, Rng, identities, policy};
use shortener_core::{Algorithm, Policy};
use shortener_memory::MemoryRateLimiter;

const THREADS: [usize; 3] = [1, 2, 8];

fn decisions(criterion: &mut Criterion) {
    let limiter = Arc::new(MemoryRateLimiter::new(Algorithm::TokenBucket));
    let policy = Arc::new(policy());
    let identities = Arc::new(identities(IDENTITIES));
    let mut group = criterion.benchmark_group("memory_limiter");
    for threads in THREADS {
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_function(format!("threads/{threads}"), |bencher| {
            bencher
                .iter_custom(|iterations| run(threads, iterations, &limiter, &policy, &identities));
        });
    }
    group.finish();
}

/// `iterations` decisions on each of `threads` threads, started together; the wall time
/// from the start signal until the last thread is done.
fn run(
    threads: usize,
    iterations: u64,
    limiter: &Arc<MemoryRateLimiter>,
    policy: &Arc<Policy>,
    identities: &Arc<Vec<String>>,
) -> Duration {
    let start = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (limiter, policy, identities, start) = (
                limiter.clone(),
                policy.clone(),
                identities.clone(),
                start.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(0xBE7C ^ ((thread as u64) << 32) ^ iterations);
                start.wait();
                for _ in 0..iterations {
                    let identity = &identities[rng.below(identities.len())];
                    black_box(limiter.acquire_at_now(identity, &policy, 1));
                }
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    for worker in workers {
        worker.join().expect("a bench thread panicked");
    }
    started.elapsed()
}

criterion_group!(benches, decisions);
criterion_main!(benches);
