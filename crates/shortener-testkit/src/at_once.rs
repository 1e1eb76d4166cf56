//! Running many calls at the same time: [`in_parallel`] for blocking closures,
//! [`concurrently`] for futures.

use std::future::Future;
use std::pin::Pin;
use std::sync::Barrier;
use std::task::Poll;

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `call(0)`, ..., `call(count - 1)` each on its own thread, released together by a
/// barrier, and returns their outputs in index order. A panic in a call is re-raised.
pub fn in_parallel<T, F>(count: usize, call: F) -> Vec<T>
where
    F: Fn(usize) -> T + Sync,
    T: Send,
{
    let start = Barrier::new(count);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..count)
            .map(|index| {
                let (start, call) = (&start, &call);
                scope.spawn(move || {
                    start.wait();
                    call(index)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| match thread.join() {
                Ok(output) => output,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Runs `call(0)`, ..., `call(count - 1)` at the same time and returns their outputs in
/// index order. The futures may borrow from the caller.
///
/// On a multi-thread tokio runtime each call gets its own OS thread ([`in_parallel`]), so
/// that locking is exercised by real parallelism, not only by interleaving at `.await`
/// points. Elsewhere (a current-thread runtime, another executor) the calls are polled as
/// interleaved futures, which still overlaps every round trip to a server.
pub async fn concurrently<T, F, Fut>(count: usize, call: F) -> Vec<T>
where
    F: Fn(usize) -> Fut + Sync,
    Fut: Future<Output = T>,
    T: Send,
{
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            // The calling worker blocks while the threads run; `block_in_place` hands its
            // other tasks (connection drivers, pools) to another worker first.
            tokio::task::block_in_place(|| in_parallel(count, |index| handle.block_on(call(index))))
        }
        _ => interleaved(count, &call).await,
    }
}

async fn interleaved<T, F, Fut>(count: usize, call: &F) -> Vec<T>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T>,
{
    let mut futures: Vec<Pin<Box<Fut>>> = (0..count).map(|index| Box::pin(call(index))).collect();
    let mut outputs: Vec<Option<T>> = (0..count).map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(context) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    async fn overlap_is_seen(in_flight: &AtomicUsize, most: &AtomicUsize) -> usize {
        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        // Wait until every call has started: only possible if they overlap.
        while most.load(Ordering::SeqCst) < 8 {
            tokio::task::yield_now().await;
        }
        in_flight.fetch_sub(1, Ordering::SeqCst);
        now
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn threads_overlap_and_keep_order() {
        let (in_flight, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let outputs = concurrently(8, |index| {
            let (in_flight, most) = (&in_flight, &most);
            async move {
                overlap_is_seen(in_flight, most).await;
                index * 10
            }
        })
        .await;
        assert_eq!(outputs, (0..8).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 8);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn futures_interleave_on_one_thread() {
        let (in_flight, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let outputs = concurrently(8, |index| {
            let (in_flight, most) = (&in_flight, &most);
            async move {
                overlap_is_seen(in_flight, most).await;
                index
            }
        })
        .await;
        assert_eq!(outputs, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn closures_run_together() {
        let waiting = AtomicUsize::new(0);
        let outputs = in_parallel(4, |index| {
            waiting.fetch_add(1, Ordering::SeqCst);
            // Returns only once all four run at once.
            while waiting.load(Ordering::SeqCst) < 4 {
                std::thread::yield_now();
            }
            index
        });
        assert_eq!(outputs, vec![0, 1, 2, 3]);
    }
}
