//! The `aayu` binary: everything lives in the `aayudha` library; this file only hands over the process.

use std::process::ExitCode;

fn main() -> ExitCode {
    aayudha::cli::main()
}
