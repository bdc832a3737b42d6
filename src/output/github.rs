//! GitHub workflow commands (annotations), escaped as the actions toolkit's `command.ts` does: `%`, CR and
//! LF in the message; additionally `:` and `,` in property values.
//! <https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>

/// The level of an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Warning,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// `::warning file=F,line=L,title=T::message`, one line.
pub fn annotation(level: Level, file: &str, line: usize, title: &str, message: &str) -> String {
    format!(
        "::{} file={},line={},title={}::{}\n",
        level.as_str(),
        escape_property(file),
        line,
        escape_property(title),
        escape_data(message)
    )
}

pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_annotation_cannot_be_broken_out_of() {
        let line = annotation(
            Level::Warning,
            "src/a,b.rs",
            3,
            "drift: x",
            "evil\n::error::forged",
        );
        assert_eq!(
            line,
            "::warning file=src/a%2Cb.rs,line=3,title=drift%3A x::evil%0A::error::forged\n"
        );
        assert_eq!(line.matches('\n').count(), 1);
    }
}
