//! Whether `aayu init` writes the merge gate's signing job, `aayudha/attest` (issue 41): only for a public
//! repository on github.com, where `actions/attest` signs with Sigstore's public-good instance — the
//! signature `aayu ship` verifies. Elsewhere the job would sign with GitHub's private instance, or fail
//! (GitHub Enterprise Server has no artifact attestations; a private repository needs GitHub Enterprise
//! Cloud), and a failed job fails the run that ship needs. `--attest` writes it anyway, `--no-attest`
//! leaves it out.

use crate::commands::{Context, Failure};
use crate::github::{GitHubError, RepoSlug};
use crate::settings::github::TokenFor;
use crate::settings::options::InitOptions;

/// What init does with the signing job.
#[derive(Debug)]
pub(super) enum Attest {
    /// Written: the repository is public on github.com, or `--attest`.
    Written,
    /// Left out because of `--no-attest`: nothing is said.
    Omitted,
    /// Left out, and why (said in one line).
    LeftOut(LeftOut),
}

/// Why init left the signing job out by itself.
#[derive(Debug, thiserror::Error)]
pub(super) enum LeftOut {
    #[error("GitHub here is `{0}` (GITHUB_SERVER_URL), not github.com")]
    OtherServer(String),
    #[error("the API is `{0}` (GITHUB_API_URL), a GitHub Enterprise Server's, not github.com's")]
    EnterpriseApi(String),
    #[error(
        "no GitHub repository to ask about (GH_REPO, GITHUB_REPOSITORY or an `origin` on GitHub)"
    )]
    NoRepository,
    #[error("no GITHUB_TOKEN or GH_TOKEN to ask GitHub whether `{0}` is public")]
    NoToken(RepoSlug),
    #[error("GitHub could not say whether `{repo}` is public ({error})")]
    Unanswered { repo: RepoSlug, error: GitHubError },
    #[error(
        "`{0}` is not public (a private or internal repository's attestations come from GitHub's private Sigstore instance, which this version of aayu does not verify)"
    )]
    NotPublic(RepoSlug),
}

/// `--attest` and `--no-attest` together are a usage error.
pub(super) fn refuse_both(options: &InitOptions) -> Result<(), Failure> {
    if options.attest && options.no_attest {
        return Err(Failure::usage(
            "`--attest` and `--no-attest` contradict each other: give one",
        ));
    }
    Ok(())
}

/// Decides for `repo`'s GitHub repository: the flags first, then where GitHub is, then `GET
/// /repos/{o}/{r}` with the token init reads with (`GITHUB_TOKEN`, then `GH_TOKEN`). Anything that cannot
/// be asked or answered leaves the job out, saying why: init never fails for it.
pub(super) fn decide(ctx: &Context, options: &InitOptions, repo: &crate::git::Repo) -> Attest {
    if options.attest {
        return Attest::Written;
    }
    if options.no_attest {
        return Attest::Omitted;
    }
    match public_on_github_com(ctx, repo) {
        Ok(()) => Attest::Written,
        Err(why) => Attest::LeftOut(why),
    }
}

/// The one line init prints when it leaves the job out by itself.
pub(super) fn notice(why: &LeftOut) -> String {
    format!("notice: the attest job is left out: {why} (--attest writes it anyway)\n")
}

/// `Ok` when the repository is public on github.com; otherwise why not, or why it could not be told.
fn public_on_github_com(ctx: &Context, repo: &crate::git::Repo) -> Result<(), LeftOut> {
    let host = ctx.github.server_host().unwrap_or_default();
    if !host.eq_ignore_ascii_case("github.com") {
        return Err(LeftOut::OtherServer(host));
    }
    // GitHub Enterprise Server answers under `/api/v3`, on its own host.
    let api = ctx.github.api_url.trim_end_matches('/');
    if api.ends_with("/api/v3") {
        return Err(LeftOut::EnterpriseApi(api.to_string()));
    }
    let slug = crate::settings::remote::repository(None, ctx.env, repo.origin_slug())
        .map_err(|_| LeftOut::NoRepository)?;
    let Some((token, _)) = crate::settings::github::token(ctx.env, TokenFor::Read) else {
        return Err(LeftOut::NoToken(slug));
    };
    let unanswered = |error| LeftOut::Unanswered {
        repo: slug.clone(),
        error,
    };
    let client = crate::github::Client::new(&ctx.github.api_url, &crate::github::Token::new(token))
        .map_err(unanswered)?;
    let record = client.repository(&slug).map_err(unanswered)?;
    // `private` is false for public repositories only: an internal one is private too.
    if record.private {
        return Err(LeftOut::NotPublic(slug));
    }
    Ok(())
}
