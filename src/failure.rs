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
    /// The failure as the user reads it: `error:`, then a `caused by:` line per cause and a `hint:` line.
    pub fn render(&self) -> String {
        let mut text = format!("error: {}\n", self.message);
        for cause in &self.causes {
            text.push_str(&format!("  caused by: {cause}\n"));
        }
        if let Some(hint) = &self.hint {
            text.push_str(&format!("  hint: {hint}\n"));
        }
        text
    }

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

    /// Adds a `caused by:` line, unless the message or the line before it already says it — the same
    /// text, or its end after `: ` (an error whose one-line message quotes its source, as the sandbox's
    /// and the runners' do because their texts also land in a check's reason).
    fn cause(&mut self, text: String) {
        let says = |line: &str| line == text || line.ends_with(&format!(": {text}"));
        if !says(&self.message) && !self.causes.last().is_some_and(|line| says(line)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An error whose one-line text quotes its source, as the sandbox's build-folder errors do.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot create `/x/target`: {source}")]
    struct Quoting {
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_said_again() {
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let failure = Failure::from_error(ExitStatus::Failure, &Quoting { source: denied() });
        assert_eq!(
            failure.message,
            "cannot create `/x/target`: permission denied"
        );
        assert!(failure.causes.is_empty(), "{:?}", failure.causes);
        // A cause the message does not say is kept.
        let failure = Failure::unexpected("cannot read the pack").caused_by(denied());
        assert_eq!(failure.causes, ["permission denied"]);
    }
}
