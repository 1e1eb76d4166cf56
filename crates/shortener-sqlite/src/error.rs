//! Mapping of sqlx errors onto the port's error variants.

use shortener_core::{InsertError, RepositoryError};
use sqlx::error::DatabaseError;

/// SQLite primary result codes that mean "not now" rather than "never": the database is
/// busy or locked (after the busy timeout), out of memory, or its file or disk failed.
/// <https://www.sqlite.org/rescode.html>
const TRANSIENT_CODES: &[i32] = &[
    5,  // SQLITE_BUSY
    6,  // SQLITE_LOCKED
    7,  // SQLITE_NOMEM
    10, // SQLITE_IOERR
    13, // SQLITE_FULL
    14, // SQLITE_CANTOPEN
    15, // SQLITE_PROTOCOL
];

/// `Unavailable` for what may pass if retried later, `Unexpected` for the rest.
pub(crate) fn storage_error(error: sqlx::Error) -> RepositoryError {
    let transient = match &error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database_error) => is_transient(database_error.as_ref()),
        _ => false,
    };
    if transient {
        RepositoryError::Unavailable(error.to_string())
    } else {
        RepositoryError::Unexpected(error.to_string())
    }
}

/// `CodeTaken` for a unique violation (the primary key), otherwise [`storage_error`].
pub(crate) fn insert_error(error: sqlx::Error) -> InsertError {
    if error
        .as_database_error()
        .is_some_and(DatabaseError::is_unique_violation)
    {
        InsertError::CodeTaken
    } else {
        InsertError::Storage(storage_error(error))
    }
}

fn is_transient(error: &dyn DatabaseError) -> bool {
    // sqlx reports the extended result code; its low byte is the primary code.
    error
        .code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| TRANSIENT_CODES.contains(&(code & 0xff)))
}
