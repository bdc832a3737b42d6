//! Counts words: the parts of the text between runs of whitespace.

use std::sync::OnceLock;

use regex::Regex;

/// The number of words in `text`.
pub fn count(text: &str) -> usize {
    static GAP: OnceLock<Regex> = OnceLock::new();
    let gap = GAP.get_or_init(|| Regex::new(r"\s+").expect("a valid pattern"));
    gap.split(text).count()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_words() {
        assert_eq!(super::count("one two  three\nfour"), 4);
    }
}
