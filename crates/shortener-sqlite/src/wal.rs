//! A bounded write-ahead log: a task that watches the size of the `-wal` file and resets
//! it when it passes the bound, and the checkpoint at close.
//!
//! SQLite's own auto-checkpoint is PASSIVE: it copies WAL frames into the database but
//! never waits for readers, and the WAL is only rewound when no connection still reads
//! from it. Under steady traffic some connection always does, so the WAL grows without
//! end (checkpoint starvation). This task escalates: past the bound it first runs a
//! PASSIVE checkpoint, which copies the bulk without blocking anyone, and when the file
//! is still past the bound a TRUNCATE one, which waits for the readers to move to the
//! latest snapshot, copies the rest, and truncates the file to zero bytes.
//!
//! A TRUNCATE checkpoint needs a moment with no writer. SQLite's lock has no queue, and
//! under steady creates some connection always wants it, so the checkpoint would lose
//! that race for good; instead it takes the repository's [`WriteGate`], which every
//! write holds: the write running finishes, new ones wait for the checkpoint (a few ms
//! per MiB).
//! `journal_size_limit` (set on every connection) shrinks the file whenever SQLite
//! rewinds the WAL by itself, so the high-water mark does not stay on disk.
//!
//! The task checkpoints on a connection of its own whose busy timeout is
//! [`CHECKPOINT_WAIT`], not the pool's 5 s: a TRUNCATE checkpoint holds off writers while
//! it waits for readers, so it gives up soon (and tries again next tick) rather than
//! stall creates behind a slow reader.
//!
//! The bound is checked every [`TICK`], so the WAL can pass it by what is written in one
//! tick plus the duration of the checkpoint. It is not used for memory databases, which
//! have no WAL.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions as _, Connection as _};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::storage_error;

/// Every write of the repository holds it, and so does a TRUNCATE checkpoint: SQLite runs
/// one writer at a time anyway, and here writers wait in turn (tokio's lock is fair, so a
/// waiting checkpoint is not starved by writes either). Waiting in SQLite's busy handler
/// instead, a writer sleeps in growing steps and loses the lock to writers that come back
/// at once. Creates behind a large values flush then waited many times their p99 without one.
/// See `cargo xtask bench --only creates`; the case with a flush is measured by hand in
/// docs/BENCHMARKS.md, "Where the time goes".
pub(crate) type WriteGate = tokio::sync::Mutex<()>;

/// How often the size of the WAL is looked at (one `stat`).
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// How long a TRUNCATE checkpoint of the task waits for readers (while writes wait).
const CHECKPOINT_WAIT: Duration = Duration::from_millis(250);

/// Ticks without a TRUNCATE after one could not finish: a reader that holds on would
/// otherwise have writers held off by back-to-back checkpoints for good.
const BACKOFF_TICKS: u32 = 3;

/// Counters of the checkpoints this task ran, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Bytes of the `-wal` file now (0 when there is none).
    pub wal_bytes: u64,
    /// PASSIVE checkpoints run because the WAL passed the bound.
    pub passive_checkpoints: u64,
    /// TRUNCATE checkpoints run because a PASSIVE one left the WAL past the bound.
    pub truncate_checkpoints: u64,
    /// TRUNCATE checkpoints that could not finish (readers held on past the busy
    /// timeout, or an error); the next tick tries again.
    pub incomplete_checkpoints: u64,
}

/// The WAL of one database file and the counters of its checkpoints.
#[derive(Debug)]
pub(crate) struct Wal {
    path: PathBuf,
    max_bytes: u64,
    passive: AtomicU64,
    truncate: AtomicU64,
    incomplete: AtomicU64,
}

/// What the task remembers between ticks.
#[derive(Debug, Default)]
struct Backoff {
    /// Ticks to let pass before the next TRUNCATE.
    ticks_left: u32,
}

impl Wal {
    /// The WAL of the database file `database`, bounded to `max_bytes`.
    pub(crate) fn new(database: &Path, max_bytes: u64) -> Self {
        let mut path = database.as_os_str().to_owned();
        path.push("-wal");
        Self {
            path: path.into(),
            max_bytes,
            passive: AtomicU64::new(0),
            truncate: AtomicU64::new(0),
            incomplete: AtomicU64::new(0),
        }
    }

    /// Bytes of the `-wal` file; 0 when it does not exist.
    pub(crate) fn bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |metadata| metadata.len())
    }

    pub(crate) fn stats(&self) -> WalStats {
        WalStats {
            wal_bytes: self.bytes(),
            passive_checkpoints: self.passive.load(Ordering::Relaxed),
            truncate_checkpoints: self.truncate.load(Ordering::Relaxed),
            incomplete_checkpoints: self.incomplete.load(Ordering::Relaxed),
        }
    }

    /// One look at the WAL, and the checkpoints it calls for.
    async fn keep_bounded(
        &self,
        connection: &mut SqliteConnection,
        gate: &WriteGate,
        backoff: &mut Backoff,
    ) {
        if self.bytes() <= self.max_bytes {
            return;
        }
        if backoff.ticks_left > 0 {
            backoff.ticks_left -= 1;
            return;
        }
        self.passive.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = checkpoint(&mut *connection, Mode::Passive).await {
            tracing::warn!(%error, "passive WAL checkpoint failed");
        }
        if self.bytes() <= self.max_bytes {
            return;
        }
        self.truncate.fetch_add(1, Ordering::Relaxed);
        let truncated = {
            let _no_writes = gate.lock().await;
            checkpoint(&mut *connection, Mode::Truncate).await
        };
        match truncated {
            Ok(true) => {}
            Ok(false) => {
                backoff.ticks_left = BACKOFF_TICKS;
                self.incomplete.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    wal_bytes = self.bytes(),
                    "WAL checkpoint incomplete: readers held on past the busy timeout"
                );
            }
            Err(error) => {
                backoff.ticks_left = BACKOFF_TICKS;
                self.incomplete.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%error, "truncating WAL checkpoint failed");
            }
        }
    }
}

/// The checkpoint modes used here. <https://www.sqlite.org/pragma.html#pragma_wal_checkpoint>
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// Copies what it can; never waits.
    Passive,
    /// Waits for readers (with the busy timeout), copies everything, empties the file.
    Truncate,
}

/// Runs `PRAGMA wal_checkpoint(mode)`; whether it checkpointed every frame (SQLite
/// answers busy = 1 when readers or a writer kept it from finishing).
pub(crate) async fn checkpoint<'c, E>(
    executor: E,
    mode: Mode,
) -> Result<bool, shortener_core::RepositoryError>
where
    E: sqlx::Executor<'c, Database = sqlx::Sqlite>,
{
    let sql = match mode {
        Mode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Mode::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    let (busy, _frames, _checkpointed): (i64, i64, i64) = sqlx::query_as(sql)
        .fetch_one(executor)
        .await
        .map_err(storage_error)?;
    Ok(busy == 0)
}

/// The running checkpoint task; stopped between two looks, never inside a checkpoint.
#[derive(Debug)]
pub(crate) struct WalTask {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl WalTask {
    /// Starts the task; its connection is opened with `options` and a short busy timeout.
    pub(crate) fn spawn(
        options: SqliteConnectOptions,
        wal: Arc<Wal>,
        gate: Arc<WriteGate>,
    ) -> Self {
        let options = options.busy_timeout(CHECKPOINT_WAIT);
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(TICK);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut connection: Option<SqliteConnection> = None;
            let mut backoff = Backoff::default();
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = &mut stopped => break,
                }
                if connection.is_none() {
                    match options.connect().await {
                        Ok(opened) => connection = Some(opened),
                        Err(error) => {
                            tracing::warn!(%error, "cannot open the WAL checkpoint connection");
                            continue;
                        }
                    }
                }
                if let Some(connection) = connection.as_mut() {
                    wal.keep_bounded(connection, &gate, &mut backoff).await;
                }
            }
            if let Some(connection) = connection {
                let _ = connection.close().await;
            }
        });
        Self { stop, task }
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wal_sits_beside_the_database() {
        let wal = Wal::new(Path::new("/data/links.db"), 1);
        assert_eq!(wal.path, Path::new("/data/links.db-wal"));
        assert_eq!(wal.bytes(), 0, "no file, no bytes");
    }
}
