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

/// Every `uses:` of `text` is pinned by a full commit SHA or an image digest.
fn assert_pinned(text: &str) {
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

/// The jobs of a workflow, in order: each job's id and its text (its key line up to the next job's).
fn jobs(workflow: &str) -> Vec<(&str, &str)> {
    let body = &workflow[workflow.find("\njobs:\n").expect("jobs") + "\njobs:\n".len()..];
    let mut starts: Vec<(usize, &str)> = Vec::new();
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let key = line.trim_end();
        if key.len() > 3 && key.starts_with("  ") && !key[2..].starts_with([' ', '#']) {
            starts.push((at, key.trim().trim_end_matches(':')));
        }
        at += line.len();
    }
    starts
        .iter()
        .enumerate()
        .map(|(n, (start, id))| {
            let end = starts.get(n + 1).map_or(body.len(), |(next, _)| *next);
            (*id, &body[*start..end])
        })
        .collect()
}

/// A job's `permissions:` as `scope: level` pairs, in order.
fn permissions(job: &str) -> Vec<String> {
    job.lines()
        .skip_while(|l| *l != "    permissions:")
        .skip(1)
        .take_while(|l| l.starts_with("      "))
        .map(|l| l.split(" #").next().unwrap_or(l).trim().to_string())
        .collect()
}

/// A line without its comment (templates put `#` in comments only).
fn uncommented(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    line.split(" #").next().unwrap_or(line)
}

/// The signing job's contract (issue 41), in a gate template whose pack is made by job `producer` and
/// proven when its `result` output is `word`: `attest` holds `id-token: write` and `attestations: write`
/// and nothing else, and no other place of the file names either; it runs one SHA-pinned
/// `actions/attest` step that signs `pack.json` by the digest the producer computed, and nothing else —
/// no checkout, download, upload or aayu; it runs only after the producer succeeded with a proven pack;
/// the producer maps `result` and `pack-sha256` from its step `gate`.
fn attest_contract(workflow: &str, producer: &str, word: &str) -> Result<(), String> {
    let jobs = jobs(workflow);
    let job = |id: &str| {
        jobs.iter()
            .find(|(j, _)| *j == id)
            .map(|(_, text)| *text)
            .ok_or(format!("no job `{id}`"))
    };
    let (attest, made_by) = (job("attest")?, job(producer)?);
    let check = |holds: bool, what: &str| if holds { Ok(()) } else { Err(what.to_string()) };
    // The two permissions: once each in the whole file, outside comments, and that once in `attest`.
    for scope in ["id-token", "attestations"] {
        let named = |text: &str| {
            text.lines()
                .map(|l| uncommented(l).matches(scope).count())
                .sum::<usize>()
        };
        check(
            named(workflow) == 1,
            &format!("`{scope}` is named {} times", named(workflow)),
        )?;
        check(
            named(attest) == 1,
            &format!("`{scope}` is not in job `attest`"),
        )?;
    }
    check(
        !workflow.contains("write-all"),
        "`write-all` grants every permission",
    )?;
    check(
        permissions(attest) == ["id-token: write", "attestations: write"],
        &format!("job `attest` has permissions {:?}", permissions(attest)),
    )?;
    for (id, text) in &jobs {
        let other = permissions(text)
            .iter()
            .any(|p| p.starts_with("id-token") || p.starts_with("attestations"));
        check(*id == "attest" || !other, &format!("job `{id}` may sign"))?;
    }
    // Its head: the producer's success and a proven pack, five minutes, a GitHub-hosted runner.
    let head = format!("  attest:\n    name: aayudha/attest\n    needs: [{producer}]\n");
    check(
        attest.starts_with(&head),
        "job `attest` does not start with its name and `needs:`",
    )?;
    let condition = format!(
        "\n    if: needs.{producer}.result == 'success' && needs.{producer}.outputs.result == '{word}'\n"
    );
    check(
        attest.contains(&condition),
        &format!("job `attest` lacks {condition:?}"),
    )?;
    for line in ["    runs-on: ubuntu-24.04\n", "    timeout-minutes: 5\n"] {
        check(
            attest.contains(line),
            &format!("job `attest` lacks {line:?}"),
        )?;
    }
    // One step, the pinned action, signing the producer's digest; no other action, no command.
    let steps: Vec<&str> = attest
        .lines()
        .map(uncommented)
        .filter(|l| l.starts_with("      - "))
        .collect();
    check(
        steps.len() == 1,
        &format!("job `attest` has {} steps", steps.len()),
    )?;
    let uses: Vec<&str> = attest
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("uses:") || l.starts_with("- uses:"))
        .collect();
    check(uses.len() == 1, &format!("job `attest` uses {uses:?}"))?;
    let pinned = uses[0]
        .split_once("uses: actions/attest@")
        .and_then(|(_, r)| r.split_once(" # v4."))
        .is_some_and(|(sha, _)| sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()));
    check(
        pinned,
        &format!("not actions/attest pinned by a v4 commit SHA: {}", uses[0]),
    )?;
    for forbidden in [
        "checkout",
        "download",
        "upload",
        "aayudha/verify",
        "run:",
        "subject-path",
    ] {
        let found = attest.lines().any(|l| uncommented(l).contains(forbidden));
        check(!found, &format!("job `attest` has `{forbidden}`"))?;
    }
    let with = format!(
        "        with:\n          subject-name: pack.json\n          subject-digest: sha256:${{{{ needs.{producer}.outputs.pack-sha256 }}}}\n"
    );
    check(
        attest.contains(&with),
        &format!("job `attest` lacks {with:?}"),
    )?;
    // Provenance mode: no predicate, no SBOM, nothing pushed — the two inputs above and no other.
    let inputs = attest
        .lines()
        .filter(|l| uncommented(l).starts_with("          "))
        .count();
    check(inputs == 2, &format!("job `attest` passes {inputs} inputs"))?;
    let expressions = attest.matches("${{").count();
    check(
        expressions == 1,
        &format!("job `attest` reads {expressions} expressions, not the digest alone"),
    )?;
    // The producer maps what `attest` reads from its gate step.
    for output in ["result", "pack-sha256"] {
        let line = format!("\n      {output}: ${{{{ steps.gate.outputs.{output} }}}}\n");
        check(
            made_by.contains(&line),
            &format!("job `{producer}` lacks {line:?}"),
        )?;
    }
    check(
        made_by.contains("\n        id: gate\n"),
        &format!("job `{producer}` has no step `gate`"),
    )?;
    check(
        workflow.matches("id: gate\n").count() == 1,
        "another step is `gate`",
    )?;
    Ok(())
}

/// The `with:` keys of each step of `workflow` that uses the action, with the action file that declares
/// its inputs (`action.yml` for `aayudha/verify` and its image, `slim/action.yml` for
/// `aayudha/verify/slim`).
fn action_steps(workflow: &str) -> Vec<(&'static str, Vec<String>)> {
    let lines: Vec<&str> = workflow.lines().collect();
    let mut steps = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let used = line.trim_start().trim_start_matches("- ");
        let Some(used) = used.strip_prefix("uses: ") else {
            continue;
        };
        let file = if used.starts_with("aayudha/verify/slim@") {
            "slim/action.yml"
        } else if used.starts_with("aayudha/verify@")
            || used.starts_with("docker://ghcr.io/aayudha/verify@")
        {
            "action.yml"
        } else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let step_indent = if line.trim_start().starts_with("- ") {
            indent + 2
        } else {
            indent
        };
        let with = format!("{}with:", " ".repeat(step_indent));
        let keys = lines[n + 1..]
            .iter()
            .take_while(|l| l.len() - l.trim_start().len() >= step_indent || l.trim().is_empty())
            .skip_while(|l| **l != with)
            .skip(1)
            .take_while(|l| l.len() - l.trim_start().len() > step_indent)
            .filter(|l| l.len() - l.trim_start().len() == step_indent + 2)
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.to_string()))
            .collect();
        steps.push((file, keys));
    }
    steps
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
    let gate_jobs = jobs(&gate);
    let ids: Vec<&str> = gate_jobs.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, ["merge-gate", "pack", "attest"]);
    let pack = gate_jobs[1].1;
    assert!(!pack.contains("actions/checkout"), "{pack}");
    // Only `pack` and `attest` write; `attest` signs the proven pack's digest and does nothing else.
    for (id, text) in &gate_jobs {
        let writes = permissions(text).iter().any(|p| p.ends_with(": write"));
        assert_eq!(writes, *id != "merge-gate", "job {id}");
    }
    if let Err(broken) = attest_contract(&gate, "merge-gate", "proven") {
        panic!("the gate template: {broken}");
    }
    for text in [
        &gate,
        &read("workflows/aayudha-nightly.yml"),
        &read(".github/workflows/verify-sweep.yml"),
    ] {
        assert_pinned(text);
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

/// The sharded gate (`aayu init --shards N` writes it): plan → shard (a matrix leg each) → merge → pack,
/// with the single-job template's trigger, concurrency, checkout and pins; only the legs run the pull
/// request's code and only `pack` writes.
#[test]
fn the_sharded_template_holds_its_contract() {
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
    };
    let single = read("workflows/aayudha-merge-gate.yml");
    let sharded = read("workflows/aayudha-merge-gate-sharded.yml");
    assert_pinned(&sharded);
    // What the single-job template holds to, word for word: the trigger, no workflow-wide permission, one
    // gate per pull request (whichever template ran it).
    let between = |text: &str, from: &str, to: &str| -> String {
        let start = text.find(from).expect(from);
        text[start..start + text[start..].find(to).expect(to)].to_string()
    };
    assert_eq!(
        between(&sharded, "\non:\n", "\njobs:\n"),
        between(&single, "\non:\n", "\njobs:\n")
    );
    for needle in [
        "Why `pull_request_target`",
        "Require the commit status `aayudha/proof`",
        "a skipped matrix leg counts as success in branch protection",
        "256 legs per matrix",
        "500\n# artifacts",
        "outputs hold at most 1 MB",
        "\"Re-run failed jobs\" reruns the failed leg, the merge and the pack job",
    ] {
        assert!(
            sharded.contains(needle),
            "the sharded template lacks {needle:?}"
        );
    }
    let jobs = jobs(&sharded);
    let ids: Vec<&str> = jobs.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, ["plan", "shard", "merge", "pack", "attest"]);
    let job = |id: &str| jobs.iter().find(|(j, _)| *j == id).expect(id).1;
    let (plan, shard, merge, pack) = (job("plan"), job("shard"), job("merge"), job("pack"));
    let single_jobs = self::jobs(&single);
    let single_job = |id: &str| single_jobs.iter().find(|(j, _)| *j == id).expect(id).1;

    // Least privilege: read-only everywhere but `pack`, which has exactly today's pack job's, and
    // `attest`, which may sign and nothing else.
    let read_only = ["contents: read", "issues: read", "pull-requests: read"];
    for (id, text) in [("plan", plan), ("shard", shard), ("merge", merge)] {
        assert_eq!(permissions(text), read_only, "job {id}");
    }
    assert_eq!(permissions(pack), permissions(single_job("pack")));
    for (id, text) in &jobs {
        let writes = permissions(text).iter().any(|p| p.ends_with(": write"));
        assert_eq!(
            writes,
            ["pack", "attest"].contains(id),
            "job {id}: only `pack` and `attest` write"
        );
    }
    if let Err(broken) = attest_contract(&sharded, "merge", "passed") {
        panic!("the sharded template: {broken}");
    }
    // The checkout of the base, as today's gate job has it, in every job that checks out.
    let checkout = between(
        single_job("merge-gate"),
        "      - name: Check out the base",
        "      # ",
    );
    for (id, text) in [("plan", plan), ("shard", shard), ("merge", merge)] {
        assert!(text.contains(&checkout), "job {id}: {text}");
    }
    assert!(!pack.contains("actions/checkout"), "{pack}");

    assert!(
        plan.starts_with("  plan:\n    name: aayudha/plan\n"),
        "{plan}"
    );
    for needle in [
        "    outputs:\n      matrix: ${{ steps.plan.outputs.matrix }}\n      plan_digest: ${{ steps.plan.outputs.plan_digest }}\n",
        "        id: plan\n        uses: aayudha/verify/slim@",
        "          mode: plan\n          shards: 4 # ",
    ] {
        assert!(plan.contains(needle), "plan lacks {needle:?}: {plan}");
    }
    // The legs: their matrix is the plan's, every leg runs to its end, on the full image, with today's
    // gate job's timeout, and the gate step is each leg's last.
    assert!(
        shard.starts_with(
            "  shard:\n    name: aayudha/shard ${{ matrix.shard }} of ${{ matrix.of }}\n    needs: plan\n"
        ),
        "{shard}"
    );
    for needle in [
        "      fail-fast: false\n",
        "      matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}\n",
        "        uses: aayudha/verify@",
    ] {
        assert!(shard.contains(needle), "shard lacks {needle:?}: {shard}");
    }
    let timeout = |text: &str| between(text, "    timeout-minutes: ", "\n");
    assert_eq!(timeout(shard), timeout(single_job("merge-gate")));
    assert!(
        shard.trim_end().ends_with(
            "          mode: shard\n          shard: ${{ matrix.shard }}\n          shards: ${{ matrix.of }}\n          plan_digest: ${{ needs.plan.outputs.plan_digest }}"
        ),
        "{shard}"
    );
    assert!(
        merge.starts_with("  merge:\n    name: aayudha/merge\n    needs: [plan, shard]\n"),
        "{merge}"
    );
    for needle in [
        "    if: ${{ always() }}\n",
        "    outputs:\n      result: ${{ steps.gate.outputs.result }}\n      reason: ${{ steps.gate.outputs.reason }}\n      pack-sha256: ${{ steps.gate.outputs.pack-sha256 }}\n",
        "        id: gate\n        uses: aayudha/verify/slim@",
        "          mode: merge\n",
    ] {
        assert!(merge.contains(needle), "merge lacks {needle:?}: {merge}");
    }
    // `pack` runs in every outcome, after the plan and the merge, and a plan that failed is a failed gate.
    assert!(
        pack.starts_with("  pack:\n    name: aayudha/pack\n    needs: [plan, merge]\n"),
        "{pack}"
    );
    for needle in [
        "    if: ${{ always() }}\n",
        "        uses: aayudha/verify/slim@",
        "          mode: comment\n",
        "          gate_result: ${{ needs.plan.result != 'success' && 'failure' || needs.merge.result }}\n",
        "          gate_reason: ${{ needs.merge.outputs.reason }}\n",
    ] {
        assert!(pack.contains(needle), "pack lacks {needle:?}: {pack}");
    }
    // Only the legs run the pull request's code: everything else is on the slim image.
    assert_eq!(sharded.matches("uses: aayudha/verify@").count(), 1);
}

/// The signing job's contract catches a template broken by hand: each change below makes
/// [`attest_contract`] fail, naming what broke, in both shapes.
#[test]
fn the_attest_contract_refuses_a_broken_template() {
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
    };
    let sha = "1e69f48acb82d1966a394da916b4c1698aa569d6";
    for (file, producer, word) in [
        ("workflows/aayudha-merge-gate.yml", "merge-gate", "proven"),
        (
            "workflows/aayudha-merge-gate-sharded.yml",
            "merge",
            "passed",
        ),
    ] {
        let good = read(file);
        attest_contract(&good, producer, word).expect("the template holds");
        let digest = format!(
            "          subject-digest: sha256:${{{{ needs.{producer}.outputs.pack-sha256 }}}}\n"
        );
        let attest_line = "      attestations: write # the signed attestation, stored in this repository's attestations\n";
        let step = "      - name: Sign the gate's pack.json\n";
        let checkout =
            "      - uses: actions/checkout@1af3b93b6815bc44a9784bd300feb67ff0d1eeb3 # v6.0.0\n";
        let verdict = format!("needs.{producer}.outputs.result == '{word}'");
        let success = format!("needs.{producer}.result == 'success'");
        // What is changed, into what, and what the contract then says.
        let breaks: Vec<(String, String, &str)> = vec![
            (
                "      statuses: write # ".into(),
                "      id-token: write # mint\n      statuses: write # ".into(),
                "`id-token` is named 2 times",
            ),
            (
                "permissions: {}\n".into(),
                "permissions:\n  id-token: write\n".into(),
                "`id-token` is named 2 times",
            ),
            (
                attest_line.into(),
                format!("{attest_line}      contents: read\n"),
                "job `attest` has permissions",
            ),
            (
                step.into(),
                format!("{checkout}{step}"),
                "job `attest` has 2 steps",
            ),
            (
                format!("actions/attest@{sha} # v4.2.2"),
                "actions/attest@v4".into(),
                "not actions/attest pinned by a v4 commit SHA",
            ),
            (
                format!("actions/attest@{sha}"),
                format!("actions/attest-build-provenance@{sha}"),
                "not actions/attest pinned by a v4 commit SHA",
            ),
            (
                digest.clone(),
                "          subject-path: pack.json\n".into(),
                "job `attest` has `subject-path`",
            ),
            (
                format!(" && {verdict}"),
                String::new(),
                "job `attest` lacks",
            ),
            (
                success.clone(),
                format!("needs.{producer}.result != 'cancelled'"),
                "job `attest` lacks",
            ),
            (
                verdict.clone(),
                format!("github.event.pull_request.title == '{word}'"),
                "job `attest` lacks",
            ),
            (
                digest.clone(),
                format!("{digest}          push-to-registry: true\n"),
                "job `attest` passes 3 inputs",
            ),
            (
                "${{ steps.gate.outputs.pack-sha256 }}".into(),
                "${{ steps.other.outputs.pack-sha256 }}".into(),
                "lacks \"\\n      pack-sha256: ${{ steps.gate.outputs.pack-sha256 }}",
            ),
        ];
        for (from, to, said) in breaks {
            assert_eq!(good.matches(&from).count(), 1, "{file}: {from:?}");
            let broken = good.replacen(&from, &to, 1);
            match attest_contract(&broken, producer, word) {
                Ok(()) => panic!("{file}: {from:?} → {to:?} went unnoticed"),
                Err(found) => assert!(found.contains(said), "{file}: {from:?}: {found}"),
            }
        }
    }
}

/// Every `with:` key of every step that uses the action is an input of the action file it names: a
/// misspelt key would reach the action as nothing at all (the runner only warns).
#[test]
fn every_templates_action_step_passes_only_declared_inputs() {
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
    };
    let mut seen = 0;
    for template in [
        "workflows/aayudha-merge-gate.yml",
        "workflows/aayudha-merge-gate-sharded.yml",
        "workflows/aayudha-maintain.yml",
        "workflows/aayudha-nightly.yml",
        ".github/workflows/verify-sweep.yml",
    ] {
        for (file, keys) in action_steps(&read(template)) {
            let inputs = section_keys(&read(file), "inputs");
            assert!(
                !keys.is_empty(),
                "{template}: a step of {file} with no `with:`"
            );
            for key in keys {
                assert!(
                    inputs.contains(&key),
                    "{template}: `{key}` is not an input of {file}"
                );
                seen += 1;
            }
        }
    }
    // The sharded template's keys alone: mode ×4, shards ×2, shard, plan_digest, gate_result, gate_reason.
    let sharded = action_steps(&read("workflows/aayudha-merge-gate-sharded.yml"));
    let keys: Vec<String> = sharded.into_iter().flat_map(|(_, k)| k).collect();
    assert_eq!(
        keys,
        [
            "mode",
            "shards",
            "mode",
            "shard",
            "shards",
            "plan_digest",
            "mode",
            "mode",
            "gate_result",
            "gate_reason"
        ]
    );
    assert!(seen > keys.len());
}
