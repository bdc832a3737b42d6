//! `scripts/release-pin`, the step of the release workflow that pins a release's images by digest, run on a
//! copy of the repository with made-up digests.

use std::path::Path;
use std::process::Command;

const FILES: [&str; 3] = [
    "action.yml",
    "slim/action.yml",
    ".github/workflows/verify-sweep.yml",
];

fn copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp");
    for rel in FILES {
        let target = dir.path().join(rel);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel), &target).expect(rel);
    }
    dir
}

fn pin(root: &Path, args: &[&str]) -> crate::common::Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/release-pin");
    crate::common::run(Command::new("python3").arg(script).args(args).arg(root))
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect(rel)
}

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

#[test]
fn a_release_pins_both_images_and_the_sweep_by_digest() {
    crate::needs!(python3);
    let dir = copy();
    let root = dir.path();
    let (full, slim) = (digest('a'), digest('b'));
    let out = pin(root, &["v1.2.3", &full, &slim]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let action = read(root, "action.yml");
    assert!(
        action.contains(&format!(
            "  using: docker\n  image: docker://ghcr.io/aayudha/verify@{full}\n"
        )),
        "{action}"
    );
    assert!(!action.contains("image: Dockerfile"));
    let slim_action = read(root, "slim/action.yml");
    assert!(
        slim_action.contains(&format!(
            "  image: docker://ghcr.io/aayudha/verify-slim@{slim}\n"
        )),
        "{slim_action}"
    );
    let sweep = read(root, ".github/workflows/verify-sweep.yml");
    assert!(
        sweep.contains(&format!(
            "        uses: docker://ghcr.io/aayudha/verify@{full} # v1.2.3\n"
        )),
        "{sweep}"
    );
    // The sweep step spells out every input of the action (no action.yml defaults apply to docker://),
    // the token included.
    let step = &sweep[sweep.find("uses: docker://").expect("step")..];
    let with: Vec<&str> = step
        .lines()
        .skip_while(|l| l.trim() != "with:")
        .skip(1)
        .map_while(|l| l.trim().split_once(':').map(|(k, _)| k))
        .collect();
    let inputs: Vec<String> = aayudha::registry::CommandId::Action
        .spec()
        .inputs
        .iter()
        .map(|i| i.name.replace('-', "_"))
        .collect();
    assert_eq!(with, inputs, "{step}");
    assert!(step.contains("token: ${{ github.token }}"));

    // A second release moves the pins; nothing else in the files changes.
    let before = read(root, "action.yml");
    let out = pin(root, &["v1.2.4", &digest('c'), &digest('d')]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        read(root, "action.yml"),
        before.replace(&full, &digest('c'))
    );
    assert!(read(root, ".github/workflows/verify-sweep.yml").contains(" # v1.2.4\n"));
}

#[test]
fn bad_arguments_and_unexpected_files_change_nothing() {
    crate::needs!(python3);
    let dir = copy();
    let root = dir.path();
    let snapshot = || FILES.map(|rel| read(root, rel));
    let original = snapshot();
    for (args, says) in [
        (vec!["1.2.3", &digest('a'), &digest('b')], "is not vX.Y.Z"),
        (vec!["v1.2.3", "sha256:abc", &digest('b')], "FULL_DIGEST"),
        (vec!["v1.2.3", &digest('a'), &digest('B')], "SLIM_DIGEST"),
    ] {
        let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
        let out = pin(root, &args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(out.stderr.contains(says), "{}", out.stderr);
    }
    // A file not in the shape the script expects: refused before any file is written.
    let sweep = root.join(".github/workflows/verify-sweep.yml");
    std::fs::write(
        &sweep,
        read(root, ".github/workflows/verify-sweep.yml").replace("docker://", ""),
    )
    .expect("write");
    let out = pin(root, &["v1.2.3", &digest('a'), &digest('b')]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains(".github/workflows/verify-sweep.yml: expected one line matching"),
        "{}",
        out.stderr
    );
    assert_eq!(read(root, "action.yml"), original[0]);
    assert_eq!(read(root, "slim/action.yml"), original[1]);
}
