//! The log as the runner reads it, and the one fence. Everything aayu writes to stderr goes through a [`Log`]:
//! inside GitHub Actions every byte is data behind a `::stop-commands::<random>` fence — paths, ids,
//! reasons, compiler output, product output, error messages quoting any of them — and aayu's own workflow
//! commands (groups, annotations) are written outside it, escaped as the actions toolkit's `command.ts`
//! does: `%`, CR and LF in the message, and `:` and `,` in property values. The floors and the gate write
//! their progress here without importing a renderer.
//! <https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>

use std::io::Write;

/// A count with its noun in the number the count needs: `1 map`, `0 maps`, `4 maps`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` with every control character (CR, LF and ESC included) and every bidirectional override written
/// as its escape (`\u{1b}`), so that a text from outside printed on a terminal stays one line and changes
/// nothing on the screen; everything else (quotes, backslashes, other Unicode) is kept as it is.
pub fn controls_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A random token (hex) for `::stop-commands::` and heredoc delimiters, from the kernel's generator (the
/// `getrandom` syscall); a failure is an error, never a guessable fallback.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| std::io::Error::other(format!("the kernel's random generator failed: {e}")))?;
    Ok(crate::hash::hex(&bytes))
}

/// Text fenced so that the runner reads no workflow command in it.
pub fn fenced(text: &str) -> std::io::Result<String> {
    let token = random_token()?;
    let mut out = format!("::stop-commands::{token}\n{text}");
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("::{token}::\n"));
    Ok(out)
}

/// One stream of the log as the runner reads it. Inside GitHub Actions every byte written through `Write`
/// is data: a fence is opened before the first byte and closed before any command of aayu's own
/// ([`Log::command`]) and at the end, so nothing a pull request wrote can issue a command, however it
/// reached the text. Outside Actions it passes text through, and commands are left out.
pub struct Log {
    inner: Box<dyn Write + Send>,
    actions: bool,
    /// The token of the open fence.
    fence: Option<String>,
    /// Whether the last byte written ended a line (a fence's end must start one).
    line_start: bool,
}

impl Log {
    pub fn new(inner: Box<dyn Write + Send>, actions: bool) -> Log {
        Log {
            inner,
            actions,
            fence: None,
            line_start: true,
        }
    }

    /// Whether commands reach the runner (inside GitHub Actions).
    pub fn actions(&self) -> bool {
        self.actions
    }

    /// Ends the open fence, if any.
    pub fn close(&mut self) -> std::io::Result<()> {
        if let Some(token) = self.fence.take() {
            if !self.line_start {
                self.inner.write_all(b"\n")?;
            }
            writeln!(self.inner, "::{token}::")?;
            self.line_start = true;
        }
        self.inner.flush()
    }

    /// Writes aayu's own workflow command (one line made by this module), outside any fence; nothing
    /// outside Actions.
    pub fn command(&mut self, line: &str) -> std::io::Result<()> {
        if !self.actions {
            return Ok(());
        }
        self.close()?;
        let line = line.trim_end_matches('\n');
        writeln!(self.inner, "{line}")?;
        self.inner.flush()
    }

    /// A group: its title, its body as data, its end. Outside Actions, the title and the body.
    pub fn group(&mut self, title: &str, body: &[u8]) -> std::io::Result<()> {
        if !self.actions {
            writeln!(self, "{title}")?;
            if !body.is_empty() {
                self.write_all(body)?;
                if !body.ends_with(b"\n") {
                    self.write_all(b"\n")?;
                }
            }
            return Ok(());
        }
        self.command(&format!("::group::{}", escape_data(title)))?;
        self.write_all(body)?;
        self.command("::endgroup::")
    }
}

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.actions && self.fence.is_none() {
            let token = random_token()?;
            if !self.line_start {
                self.inner.write_all(b"\n")?;
            }
            writeln!(self.inner, "::stop-commands::{token}")?;
            self.fence = Some(token);
        }
        self.inner.write_all(buf)?;
        self.line_start = buf.ends_with(b"\n");
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A plain line (never an annotation) every ~10 s while the feature-map scan runs.
pub fn scan_beat(
    log: &mut dyn std::io::Write,
    done: usize,
    total: usize,
    elapsed: std::time::Duration,
) {
    let _ = writeln!(
        log,
        "… scanning the sources: {done} of {total} files after {} s",
        elapsed.as_secs()
    );
}

/// A writer into a buffer shared with whoever made it: for a [`Log`] whose output a test reads back.
#[cfg(test)]
#[derive(Clone, Default)]
pub struct Shared(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Shared {
    pub fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }
}

#[cfg(test)]
impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("a poisoned buffer"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The lines of a log that the runner would act on as workflow commands, given the fences before them.
#[cfg(test)]
fn live_commands(log: &str) -> Vec<String> {
    let mut fence: Option<String> = None;
    let mut live = Vec::new();
    for line in log.lines() {
        match &fence {
            Some(token) => {
                if line == format!("::{token}::") {
                    fence = None;
                }
            }
            None => {
                if let Some(token) = line.strip_prefix("::stop-commands::") {
                    fence = Some(token.to_string());
                } else if line.starts_with("::") {
                    live.push(line.to_string());
                }
            }
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_takes_the_singular_for_one_only() {
        assert_eq!(count(0, "map", "maps"), "0 maps");
        assert_eq!(count(1, "map", "maps"), "1 map");
        assert_eq!(count(4, "map", "maps"), "4 maps");
    }

    #[test]
    fn controls_and_bidi_overrides_are_escaped_and_nothing_else() {
        assert_eq!(
            controls_escaped("a\nb\r\u{1b}[31mc\u{202e}d"),
            "a\\nb\\r\\u{1b}[31mc\\u{202e}d"
        );
        let kept = "\"quoted\" back\\slash café ✓";
        assert_eq!(controls_escaped(kept), kept);
    }

    #[test]
    fn data_escapes_percent_cr_and_lf() {
        assert_eq!(escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
        assert_eq!(escape_data("a:b,c"), "a:b,c");
    }

    #[test]
    fn properties_also_escape_colon_and_comma() {
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn product_output_cannot_issue_workflow_commands() {
        let fenced = fenced("::set-output name=result::proven\n::add-mask::x").expect("token");
        let lines: Vec<&str> = fenced.lines().collect();
        let token = lines[0].strip_prefix("::stop-commands::").expect("fence");
        assert_eq!(token.len(), 32);
        assert_eq!(lines.last().copied(), Some(format!("::{token}::").as_str()));
        assert_ne!(random_token().expect("a"), random_token().expect("b"));
        assert!(live_commands(&fenced).is_empty());
    }

    #[test]
    fn a_log_fences_its_data_and_not_its_commands() {
        let buffer = Shared::default();
        {
            let mut log = Log::new(Box::new(buffer.clone()), true);
            write!(log, "fine\n::error title=forged::proven").expect("write");
            log.command("::error title=aayudha::real").expect("command");
            log.group("check a.b: passed", b"::warning::inside a group")
                .expect("group");
            writeln!(log, "::add-mask::tail").expect("write");
        }
        let text = String::from_utf8(buffer.take()).expect("utf-8");
        assert_eq!(
            live_commands(&text),
            vec![
                "::error title=aayudha::real".to_string(),
                "::group::check a.b: passed".to_string(),
                "::endgroup::".to_string(),
            ],
            "{text}"
        );
        // Outside Actions: plain text, no commands.
        let plain = Shared::default();
        {
            let mut log = Log::new(Box::new(plain.clone()), false);
            write!(log, "hello").expect("write");
            log.command("::error::x").expect("command");
        }
        assert_eq!(plain.take(), b"hello");
    }
}
