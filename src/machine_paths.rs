//! Machine paths written the same on every machine, for every text aayu writes itself: a runner's
//! failure details and events, the step runner's transcripts, a tool's quoted failure (`sandbox::said`).

use std::path::Path;

/// A text with every path of this machine written the same on every machine: a path inside `root` (the
/// tree the tests ran in) relative to it; a crate's source in a cargo home as `<cargo-home>/…`, a Go
/// module cache's as `<gomodcache>/…`, Go's own source as `<goroot>/src/…`, a temporary folder's file as
/// `<tmp>/…/<name>`. rustc's `/rustc/<hash>/…` is no machine's and stays.
pub fn scrub(text: &str, root: &Path) -> String {
    static PATH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        // A path starts a text, or follows a space, a quote or an opening bracket (not a `:` of a URL,
        // nor a word: `https://x/src`, `foo/tmp`, `<cargo-home>/…` are left as they are).
        regex::Regex::new(r#"(^|[\s'"`(\[=])((?:/[^\s'"`:,;()\[\]{}<>|]+)+)"#)
            .expect("the path pattern")
    });
    let roots: Vec<String> = [Some(root.to_path_buf()), root.canonicalize().ok()]
        .into_iter()
        .flatten()
        .map(|r| r.display().to_string().trim_end_matches('/').to_string())
        .filter(|r| !r.is_empty())
        .collect();
    // A root the path pattern cannot hold whole (a checkout under `~/My Projects/`) is written first, by
    // its own pattern, anchored the same way: `ROOT/x` becomes `x`, a bare `ROOT` becomes `.`.
    let mut text = text.to_string();
    for root in roots
        .iter()
        .filter(|r| r.contains(|c: char| c.is_whitespace() || "'\"`:,;()[]{}<>|".contains(c)))
    {
        let Ok(own) = regex::Regex::new(&format!(
            r#"(^|[\s'"`(\[=]){}(/|[^\w./-]|$)"#,
            regex::escape(root)
        )) else {
            continue;
        };
        // The character after a bare root is kept, and may lead the next one: replace until none is left.
        loop {
            let next = own
                .replace_all(&text, |found: &regex::Captures| {
                    let (lead, after) = (&found[1], &found[2]);
                    if after == "/" {
                        lead.to_string()
                    } else {
                        format!("{lead}.{after}")
                    }
                })
                .into_owned();
            if next == text {
                break;
            }
            text = next;
        }
    }
    PATH.replace_all(&text, |found: &regex::Captures| {
        let lead = &found[1];
        format!("{lead}{}", place(&found[2], &roots))
    })
    .into_owned()
}

/// One machine path as [`scrub`] writes it.
fn place(path: &str, roots: &[String]) -> String {
    {
        for root in roots {
            if path == root {
                return ".".to_string();
            }
            if let Some(rel) = path
                .strip_prefix(root.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                return rel.to_string();
            }
        }
        for (marker, name) in [
            ("/registry/src/", "<cargo-home>/registry/src/"),
            ("/git/checkouts/", "<cargo-home>/git/checkouts/"),
            ("/pkg/mod/", "<gomodcache>/"),
        ] {
            if let Some(at) = path.find(marker) {
                return format!("{name}{}", &path[at + marker.len()..]);
            }
        }
        if let Some(at) = path.find("/.rustup/") {
            return format!("<rustup-home>/{}", &path[at + "/.rustup/".len()..]);
        }
        // Go's own source: a `src/` under a folder named for Go, or holding the standard library's
        // packages the testing machinery runs in (a hosted tool cache's `go/1.19.13/x64/src/testing/`).
        if let Some(at) = path.find("/src/") {
            let named = path[..at].rsplit('/').next().is_some_and(|last| {
                last == "go" || last.starts_with("go-") || last.starts_with("go1")
            });
            let standard = [
                "testing/",
                "runtime/",
                "reflect/",
                "internal/",
                "sync/",
                "os/",
                "fmt/",
            ]
            .iter()
            .any(|p| path[at + "/src/".len()..].starts_with(p));
            if named || standard {
                return format!("<goroot>{}", &path[at..]);
            }
        }
        let temporary = ["/tmp/", "/var/tmp/", "/run/", "/dev/shm/"]
            .iter()
            .any(|t| path.starts_with(t));
        if temporary {
            let name = path.rsplit('/').next().unwrap_or_default();
            return format!("<tmp>/…/{name}");
        }
        path.to_string()
    }
}
