"""C source as the stable-history check reads it: the tokens of a file
(no comments, no whitespace, so a re-wrapped line is the same tokens) and
the line spans of its functions, for the kernel's coding style.

Both work on whole files: a hunk's lines may start inside a comment or a
string, which only the whole file can tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Longest operators first, so "->" is one token and not "-" then ">".
_PUNCT = (
    r"\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||##"
    r"|[-+*/%&|^]=|[^\s]"
)
_TOKEN = re.compile(
    r"(?P<skip>/\*.*?(?:\*/|\Z)|//[^\n]*|\\\n)"
    r"|(?P<tok>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    r"|[A-Za-z_]\w*|\.?[0-9](?:[eEpP][+-]|[\w.])*"
    rf"|{_PUNCT})",
    re.S,
)
_NAME = re.compile(r"[A-Za-z_]\w*\Z")

KEYWORDS = frozenset(
    """
auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed
sizeof static struct switch typedef typeof union unsigned void volatile
while bool true false NULL _Bool __always_inline noinline likely unlikely
""".split()
)


@dataclass(frozen=True)
class Token:
    text: str
    line: int  # 1-based line of the file it starts on

    @property
    def is_name(self) -> bool:
        """An identifier that is not a keyword or a ubiquitous constant:
        what carries a statement's meaning."""
        return bool(_NAME.match(self.text)) and self.text not in KEYWORDS


def tokens(text: str) -> list[Token]:
    """The C tokens of ``text`` with their lines; comments and
    backslash-newlines are dropped."""
    out = []
    line, pos = 1, 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if m.group("tok") is not None:
            out.append(Token(m.group("tok"), line))
    return out


@dataclass(frozen=True)
class FunctionSpan:
    name: str
    first: int  # the signature's first line (1-based)
    last: int  # the line of the closing brace


class FunctionMap:
    """Which function each line of a file belongs to (None: file scope).

    Kernel style puts a function's opening and closing braces alone at the
    start of a line, and nothing else does, so that is what is looked for;
    a signature is the lines above the brace back to a blank line, a
    preprocessor line or the end of a statement or comment.
    """

    def __init__(self, lines: list[str]) -> None:
        self.spans = function_spans(lines)
        self._at: list[str | None] = [None] * (len(lines) + 2)
        for s in self.spans:
            for n in range(s.first, s.last + 1):
                self._at[n] = s.name

    def name_at(self, line: int) -> str | None:
        return self._at[line] if 0 < line < len(self._at) else None


def function_spans(lines: list[str]) -> list[FunctionSpan]:
    spans = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("{"):
            i += 1
            continue
        first = _signature_start(lines, i)
        end = _body_end(lines, i)
        name = function_name(" ".join(lines[first:i]))
        if name and first < i:
            spans.append(
                FunctionSpan(name, first + 1, min(end, len(lines) - 1) + 1)
            )
        i = end + 1
    return spans


def _body_end(lines: list[str], brace: int) -> int:
    """The closing brace's line: the opening line itself for a one-line
    body, else the next line that starts with "}"."""
    if lines[brace].count("{") == lines[brace].count("}"):
        return brace
    end = brace + 1
    while end < len(lines) and not lines[end].startswith("}"):
        end += 1
    return end


def _signature_start(lines: list[str], brace: int) -> int:
    """The first line of the signature above an opening brace; the brace's
    own line if there is none (a brace in a #define's continued lines,
    whose line above ends in a backslash, opens no function)."""
    j = brace
    while j > 0:
        above = lines[j - 1].rstrip()
        if (
            not above
            or above.startswith("#")
            or above.endswith(";")
            or above.endswith("\\")
            or above.endswith("}")
            or above.endswith("*/")
            or above.startswith("{")
        ):
            break
        j -= 1
    return j


# Annotations that take arguments before the name in a signature.
_ATTRIBUTES = frozenset(
    {
        "__attribute__",
        "__printf",
        "__scanf",
        "__section",
        "__aligned",
        "__alloc_size",
        "__diag_ignore",
        "__no_sanitize_address",
    }
)


def function_name(signature: str) -> str | None:
    """The name a signature defines: the first identifier followed by "(".
    A function defined by an upper-case macro (``SYSCALL_DEFINE3(madvise,
    ...)``) is named with its first argument, so two such functions
    differ."""
    text = _TOKEN.sub(
        lambda m: "" if m.group("skip") else m.group(0), signature
    )
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)?", text):
        name, arg = m.group(1), m.group(2)
        if name in _ATTRIBUTES or name in KEYWORDS:
            continue
        if name.isupper() and arg:
            return f"{name}({arg})"
        return name
    return None
