//! The registry's data, and the CLI built from it.

use std::collections::BTreeSet;

use crate::common::{aayu_in, run};
use aayudha::registry::{CommandId, InputType, Seat};

#[test]
fn every_command_is_declared_once_with_valid_data() {
    let mut names = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for id in CommandId::ALL {
        let c = id.spec();
        assert_eq!(c.id, id, "{} is filed under the wrong id", c.name);
        assert!(ids.insert(id), "{:?} is listed twice in CommandId::ALL", id);
        assert!(names.insert(c.name), "the name `{}` is used twice", c.name);
        assert!(Seat::ALL.contains(&c.seat), "{}: unknown seat", c.name);
        assert_ne!(
            c.owns,
            Some(c.seat),
            "{}: `owns` repeats the accountable seat",
            c.name
        );
        assert!(
            !c.summary.is_empty() && c.summary.chars().count() <= 200,
            "{}: summary must be 1-200 chars",
            c.name
        );
        assert!(
            !c.summary.contains('\n'),
            "{}: the summary is one line",
            c.name
        );
        assert!(
            !c.reader.is_empty() && c.reader.chars().count() < 160,
            "{}: reader sentence must be under 160 chars",
            c.name
        );
        assert_ne!(
            c.summary, c.reader,
            "{}: the reader sentence must differ from the summary",
            c.name
        );
        assert!(
            c.exits.contains(&aayudha::exit::ExitStatus::Usage),
            "{}: every command can exit 2",
            c.name
        );
        assert!(
            c.built || !c.lands_with.is_empty(),
            "{}: an unbuilt command says what it lands with",
            c.name
        );
        let mut inputs = BTreeSet::new();
        let mut seen_flag = false;
        for input in c.inputs {
            assert!(
                inputs.insert(input.name),
                "{}: input `{}` twice",
                c.name,
                input.name
            );
            assert!(
                !input.help.is_empty(),
                "{}: input `{}` has no help",
                c.name,
                input.name
            );
            assert!(
                !(input.human_only && input.required),
                "{}: a human-only input is never required",
                c.name
            );
            if let InputType::Enum(values) = input.ty {
                assert!(
                    !values.is_empty(),
                    "{}: enum `{}` has no values",
                    c.name,
                    input.name
                );
            }
            if input.positional {
                assert!(
                    !seen_flag,
                    "{}: positional `{}` after a flag",
                    c.name, input.name
                );
                assert_ne!(
                    input.ty,
                    InputType::Bool,
                    "{}: a positional cannot be a bool",
                    c.name
                );
            } else {
                seen_flag = true;
            }
        }
    }
    let expected = [
        "verify",
        "ready",
        "ship",
        "init",
        "install",
        "mcp",
        "doctor",
        "clean",
        "proof verify",
        "proof push",
        "proof comment",
        "action",
        "control",
        "generate",
        "completions",
    ];
    assert_eq!(names, expected.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn help_lists_every_command_with_its_reader_sentence() {
    let dir = tempfile::tempdir().expect("temp");
    let out = run(aayu_in(dir.path()).arg("--help"));
    assert_eq!(out.code, 0);
    let flat = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    // Each command of the registry and each stage is found in it (the whole help is frozen in `texts`).
    for id in CommandId::ALL {
        let c = id.spec();
        assert!(
            flat.contains(&format!("{} {}", c.name, c.reader)),
            "`aayu --help` lacks {}:\n{}",
            c.name,
            out.stdout
        );
    }
    for stage in [
        "Set up:",
        "Define the story:",
        "Verify:",
        "Ship:",
        "Plumbing",
    ] {
        assert!(out.stdout.contains(stage), "no stage {stage}");
    }
}

#[test]
fn an_unbuilt_command_exits_2_and_says_so() {
    let dir = tempfile::tempdir().expect("temp");
    for id in CommandId::ALL.into_iter().filter(|id| !id.spec().built) {
        let c = id.spec();
        let mut args: Vec<String> = c.words().iter().map(|w| w.to_string()).collect();
        for input in c.inputs.iter().filter(|i| i.positional) {
            args.push(match input.ty {
                InputType::Enum(values) => values[0].to_string(),
                _ => "7".to_string(),
            });
        }
        let out = run(aayu_in(dir.path()).args(&args));
        assert_eq!(out.code, 2, "aayu {args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.lines().next(),
            Some(format!("error: `aayu {}` is not built yet", c.name).as_str()),
            "aayu {args:?}"
        );
        // For every unbuilt command of the registry: the hint's start and the help's summary and note
        // (each text is the registry's own; the whole help is frozen in `texts`).
        assert!(out.stderr.contains("hint: it lands with"), "{}", out.stderr);
        // Its help still works, from the registry.
        let help = run(aayu_in(dir.path()).args(c.words()).arg("--help"));
        assert_eq!(help.code, 0);
        let flat = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(c.summary), "{}", help.stdout);
        assert!(help.stdout.contains("Not built yet"), "{}", help.stdout);
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().expect("temp");
    crate::aayu_snapshot!(
        "unexpected_argument",
        run(aayu_in(dir.path()).args(["verify", "--mapp"]))
    );
    crate::aayu_snapshot!(
        "not_a_number",
        run(aayu_in(dir.path()).args(["ready", "abc"]))
    );
    let out = run(aayu_in(dir.path()).args(["completions", "tcsh"]));
    assert_eq!(out.code, 2);
    let out = run(&mut aayu_in(dir.path()));
    assert_eq!(out.code, 2, "no command is a usage error");
    let out = run(aayu_in(dir.path()).arg("--version"));
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, format!("aayu {}", env!("CARGO_PKG_VERSION")).as_str())
    );
}

#[test]
fn verify_needs_one_mode() {
    let dir = tempfile::tempdir().expect("temp");
    let out = run(aayu_in(dir.path()).arg("verify"));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: say what to verify: `--map`, `--check"),
        "{}",
        out.stderr
    );
    let out = run(aayu_in(dir.path()).args(["verify", "--ci", "--map"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: `--ci` already runs the feature-map floor"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::process::Stdio;
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = aayu_in(repo)
        .args(["verify", "--map", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
