import subprocess

from foliolab import image


def test_cpio_is_readable_by_cpio(tmp_path):
    c = image.Cpio()
    c.file("foliolab/bin/tool", b"#!/bin/sh\n", 0o755)
    c.symlink("bin/sh", "/bin/busybox")
    c.file("foliolab/bin/tool", b"duplicate ignored")
    data = c.finish()
    assert len(data) % 512 == 0
    cp = subprocess.run(["cpio", "-t", "--quiet"], input=data,
                        capture_output=True)
    assert cp.returncode == 0
    names = cp.stdout.decode().split()
    assert names == ["foliolab", "foliolab/bin", "foliolab/bin/tool", "bin",
                     "bin/sh"]
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], input=data, cwd=out, check=True)
    assert (out / "foliolab/bin/tool").read_bytes() == b"#!/bin/sh\n"
    assert (out / "bin/sh").is_symlink()


def test_job_archive_holds_job_and_added_files(tmp_path):
    extra = tmp_path / "mytool"
    extra.write_bytes(b"\x7fELF")
    data = image.job_archive("echo hi\n", [extra])
    names = subprocess.run(["cpio", "-t", "--quiet"], input=data,
                           capture_output=True).stdout.decode().split()
    assert "foliolab/job.sh" in names and "foliolab/bin/mytool" in names


def test_shared_libs_of_a_dynamic_tool():
    libs = image.shared_libs("/bin/ls")
    assert any("libc.so" in l for l in libs)
    assert any("ld-linux" in l for l in libs)
