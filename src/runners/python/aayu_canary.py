"""aayu's canary for pytest: where a failing first statement goes in a test's own body.

Run by the machine's `python3 -I` (never a virtual environment's) as the sandbox's uid, offline: it
reads, on its standard input, {"source": <a test file's text>, "message": <the run's message>,
"tests": [[<class>, ..., <function>], ...]} and writes, on its standard output, {"source": <the text
with `raise AssertionError(<message>)` first in each test's body, or null when none applies>,
"tests": [null, or why the canary cannot apply, for each test asked]}. It parses the file with `ast`
and never imports or runs it.
"""

import ast
import json
import re
import sys

LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def last_named(body, name, kinds):
    """The last definition of `name` in a body (the one Python keeps)."""
    found = None
    for statement in body:
        if isinstance(statement, kinds) and statement.name == name:
            found = statement
    return found


def locate(tree, names):
    """The test's function node, or why the canary cannot apply."""
    scope = tree
    for name in names[:-1]:
        scope = last_named(scope.body, name, (ast.ClassDef,))
        if scope is None:
            return None, "no class `%s` in its file: its body cannot be found" % name
    function = last_named(scope.body, names[-1], (ast.FunctionDef, ast.AsyncFunctionDef))
    if function is None:
        return None, (
            "no function `%s` in its file (inherited or generated): its body cannot be found"
            % "::".join(names)
        )
    return function, None


def place(lines, function, message):
    """Edits the lines: the canary first in the function's body. False where it cannot go."""
    first = function.body[0]
    start = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])])
    line = lines[start - 1]
    raw = line.encode("utf-8")
    statement = "raise AssertionError(%r)" % message
    if start == first.lineno:
        before = raw[: first.col_offset].decode("utf-8", "replace")
    else:
        before = line[: len(line) - len(line.lstrip(" \t"))]
    if before.strip():
        # `def test(): assert x`: the body shares the header's line.
        at = len(raw[: first.col_offset].decode("utf-8", "replace"))
        lines[start - 1] = line[:at] + statement + "; " + line[at:]
        return
    ending = line[len(line.rstrip("\r\n")) :] or "\n"
    lines.insert(start - 1, before + statement + ending)


def main():
    ask = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    source, message, tests = ask["source"], ask["message"], ask["tests"]
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    source = source[len(bom) :]
    answers = [None] * len(tests)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as e:
        why = "its file does not parse (%s)" % getattr(e, "msg", e)
        return {"source": None, "tests": [why] * len(tests)}
    functions = {}
    for index, names in enumerate(tests):
        function, why = locate(tree, names)
        if function is None:
            answers[index] = why
        else:
            functions.setdefault(id(function), (function, []))[1].append(index)
    if not functions:
        return {"source": None, "tests": answers}
    lines = LINES.findall(source)
    # From the bottom up, so that each edit leaves the lines above it where they were.
    for function, _ in sorted(functions.values(), key=lambda f: -f[0].body[0].lineno):
        place(lines, function, message)
    changed = "".join(lines)
    # The canary must be the first statement of each test's body, and the file must still parse.
    try:
        again = ast.parse(changed)
    except (SyntaxError, ValueError) as e:
        why = "a first statement cannot go in its body here (%s)" % getattr(e, "msg", e)
        return {"source": None, "tests": [a or why for a in answers]}
    for function, indexes in functions.values():
        names = tests[indexes[0]]
        placed, _ = locate(again, names)
        first = placed.body[0] if placed is not None else None
        ok = (
            isinstance(first, ast.Raise)
            and isinstance(first.exc, ast.Call)
            and len(first.exc.args) == 1
            and isinstance(first.exc.args[0], ast.Constant)
            and first.exc.args[0].value == message
        )
        if not ok:
            for index in indexes:
                answers[index] = "a first statement cannot go in its body here"
    if all(a is not None for a in answers):
        return {"source": None, "tests": answers}
    return {"source": bom + changed, "tests": answers}


if __name__ == "__main__":
    sys.stdout.buffer.write(json.dumps(main()).encode("utf-8"))
