"""What a test holds a run directory to when nothing may be written in it:
every file under it with its bytes."""


def bytes_under(d):
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }
