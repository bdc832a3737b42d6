//! The notes binary, end to end.

use std::process::Command;

fn notes(file: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(args)
        .env("NOTES_FILE", file)
        .output()
        .expect("notes runs")
}

#[test]
fn adds_lists_and_marks_done() {
    let dir = std::env::temp_dir().join(format!("notes-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("notes");
    let _ = std::fs::remove_file(&file);
    assert_eq!(
        String::from_utf8_lossy(&notes(&file, &["add", "buy", "milk"]).stdout),
        "added 1\n"
    );
    notes(&file, &["add", "call mum"]);
    assert!(notes(&file, &["done", "1"]).status.success());
    assert_eq!(
        String::from_utf8_lossy(&notes(&file, &["list"]).stdout),
        "2 [ ] call mum\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&notes(&file, &["list", "--all"]).stdout),
        "1 [x] buy milk\n2 [ ] call mum\n"
    );
    let missing = notes(&file, &["done", "9"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "notes: no such note: 9 (there are 2)\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
