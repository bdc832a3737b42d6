//! The action's files hold their contract: `action.yml` (and the slim one) declare the registry's inputs
//! and outputs, and the workflow templates keep the triggers, permissions, pins and jobs the gate's
//! security rests on. These read files people copy, not a command's output: each assertion names one line
//! the contract needs, and the rest of the file is free to change, so they are substring checks.

use std::path::Path;

/// The keys of a top-level section of action.yml (`inputs:` or `outputs:`), in order.
fn section_keys(yaml: &str, section: &str) -> Vec<String> {
    yaml.lines()
        .skip_while(|l| *l != format!("{section}:"))
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn action_yml_declares_the_registrys_inputs_and_outputs() {
    let spec = aayudha::registry::CommandId::Action.spec();
    let inputs: Vec<String> = spec
        .inputs
        .iter()
        .map(|i| i.name.replace('-', "_"))
        .collect();
    let outputs: Vec<String> = spec.outputs.iter().map(|o| o.to_string()).collect();
    // The full action and the slim one: the same inputs and outputs, each its own image.
    for (file, image) in [
        ("action.yml", "  using: docker\n  image: Dockerfile\n"),
        ("slim/action.yml", "  image: ../Dockerfile\n"),
    ] {
        let yaml =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).expect(file);
        assert_eq!(section_keys(&yaml, "inputs"), inputs, "{file}");
        assert_eq!(section_keys(&yaml, "outputs"), outputs, "{file}");
        assert!(yaml.contains(image), "{file}: {yaml}");
        assert!(
            yaml.contains("default: ${{ github.token }}"),
            "{file}: the token defaults to the workflow's"
        );
    }
}

#[test]
fn the_workflow_templates_hold_their_contract() {
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
    };
    let gate = read("workflows/aayudha-merge-gate.yml");
    for needle in [
        "  pull_request_target:\n",
        "permissions: {}\n",
        "group: aayudha-merge-gate-${{ github.event.pull_request.number }}",
        "  merge-gate:\n    name: aayudha/merge-gate\n",
        "      contents: read # ",
        "      issues: read # ",
        "      pull-requests: read # ",
        "          ref: ${{ github.event.pull_request.base.sha }}\n",
        "          persist-credentials: false\n",
        "          mode: gate\n",
        "  pack:\n    name: aayudha/pack\n    needs: merge-gate\n",
        "    if: ${{ always() }}\n",
        "      pull-requests: write # ",
        "      statuses: write # ",
        "        uses: aayudha/verify/slim@",
        "          mode: comment\n          gate_result: ${{ needs.merge-gate.result }}\n",
        "Why `pull_request_target`",
        "Require the commit status `aayudha/proof`",
        // actions/checkout on Node 24, credentials not kept.
        "actions/checkout@1af3b93b6815bc44a9784bd300feb67ff0d1eeb3 # v6.0.0",
    ] {
        assert!(gate.contains(needle), "the gate template lacks {needle:?}");
    }
    // The story's labels live on the issue: no label triggers; the body names the story.
    assert!(gate.contains("types: [opened, synchronize, reopened, edited, ready_for_review]"));
    assert!(!gate.contains("labeled"), "{gate}");
    // `pull-requests: read` only in the job that reads the pull request.
    assert_eq!(gate.matches("      pull-requests: read # ").count(), 1);
    // The gate is the last step of `merge-gate`, and `pack` checks nothing out.
    let merge_gate =
        &gate[gate.find("  merge-gate:").expect("job")..gate.find("  pack:").expect("job")];
    assert!(
        merge_gate.trim_end().ends_with("mode: gate"),
        "{merge_gate}"
    );
    let pack = &gate[gate.find("  pack:").expect("job")..];
    assert!(!pack.contains("actions/checkout"), "{pack}");
    for text in [
        &gate,
        &read("workflows/aayudha-nightly.yml"),
        &read(".github/workflows/verify-sweep.yml"),
    ] {
        for line in text
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("uses:") || l.starts_with("- uses:"))
        {
            let reference = line
                .split('@')
                .nth(1)
                .expect("pinned")
                .split_whitespace()
                .next()
                .expect("ref");
            // A commit SHA, or an image digest.
            let sha = reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit());
            let digest = reference
                .strip_prefix("sha256:")
                .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(sha || digest, "not pinned by SHA or digest: {line}");
        }
    }
    let nightly = read("workflows/aayudha-nightly.yml");
    let cron = nightly
        .lines()
        .find_map(|l| l.trim().strip_prefix("- cron: "))
        .expect("cron");
    assert_ne!(
        cron.trim_matches('"').split(' ').next(),
        Some("0"),
        "not on the hour"
    );
    assert!(nightly.contains("  workflow_dispatch:"));
    assert!(read(".github/workflows/verify-sweep.yml").contains("  workflow_call:\n    inputs:\n"));
}
