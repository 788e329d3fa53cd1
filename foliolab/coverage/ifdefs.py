"""Which lines of a C file a kernel config compiles out.

gcov knows only the lines the compiler saw. A line inside ``#ifdef
CONFIG_ARM64`` on an x86 build is not "not executable": it was never
built. This reads the conditionals of a file (``#if``, ``#ifdef``,
``#ifndef``, ``#elif``, ``#else``, ``#endif``) and evaluates the ones
made of config options alone (``CONFIG_X``, ``defined(CONFIG_X)``,
``IS_ENABLED(CONFIG_X)``, ``IS_BUILTIN``, ``IS_MODULE``,
``IS_REACHABLE``, integers, ``!``, ``&&``, ``||``, parentheses, ``==``
and ``!=``) against the build's .config. Anything else (a macro of the
file's own, ``sizeof``, ``<``) is unknown, and the lines under it are
never called compiled out: an unknown condition never hides a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_TOKEN = re.compile(
    r"\s*(defined|IS_ENABLED|IS_BUILTIN|IS_MODULE|"
    r"IS_REACHABLE|CONFIG_\w+|\d+[uUlL]*|&&|\|\||==|!=|[!()])"
)


def _strip_comment(text: str) -> str:
    return re.sub(r"/\*.*?(\*/|$)|//.*$", "", text).strip()


class _Expr:
    """A recursive-descent evaluator of config-only conditions; None for
    anything it cannot decide."""

    def __init__(self, text: str, config: dict[str, str]) -> None:
        self.config = config
        self.toks: list[str] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ValueError(text[pos:])
            self.toks.append(m.group(1))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def value(self) -> int | None:
        v = self._or()
        if self.i != len(self.toks):
            raise ValueError("trailing tokens")
        return v

    def _peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def _take(self, want: str | None = None) -> str:
        tok = self._peek()
        if not tok or (want is not None and tok != want):
            raise ValueError(f"expected {want}")
        self.i += 1
        return tok

    def _or(self) -> int | None:
        v = self._and()
        while self._peek() == "||":
            self._take()
            w = self._and()
            v = 1 if (v or w) else (None if v is None or w is None else 0)
        return v

    def _and(self) -> int | None:
        v = self._cmp()
        while self._peek() == "&&":
            self._take()
            w = self._cmp()
            if v == 0 or w == 0:
                v = 0
            else:
                v = None if v is None or w is None else 1
        return v

    def _cmp(self) -> int | None:
        v = self._unary()
        while self._peek() in ("==", "!="):
            op = self._take()
            w = self._unary()
            if v is None or w is None:
                v = None
            else:
                v = int((v == w) == (op == "=="))
        return v

    def _unary(self) -> int | None:
        tok = self._take()
        if tok == "!":
            v = self._unary()
            return None if v is None else int(not v)
        if tok == "(":
            v = self._or()
            self._take(")")
            return v
        if tok == "defined":
            paren = self._peek() == "("
            if paren:
                self._take()
            name = self._take()
            if paren:
                self._take(")")
            return self._defined(name)
        if tok.startswith("IS_"):
            self._take("(")
            name = self._take()
            self._take(")")
            return self._is(tok, name)
        if tok.startswith("CONFIG_"):
            return self._number(tok)
        return int(tok.rstrip("uUlL"))

    def _defined(self, name: str) -> int | None:
        if not name.startswith("CONFIG_"):
            return None
        # CONFIG_X=m defines CONFIG_X_MODULE, not CONFIG_X
        if name.endswith("_MODULE"):
            return int(self.config.get(name[:-7], "n") == "m")
        return int(self.config.get(name, "n") not in ("n", "m"))

    def _is(self, macro: str, name: str) -> int | None:
        if not name.startswith("CONFIG_"):
            return None
        v = self.config.get(name, "n")
        if macro == "IS_BUILTIN":
            return int(v == "y")
        if macro == "IS_MODULE":
            return int(v == "m")
        return int(v in ("y", "m"))  # IS_ENABLED, IS_REACHABLE

    def _number(self, name: str) -> int | None:
        """A bare CONFIG_X: 1 when y, its number when numeric, 0 when
        unset; a string or m option is not decided."""
        v = self.config.get(name, "n")
        if v == "y":
            return 1
        if v == "n":
            return 0
        try:
            return int(v, 0)
        except ValueError:
            return None


def evaluate(condition: str, config: dict[str, str]) -> int | None:
    """A ``#if`` condition's truth under ``config``; None: not decided."""
    try:
        return _Expr(condition, config).value()
    except (ValueError, IndexError):
        return None


@dataclass
class _Branch:
    opener: str  # the #if/#ifdef/#ifndef line that opened it
    shown: str  # this branch's directive as the report names it
    live: int | None  # this branch is compiled: 1, 0, None unknown
    taken: int | None  # some branch of this #if so far is: 1, 0, None


def excluded_lines(lines: list[str], config: dict[str, str]) -> dict[int, str]:
    """{line: the condition that compiles it out} for every line of
    ``lines`` inside a branch ``config`` leaves out (a directive line
    itself belongs to the branch around it)."""
    stack: list[_Branch] = []
    out: dict[int, str] = {}
    for n, raw in enumerate(lines, 1):
        m = _DIRECTIVE.match(raw)
        if m:
            _directive(stack, m.group(1), _strip_comment(m.group(2)), config)
            continue
        for b in stack:
            if b.live == 0:
                out[n] = b.shown
                break
    return out


def _directive(
    stack: list[_Branch], kind: str, arg: str, config: dict[str, str]
) -> None:
    if kind in ("if", "ifdef", "ifndef"):
        if kind == "if":
            v = evaluate(arg, config)
        else:
            name = arg.split()[0] if arg.split() else ""
            d = evaluate(f"defined({name})", config) if name else None
            v = d if kind == "ifdef" or d is None else int(not d)
        opener = f"#{kind} {arg}"
        stack.append(_Branch(opener, opener, v, v))
        return
    if not stack:
        return  # an unbalanced #else/#endif: ignore it
    b = stack[-1]
    if kind == "endif":
        stack.pop()
        return
    cond = 1 if kind == "else" else evaluate(arg, config)
    # this branch is compiled if no earlier one was and its own holds
    if b.taken == 1:
        live: int | None = 0
    elif b.taken is None:
        live = 0 if cond == 0 else None
    else:
        live = cond
    taken = (
        1
        if b.taken == 1 or live == 1
        else (None if b.taken is None or live is None else 0)
    )
    shown = f"#elif {arg}" if kind == "elif" else f"#else of {b.opener}"
    stack[-1] = _Branch(b.opener, shown, live, taken)
