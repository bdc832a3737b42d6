//! Media that are really stored: the gate keeps media (by kind or by content) off git, `proof push --media`
//! uploads them to a real S3-compatible server (moto) and says `bucket` only for what is there, merges the
//! lifecycle rule keeping the bucket's own, and `proof verify` re-hashes them; a refused credential, a
//! missing bucket and a credential that may not set the lifecycle are each said.

use crate::common::{self, TestRepo, feature_md, map_readme, run, skill};
use crate::support::fake_github::{self, FakeIssue};
use crate::support::moto::{self, Moto};

use serde_json::Value;

const GOAL: &str = "1. The page is shown.";

/// A control tool that writes a screenshot, a PNG it declares a `report`, and a text trace.
const CONTROL: &str = r#"
use strict; use warnings; use JSON::PP;
my $req = decode_json(do { local $/; <STDIN> });
my $out = $req->{out};
my $png = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR" . ("\0" x 64);
sub put { my ($name, $bytes) = @_; open(my $f, ">", "$out/$name") or die; binmode $f; print $f $bytes; close $f }
put("shot.png", $png);
put("looks-like-a-report.json", $png . "x");
put("trace.txt", "GET / 200\n");
print encode_json({status => "passed", reason => "", artifacts => [
  {path => "shot.png", kind => "screenshot"},
  {path => "looks-like-a-report.json", kind => "report"},
  {path => "trace.txt", kind => "api-trace"}]});
"#;

struct World {
    repo: TestRepo,
    origin: tempfile::TempDir,
    github: fake_github::Server,
    head: String,
}

/// A repository whose change adds a feature with one check that makes media, its Ready snapshot on
/// origin's ledger, and the local pack of `aayu verify --ci --story 7`.
fn world() -> World {
    let repo = TestRepo::new();
    repo.write("src/main.rs", "fn main() {}\n")
        .write(".gitignore", ".aayudha/proof/\n.aayudha/runs/\n");
    let base = repo.commit("base");
    let dir = skill("", "shop");
    let map = r#"{"product": "shop", "control": ["perl", ".agents/skills/verify-shop/control/media.pl"], "surfaces": []}"#;
    let feature = r#"{"id": "page", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#;
    let check =
        r#"{"id": "shows", "kind": "cli", "evidence": "screenshot", "steps": [{"note": {}}]}"#;
    repo.write(".agents/skills/verify-shop/control/media.pl", CONTROL)
        .write(&format!("{dir}/README.md"), map_readme(map, &["page.md"]))
        .write(&format!("{dir}/page.md"), feature_md(feature, &[check]));
    let head = repo.commit("the page, with its check");
    let origin = tempfile::tempdir().expect("temp");
    common::git_command(origin.path())
        .args(["init", "-q", "--bare"])
        .status()
        .expect("init");
    repo.git(&[
        "remote",
        "add",
        "origin",
        &origin.path().display().to_string(),
    ]);
    repo.git(&["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "alice".into());
        fake.issues.insert(
            7,
            FakeIssue {
                title: "The page".into(),
                body: Some(format!("## Completion Goal\n\n{GOAL}\n")),
                labels: Vec::new(),
                state: "open".into(),
            },
        );
    }
    let w = World {
        repo,
        origin,
        github,
        head,
    };
    let ready = aayu(&w, &[], &["ready", "7"]);
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    w.repo.git(&["fetch", "-q", "origin", "ledger"]);
    let ci = aayu(
        &w,
        &[],
        &[
            "verify", "--ci", "--base", &base, "--head", &w.head, "--story", "7",
        ],
    );
    assert!(
        std::path::Path::new(&w.repo.path(".aayudha/proof/7/pack.json")).is_file(),
        "{}{}",
        ci.stdout,
        ci.stderr
    );
    w
}

fn aayu(w: &World, env: &[(&str, &str)], args: &[&str]) -> common::Run {
    let mut cmd = w.repo.aayu();
    cmd.env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GH_REPO", "octo/shop");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd.args(args))
}

/// The S3 variables for moto, with this key.
fn s3_env<'a>(moto: &'a Moto, key: &'a str, secret: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("AWS_ENDPOINT_URL", moto.url.as_str()),
        ("AWS_ACCESS_KEY_ID", key),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("AWS_REGION", "us-east-1"),
    ]
}

fn set_media(w: &World, url: &str) {
    w.repo.write(
        ".aayudha/config.toml",
        format!("[proof]\nmedia = \"{url}\"\n"),
    );
}

fn artifact<'a>(pack: &'a Value, name: &str) -> &'a Value {
    pack["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .find(|a| a["path"].as_str().is_some_and(|p| p.ends_with(name)))
        .unwrap_or_else(|| panic!("no {name} in {pack:#}"))
}

fn on_origin(w: &World, path: &str) -> Option<Vec<u8>> {
    let out = common::git_command(w.origin.path())
        .args(["show", &format!("ledger:{path}")])
        .output()
        .expect("git show");
    out.status.success().then_some(out.stdout)
}

/// The advisory folder `proof push` landed, on origin's ledger.
fn advisory(w: &World) -> String {
    let out = common::git_command(w.origin.path())
        .args([
            "ls-tree",
            "-r",
            "--name-only",
            "ledger",
            &format!("proof/7/{}/advisory", w.head),
        ])
        .output()
        .expect("ls-tree");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let pack = listed
        .lines()
        .find(|l| l.ends_with("/pack.json"))
        .unwrap_or_else(|| panic!("no advisory pack on the ledger: {listed}"));
    pack.trim_end_matches("/pack.json").to_string()
}

#[test]
fn media_are_kept_off_git_uploaded_with_their_object_and_verified_from_the_bucket() {
    crate::needs!(perl);
    let Some(program) = moto::program() else {
        return;
    };
    let w = world();
    // The gate: the screenshot and the PNG declared `report` are `none` (the latter keeps its kind).
    let local: Value = serde_json::from_slice(
        &std::fs::read(w.repo.path(".aayudha/proof/7/pack.json")).expect("pack"),
    )
    .expect("json");
    assert_eq!(artifact(&local, "shot.png")["store"], "none");
    let report = artifact(&local, "looks-like-a-report.json");
    assert_eq!(report["kind"], "report");
    assert_eq!(report["store"], "none", "a PNG is media whatever its kind");
    assert_eq!(artifact(&local, "trace.txt")["store"], "git");

    // Without a bucket, --media is refused before anything is written.
    crate::aayu_snapshot!(
        "media_need_a_bucket",
        aayu(&w, &[], &["proof", "push", "7", "--media"])
    );
    assert_eq!(on_origin(&w, &format!("proof/7/{}", w.head)), None);

    let moto = Moto::start(&program, None);
    moto.create_bucket("media");
    // The bucket has a lifecycle rule of its own, which must be kept.
    let (status, text) = moto.request(
        "PUT",
        "/media?lifecycle",
        r#"<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration></Rule></LifecycleConfiguration>"#,
        &[("content-type", "application/xml")],
    );
    assert_eq!(status, 200, "{text}");
    set_media(&w, "s3://media/packs");
    let env = s3_env(&moto, "AKIATEST", "secret");
    crate::aayu_snapshot!(
        "media_push",
        aayu(&w, &env, &["proof", "push", "7", "--media"])
    );

    // The ledger: `bucket` with the object's URL for each media file, and no media bytes.
    let dir = advisory(&w);
    let landed: Value =
        serde_json::from_slice(&on_origin(&w, &format!("{dir}/pack.json")).expect("pack"))
            .expect("json");
    for name in ["shot.png", "looks-like-a-report.json"] {
        let a = artifact(&landed, name);
        let path = a["path"].as_str().expect("path");
        assert_eq!(a["store"], "bucket", "{a}");
        assert_eq!(
            a["object"],
            format!("s3://media/packs/7/{}/{path}", w.head),
            "{a}"
        );
        assert_eq!(
            on_origin(&w, &format!("{dir}/artifacts/{path}")),
            None,
            "{path} kept off git"
        );
        // The object is there, byte for byte.
        let (status, body) =
            moto.send("GET", &format!("/media/packs/7/{}/{path}", w.head), "", &[]);
        assert_eq!(status, 200);
        assert_eq!(body.len() as u64, a["size"].as_u64().expect("size"));
        assert!(body.starts_with(b"\x89PNG\r\n\x1a\n"));
    }
    let trace = artifact(&landed, "trace.txt");
    assert_eq!(trace["store"], "git");
    assert!(
        on_origin(
            &w,
            &format!("{dir}/artifacts/{}", trace["path"].as_str().expect("p"))
        )
        .is_some()
    );

    // The lifecycle: aayu's rule added, the bucket's own kept.
    let (_, lifecycle) = moto.request("GET", "/media?lifecycle", "", &[]);
    // moto's XML, whose layout is its own: the rules' parts are looked for.
    assert!(lifecycle.contains("<ID>logs</ID>"), "{lifecycle}");
    assert!(lifecycle.contains("<ID>aayudha-media</ID>"), "{lifecycle}");
    assert!(lifecycle.contains("<Prefix>packs/</Prefix>"), "{lifecycle}");
    assert!(lifecycle.contains("<Days>30</Days>"), "{lifecycle}");

    // proof verify reads the bucket objects and re-hashes them.
    let verified = aayu(&w, &env, &["proof", "verify", "7", "--json"]);
    let report: Value = serde_json::from_str(&verified.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", verified.stdout, verified.stderr));
    assert_eq!(report["artifacts_not_stored"], 0, "{report:#}");
    let checked = report["artifacts_checked"].as_u64().expect("count");
    // Without the bucket object, it is not stored, and why is said.
    let shot = artifact(&landed, "shot.png")["path"]
        .as_str()
        .expect("p")
        .to_string();
    let (status, _) = moto.request(
        "DELETE",
        &format!("/media/packs/7/{}/{shot}", w.head),
        "",
        &[],
    );
    assert_eq!(status, 204);
    let again = aayu(&w, &env, &["proof", "verify", "7", "--json"]);
    let report: Value = serde_json::from_str(&again.stdout).expect("json");
    assert_eq!(report["artifacts_not_stored"], 1, "{report:#}");
    assert_eq!(report["artifacts_checked"].as_u64(), Some(checked - 1));
    // One note among the report's (a set).
    assert!(
        report["notes"].as_array().expect("notes").iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains(&shot) && n.contains("in the bucket, not readable here"))),
        "{report:#}"
    );
}

#[test]
fn a_refused_credential_and_a_missing_bucket_land_nothing() {
    crate::needs!(perl);
    let Some(program) = moto::program() else {
        return;
    };
    let w = world();
    // moto checks credentials after the bucket is made: an unknown key is refused.
    let moto = Moto::start(&program, Some(1));
    moto.create_bucket("media");
    set_media(&w, "s3://media/packs");
    let refused = aayu(
        &w,
        &s3_env(&moto, "AKIANOBODY", "wrong"),
        &["proof", "push", "7", "--media"],
    );
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    // The error quotes the store's own answer (moto's words and request id): its parts are looked for.
    assert!(
        refused
            .stderr
            .contains("error: the upload of `s3://media/packs/7/")
            && refused.stderr.contains("InvalidAccessKeyId"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("hint: check the bucket's credential"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        on_origin(&w, &format!("proof/7/{}", w.head)),
        None,
        "nothing landed"
    );

    let open = Moto::start(&program, None);
    set_media(&w, "s3://no-such-bucket/packs");
    let missing = aayu(
        &w,
        &s3_env(&open, "AKIATEST", "secret"),
        &["proof", "push", "7", "--media"],
    );
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    // As above, the store's own answer is quoted.
    assert!(
        missing.stderr.contains("NoSuchBucket"),
        "{}",
        missing.stderr
    );
    assert!(
        missing
            .stderr
            .contains("hint: create the bucket first, or correct `[proof] media`"),
        "{}",
        missing.stderr
    );
    assert_eq!(on_origin(&w, &format!("proof/7/{}", w.head)), None);

    set_media(&w, "ftp://media/packs");
    crate::aayu_snapshot!(
        "media_bucket_scheme_unknown",
        aayu(&w, &[], &["proof", "push", "7", "--media"])
    );
}

#[test]
fn a_credential_that_may_not_set_the_lifecycle_uploads_and_prints_the_rule() {
    crate::needs!(perl);
    let Some(program) = moto::program() else {
        return;
    };
    let w = world();
    // Free actions: the bucket, and the user's creation, policy and key; then every request is checked.
    let moto = Moto::start(&program, Some(4));
    moto.create_bucket("media");
    let (key, secret) = moto.user("uploader", &["s3:PutObject", "s3:GetObject"]);
    set_media(&w, "s3://media");
    let pushed = aayu(
        &w,
        &s3_env(&moto, &key, &secret),
        &["proof", "push", "7", "--media"],
    );
    assert_eq!(pushed.code, 0, "{}{}", pushed.stdout, pushed.stderr);
    // The note quotes the store's 403 answer (moto's words): its start and the rule are looked for.
    assert!(
        pushed.stderr.contains("note: the media retention (30 days, `[proof] retention_days`) was not set: cannot read the bucket's lifecycle configuration (403"),
        "{}",
        pushed.stderr
    );
    assert!(
        pushed.stderr.contains("set this rule on `media` yourself:\n  <Rule><ID>aayudha-media</ID><Filter><Prefix>aayudha/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>"),
        "{}",
        pushed.stderr
    );
    assert_eq!(pushed.stderr.matches("was not set").count(), 1, "said once");
    let dir = advisory(&w);
    let landed: Value =
        serde_json::from_slice(&on_origin(&w, &format!("{dir}/pack.json")).expect("pack"))
            .expect("json");
    assert_eq!(artifact(&landed, "shot.png")["store"], "bucket");
}
