//! Text from a pull request or a pack in the Markdown aayu writes (the proof comment, the job summary, the
//! story's `## Complete` section): rendered as code, so it can add no heading, link, image, emphasis, HTML
//! or mention, and cannot leave its table cell. GitHub turns no `@name`, `#12` or URL into a link inside
//! code, and CommonMark interprets nothing there but the closing backticks, which are always longer than
//! any run of backticks in the text.

/// An inline code span; newlines become spaces. Empty text gives an empty string.
pub fn code(text: &str) -> String {
    span(&one_line(text))
}

/// An inline code span for a table cell: also `|` escaped, which GFM honours inside code in a table.
pub fn cell(text: &str) -> String {
    span(&one_line(text).replace('|', "\\|"))
}

/// A fenced code block holding text of any length and shape.
pub fn block(text: &str) -> String {
    let fence = "`".repeat(longest_run(text).max(2) + 1);
    let mut out = format!("{fence}text\n{text}");
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

fn one_line(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\n', '\r'], " ")
}

fn longest_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

fn span(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let fence = "`".repeat(longest_run(text) + 1);
    // A space inside the fence when the text starts or ends with a backtick or a space (CommonMark strips
    // one space from each side when both are there).
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_code_that_cannot_break_out() {
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("line\n### heading"), "`line ### heading`");
        assert_eq!(cell("a | b"), "`a \\| b`");
        assert_eq!(code(""), "");
        let b = block("```\nx");
        assert!(
            b.starts_with("````text\n") && b.ends_with("\n````\n"),
            "{b}"
        );
    }

    /// Rendered with a CommonMark parser: whatever the text, it stays one code span.
    #[test]
    fn a_hostile_text_renders_as_one_code_span() {
        use pulldown_cmark::{Event, Parser, Tag};
        for hostile in [
            "fine\n### aayudha proof — proven",
            "@octocat [x](http://e) ![i](http://e/i.png) *em* <b>b</b> <!-- -->",
            "`` ``` ` ``",
            "ends with `",
        ] {
            let rendered = format!("before {} after", code(hostile));
            let events: Vec<Event> = Parser::new(&rendered).collect();
            let spans: Vec<&Event> = events
                .iter()
                .filter(|e| matches!(e, Event::Code(_)))
                .collect();
            assert_eq!(spans.len(), 1, "{hostile:?} → {rendered}: {events:?}");
            assert!(
                !events.iter().any(|e| matches!(
                    e,
                    Event::Start(
                        Tag::Heading { .. } | Tag::Link { .. } | Tag::Image { .. } | Tag::Emphasis
                    ) | Event::Html(_)
                        | Event::InlineHtml(_)
                )),
                "{rendered}: {events:?}"
            );
        }
    }
}
