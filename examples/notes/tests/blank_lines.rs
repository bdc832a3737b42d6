//! Story 901: a notes file with blank lines in it (edited by hand) is still read.

use std::process::Command;

#[test]
fn a_blank_line_in_the_store_is_skipped() {
    let dir = std::env::temp_dir().join(format!("notes-blank-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("notes");
    std::fs::write(&file, "[ ] buy milk\n\n[x] call mum\n\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(["list", "--all"])
        .env("NOTES_FILE", &file)
        .output()
        .expect("notes runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1 [ ] buy milk\n2 [x] call mum\n"
    );
}
