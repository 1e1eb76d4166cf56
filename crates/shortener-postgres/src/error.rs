//! Mapping of sqlx errors onto the port's error variants.

use shortener_core::{Cause, InsertError, RepositoryError};

/// SQLSTATE of a unique violation.
pub(crate) const UNIQUE_VIOLATION: &str = "23505";

/// SQLSTATE classes and codes that mean "not now" rather than "never".
/// <https://www.postgresql.org/docs/current/errcodes-appendix.html>
const TRANSIENT_CLASSES: &[&str] = &[
    "08", // connection exception
    "53", // insufficient resources: too many connections, disk full, out of memory
    "58", // system error, such as an IO error on the server
];
const TRANSIENT_CODES: &[&str] = &[
    "57P01", // admin_shutdown: the session was terminated, or the server is stopping
    "57P02", // crash_shutdown
    "57P03", // cannot_connect_now: the server is starting
    "57014", // query_canceled, such as by statement_timeout
    "40001", // serialization_failure
    "40P01", // deadlock_detected: concurrent batches locked rows in another order
    "25006", // read_only_sql_transaction: connected to a standby after a failover
];

/// `Unavailable` for what may pass if retried later, `Unexpected` for the rest.
pub(crate) fn storage_error(error: sqlx::Error) -> RepositoryError {
    let transient = match &error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database_error) => database_error
            .code()
            .is_some_and(|code| is_transient(&code)),
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
    let code = error.as_database_error().and_then(|e| e.code());
    if code.as_deref() == Some(UNIQUE_VIOLATION) {
        InsertError::CodeTaken
    } else {
        InsertError::Storage(storage_error(error))
    }
}

/// The same error, its message prefixed with `context`.
pub(crate) fn with_context(error: RepositoryError, context: &str) -> RepositoryError {
    match error {
        RepositoryError::Unavailable(m) => RepositoryError::Unavailable(m.context(context)),
        RepositoryError::Full(m) => RepositoryError::Full(m.context(context)),
        RepositoryError::Unexpected(m) => RepositoryError::Unexpected(m.context(context)),
    }
}

fn is_transient(code: &str) -> bool {
    TRANSIENT_CODES.contains(&code)
        || TRANSIENT_CLASSES
            .iter()
            .any(|class| code.starts_with(class))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_sqlstates_are_recognised() {
        for code in ["57P01", "08006", "53300", "40P01", "58030"] {
            assert!(is_transient(code), "{code}");
        }
        for code in ["23505", "42P01", "22003", "28P01", "57P04"] {
            assert!(!is_transient(code), "{code}");
        }
    }

    #[test]
    fn pool_and_io_errors_are_unavailable() {
        for error in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into()),
        ] {
            assert!(matches!(
                storage_error(error),
                RepositoryError::Unavailable(_)
            ));
        }
        assert!(matches!(
            storage_error(sqlx::Error::RowNotFound),
            RepositoryError::Unexpected(_)
        ));
        // The text says the sqlx error once, and the sqlx error itself is kept.
        let error = with_context(
            storage_error(sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into())),
            "insert",
        );
        let chain = shortener_core::cause::chain(&error);
        assert_eq!(
            chain,
            "storage unavailable: insert: error communicating with database: connection reset"
        );
        let sqlx = error
            .cause()
            .native()
            .and_then(|e| e.downcast_ref::<sqlx::Error>());
        assert!(matches!(sqlx, Some(sqlx::Error::Io(_))), "{error:?}");
    }
}
