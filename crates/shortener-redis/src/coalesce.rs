//! Concurrent decisions on one bucket, coalesced: while a script call for a bucket is in
//! flight, further decisions on it (same policy, same cost) queue, and when that call
//! returns they leave together in one batch call, which the script decides one after
//! another at one instant of Redis's clock, exactly as the same calls arriving at once
//! would be decided. The first of the queue leads the batch; the others wait for its
//! answer. A hot bucket (one link under heavy traffic) then costs Redis, and this node,
//! one call per round trip instead of one per request.
//!
//! The lead is a value, [`Lead`], that hands the bucket over when it is dropped: after its
//! call, or when its request is cancelled, even while the lead is still unread in a
//! channel. Decisions of a batch whose leader was cancelled before it answered queue
//! again; that batch may have taken its tokens in Redis already, so tokens can be lost
//! this way, never granted twice.
//!
//! Each decision carries its [`Deadline`], fixed before it queues, and a batch call is
//! bounded by the earliest of its decisions' deadlines. A queued decision then needs no
//! timer of its own: the call it waits behind started before it queued, so that call's
//! deadline is no later than its own, and the batch it leaves in is bounded by a deadline
//! no later than its own either. Only a decision queued again (its leader was cancelled)
//! may wait behind a call that started after it, so it waits under its own deadline.

use std::sync::{Arc, Mutex, PoisonError};

use shortener_core::{Decision, FastMap, LimiterError};
use tokio::sync::oneshot;

use crate::deadline::Deadline;

/// What is coalesced: one bucket, one policy, one cost.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Bucket {
    pub key: String,
    pub capacity: u64,
    pub interval_us: u64,
    pub cost: u64,
}

/// A decision's turn: decided by another decision's call, or leading a call.
pub(crate) enum Turn {
    Decided(Result<Decision, LimiterError>),
    Lead(Batch),
}

/// The call a decision leads: for itself and the decisions queued behind it.
pub(crate) struct Batch {
    lead: Lead,
    followers: Vec<Waiter>,
    deadline: Deadline,
}

impl Batch {
    /// Decisions this call makes: the leader's and its followers'.
    pub(crate) fn count(&self) -> usize {
        self.followers.len() + 1
    }

    /// The earliest deadline of the call's decisions: the call's own.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// Hands the bucket over, then the call's decisions out, in order: the leader's own
    /// first (returned), then one per follower. A failed call fails them all.
    pub(crate) fn answer(
        self,
        result: Result<Vec<Decision>, LimiterError>,
    ) -> Result<Decision, LimiterError> {
        let Self {
            lead, followers, ..
        } = self;
        drop(lead);
        let mut decisions = match result {
            Ok(decisions) => decisions.into_iter(),
            Err(error) => {
                for follower in followers {
                    let _ = follower.sender.send(Message::Decided(Err(error.clone())));
                }
                return Err(error);
            }
        };
        let own = decisions.next().ok_or_else(|| {
            LimiterError::Unexpected("an empty batch of decisions".to_owned().into())
        });
        for (follower, decision) in followers.into_iter().zip(decisions) {
            let _ = follower.sender.send(Message::Decided(Ok(decision)));
        }
        own
    }
}

/// Waits for a decision's turn on `bucket`: at once the lead when no call is in flight,
/// else behind the call in flight (see the module doc for `deadline`).
pub(crate) async fn turn(flights: &Arc<Flights>, bucket: &Bucket, deadline: Deadline) -> Turn {
    let mut again = false;
    loop {
        let (lead, mut followers) = match flights.join(bucket, deadline) {
            Joined::Lead(lead) => (lead, Vec::new()),
            Joined::Wait(message) => {
                let message = if again {
                    match deadline.bound(async { Ok(message.await) }).await {
                        Ok(message) => message,
                        Err(error) => return Turn::Decided(Err(error)),
                    }
                } else {
                    message.await
                };
                match message {
                    Ok(Message::Decided(result)) => return Turn::Decided(result),
                    Ok(Message::Lead(lead, followers)) => (lead, followers),
                    // The leader of this decision's batch was cancelled: queue again.
                    Err(_) => {
                        again = true;
                        continue;
                    }
                }
            }
        };
        // A queued decision whose request was dropped meanwhile takes no token.
        followers.retain(|follower| !follower.sender.is_closed());
        let deadline = (followers.iter()).fold(deadline, |earliest, follower| {
            earliest.min(follower.deadline)
        });
        return Turn::Lead(Batch {
            lead,
            followers,
            deadline,
        });
    }
}

/// What a queued decision is told: its decision, or to lead a batch of queued ones.
enum Message {
    Decided(Result<Decision, LimiterError>),
    Lead(Lead, Vec<Waiter>),
}

/// A queued decision: where its answer goes, and by when it is due.
struct Waiter {
    sender: oneshot::Sender<Message>,
    deadline: Deadline,
}

/// A decision's place: leading the call on its bucket, or queued behind it.
enum Joined {
    Lead(Lead),
    Wait(oneshot::Receiver<Message>),
}

/// The buckets with a call in flight, and the decisions queued behind each.
#[derive(Default)]
pub(crate) struct Flights {
    queues: Mutex<FastMap<Bucket, Vec<Waiter>>>,
}

impl Flights {
    /// Queues a decision behind the call in flight on `bucket`, or, without one, makes it
    /// the leader of the next call.
    fn join(self: &Arc<Self>, bucket: &Bucket, deadline: Deadline) -> Joined {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(queue) = queues.get_mut(bucket) {
            let (sender, receiver) = oneshot::channel();
            queue.push(Waiter { sender, deadline });
            Joined::Wait(receiver)
        } else {
            queues.insert(bucket.clone(), Vec::new());
            Joined::Lead(Lead {
                flights: Arc::clone(self),
                bucket: bucket.clone(),
                armed: true,
            })
        }
    }

    /// Ends the call in flight on `bucket`: the first decision still waiting leads the
    /// others; without any, the bucket has no call in flight.
    fn hand_over(self: &Arc<Self>, bucket: &Bucket) {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = queues.get_mut(bucket) else {
            return;
        };
        let mut waiting = std::mem::take(queue);
        while !waiting.is_empty() {
            let next = waiting.remove(0);
            let lead = Lead {
                flights: Arc::clone(self),
                bucket: bucket.clone(),
                armed: true,
            };
            match next.sender.send(Message::Lead(lead, waiting)) {
                Ok(()) => return,
                // That decision is gone: the next one leads. The lead that came back is
                // disarmed, or its drop would hand over again, under this lock.
                Err(Message::Lead(mut lead, rest)) => {
                    lead.armed = false;
                    waiting = rest;
                }
                Err(Message::Decided(_)) => break,
            }
        }
        queues.remove(bucket);
    }

    /// Buckets with a call in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The lead of the call on a bucket; dropping it hands the bucket over.
struct Lead {
    flights: Arc<Flights>,
    bucket: Bucket,
    armed: bool,
}

impl Drop for Lead {
    fn drop(&mut self) {
        if self.armed {
            self.flights.hand_over(&self.bucket);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::FutureExt as _;

    use super::*;

    #[tokio::test]
    async fn a_batch_is_due_by_the_earliest_deadline_of_its_decisions() {
        let flights = Arc::new(Flights::default());
        let bucket = Bucket {
            key: "k".to_owned(),
            capacity: 1,
            interval_us: 1,
            cost: 1,
        };
        let early = Deadline::after(Duration::from_secs(5));
        let late = Deadline::after(Duration::from_secs(10));
        let Turn::Lead(first) = turn(&flights, &bucket, late).await else {
            panic!("no call in flight: the first decision leads");
        };
        // Two decisions queue behind the call in flight; the second queued is due first
        // (as a decision queued again keeps the deadline of its start).
        let mut second = Box::pin(turn(&flights, &bucket, late));
        let mut third = Box::pin(turn(&flights, &bucket, early));
        assert!((&mut second).now_or_never().is_none());
        assert!((&mut third).now_or_never().is_none());
        let failed = LimiterError::Unavailable("a failed call".to_owned().into());
        assert!(first.answer(Err(failed)).is_err());
        let Some(Turn::Lead(batch)) = (&mut second).now_or_never() else {
            panic!("the first queued decision leads the next call");
        };
        assert_eq!(batch.count(), 2);
        assert_eq!(batch.deadline(), early);
        drop((batch, third));
        assert_eq!(flights.in_flight(), 0);
    }
}
