//! The structure of a Markdown document as the maps need it: headings, paragraphs, fenced code blocks and
//! links, in document order, each with its 1-based line. Parsed by pulldown-cmark, so a `#` inside a code
//! block is not a heading and a link inside a code block is not a link.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

/// A block of the document, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading {
        level: u8,
        text: String,
        line: usize,
    },
    Paragraph {
        line: usize,
    },
    /// A fenced code block; `lang` is the first word of its info string.
    Code {
        lang: String,
        text: String,
        /// The line of the opening fence; the content starts on the next line.
        line: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub dest: String,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Doc {
    pub blocks: Vec<Block>,
    pub links: Vec<Link>,
}

/// Line starts of a text, for turning byte offsets into 1-based lines.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Lines(starts)
    }

    fn line(&self, offset: usize) -> usize {
        match self.0.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

pub fn parse(text: &str) -> Doc {
    let lines = Lines::new(text);
    let mut doc = Doc::default();
    let mut heading: Option<(u8, String, usize)> = None;
    let mut code: Option<(String, String, usize)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level_number(level), String::new(), lines.line(range.start)));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text, line)) = heading.take() {
                    doc.blocks.push(Block::Heading {
                        level,
                        text: text.trim().to_string(),
                        line,
                    });
                }
            }
            Event::Start(Tag::Paragraph) if heading.is_none() => {
                doc.blocks.push(Block::Paragraph {
                    line: lines.line(range.start),
                });
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let lang = info.split_whitespace().next().unwrap_or("").to_string();
                code = Some((lang, String::new(), lines.line(range.start)));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, text, line)) = code.take() {
                    doc.blocks.push(Block::Code { lang, text, line });
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => doc.links.push(Link {
                dest: dest_url.to_string(),
                line: lines.line(range.start),
            }),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text, _)) = code.as_mut() {
                    text.push_str(&t);
                } else if let Some((_, text, _)) = heading.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, text, _)) = heading.as_mut() {
                    text.push(' ');
                }
            }
            _ => {}
        }
    }
    doc
}

fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_comes_from_the_document_not_from_lines() {
        let doc = parse(
            "# Title\n\nText with a [link](a.md).\n\n```json\n{\"x\": 1}\n# not a heading\n[no](b.md)\n```\n\n## Next\n",
        );
        assert_eq!(
            doc.blocks,
            vec![
                Block::Heading {
                    level: 1,
                    text: "Title".into(),
                    line: 1
                },
                Block::Paragraph { line: 3 },
                Block::Code {
                    lang: "json".into(),
                    text: "{\"x\": 1}\n# not a heading\n[no](b.md)\n".into(),
                    line: 5
                },
                Block::Heading {
                    level: 2,
                    text: "Next".into(),
                    line: 11
                },
            ]
        );
        assert_eq!(
            doc.links,
            vec![Link {
                dest: "a.md".into(),
                line: 3
            }]
        );
    }

    #[test]
    fn setext_headings_and_inline_code_in_headings_count() {
        let doc = parse("Title\n=====\n\n## The `x` part\n");
        assert_eq!(
            doc.blocks,
            vec![
                Block::Heading {
                    level: 1,
                    text: "Title".into(),
                    line: 1
                },
                Block::Heading {
                    level: 2,
                    text: "The x part".into(),
                    line: 4
                },
            ]
        );
    }
}
