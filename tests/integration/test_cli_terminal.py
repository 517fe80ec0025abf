"""Keys cannot drive the reader's terminal (issue 17): any writer of a shared bucket chooses the
keys that `s3rdma ls`, `cp --recursive`, `stat` and `rm` print, and a key may hold escape
sequences (set the window title, clear the screen, hide text). On a terminal the CLI shows every
control character (C0, DEL, C1 as UTF-8) as '?', on stdout (listings, transfer lines, stat) and
stderr (warnings, errors, the progress bar's label) alike; into a pipe it prints the exact
bytes, so scripts still get the keys as they are."""
import os
import pty
import select
import subprocess

from test_cli import CLI, MiB, bucket, env, run, s3, srv  # noqa: F401 (fixtures)

TITLE = "\x1b]0;pwned\x07"  # OSC 0: sets the window title
CLEAR = "\x1b[2J"           # CSI 2J: clears the screen
# key below esc/ -> how a terminal shows it
SHOWN = {
    f"{TITLE}title.txt": "?]0;pwned?title.txt",
    f"{CLEAR}clear.txt": "?[2Jclear.txt",
    "c1\u009b2J.txt": "c1?2J.txt",          # C1 CSI, sent as UTF-8 (c2 9b)
    "del\x7f.txt": "del?.txt",
    "new\nline.txt": "new?line.txt",        # no fake second line either
    "caf\u00e9 \u20ac.txt": "caf\u00e9 \u20ac.txt",  # printable non-ASCII stays
    "sub\x1b[8m/hidden.txt": "sub?[8m/hidden.txt",   # CSI 8m: invisible text
}
BIG = f"big{TITLE}.bin"                   # large enough for a progress bar on stderr
HOSTILE = f"../{CLEAR}up.txt"             # refused (leaves dl/): its warning names it
BAR = b"\r\x1b[K"                         # the progress bar's own redraw, the only ESC allowed


def on_terminal(args, env, cwd):  # noqa: F811
    """Runs the CLI with stdout and stderr on one pseudo-terminal; (exit code, what it showed,
    with the progress bar's redraws removed and the terminal's \\r\\n made \\n)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(CLI), *map(str, args)], env=env, cwd=cwd, stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = b""
    while select.select([master], [], [], 120)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the CLI has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    rc = proc.wait(timeout=120)
    os.close(master)
    return rc, shown.replace(BAR, b"").replace(b"\r\n", b"\n")


def test_keys_cannot_drive_the_terminal_but_pipes_get_them_exact(env, s3, bucket,  # noqa: F811
                                                                 tmp_path):
    for k in SHOWN:
        s3.put_object(Bucket=bucket, Key="esc/" + k, Body=b"x")
    s3.put_object(Bucket=bucket, Key="esc/" + BIG, Body=b"b" * (5 * MiB))
    s3.put_object(Bucket=bucket, Key="esc/" + HOSTILE, Body=b"evil")
    url = f"s3://{bucket}/esc/"

    # Into pipes: the exact bytes, as aws s3 ls prints them.
    out = run(["ls", "--recursive", url], env, check=0).stdout
    for k in [*SHOWN, BIG, HOSTILE]:
        assert f" esc/{k}\n".encode() in out, (k, out)
    p = run(["cp", "--recursive", url, tmp_path / "pipe"], env, check=1, cwd=tmp_path)
    for k in [*SHOWN, BIG]:
        assert f"download: {url}{k} to {tmp_path}/pipe/{k}\n".encode() in p.stdout, (k, p.stdout)
        assert (tmp_path / "pipe" / k).exists()
    assert f"skipping {url}{HOSTILE}:".encode() in p.stderr, p.stderr

    # On a terminal: every control character is a '?', on stdout and stderr.
    rc, ls = on_terminal(["ls", "--recursive", url], env, tmp_path)
    rc2, ls_dir = on_terminal(["ls", url], env, tmp_path)
    rc3, cp = on_terminal(["cp", "--recursive", url, "dl"], env, tmp_path)
    rc4, stat = on_terminal(["stat", f"{url}{CLEAR}clear.txt"], env, tmp_path)
    rc5, missing = on_terminal(["stat", f"{url}{CLEAR}missing"], env, tmp_path)
    rc6, rm = on_terminal(["rm", "--recursive", url], env, tmp_path)
    assert (rc, rc2, rc3, rc4, rc5, rc6) == (0, 0, 1, 0, 3, 0)
    for shown in (ls, ls_dir, cp, stat, missing, rm):
        for c in (b"\x1b", b"\x07", b"\x7f", b"\xc2\x9b"):
            assert c not in shown, (c, shown)
    for k, s in SHOWN.items():
        assert f" esc/{s}\n".encode() in ls, (s, ls)
        assert (tmp_path / "dl" / k).read_bytes() == b"x"  # the files keep their exact names
        assert f"download: {url}{s} to dl/{s}\n".encode() in cp, (s, cp)
        assert f"delete: {url}{s}\n".encode() in rm, (s, rm)
    assert b" big?]0;pwned?.bin\n" in ls_dir and b"PRE sub?[8m/\n" in ls_dir, ls_dir
    assert b"big?]0;pwned?.bin [" in cp and b"ETA" in cp, cp  # the bar's label, masked
    assert f"skipping {url}../?[2Jup.txt:".encode() in cp, cp
    assert f"Key:           {url}?[2Jclear.txt\n".encode() in stat, stat
    assert f"{url}?[2Jmissing: NoSuchKey".encode() in missing, missing
