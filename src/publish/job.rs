//! What a step writes to the runner's files: outputs and the job summary (`$GITHUB_OUTPUT`,
//! `$GITHUB_STEP_SUMMARY`). Workflow commands are made in [`crate::log`] (groups, fences) and
//! [`crate::output::github`] (annotations).

use std::io::Write;
use std::path::Path;

use crate::log::random_token;

/// GitHub drops a step summary over 1 MiB.
pub const SUMMARY_LIMIT: usize = 1024 * 1024;

/// Appends `name<<DELIM` … `DELIM` to the output file, with a random delimiter the value cannot contain.
pub fn set_output(file: &Path, name: &str, value: &str) -> std::io::Result<()> {
    let mut delimiter = format!("ghadelimiter_{}", random_token()?);
    while value.contains(&delimiter) {
        delimiter = format!("ghadelimiter_{}", random_token()?);
    }
    append(
        file,
        &format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"),
    )
}

/// Appends Markdown to the step summary, keeping the whole file under GitHub's 1 MiB with a note.
pub fn append_summary(file: &Path, text: &str) -> std::io::Result<()> {
    let used = std::fs::metadata(file)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    let note = "\n\n… the summary is cut here at GitHub's 1 MiB limit: the `aayudha-pack` artifact holds everything.\n";
    let room = SUMMARY_LIMIT.saturating_sub(used);
    if text.len() <= room {
        return append(file, text);
    }
    let mut cut = room.saturating_sub(note.len());
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    append(file, &format!("{}{note}", &text[..cut]))
}

/// The job's output and summary files (`None` outside Actions); a file that cannot be written is a
/// warning on the log, never a failure of the step.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub output: Option<&'a Path>,
    pub summary: Option<&'a Path>,
}

impl<'a> Job<'a> {
    /// The files the runner named (`$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`).
    pub fn of(github: &'a crate::settings::github::GitHubEnv) -> Job<'a> {
        Job {
            output: github.output.as_deref(),
            summary: github.step_summary.as_deref(),
        }
    }

    /// Sets the step output `name`.
    pub fn output(&self, log: &mut dyn Write, name: &str, value: &str) {
        if let Some(file) = self.output
            && let Err(e) = set_output(file, name, value)
        {
            let _ = writeln!(
                log,
                "warning: cannot write the output `{name}` to `{}`: {e}",
                file.display()
            );
        }
    }

    /// Appends Markdown to the job summary.
    pub fn summary(&self, log: &mut dyn Write, text: &str) {
        if let Some(file) = self.summary
            && let Err(e) = append_summary(file, text)
        {
            let _ = writeln!(
                log,
                "warning: cannot write the job summary `{}`: {e}",
                file.display()
            );
        }
    }
}

fn append(file: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?
        .write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_value_cannot_end_its_own_heredoc() {
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join("output");
        set_output(&file, "result", "line 1\nghadelimiter_x\nline 3").expect("write");
        let text = std::fs::read_to_string(&file).expect("read");
        let first = text.lines().next().expect("line");
        let delimiter = first.strip_prefix("result<<").expect("heredoc");
        assert!(delimiter.len() > "ghadelimiter_".len() + 16);
        assert_eq!(text.matches(delimiter).count(), 2);
        assert!(text.ends_with(&format!("{delimiter}\n")));
    }

    #[test]
    fn the_summary_stays_under_the_limit_with_a_note() {
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join("summary.md");
        append_summary(&file, &"é".repeat(400_000)).expect("first");
        append_summary(&file, &"x".repeat(600_000)).expect("second");
        let text = std::fs::read_to_string(&file).expect("read: valid UTF-8");
        assert!(text.len() <= SUMMARY_LIMIT, "{}", text.len());
        assert!(text.ends_with("holds everything.\n"));
    }
}
