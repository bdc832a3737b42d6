//! A command that could not do its work — what failed, why, and how to fix it: the only type a command
//! returns besides its exit status. Each error enum of the library says its exit status and hint by
//! [`Diagnose`], implemented beside it, so a `Failure` comes from `?`.

use std::fmt;

use crate::exit::ExitStatus;

/// What a person is told of an error: the exit status it means, and how to fix it when there is a way.
pub trait Diagnose: std::error::Error {
    fn status(&self) -> ExitStatus;
    fn hint(&self) -> Option<String> {
        None
    }
}

/// Any diagnosed error as a failure: its message, its sources as causes, its status and hint.
impl<E: Diagnose> From<E> for Failure {
    fn from(e: E) -> Failure {
        let hint = Diagnose::hint(&e);
        Failure::from_error(e.status(), &e).with_optional_hint(hint)
    }
}

/// A command that could not do its work: what failed, why, and how to fix it.
#[derive(Debug)]
pub struct Failure {
    pub status: ExitStatus,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

impl Failure {
    pub fn new(status: ExitStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            causes: Vec::new(),
            hint: None,
        }
    }

    /// A usage or contract error (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(ExitStatus::Usage, message)
    }

    /// An unexpected failure: I/O, the network (exit 1).
    pub fn unexpected(message: impl Into<String>) -> Failure {
        Failure::new(ExitStatus::Failure, message)
    }

    /// A failure whose message is `error` itself and whose causes are its sources.
    pub fn from_error(status: ExitStatus, error: &dyn std::error::Error) -> Failure {
        let mut failure = Failure::new(status, error.to_string());
        let mut source = error.source();
        while let Some(e) = source {
            failure.cause(e.to_string());
            source = e.source();
        }
        failure
    }

    /// Adds a `caused by:` line, unless it only repeats the message or the line before it (some errors'
    /// sources say the same again).
    fn cause(&mut self, text: String) {
        if self.causes.last() != Some(&text) && text != self.message {
            self.causes.push(text);
        }
    }

    /// Adds a hint when there is one.
    pub fn with_optional_hint(self, hint: Option<impl Into<String>>) -> Failure {
        match hint {
            Some(hint) => self.with_hint(hint),
            None => self,
        }
    }

    /// Adds the chain of an underlying error as `caused by:` lines (a line that only repeats the one
    /// before it, as some errors' sources do, once).
    pub fn caused_by(mut self, error: impl std::error::Error) -> Failure {
        self.cause(error.to_string());
        let mut source = error.source();
        while let Some(e) = source {
            self.cause(e.to_string());
            source = e.source();
        }
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
