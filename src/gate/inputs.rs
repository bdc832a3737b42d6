//! The trust setup of a gate run, the same for both doors (`aayu verify --ci` and the action): the
//! configuration read at a trusted commit (never from a tree the change wrote), whether the change edits
//! it, the story (its frozen snapshot and the evidence map at the head), and the [`Inputs`] built from
//! them and the environment. The action's own checkout steps (fetching the pull request, checking out its
//! head) are here too: they run before any product code, with the token.

use std::path::{Path, PathBuf};

use super::Inputs;
use crate::config::{CONFIG_PATH, Config};
use crate::failure::Failure;
use crate::git::{Network, Repo, short};
use crate::github::{Client, RepoSlug};
use crate::settings::Env;
use crate::settings::github::GitHubEnv;
use crate::story::{self, Binding, Story, ready};

/// The configuration at `commit` (`path` in it: the base's `.aayudha/config.toml` for `verify --ci`, the
/// `config` input in the workflow's commit for the action), read once; an error in it names the commit,
/// the file and the line (exit 2). A missing file is the defaults, unless it was `named` (the `config`
/// input), which must exist.
pub fn config_at(repo: &Repo, commit: &str, path: &str, named: bool) -> Result<Config, Failure> {
    match repo.file_at(commit, path).map_err(Failure::from)? {
        Some(bytes) => Config::from_text(
            &String::from_utf8_lossy(&bytes),
            &format!("{}:{path}", short(commit)),
        )
        .map_err(Failure::from),
        None if !named => Ok(Config::defaults()),
        None => Err(Failure::usage(format!(
            "the configuration `{path}` is not in the default branch's commit {}",
            short(commit)
        ))
        .with_hint("the `config` input names a file of the default branch")),
    }
}

/// Whether the change edits the configuration the gate reads at `trusted` (it uses the trusted one until
/// the change merges; each door says so in its own way).
pub fn config_changed(repo: &Repo, trusted: &str, head: &str, path: &str) -> bool {
    repo.file_at(trusted, path).ok().flatten() != repo.file_at(head, path).ok().flatten()
}

/// `verify --ci`'s configuration: `--config FILE`, else the base commit's.
pub fn config_of_base(
    repo: &Repo,
    base: &str,
    file: Option<&Path>,
    start: &Path,
) -> Result<Config, Failure> {
    match file {
        Some(file) => Config::load(repo.root(), Some(file), start).map_err(Failure::from),
        None => config_at(repo, base, CONFIG_PATH, false),
    }
}

/// The story of a change: its Ready snapshot (from `--ready FILE`, or the ledger branch) and the evidence
/// map at `head`.
pub fn story(
    repo: &Repo,
    number: u64,
    ready: Option<&Path>,
    start: &Path,
    ledger: &str,
    head: &str,
) -> Result<Story, Failure> {
    let snapshot = story::read_snapshot(repo, number, ready, start, ledger)?;
    Story::at(repo, number, snapshot, head)
}

/// The story as it is on GitHub now — its labels and the hash of its Completion Goal — into the binding:
/// in the action these decide red-on-base and whether the story changed after Ready (SPEC §5).
pub fn story_now(
    client: &Client,
    repository: &RepoSlug,
    number: u64,
    binding: &mut Binding,
) -> Result<(), Failure> {
    let issue = client.issue(repository, number).map_err(Failure::from)?;
    binding.story_labels = Some(issue.labels);
    // A story whose body lost its Completion Goal hashes to nothing, which no snapshot matches.
    binding.completion_goal_hash = Some(
        issue
            .body
            .as_deref()
            .and_then(ready::completion_goal)
            .map(|goal| ready::goal_hash(&goal))
            .unwrap_or_default(),
    );
    Ok(())
}

/// What differs between the doors, beside the change and the story.
pub struct Door<'a> {
    /// `owner/name`, for the pack and its links.
    pub slug: String,
    /// Where the pack folder is written (replaced whole).
    pub out: PathBuf,
    /// Where the run folder is made (never the checkout).
    pub temp: PathBuf,
    pub binding: Option<Binding>,
    pub force_red_on_base: bool,
    /// Who approved the head (the action reads the reviews when asked; `None` on the CLI).
    pub harness_approval: Option<crate::gate::Approval<'a>>,
    /// `--jobs`; else the machine's cores.
    pub jobs: Option<usize>,
    /// The pack's identity is `ci`: the action always, `verify --ci` inside GitHub Actions.
    pub actions: bool,
}

impl<'a> Inputs<'a> {
    /// The gate's inputs: the change (`base`, `head`, full SHAs), its story, the door's settings, and what
    /// the environment says (the sandbox's allow-list, this binary, the clock).
    pub fn new(
        repo: &'a Repo,
        config: &'a Config,
        (base, head): (String, String),
        story: Option<Story>,
        env: &Env,
        door: Door<'a>,
    ) -> Result<Inputs<'a>, Failure> {
        Ok(Inputs {
            repo,
            config,
            base,
            head,
            story,
            sandbox: super::sandbox_settings(env, config, door.jobs, repo.root()),
            aayu: env.exe.clone().unwrap_or_else(|| "aayu".into()),
            now: env.now()?,
            actions: door.actions,
            binding: door.binding,
            force_red_on_base: door.force_red_on_base,
            harness_approval: door.harness_approval,
            out: door.out,
            temp: door.temp,
            slug: door.slug,
        })
    }
}

/// The name a pack gives the repository: `GITHUB_REPOSITORY`, else the `origin` remote's on the server.
pub fn slug(repo: &Repo, github: &GitHubEnv) -> String {
    github
        .repository
        .clone()
        .unwrap_or_else(|| repo.pack_name(github.server_host().as_deref()))
}

/// Where a run folder is made: `RUNNER_TEMP` inside Actions, else the temp folder.
pub fn temp_folder(github: &GitHubEnv) -> PathBuf {
    github
        .runner_temp
        .clone()
        .unwrap_or_else(std::env::temp_dir)
}

/// Refuses to run product code in a checkout whose git configuration holds a credential: product code can
/// read `.git/config` (and a file it includes), so a token `actions/checkout` persisted there would be its.
pub fn refuse_persisted_credentials(repo: &Repo) -> Result<(), Failure> {
    let found = repo.persisted_credentials();
    if found.is_empty() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "the checkout's git configuration holds a credential ({}): product code would be able to read it, so none runs",
        found.join(", ")
    ))
    .with_hint("set `persist-credentials: false` on actions/checkout (the workflow templates do)"))
}

/// How git reaches the server with the action's token.
fn network(github: &GitHubEnv, token: Option<&str>) -> Network {
    Network {
        server_url: github.server_url.clone(),
        token: token.map(str::to_string),
        credential_helpers: github.credential_helpers,
    }
}

/// Fetches `refs/pull/<n>/head` and the ledger branch with the token, before any product code runs.
pub fn fetch_pull(
    repo: &Repo,
    github: &GitHubEnv,
    token: Option<&str>,
    pr: u64,
    ledger: &str,
) -> Result<(), Failure> {
    let network = network(github, token);
    let git = |refspec: &str| -> Result<std::process::Output, Failure> {
        crate::git::git_program(
            repo.root(),
            &network,
            &["fetch", "--no-tags", "--quiet", "origin", refspec],
        )
        .map_err(|e| {
            Failure::unexpected("cannot run git to fetch the pull request's head")
                .caused_by(e)
                .with_hint("the image needs git (the action's Dockerfile installs it)")
        })
    };
    let head = git(&format!("+refs/pull/{pr}/head:refs/remotes/pull/{pr}/head"))?;
    if !head.status.success() {
        return Err(Failure::unexpected(format!(
            "cannot fetch `refs/pull/{pr}/head` from origin: {}",
            String::from_utf8_lossy(&head.stderr).trim()
        ))
        .with_hint("check out the repository with actions/checkout (its `origin` is the repository) and give the job `contents: read`"));
    }
    // The ledger may not exist yet (no story is Ready): that is not an error here.
    let _ = git(&format!(
        "+refs/heads/{ledger}:refs/remotes/origin/{ledger}"
    ))?;
    Ok(())
}

/// The commit the gate's configuration comes from (`GITHUB_SHA`), fetched when the checkout lacks it (a
/// shallow checkout of the pull request's base, say).
pub fn trusted_commit(
    repo: &Repo,
    github: &GitHubEnv,
    token: Option<&str>,
) -> Result<String, Failure> {
    let sha = github.sha.clone().ok_or_else(|| {
        Failure::usage("`GITHUB_SHA` is not set: the gate reads its configuration at the commit the workflow came from")
            .with_hint("run the gate as a step of a `pull_request_target` workflow")
    })?;
    if repo.sha(&sha).is_err() {
        let _ = crate::git::git_program(
            repo.root(),
            &network(github, token),
            &["fetch", "--no-tags", "--quiet", "origin", &sha],
        );
    }
    repo.sha(&sha).map_err(|_| {
        Failure::unexpected(format!(
            "the workflow's commit {sha} (`GITHUB_SHA`), whose configuration the gate reads, is not in the checkout and could not be fetched"
        ))
        .with_hint("check out with `fetch-depth: 0`, or give the job `contents: read`")
    })
}

/// Puts the pull request's head in the working tree (detached), where the gate runs it; the gate is the
/// job's last step, so nothing trusted runs in this tree afterwards.
pub fn check_out(root: &Path, sha: &str) -> Result<(), Failure> {
    let output = crate::git::git_program(
        root,
        &Network::default(),
        &["checkout", "--quiet", "--force", "--detach", sha],
    )
    .map_err(|e| Failure::unexpected("cannot run git to check out the head").caused_by(e))?;
    if !output.status.success() {
        return Err(Failure::unexpected(format!(
            "cannot check out the pull request's head {sha}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}
