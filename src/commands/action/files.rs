//! What a step says to the runner: outputs and the job summary through the file commands
//! (`$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`), annotations capped per level, groups, and product output
//! fenced by `::stop-commands::` so that it cannot forge a workflow command.

use std::io::Write;
use std::path::Path;

use crate::output::github::{escape_data, escape_property};

/// GitHub drops a step summary over 1 MiB.
pub const SUMMARY_LIMIT: usize = 1024 * 1024;

/// GitHub shows at most 10 annotations of each level per step.
pub const ANNOTATIONS_PER_LEVEL: usize = 10;

/// A random token (hex) for heredoc delimiters and `::stop-commands::`, from the kernel's generator.
pub fn random_token() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if read.is_err() {
        // No /dev/urandom: the clock and the pid still make a token a product cannot predict in advance.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
            ^ u128::from(std::process::id()) << 64;
        bytes = seed.to_le_bytes();
    }
    crate::pack::hex(&bytes)
}

/// Appends `name<<DELIM` … `DELIM` to the output file, with a random delimiter the value cannot contain.
pub fn set_output(file: &Path, name: &str, value: &str) -> std::io::Result<()> {
    let mut delimiter = format!("ghadelimiter_{}", random_token());
    while value.contains(&delimiter) {
        delimiter = format!("ghadelimiter_{}", random_token());
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

fn append(file: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?
        .write_all(text.as_bytes())
}

/// Text that may hold product output, fenced so the runner reads no workflow command in it.
pub fn fenced(text: &str) -> String {
    let token = random_token();
    let mut out = format!("::stop-commands::{token}\n{text}");
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("::{token}::\n"));
    out
}

/// `::group::title` … `::endgroup::` around text.
pub fn group(title: &str, body: &str) -> String {
    let mut out = format!("::group::{}\n{body}", escape_data(title));
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("::endgroup::\n");
    out
}

/// The level of an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Notice,
    Warning,
    Error,
}

/// Annotations of one step: at most [`ANNOTATIONS_PER_LEVEL`] of each level are printed; the rest are
/// kept for the summary.
#[derive(Debug, Default)]
pub struct Annotations {
    printed: [usize; 3],
    pub lines: String,
    pub overflow: Vec<String>,
}

impl Annotations {
    pub fn add(&mut self, level: Level, file: Option<(&str, usize)>, title: &str, message: &str) {
        let (slot, word) = match level {
            Level::Notice => (0, "notice"),
            Level::Warning => (1, "warning"),
            Level::Error => (2, "error"),
        };
        if self.printed[slot] >= ANNOTATIONS_PER_LEVEL {
            let place = file.map(|(f, l)| format!("{f}:{l}: ")).unwrap_or_default();
            self.overflow
                .push(format!("{word}: {place}{title}: {message}"));
            return;
        }
        self.printed[slot] += 1;
        let mut properties = Vec::new();
        if let Some((file, line)) = file {
            properties.push(format!("file={}", escape_property(file)));
            if line > 0 {
                properties.push(format!("line={line}"));
            }
        }
        properties.push(format!("title={}", escape_property(title)));
        // GitHub cuts a message at 4096 characters; cut it first, on a character boundary.
        let message: String = message.chars().take(4000).collect();
        self.lines.push_str(&format!(
            "::{word} {}::{}\n",
            properties.join(","),
            escape_data(&message)
        ));
    }
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

    #[test]
    fn product_output_cannot_issue_workflow_commands() {
        let fenced = fenced("::set-output name=result::proven\n::add-mask::x");
        let lines: Vec<&str> = fenced.lines().collect();
        let token = lines[0].strip_prefix("::stop-commands::").expect("fence");
        assert_eq!(token.len(), 32);
        assert_eq!(lines.last().copied(), Some(format!("::{token}::").as_str()));
        assert_ne!(random_token(), random_token());
    }

    #[test]
    fn at_most_ten_annotations_a_level_the_rest_kept() {
        let mut a = Annotations::default();
        for i in 0..12 {
            a.add(
                Level::Error,
                Some(("src/a,b.rs", i + 1)),
                "drift",
                "msg\n::error::x",
            );
        }
        a.add(Level::Warning, None, "t", "w");
        assert_eq!(
            a.lines
                .lines()
                .filter(|l| l.starts_with("::error "))
                .count(),
            10
        );
        assert_eq!(
            a.lines
                .lines()
                .filter(|l| l.starts_with("::warning "))
                .count(),
            1
        );
        assert_eq!(a.overflow.len(), 2);
        assert!(
            a.lines
                .contains("file=src/a%2Cb.rs,line=1,title=drift::msg%0A::error::x")
        );
    }
}
