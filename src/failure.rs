//! A command that could not do its work — what failed, why, and how to fix it — and the conversions of
//! the library's typed errors into one: the only type a command returns besides its exit status.

use std::fmt;

use crate::exit::ExitStatus;

/// A GitHub refusal as a failure with its hint (exit 1).
pub(crate) fn github_failure(e: crate::github::GitHubError) -> Failure {
    let hint = e.hint();
    Failure::from_error(ExitStatus::Failure, &e).with_optional_hint(hint)
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

/// A git error as a failure: a usage error with a hint when the user can fix it, else exit 1.
pub(crate) fn git_failure(e: crate::git::GitError) -> Failure {
    use crate::git::GitError;
    let (status, hint) = match &e {
        GitError::NotARepository { .. } => (
            ExitStatus::Usage,
            Some("run aayu inside a git repository, or pass `-C DIR`"),
        ),
        GitError::Bare { .. } => (
            ExitStatus::Usage,
            Some("run aayu in a checkout with a working tree"),
        ),
        GitError::Revision { .. } => (
            ExitStatus::Usage,
            Some(
                "name a commit this clone has (a SHA, a branch or HEAD~1); a shallow clone may need `fetch-depth: 0`",
            ),
        ),
        GitError::List { .. } | GitError::Io { .. } => (ExitStatus::Failure, None),
    };
    Failure::from_error(status, &e).with_optional_hint(hint)
}
