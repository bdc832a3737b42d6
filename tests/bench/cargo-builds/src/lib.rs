//! Counts words: runs of characters that are not whitespace.

use std::sync::OnceLock;

use regex::Regex;

/// The number of words in `text`.
pub fn count(text: &str) -> usize {
    static WORD: OnceLock<Regex> = OnceLock::new();
    let word = WORD.get_or_init(|| Regex::new(r"\S+").expect("a valid pattern"));
    word.find_iter(text).count()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_words() {
        assert_eq!(super::count("one two  three\nfour"), 4);
    }

    #[test]
    fn counts_empty() {
        assert_eq!(super::count(""), 0);
        assert_eq!(super::count(" \n"), 0);
    }
}
