//! notes: a small notes CLI, the example product that aayudha verify's own feature map checks.
//!
//! Usage: `notes add <text>`, `notes list [--all]`, `notes done <n>`. Notes live in the file named by
//! `NOTES_FILE`, else `$HOME/.notes`.

use std::path::PathBuf;
use std::process::ExitCode;

mod store;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("notes: {message}");
            ExitCode::from(1)
        }
    }
}

fn store_path() -> PathBuf {
    if let Some(file) = std::env::var_os("NOTES_FILE") {
        return PathBuf::from(file);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".notes")
}

fn run(args: &[String]) -> Result<(), String> {
    let path = store_path();
    match args.first().map(String::as_str) {
        Some("add") => {
            let text = args[1..].join(" ");
            let mut notes = store::load(&path)?;
            let n = store::add(&mut notes, &text)?;
            store::save(&path, &notes)?;
            println!("added {n}");
            Ok(())
        }
        Some("list") => {
            let all = match args.get(1).map(String::as_str) {
                None => false,
                Some("--all") => true,
                Some(other) => return Err(format!("unknown flag: {other} (try --all)")),
            };
            let notes = store::load(&path)?;
            for (n, note) in store::visible(&notes, all) {
                let mark = if note.done { "x" } else { " " };
                println!("{n} [{mark}] {}", note.text);
            }
            Ok(())
        }
        Some("done") => {
            let n: usize = args
                .get(1)
                .and_then(|a| a.parse().ok())
                .ok_or("done needs a note number")?;
            let mut notes = store::load(&path)?;
            store::mark_done(&mut notes, n)?;
            store::save(&path, &notes)?;
            println!("done {n}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command: {other} (add, list, done)")),
        None => Err("usage: notes add <text> | list [--all] | done <n>".to_string()),
    }
}
