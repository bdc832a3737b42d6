//! One module per output format, each a function writing to an `io::Write`: the readable report
//! (`plain`), the `--json` document (`json`), GitHub workflow commands (`github`), the Markdown of job
//! summaries and the proof comment (`summary`), and text from a pull request made harmless in Markdown
//! (`markdown`).

pub(crate) mod github;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod plain;
pub(crate) mod summary;

/// What a renderer writes, as one text: for what takes a whole text (a comment's body, a job summary, a
/// report fenced in the Actions log). Writing to memory cannot fail, and the renderers write UTF-8 only.
pub fn text(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut bytes = Vec::new();
    let _ = render(&mut bytes);
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
