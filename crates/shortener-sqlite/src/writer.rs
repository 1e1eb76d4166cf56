//! Group commit: one writer task inserts the links of concurrent creates in one
//! transaction, and answers each create only after that transaction commits.
//!
//! With `synchronous = FULL` every commit waits for an fsync of the WAL; batching pays
//! one fsync for a whole batch instead of one per link, and the single writer never
//! waits on SQLite's write lock for other connections' inserts. A batch is whatever is
//! queued when the writer is free (at most [`MAX_BATCH`]): under light load it is one
//! link and adds no delay.
//!
//! It is not used for the other writes (visits, deletes): they are rare next to
//! creates and go straight to the pool, taking the write lock in turn with the writer.

use shortener_core::{InsertError, Link, NewLink, RepositoryError};
use sqlx::SqlitePool;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use std::sync::Arc;

use crate::insert::{InsertRow, insert_all};
use crate::wal::WriteGate;

/// The most links one transaction inserts: enough to amortise an fsync, small enough
/// that a batch holds the write lock for a few milliseconds at most.
const MAX_BATCH: usize = 256;

/// Creates waiting for the writer; more wait in `send` (back-pressure on the handlers).
const QUEUE: usize = 4096;

/// One create waiting for its batch.
#[derive(Debug)]
struct Job {
    row: InsertRow,
    reply: oneshot::Sender<Result<Link, InsertError>>,
}

/// The handle of the writer task, shared by every clone of the repository.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
}

/// What stops the writer: it stops taking creates, commits those it took, and ends.
#[derive(Debug)]
pub(crate) struct WriterTask {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl WriterTask {
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

impl Writer {
    pub(crate) fn spawn(pool: SqlitePool, gate: Arc<WriteGate>) -> (Self, WriterTask) {
        let (jobs, receiver) = mpsc::channel(QUEUE);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(run(pool, gate, receiver, stopped));
        (Self { jobs }, WriterTask { stop, task })
    }

    /// Inserts `link` in the next batch; returns once that batch committed (or failed).
    pub(crate) async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            row: InsertRow::new(&link)?,
            reply,
        };
        let closed = || RepositoryError::Unavailable("the database is closing".into());
        self.jobs.send(job).await.map_err(|_| closed())?;
        // The writer answers every job it took; no answer means it stopped without.
        answer.await.map_err(|_| closed())?
    }
}

async fn run(
    pool: SqlitePool,
    gate: Arc<WriteGate>,
    mut jobs: mpsc::Receiver<Job>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        tokio::select! {
            biased;
            taken = jobs.recv_many(&mut batch, MAX_BATCH) => {
                if taken == 0 {
                    return;
                }
                commit(&pool, &gate, &mut batch).await;
            }
            _ = &mut stop => break,
        }
    }
    // Creates already queued were accepted: they are committed, later ones refused.
    jobs.close();
    while jobs.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit(&pool, &gate, &mut batch).await;
    }
}

/// Inserts the batch in one transaction and answers every job of it.
async fn commit(pool: &SqlitePool, gate: &WriteGate, batch: &mut Vec<Job>) {
    let inserted = {
        let _writing = gate.lock().await;
        let rows: Vec<&InsertRow> = batch.iter().map(|job| &job.row).collect();
        insert_all(pool, &rows).await
    };
    match inserted {
        Ok(results) => {
            for (job, result) in batch.drain(..).zip(results) {
                // A dropped receiver is a create whose client went away; its link stays.
                let _ = job.reply.send(result);
            }
        }
        Err(error) => {
            for job in batch.drain(..) {
                let _ = job.reply.send(Err(InsertError::Storage(error.clone())));
            }
        }
    }
}
