//! Mapping of sqlx errors onto the port's error variants.

use shortener_core::{Cause, InsertError, RepositoryError};
use sqlx::error::DatabaseError;

/// SQLite primary result codes that mean "not now" rather than "never": the database is
/// busy or locked (after the busy timeout), out of memory, or its file or disk failed.
/// <https://www.sqlite.org/rescode.html>
const TRANSIENT_CODES: &[i32] = &[
    5,  // SQLITE_BUSY
    6,  // SQLITE_LOCKED
    7,  // SQLITE_NOMEM
    10, // SQLITE_IOERR
    14, // SQLITE_CANTOPEN
    15, // SQLITE_PROTOCOL
];

/// SQLITE_FULL: the disk is full, or the database reached `max_page_count`. SQLite rolls
/// the statement (or transaction) back, so nothing stored is harmed.
const FULL_CODE: i32 = 13;

/// `Full` for a full disk, `Unavailable` for what may pass if retried later,
/// `Unexpected` for the rest.
pub(crate) fn storage_error(error: sqlx::Error) -> RepositoryError {
    if primary_code(&error) == Some(FULL_CODE) {
        return RepositoryError::Full(Cause::from_error(error));
    }
    let transient = match &error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(_) => {
            primary_code(&error).is_some_and(|code| TRANSIENT_CODES.contains(&code))
        }
        _ => false,
    };
    if transient {
        RepositoryError::Unavailable(Cause::from_error(error))
    } else {
        RepositoryError::Unexpected(Cause::from_error(error))
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

/// The primary result code of a database error.
fn primary_code(error: &sqlx::Error) -> Option<i32> {
    // sqlx reports the extended result code; its low byte is the primary code.
    error
        .as_database_error()?
        .code()?
        .parse::<i32>()
        .ok()
        .map(|code| code & 0xff)
}
