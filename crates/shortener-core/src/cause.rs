//! `Cause`: what an error of a port says (its message) and, where an adapter had one, the
//! native error behind it (a sqlx or redis error), kept as its `source()` rather than
//! flattened into text, so that a log can walk the whole chain.
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
    source: Option<Arc<dyn Error + Send + Sync>>,
}

impl Cause {
    /// A cause with no error behind it.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// `error` as a cause: its text as the message, and itself as the source.
    pub fn from_error(error: impl Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string(),
            source: Some(Arc::new(error)),
        }
    }

    /// `message`, caused by `error`.
    pub fn with_source(
        message: impl Into<String>,
        error: impl Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(Arc::new(error)),
        }
    }

    /// The same cause, its message prefixed with `context`.
    #[must_use]
    pub fn context(self, context: &str) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
            source: self.source,
        }
    }

    pub fn message(&self) -> &str {
        &self.message
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
        if let Some(source) = &self.source {
            debug.field("source", source);
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

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn Error + 'static))
    }
}

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

/// `error` and every source under it, on one line: each text once, joined by `: ` (a
/// cause whose text its parent already shows adds nothing and is left out).
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let text = source.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
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

    #[derive(Debug)]
    struct Driver(Io);

    impl fmt::Display for Driver {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("error communicating with database")
        }
    }

    impl Error for Driver {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_keeps_its_source_and_the_chain_shows_each_text_once() {
        let cause = Cause::from_error(Driver(Io)).context("insert");
        assert_eq!(
            cause.to_string(),
            "insert: error communicating with database"
        );
        let source = cause.source().expect("the driver's error");
        assert!(source.downcast_ref::<Driver>().is_some());
        assert_eq!(
            chain(&cause),
            "insert: error communicating with database: connection reset by peer"
        );
        assert_eq!(
            cause.clone(),
            Cause::new("insert: error communicating with database")
        );
        assert!(Cause::new("plain").source().is_none());
    }
}
