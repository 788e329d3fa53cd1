"""C tokens and kernel-style function spans, as the history check reads
them."""

from foliolab.series import csource

FILE = """\
#define FOLIO_TEST(name)						\\
static inline bool folio_test_##name(struct folio *folio)		\\
{ return test_bit(PG_##name, &folio->flags); }

/**
 * first() - a function
 */
static __always_inline
int first(struct folio *folio,
	  int nr) __must_hold(&ptl)
{
	return nr; /* a comment { */
}

static inline int one_line(void)
{ return 0; }
int x = 1;

SYSCALL_DEFINE2(swapon, const char __user *, specialfile, int, flags)
{
	return 0;
}
"""


def test_spans_follow_kernel_braces_and_skip_macros():
    spans = csource.function_spans(FILE.split("\n"))
    assert spans == [
        csource.FunctionSpan("first", 8, 13),
        csource.FunctionSpan("one_line", 15, 16),
        csource.FunctionSpan("SYSCALL_DEFINE2(swapon)", 19, 22),
    ]
    fns = csource.FunctionMap(FILE.split("\n"))
    assert [fns.name_at(n) for n in (3, 9, 12, 17, 21)] == [
        None,
        "first",
        "first",
        None,
        "SYSCALL_DEFINE2(swapon)",
    ]


def test_tokens_ignore_wrapping_and_comments():
    a = csource.tokens("if (f(vma, pvmw.address, pvmw->pmd,\n\t\tfolio))")
    b = csource.tokens(
        "if (f(vma, /* x */ pvmw.address,\n      pvmw->pmd, folio)) // y"
    )
    assert (
        [t.text for t in a]
        == [t.text for t in b]
        == [
            "if",
            "(",
            "f",
            "(",
            "vma",
            ",",
            "pvmw",
            ".",
            "address",
            ",",
            "pvmw",
            "->",
            "pmd",
            ",",
            "folio",
            ")",
            ")",
        ]
    )
    assert [t.line for t in a][-2:] == [2, 2]


def test_a_token_knows_its_line_after_a_comment_of_many_lines():
    toks = csource.tokens('/* one\n * two\n */\nx = "a;b" << 2;\n')
    assert [(t.text, t.line) for t in toks] == [
        ("x", 4),
        ("=", 4),
        ('"a;b"', 4),
        ("<<", 4),
        ("2", 4),
        (";", 4),
    ]
    assert [t.is_name for t in toks[:1]] == [True]
    assert not csource.Token("return", 1).is_name
