//! Rust's `cfg` predicates, read as data: `test`, `all(test, feature = "x")`, `not(windows)`. The coverage
//! floor asks two things of them: whether an item's `#[cfg(…)]` holds only under `test` (test code), and
//! whether a cargo configuration's `[target.'cfg(…)']` table applies to the host (`rustc --print cfg`'s
//! lines, asked as the sandbox uid).

use std::collections::BTreeSet;

/// One predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::runners) enum Cfg {
    Name(String),
    KeyValue(String, String),
    All(Vec<Cfg>),
    Any(Vec<Cfg>),
    Not(Box<Cfg>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Str(String),
    Open,
    Close,
    Comma,
    Equals,
}

fn tokens(text: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' | '=' => {
                chars.next();
                out.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    ',' => Token::Comma,
                    _ => Token::Equals,
                });
            }
            '"' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => s.push(chars.next()?),
                        other => s.push(other),
                    }
                }
                out.push(Token::Str(s));
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' {
                        s.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Token::Ident(s));
            }
            _ => return None,
        }
    }
    Some(out)
}

impl Cfg {
    /// A predicate as written inside `cfg(…)`; `None` when it is not one.
    pub(in crate::runners) fn parse(text: &str) -> Option<Cfg> {
        let tokens = tokens(text)?;
        let mut at = 0;
        let cfg = predicate(&tokens, &mut at, 0)?;
        (at == tokens.len()).then_some(cfg)
    }

    /// A cargo configuration's target key `cfg(…)`; `None` for a triple or anything else.
    pub(in crate::runners) fn of_key(key: &str) -> Option<Cfg> {
        let inner = key.trim().strip_prefix("cfg(")?.strip_suffix(')')?;
        Cfg::parse(inner)
    }

    /// Whether the predicate holds only when `name` is set (`test`, `all(test, unix)`), never without it.
    pub(in crate::runners) fn only_under(&self, name: &str) -> bool {
        match self {
            Cfg::Name(n) => n == name,
            Cfg::All(all) => all.iter().any(|c| c.only_under(name)),
            Cfg::Any(any) => !any.is_empty() && any.iter().all(|c| c.only_under(name)),
            Cfg::KeyValue(..) | Cfg::Not(_) => false,
        }
    }

    /// Whether the predicate holds for a set of cfg values (`rustc --print cfg`: `unix`,
    /// `target_os="linux"`).
    pub(in crate::runners) fn holds(&self, set: &BTreeSet<(String, Option<String>)>) -> bool {
        match self {
            Cfg::Name(n) => set.contains(&(n.clone(), None)),
            Cfg::KeyValue(k, v) => set.contains(&(k.clone(), Some(v.clone()))),
            Cfg::All(all) => all.iter().all(|c| c.holds(set)),
            Cfg::Any(any) => any.iter().any(|c| c.holds(set)),
            Cfg::Not(c) => !c.holds(set),
        }
    }
}

/// `rustc --print cfg`'s lines as a set.
pub(in crate::runners) fn printed(text: &str) -> BTreeSet<(String, Option<String>)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.trim_matches('"').to_string())),
            None => (l.to_string(), None),
        })
        .collect()
}

fn predicate(tokens: &[Token], at: &mut usize, depth: usize) -> Option<Cfg> {
    if depth > 32 {
        return None;
    }
    let Token::Ident(name) = tokens.get(*at)? else {
        return None;
    };
    *at += 1;
    match tokens.get(*at) {
        Some(Token::Equals) => {
            *at += 1;
            let Token::Str(value) = tokens.get(*at)? else {
                return None;
            };
            *at += 1;
            Some(Cfg::KeyValue(name.clone(), value.clone()))
        }
        Some(Token::Open) if matches!(name.as_str(), "all" | "any" | "not") => {
            *at += 1;
            let mut list = Vec::new();
            loop {
                if tokens.get(*at) == Some(&Token::Close) {
                    *at += 1;
                    break;
                }
                list.push(predicate(tokens, at, depth + 1)?);
                match tokens.get(*at)? {
                    Token::Comma => *at += 1,
                    Token::Close => {
                        *at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
            match name.as_str() {
                "all" => Some(Cfg::All(list)),
                "any" => Some(Cfg::Any(list)),
                _ => {
                    let [one] = <[Cfg; 1]>::try_from(list).ok()?;
                    Some(Cfg::Not(Box::new(one)))
                }
            }
        }
        Some(Token::Open) => None,
        _ => Some(Cfg::Name(name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_are_read_and_decided() {
        let test = Cfg::parse("test").expect("test");
        assert!(test.only_under("test"));
        for (text, only) in [
            ("all(test, feature = \"x\")", true),
            ("all ( test , unix )", true),
            ("any(test, unix)", false),
            ("any(test, all(test, unix))", true),
            ("not(test)", false),
            ("feature = \"test\"", false),
            ("testing", false),
        ] {
            let cfg = Cfg::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(cfg.only_under("test"), only, "{text}");
        }
        for bad in ["all(test", "test)", "x = y", "not(a, b)", "foo(bar)", ""] {
            assert_eq!(Cfg::parse(bad), None, "{bad}");
        }
        let host = printed("debug_assertions\ntarget_arch=\"x86_64\"\ntarget_os=\"linux\"\nunix\n");
        for (key, holds) in [
            ("cfg(unix)", true),
            ("cfg(target_os = \"linux\")", true),
            ("cfg(all(unix, not(target_os = \"macos\")))", true),
            ("cfg(windows)", false),
            ("cfg(any(windows, target_arch = \"aarch64\"))", false),
        ] {
            assert_eq!(Cfg::of_key(key).expect(key).holds(&host), holds, "{key}");
        }
        assert_eq!(Cfg::of_key("x86_64-unknown-linux-gnu"), None);
    }
}
