//! `wordcount [TEXT]...`: counts the words of the arguments (joined by spaces), or of stdin when there are
//! none, and prints `{"words": N}`.

use std::io::Read;

use clap::Parser;
use serde::Serialize;

#[derive(Parser)]
#[command(version, about = "Counts words")]
struct Args {
    /// The text to count; stdin when none is given.
    text: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    words: usize,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let text = if args.text.is_empty() {
        let mut input = String::new();
        std::io::stdin().read_to_string(&mut input)?;
        input
    } else {
        args.text.join(" ")
    };
    let report = Report {
        words: wordcount::count(&text),
    };
    let json = serde_json::to_string(&report).expect("a plain struct serializes");
    println!("{json}");
    Ok(())
}
