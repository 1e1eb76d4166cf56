//! `Cause`: what an error of a port says (its message) and, where an adapter had one, the
//! native error behind it (a sqlx or redis error).
//!
//! The message shows the native error whole: the libraries behind our adapters put their
//! own causes in their text. So the native error is kept for code that needs its type
//! ([`Cause::native`]), not as `source()`, which would print the same text again: an
//! error either says its cause or returns it as its source, never both.
//!
//! It is `Clone` (the source is shared), and two causes are equal when their messages are:
//! errors are compared by what they say, not by the library value behind them.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// A message, and the error it came from, if any.
#[derive(Clone)]
pub struct Cause {
    message: String,
    native: Option<Arc<dyn Error + Send + Sync>>,
}

impl Cause {
    /// A cause with no error behind it.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            native: None,
        }
    }

    /// `error` as a cause: its text as the message, and itself as the native error.
    pub fn from_error(error: impl Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string(),
            native: Some(Arc::new(error)),
        }
    }

    /// `message`, which shows `error`'s text, with `error` as the native error.
    pub fn with_native(
        message: impl Into<String>,
        error: impl Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            native: Some(Arc::new(error)),
        }
    }

    /// The same cause, its message prefixed with `context`.
    #[must_use]
    pub fn context(self, context: &str) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
            native: self.native,
        }
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The adapter library's error behind the message, for code that needs its type.
    pub fn native(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.native.as_deref()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Cause");
        debug.field("message", &self.message);
        if let Some(native) = &self.native {
            debug.field("native", native);
        }
        debug.finish()
    }
}

/// The message, so that a cause reads as the text it says.
impl std::ops::Deref for Cause {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

/// No `source()`: the message shows the native error already (see the module doc).
impl Error for Cause {}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for Cause {}

impl From<String> for Cause {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// `error` and every source under it, on one line, joined by `: `.
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        line.push_str(": ");
        line.push_str(&source.to_string());
        next = source.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Io;

    impl fmt::Display for Io {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection reset by peer")
        }
    }

    impl Error for Io {}

    /// As sqlx's errors are: the text shows the cause, which is also the source.
    #[derive(Debug)]
    struct Driver(Io);

    impl fmt::Display for Driver {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "error communicating with database: {}", self.0)
        }
    }

    impl Error for Driver {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("storage unavailable: {0}")]
    struct Unavailable(Cause);

    #[test]
    fn a_cause_keeps_its_native_error_and_a_chain_says_each_text_once() {
        let cause = Cause::from_error(Driver(Io)).context("insert");
        assert_eq!(
            cause.to_string(),
            "insert: error communicating with database: connection reset by peer"
        );
        assert!(
            cause
                .native()
                .and_then(|e| e.downcast_ref::<Driver>())
                .is_some()
        );
        assert!(cause.source().is_none(), "the message shows it");
        assert_eq!(
            chain(&Unavailable(cause.clone())),
            "storage unavailable: insert: error communicating with database: connection reset by peer"
        );
        assert_eq!(
            cause,
            Cause::new("insert: error communicating with database: connection reset by peer")
        );
        assert!(Cause::new("plain").native().is_none());
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot start")]
    struct Start(#[source] Unavailable);

    #[test]
    fn a_chain_joins_each_source_it_is_given() {
        let start = Start(Unavailable(Cause::new("disk gone")));
        assert_eq!(
            chain(&start),
            "cannot start: storage unavailable: disk gone"
        );
    }
}
