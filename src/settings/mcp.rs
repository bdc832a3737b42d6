//! The environment `aayu mcp` serves in: the GitHub tokens out of the process and of what the commands
//! read (unless `--github`), git's credential helpers cleared, and what `initialize` says of GitHub
//! ([mcp.md](../../docs/mcp.md)).

use std::ffi::OsString;

use super::Env;

/// The variables that carry a GitHub token (`INPUT_*` are the action's inputs, its token among them).
pub const TOKENS: [&str; 5] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

/// The process environment `aayu mcp` serves in: without the token variables (but `GITHUB_TOKEN` and
/// `GH_TOKEN` with `--github`), with git's credential helpers reset (`credential.helper` set empty, the
/// way git documents to clear the list: `gh auth setup-git` makes `gh` one) and git never prompting.
pub fn process_environment(
    current: &[(OsString, OsString)],
    github: bool,
) -> Vec<(OsString, OsString)> {
    let removed = |k: &str| {
        let kept = github && (k == "GITHUB_TOKEN" || k == "GH_TOKEN");
        !kept && (TOKENS.contains(&k) || k.starts_with("INPUT_"))
    };
    let mut wanted: Vec<(OsString, OsString)> = current
        .iter()
        .filter(|(k, _)| !removed(&k.to_string_lossy()))
        .cloned()
        .collect();
    let var = |wanted: &[(OsString, OsString)], name: &str| {
        wanted
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    let count: usize = var(&wanted, "GIT_CONFIG_COUNT")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let reset = (0..count).rev().any(|n| {
        var(&wanted, &format!("GIT_CONFIG_KEY_{n}")).as_deref() == Some("credential.helper")
            && var(&wanted, &format!("GIT_CONFIG_VALUE_{n}")).as_deref() == Some("")
    });
    if !reset {
        wanted.retain(|(k, _)| k != "GIT_CONFIG_COUNT");
        wanted.push(("GIT_CONFIG_COUNT".into(), (count + 1).to_string().into()));
        wanted.push((
            format!("GIT_CONFIG_KEY_{count}").into(),
            "credential.helper".into(),
        ));
        wanted.push((format!("GIT_CONFIG_VALUE_{count}").into(), "".into()));
    }
    if var(&wanted, "GIT_TERMINAL_PROMPT").as_deref() != Some("0") {
        wanted.retain(|(k, _)| k != "GIT_TERMINAL_PROMPT");
        wanted.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    }
    wanted
}

/// The environment the tools see: without `--github`, no token at all; with it, `GITHUB_TOKEN` then
/// `GH_TOKEN`. Never the action's inputs. Also the token values no result may hold, and what
/// `initialize` says of GitHub.
pub fn environment(env: &Env, github: bool) -> (Env, Vec<String>, String) {
    let mut served = env.clone();
    served.no_gh = true;
    let secrets: Vec<String> = env
        .vars
        .iter()
        .filter(|(k, _)| TOKENS.contains(&k.as_str()) || k.starts_with("INPUT_"))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    served.vars.retain(|k, _| {
        let kept = github && (k == "GITHUB_TOKEN" || k == "GH_TOKEN");
        kept || !(TOKENS.contains(&k.as_str()) || k.starts_with("INPUT_"))
    });
    let said = if !github {
        "off (started without --github: the GitHub tokens were removed from the environment and `gh` is never run; a tool that needs GitHub says so)".to_string()
    } else {
        match ["GITHUB_TOKEN", "GH_TOKEN"]
            .into_iter()
            .find(|name| served.var(name).is_some())
        {
            Some(name) => format!("on, with the token of {name} (never `gh auth token`)"),
            None => "on, but neither GITHUB_TOKEN nor GH_TOKEN is set (and `gh` is never asked)"
                .to_string(),
        }
    };
    (served, secrets, said)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::with_vars(&[
            ("GITHUB_TOKEN", "ghp_canary_one_1234"),
            ("GH_TOKEN", "gho_canary_two_1234"),
            ("GH_ENTERPRISE_TOKEN", "ghe_canary_three"),
            ("INPUT_TOKEN", "input_canary_four"),
            ("HOME", "/home/a"),
        ])
    }

    #[test]
    fn without_github_every_token_is_removed_and_gh_is_never_asked() {
        let (served, secrets, said) = environment(&env(), false);
        assert_eq!(served.vars.keys().collect::<Vec<_>>(), ["HOME"]);
        assert!(served.no_gh);
        assert_eq!(secrets.len(), 4, "{secrets:?}");
        assert!(said.starts_with("off"), "{said}");
    }

    #[test]
    fn the_process_environment_loses_the_tokens_and_git_its_credential_helpers() {
        let current: Vec<(OsString, OsString)> = [
            ("GITHUB_TOKEN", "a"),
            ("GH_TOKEN", "b"),
            ("INPUT_TOKEN", "c"),
            ("PATH", "/bin"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "user.name"),
            ("GIT_CONFIG_VALUE_0", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let wanted = process_environment(&current, false);
        let names: Vec<String> = wanted
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(
            names,
            [
                "PATH=/bin",
                "GIT_CONFIG_KEY_0=user.name",
                "GIT_CONFIG_VALUE_0=x",
                "GIT_CONFIG_COUNT=2",
                "GIT_CONFIG_KEY_1=credential.helper",
                "GIT_CONFIG_VALUE_1=",
                "GIT_TERMINAL_PROMPT=0"
            ]
        );
        // Once restarted with it, nothing changes: no second restart.
        assert_eq!(process_environment(&wanted, false), wanted);
        let kept = process_environment(&current, true);
        assert!(kept.iter().any(|(k, _)| k == "GITHUB_TOKEN"));
        assert!(!kept.iter().any(|(k, _)| k == "INPUT_TOKEN"));
    }

    #[test]
    fn with_github_the_token_order_is_github_token_then_gh_token() {
        let (served, _, said) = environment(&env(), true);
        assert_eq!(
            served.vars.keys().collect::<Vec<_>>(),
            ["GH_TOKEN", "GITHUB_TOKEN", "HOME"]
        );
        assert!(said.contains("GITHUB_TOKEN"), "{said}");
        let only_gh = Env::with_vars(&[("GH_TOKEN", "gho_x_1234567")]);
        assert!(environment(&only_gh, true).2.contains("GH_TOKEN"));
        assert!(environment(&Env::default(), true).2.contains("neither"));
    }
}
