//! The notes store: one note per line, `[ ] text` or `[x] text`, in a plain file.

use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub done: bool,
}

/// Reads the notes; a missing file is an empty list, and blank lines (a hand-edited file) are skipped.
pub fn load(path: &Path) -> Result<Vec<Note>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| match line.split_at_checked(4) {
            Some(("[ ] ", rest)) => Ok(Note {
                text: rest.to_string(),
                done: false,
            }),
            Some(("[x] ", rest)) => Ok(Note {
                text: rest.to_string(),
                done: true,
            }),
            _ => Err(format!("{}: not a note line: {line}", path.display())),
        })
        .collect()
}

/// Writes the notes, replacing the file whole.
pub fn save(path: &Path, notes: &[Note]) -> Result<(), String> {
    let text: String = notes
        .iter()
        .map(|n| format!("[{}] {}\n", if n.done { "x" } else { " " }, n.text))
        .collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Adds a note and returns its number (1-based).
pub fn add(notes: &mut Vec<Note>, text: &str) -> Result<usize, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a note needs some text".to_string());
    }
    notes.push(Note {
        text: text.to_string(),
        done: false,
    });
    Ok(notes.len())
}

/// Marks note `n` (1-based) done.
pub fn mark_done(notes: &mut [Note], n: usize) -> Result<(), String> {
    let count = notes.len();
    match n.checked_sub(1).and_then(|i| notes.get_mut(i)) {
        Some(note) => {
            note.done = true;
            Ok(())
        }
        None => Err(format!("no such note: {n} (there are {count})")),
    }
}

/// The notes to show with their numbers: open ones, or all with `all`.
pub fn visible(notes: &[Note], all: bool) -> Vec<(usize, &Note)> {
    notes
        .iter()
        .enumerate()
        .filter(|(_, note)| all || !note.done)
        .map(|(i, note)| (i + 1, note))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_numbers_from_one() {
        let mut notes = Vec::new();
        assert_eq!(add(&mut notes, "buy milk"), Ok(1));
        assert_eq!(add(&mut notes, "call mum"), Ok(2));
        assert_eq!(
            add(&mut notes, "   "),
            Err("a note needs some text".to_string())
        );
    }

    #[test]
    fn done_marks_the_note() {
        let mut notes = Vec::new();
        add(&mut notes, "buy milk").expect("added");
        mark_done(&mut notes, 1).expect("marked");
        assert!(notes[0].done);
        assert_eq!(
            mark_done(&mut notes, 5),
            Err("no such note: 5 (there are 1)".to_string())
        );
    }

    #[test]
    fn visible_hides_done_notes_unless_all() {
        let mut notes = Vec::new();
        add(&mut notes, "a").expect("added");
        add(&mut notes, "b").expect("added");
        mark_done(&mut notes, 1).expect("marked");
        assert_eq!(visible(&notes, false).len(), 1);
        assert_eq!(visible(&notes, true).len(), 2);
    }
}
