//! The JavaScript canary ([`crate::floors::canary`]): `throw new Error("<message>");` first in a test's
//! callback, found with `oxc_parser` by its titles — `describe`/`suite`/`context` calls for the outer
//! ones (their callbacks' statements followed), a `test`/`it` call for the last. A `test.failing`, a
//! table (`test.each`), a test whose titles are not plain strings or that a loop or a helper makes, and a
//! subtest (node's `t.test`), is one the canary cannot apply to. A package with an install runs its
//! tests in the install's sealed copy: the canary's copy gets that copy's `node_modules` folders as
//! links, and its tests run in the canary's copy instead.

use std::collections::BTreeMap;
use std::path::Path;

use oxc_allocator::Allocator;
use oxc_ast::ast::{Argument, Expression, Statement};
use oxc_span::SourceType;

use super::JsTest;
use crate::runners::{Canary, Package, TestId, join};

/// The largest file read.
const CAP: u64 = 16 << 20;

/// Where a canary goes in a file: a block body's `{` (text after it), or an expression body's span
/// (wrapped into a block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Block(u32),
    Expression(u32, u32),
}

/// `installed`: the install's sealed copy of the lock's folder (`lock`, from the root) the package's
/// tests run in at the head — its `node_modules` folders are linked into the canary's copy, whose
/// tests then run there ([`super::Js::run_canaries`]).
pub(super) fn canary(
    root: &Path,
    package: &Package,
    tests: &[&TestId],
    canary: &Canary,
    installed: Option<(&Path, &str)>,
) -> BTreeMap<TestId, Result<TestId, String>> {
    let mut out = BTreeMap::new();
    if let Some((copy, lock)) = installed
        && let Err(why) = link_modules(copy, root, lock)
    {
        for id in tests {
            out.insert((*id).clone(), Err(why.clone()));
        }
        return out;
    }
    let mut by_file: BTreeMap<String, Vec<(&TestId, JsTest)>> = BTreeMap::new();
    for id in tests {
        match JsTest::parse(&id.rest) {
            Ok(test) => by_file
                .entry(test.file.clone())
                .or_default()
                .push((*id, test)),
            Err(e) => {
                out.insert((*id).clone(), Err(e.to_string()));
            }
        }
    }
    for (file, asked) in by_file {
        let rel = join(package.dir, &file);
        let placed = place_all(root, &rel, &asked, canary.message);
        for (id, _) in &asked {
            let said = match &placed {
                Ok(each) => each[&id.rest].clone().map(|()| (*id).clone()),
                Err(why) => Err(why.clone()),
            };
            out.insert((*id).clone(), said);
        }
    }
    out
}

/// Each `node_modules` folder of the install's copy (`copy`, of the lock's folder `lock`) linked at its
/// place in the tree at `root` (never into a `node_modules`, nor deeper than a workspace goes).
fn link_modules(copy: &Path, root: &Path, lock: &str) -> Result<(), String> {
    let mut stack = vec![(String::new(), 0usize)];
    let mut linked = 0;
    while let Some((rel, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(copy.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) || name.starts_with('.') {
                continue;
            }
            let inside = join(&rel, &name);
            if name == "node_modules" {
                let target = copy.join(&inside);
                let at = join(lock, &inside);
                // Linked already (another member of the same workspace's lock).
                if std::fs::read_link(root.join(&at)).is_ok_and(|t| t == target) {
                    linked += 1;
                    continue;
                }
                if std::fs::symlink_metadata(root.join(&at)).is_ok() {
                    continue;
                }
                crate::safe_fs::symlink(root, &at, target.as_os_str().as_encoded_bytes())
                    .map_err(|e| format!("its install's `node_modules` cannot be linked: {e}"))?;
                linked += 1;
            } else if depth < 4 {
                stack.push((inside, depth + 1));
            }
        }
    }
    if linked == 0 {
        return Err("its install's copy has no `node_modules`".to_string());
    }
    Ok(())
}

/// The canary placed in one file for each test asked (by id rest): `Ok`, or why it cannot apply.
fn place_all(
    root: &Path,
    rel: &str,
    asked: &[(&TestId, JsTest)],
    message: &str,
) -> Result<BTreeMap<String, Result<(), String>>, String> {
    let bytes = crate::safe_fs::read(root, rel, CAP).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| format!("`{rel}` is not UTF-8"))?;
    let kind = source_type(rel);
    // Parsed on a thread of its own (a large stack), as root, as data.
    let titles: Vec<String> = asked.iter().map(|(_, test)| test.full.clone()).collect();
    let found = crate::runners::parse_apart(text.clone(), move |text| {
        let allocator = Allocator::default();
        let parsed = oxc_parser::Parser::new(&allocator, &text, kind).parse();
        if parsed.panicked || !parsed.diagnostics.is_empty() {
            return None;
        }
        Some(
            titles
                .iter()
                .map(|full| locate(&parsed.program.body, &full.split(" > ").collect::<Vec<_>>()))
                .collect::<Vec<_>>(),
        )
    })
    .map_err(|why| format!("`{rel}`: {why}"))?
    .ok_or_else(|| format!("`{rel}` does not parse"))?;
    let mut each = BTreeMap::new();
    let mut places = Vec::new();
    for ((id, _), said) in asked.iter().zip(found) {
        if let Ok(place) = said {
            places.push(place);
        }
        each.insert(id.rest.clone(), said.map(|_| ()));
    }
    if places.is_empty() {
        return Ok(each);
    }
    // From the end of the file back, so that each edit leaves the offsets before it where they were.
    places.sort_unstable_by_key(|place| match place {
        Place::Block(at) => *at,
        Place::Expression(start, _) => *start,
    });
    places.dedup();
    let throw = format!("throw new Error({message:?});");
    let mut changed = text.clone();
    for place in places.into_iter().rev() {
        match place {
            Place::Block(at) => changed.insert_str(at as usize, &format!(" {throw}")),
            Place::Expression(start, end) => {
                changed.insert_str(end as usize, "); }");
                changed.insert_str(start as usize, &format!("{{ {throw} return ("));
            }
        }
    }
    let parses = crate::runners::parse_apart(changed.clone(), move |text| {
        let allocator = Allocator::default();
        let parsed = oxc_parser::Parser::new(&allocator, &text, kind).parse();
        !parsed.panicked && parsed.diagnostics.is_empty()
    });
    if parses != Ok(true) {
        return Err(format!("the canary does not parse in `{rel}`"));
    }
    crate::safe_fs::write(root, rel, changed.as_bytes()).map_err(|e| e.to_string())?;
    Ok(each)
}

/// How a test file is parsed, by its extension (`.js` as a module with JSX, as jest and vitest take it).
fn source_type(rel: &str) -> SourceType {
    let ext = rel.rsplit('.').next().unwrap_or("");
    match ext {
        "ts" | "mts" | "cts" => SourceType::ts(),
        "tsx" => SourceType::tsx(),
        "cjs" => SourceType::cjs(),
        _ => SourceType::mjs().with_jsx(true),
    }
}

/// A call's callee as words: `test`, `it.only` → `["it", "only"]`; `None` for any other shape.
fn callee(expression: &Expression) -> Option<Vec<String>> {
    match expression {
        Expression::Identifier(id) => Some(vec![id.name.to_string()]),
        Expression::StaticMemberExpression(member) => {
            let mut words = callee(&member.object)?;
            words.push(member.property.name.to_string());
            Some(words)
        }
        _ => None,
    }
}

/// The call a statement is (`test(…)`, `await describe(…)`), if any.
fn call_of<'s, 'a>(statement: &'s Statement<'a>) -> Option<&'s oxc_ast::ast::CallExpression<'a>> {
    let Statement::ExpressionStatement(statement) = statement else {
        return None;
    };
    let mut expression = &statement.expression;
    if let Expression::AwaitExpression(awaited) = expression {
        expression = &awaited.argument;
    }
    match expression {
        Expression::CallExpression(call) => Some(call),
        _ => None,
    }
}

/// A title argument's text, when it is a plain string.
fn title(argument: &Argument) -> Option<String> {
    match argument {
        Argument::StringLiteral(s) => Some(s.value.to_string()),
        Argument::TemplateLiteral(t) if t.expressions.is_empty() && t.quasis.len() == 1 => {
            t.quasis[0].value.cooked.as_ref().map(|c| c.to_string())
        }
        _ => None,
    }
}

/// The callback of a call: its last function argument's body.
enum Body<'s, 'a> {
    Block(&'s oxc_ast::ast::FunctionBody<'a>),
    /// An arrow function's expression body, by its span.
    Expression(oxc_span::Span),
}

fn callback<'s, 'a>(call: &'s oxc_ast::ast::CallExpression<'a>) -> Option<Body<'s, 'a>> {
    use oxc_ast::ast::ArrowFunctionBody;
    use oxc_span::GetSpan as _;
    call.arguments
        .iter()
        .rev()
        .find_map(|argument| match argument {
            Argument::ArrowFunctionExpression(arrow) => Some(match &arrow.body {
                ArrowFunctionBody::FunctionBody(body) => Body::Block(body),
                expression => Body::Expression(expression.span()),
            }),
            Argument::FunctionExpression(function) => function.body.as_deref().map(Body::Block),
            _ => None,
        })
}

const SUITES: [&str; 3] = ["describe", "suite", "context"];
const TESTS: [&str; 2] = ["test", "it"];

/// Where the canary goes for the test `titles` names among `statements`, or why it cannot.
fn locate(statements: &[Statement], titles: &[&str]) -> Result<Place, String> {
    let not_found = || {
        format!(
            "no `test`/`it` call titled `{}` in its file's `describe` calls (a table, a loop, a helper or a subtest makes it): its body cannot be found",
            titles.join(" > ")
        )
    };
    let Some((first, rest)) = titles.split_first() else {
        return Err(not_found());
    };
    let mut found = None;
    for statement in statements {
        let Some(call) = call_of(statement) else {
            continue;
        };
        let Some(words) = callee(&call.callee) else {
            continue;
        };
        let Some(title) = call.arguments.first().and_then(title) else {
            continue;
        };
        if title != *first {
            continue;
        }
        let base = words[0].as_str();
        let suite = SUITES.contains(&base) && !rest.is_empty();
        let test = TESTS.contains(&base) && rest.is_empty();
        if !suite && !test {
            continue;
        }
        if words.iter().any(|w| w == "failing" || w == "fails") {
            return Err(
                "it is `test.failing` (or vitest's `test.fails`): a failing first statement is what it expects".to_string(),
            );
        }
        if words.iter().any(|w| w == "each") {
            return Err(not_found());
        }
        found = Some((call, suite));
    }
    let Some((call, suite)) = found else {
        return Err(not_found());
    };
    match (callback(call), suite) {
        (Some(Body::Block(body)), true) => locate(&body.statements, rest),
        (Some(Body::Block(body)), false) => Ok(Place::Block(body.span.start + 1)),
        (Some(Body::Expression(span)), false) => Ok(Place::Expression(span.start, span.end)),
        _ => Err(not_found()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(rel: &str, text: &str, names: &[&str]) -> (String, Vec<Result<(), String>>) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, text).expect("write");
        let ids: Vec<TestId> = names
            .iter()
            .map(|n| TestId {
                package: String::new(),
                rest: format!("{rel}::{n}"),
            })
            .collect();
        let asked: Vec<(&TestId, JsTest)> = ids
            .iter()
            .map(|id| (id, JsTest::parse(&id.rest).expect("id")))
            .collect();
        let each = place_all(dir.path(), rel, &asked, "aayu canary 9").expect("placed");
        let said = ids.iter().map(|id| each[&id.rest].clone()).collect();
        (std::fs::read_to_string(&path).expect("read"), said)
    }

    #[test]
    fn the_canary_goes_first_in_the_named_tests_callback() {
        let text = "import { test, describe } from 'node:test';\nconst re = /}/g;\ndescribe('parse', () => {\n  it('splits', async () => {\n    assert.equal(1, 1);\n  });\n  test(`keeps`, () => expect(re).toBeTruthy());\n});\ntest('top', function () { ok(); });\n";
        let (changed, said) = placed(
            "src/parse.test.ts",
            text,
            &["parse > splits", "parse > keeps", "top"],
        );
        assert!(said.iter().all(Result::is_ok), "{said:?}");
        let throw = "throw new Error(\"aayu canary 9\");";
        assert_eq!(
            changed,
            text.replace("async () => {\n", &format!("async () => {{ {throw}\n"))
                .replace(
                    "() => expect(re).toBeTruthy()",
                    &format!("() => {{ {throw} return (expect(re).toBeTruthy()); }}")
                )
                .replace(
                    "function () { ok(); }",
                    &format!("function () {{ {throw} ok(); }}")
                )
        );
    }

    #[test]
    fn a_file_nested_deeper_than_aayu_parses_is_not_parsed() {
        let dir = tempfile::tempdir().expect("dir");
        let text = format!(
            "test('deep', () => {{ {}1{} }});\n",
            "(".repeat(1100),
            ")".repeat(1100)
        );
        std::fs::write(dir.path().join("a.test.js"), &text).expect("write");
        let id = TestId {
            package: String::new(),
            rest: "a.test.js::deep".to_string(),
        };
        let asked = [(&id, JsTest::parse(&id.rest).expect("id"))];
        let said = place_all(dir.path(), "a.test.js", &asked, "m").expect_err("too deep");
        assert!(said.contains("nest deeper than 1024"), "{said}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.test.js")).expect("read"),
            text
        );
    }

    #[test]
    fn a_file_nested_as_deep_as_aayu_parses_is_parsed_on_its_own_stack() {
        let deep = "(".repeat(1000) + "1" + &")".repeat(1000);
        let text = format!("test('deep', () => {{ expect({deep}).toBe(1); }});\n");
        let (changed, said) = placed("a.test.js", &text, &["deep"]);
        assert_eq!(said, vec![Ok(())]);
        assert!(
            changed.starts_with("test('deep', () => { throw new Error("),
            "{changed:.80}"
        );
        // syn, for cargo's canary, on the same stack.
        let rust = format!("#[test]\nfn deep() {{ assert_eq!({deep}, 1); }}\n");
        let parsed = crate::runners::parse_apart(rust, |text| syn::parse_file(&text).is_ok());
        assert_eq!(parsed, Ok(true));
    }

    #[test]
    fn where_the_canary_cannot_apply_it_says_why() {
        let text = "test.failing('broken', () => { throw 1 });\ntest.each([1])('row %i', (n) => {});\nfor (const n of [1]) test(`n${n}`, () => {});\ntest('outer', async (t) => { await t.test('inner', () => {}); });\n";
        let (changed, said) = placed(
            "a.test.js",
            text,
            &["broken", "row 1", "n1", "outer > inner"],
        );
        assert_eq!(changed, text);
        assert!(
            said[0].as_ref().is_err_and(|w| w.contains("test.failing")),
            "{said:?}"
        );
        for why in &said[1..] {
            assert!(
                why.as_ref().is_err_and(|w| w.contains("cannot be found")),
                "{said:?}"
            );
        }
    }
}
