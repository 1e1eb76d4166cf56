//! Decisions per second of one `MemoryRateLimiter` shared by 1, 2 and 8 threads, on random
//! keys out of 10 000, with the policy of the Redis benchmarks. One criterion iteration is
//! one decision on every thread, so the throughput (elements/s) is the process's decisions
//! per second. `cargo xtask bench --only memory` reads criterion's medians of it.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shortener_bench::{IDENTITIES, Rng, THREADS, identities, policy};
use shortener_core::Algorithm;
use shortener_memory::MemoryRateLimiter;

fn decisions(criterion: &mut Criterion) {
    let limiter = MemoryRateLimiter::new(Algorithm::TokenBucket);
    let (policy, identities) = (policy(), identities(IDENTITIES));
    let mut group = criterion.benchmark_group("memory_limiter");
    for threads in THREADS {
        group.throughput(Throughput::Elements(threads as u64));
        // `iterations` decisions on each of `threads` threads, started together: the wall
        // time from the start signal until the last thread is done.
        let run = |iterations| {
            let start = Barrier::new(threads + 1);
            std::thread::scope(|scope| {
                for thread in 0..threads {
                    let (limiter, policy, identities, start) =
                        (&limiter, &policy, &identities, &start);
                    scope.spawn(move || {
                        let mut rng = Rng(0xBE7C ^ ((thread as u64) << 32) ^ iterations);
                        start.wait();
                        for _ in 0..iterations {
                            let identity = &identities[rng.below(identities.len())];
                            black_box(limiter.acquire_at_now(identity, policy, 1));
                        }
                    });
                }
                start.wait();
                Instant::now()
            })
            .elapsed()
        };
        group.bench_function(format!("threads/{threads}"), |b| b.iter_custom(run));
    }
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
