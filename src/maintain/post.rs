//! `verify --maintain drift|always` (and the action's `maintain` mode): the brief of the run posted on the
//! tracking issue (see [`crate::maintain`]). What GitHub and the maintainer are is settled before the run (a missing token or an
//! unknown maintainer is exit 2 with nothing run); a brief that cannot be posted is exit 1 after the run's
//! report is written.

use std::io::Write as _;

use crate::config::Config;
use crate::failure::Failure;
use crate::floors::behaviour::BehaviourReport;
use crate::floors::feature_map::MapReport;
use crate::git::Repo;
use crate::git::short;
use crate::github::Token;
use crate::log::Log;
use crate::maintain::tracker::{Outcome, Tracker};
use crate::maintain::{Audience, Brief, Maintainer};
use crate::settings::Env;
use crate::settings::MaintainMode as Mode;
use crate::settings::github::GitHubEnv;
use crate::settings::remote::{self, Remote};

/// A workflow's token acts as this user (its `GET /user` is forbidden).
const ACTIONS_LOGIN: &str = "github-actions[bot]";

/// What posting needs, checked before the run.
pub struct Maintain {
    mode: Mode,
    /// Inside GitHub Actions: the brief is a record with no mention, and the job summary says so.
    in_actions: bool,
    /// The job summary (`GITHUB_STEP_SUMMARY`), where an Actions run says what it posted.
    step_summary: Option<std::path::PathBuf>,
    maintainer: Option<Maintainer>,
    remote: Remote,
}

impl Maintain {
    /// What posting needs, settled before the run: the maintainer, the repository and a token (exit 2
    /// when one is missing, with nothing run).
    pub fn prepare(
        env: &Env,
        github: &GitHubEnv,
        repo: &Repo,
        config: &Config,
        mode: Mode,
        token: Option<Token>,
    ) -> Result<Maintain, Failure> {
        let maintainer = Maintainer::parse(&config.verify.maintainer)?;
        let remote = match token {
            Some(token) => remote::resolve_with(None, env, github, repo.origin_slug(), &token),
            None => remote::resolve(None, env, github, repo.origin_slug()),
        }
        .map_err(|mut f| {
            f.message = format!("`--maintain` posts the brief on GitHub: {}", f.message);
            f
        })?;
        Ok(Maintain {
            mode,
            in_actions: env.github_actions,
            step_summary: github.step_summary.clone(),
            maintainer,
            remote,
        })
    }

    /// Posts the brief of a map run and/or a check run; says on stderr what was done.
    pub fn post(
        &self,
        log: &mut Log,
        repo: &Repo,
        run: &str,
        map: Option<&MapReport>,
        checks: Option<&BehaviourReport>,
    ) -> Result<(), Failure> {
        let brief = Brief::new(
            run,
            repo.sha("HEAD").ok().map(|s| short(&s).to_string()),
            map,
            checks,
            scope(repo),
        );
        let in_actions = self.in_actions;
        // Who posts decides whom the brief addresses; nothing is asked of GitHub when drift mode has
        // nothing to say.
        let quiet = self.mode == Mode::Drift && brief.is_clean();
        let me = if quiet {
            None
        } else {
            self.remote
                .client
                .login()
                .map_err(not_posted)?
                .or_else(|| in_actions.then(|| ACTIONS_LOGIN.to_string()))
        };
        let audience = if in_actions {
            Audience::ActionsRecord
        } else if me.as_deref().is_some_and(|m| !m.ends_with("[bot]")) {
            self.maintainer
                .map_or(Audience::NoMaintainer, Audience::Maintainer)
        } else {
            Audience::BotRecord
        };
        let body = brief.render(audience, self.remote.repo.as_str());
        let tracker = Tracker {
            client: &self.remote.client,
            repo: &self.remote.repo,
            me,
        };
        let outcome = tracker
            .post(&body, &brief.digest(), self.mode, brief.is_clean())
            .map_err(not_posted)?;
        let line = match &outcome {
            Outcome::Posted {
                issue,
                comment_url,
                created,
                closed,
                ..
            } => {
                let mut line = format!("maintain: posted the brief on #{issue}");
                if *created {
                    line.push_str(" (the tracking issue is new)");
                }
                if !closed.is_empty() {
                    let list: Vec<String> = closed.iter().map(|n| format!("#{n}")).collect();
                    line.push_str(&format!(
                        "; closed the duplicate {} in favour of #{issue}",
                        list.join(", ")
                    ));
                }
                format!("{line}: {comment_url}")
            }
            Outcome::Silent { why } => format!("maintain: nothing posted: {why}"),
        };
        let _ = writeln!(log, "{line}");
        if in_actions {
            summary(self.step_summary.as_deref(), log, &outcome, &brief);
        }
        Ok(())
    }
}

/// A GitHub error while posting: exit 1 with GitHub's hint (the run's report is written already).
fn not_posted(e: crate::github::GitHubError) -> Failure {
    let mut failure = Failure::from(e);
    failure.message = format!("the maintain brief was not posted: {}", failure.message);
    failure
}

/// The job summary says what was posted, and that an Actions run wakes no agent.
fn summary(file: Option<&std::path::Path>, log: &mut Log, outcome: &Outcome, brief: &Brief) {
    let text = match outcome {
        Outcome::Posted {
            issue,
            issue_url,
            comment_url,
            ..
        } => format!(
            "### aayudha maintain brief — {}\n\nPosted on [#{issue}]({issue_url}) ([the brief]({comment_url})) as a **record with no mention**: a GitHub Actions run never wakes an agent app. The loop that hands the brief to your agent runs in the agent tool, on a person's token (`aayu verify --map --maintain drift`).\n",
            brief.headline()
        ),
        Outcome::Silent { why } => {
            format!("### aayudha maintain brief — nothing posted\n\n{why}.\n")
        }
    };
    let job = crate::publish::job::Job {
        output: None,
        summary: file,
    };
    job.summary(log, &text);
}

/// The skill directories of the maps: the only places the maintainer edits.
fn scope(repo: &Repo) -> Vec<String> {
    let Ok(loaded) = crate::maps::load_repo(repo) else {
        return Vec::new();
    };
    let mut dirs: Vec<String> = loaded
        .maps
        .iter()
        .map(|m| {
            let dir = std::path::Path::new(&m.dir);
            let skill = dir.parent().unwrap_or(dir);
            format!("{}/", skill.display())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}
