"""make install (cmake --install of the already-built tree, as `make install` runs it): what lands
where, a program built against the installed pkg-config file talking to a real server, the
sample config, the man pages, the systemd unit (systemd-analyze verify) and the bash completion."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from s3r_itest import BINARY, REPO_ROOT, USERS, clean_env, new_bucket_name

BUILD = Path(os.environ.get("S3RDMA_BUILD") or Path(BINARY).parent).resolve()
HERE = Path(__file__).resolve().parent


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check:
        assert p.returncode == 0, f"{cmd} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def cmake_install(prefix, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir is not None:
        env["DESTDIR"] = str(destdir)
    return run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], env=env)


def project_version():
    m = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(\S+)$",
                  (BUILD / "CMakeCache.txt").read_text(), re.M)
    assert m, "no CMAKE_PROJECT_VERSION in the build's CMakeCache.txt"
    return m.group(1)


def asan_flags(lib):
    """Sanitizer flags a program needs to load lib: an ASan-built libs3rdma requires the ASan
    runtime first in the link order."""
    needed = run(["readelf", "-d", str(lib)]).stdout
    return ["-fsanitize=address,undefined"] if "libasan" in needed else []


def resolved_lib(exe, env):
    """The libs3rdma.so.0 the dynamic loader picks for exe under env (a normalized path)."""
    ldd = run(["ldd", str(exe)], env=env).stdout
    m = re.search(r"libs3rdma\.so\.0 => (\S+)", ldd)
    assert m, ldd
    return Path(os.path.normpath(m.group(1)))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """DESTDIR of `make install PREFIX=/usr DESTDIR=...`."""
    dest = tmp_path_factory.mktemp("destdir")
    cmake_install("/usr", dest)
    return dest


# --------------------------------------------------------------------------
# Layout, soname, pkg-config, a program against a server
# --------------------------------------------------------------------------
def test_installed_files(root):
    for rel in ["usr/sbin/s3rdmad", "usr/bin/s3rdma", "usr/bin/s3rdma-bench",
                "usr/include/s3rdma.h", "usr/lib/pkgconfig/s3rdma.pc",
                "usr/share/man/man8/s3rdmad.8", "usr/share/man/man1/s3rdma.1",
                "usr/share/man/man1/s3rdma-bench.1",
                "usr/lib/systemd/system/s3rdmad.service", "usr/lib/sysusers.d/s3rdma.conf",
                "usr/share/bash-completion/completions/s3rdma", "etc/s3rdma/s3rdmad.yaml"]:
        assert (root / rel).is_file(), f"{rel} not installed"
    assert (REPO_ROOT / "include/s3rdma.h").read_bytes() == (root / "usr/include/s3rdma.h").read_bytes()


def test_soname_and_links(root):
    lib = root / "usr/lib"
    real = lib / f"libs3rdma.so.{project_version()}"
    assert real.is_file() and not real.is_symlink()
    assert os.readlink(lib / "libs3rdma.so.0") == real.name
    assert os.readlink(lib / "libs3rdma.so") == "libs3rdma.so.0"
    dyn = run(["readelf", "-d", str(real)]).stdout
    assert re.search(r"\(SONAME\)\s+Library soname: \[libs3rdma\.so\.0\]", dyn), dyn
    # Only the public API is exported from the installed library too.
    run([str(REPO_ROOT / "scripts/check-exports"), str(lib / "libs3rdma.so")])
    # The tools find the installed library next to themselves (RUNPATH $ORIGIN/../lib),
    # without LD_LIBRARY_PATH or ldconfig.
    for tool in ["s3rdma", "s3rdma-bench"]:
        exe = root / "usr/bin" / tool
        assert "NEEDED" in run(["readelf", "-d", str(exe)]).stdout
        assert resolved_lib(exe, clean_env()) == lib / "libs3rdma.so.0"
    assert run([str(root / "usr/bin/s3rdma"), "--version"]).stdout.startswith("s3rdma ")


def pkg_config(root, *args):
    env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=str(root),
               PKG_CONFIG_LIBDIR=str(root / "usr/lib/pkgconfig"))
    env.pop("PKG_CONFIG_PATH", None)
    return run(["pkg-config", *args, "s3rdma"], env=env).stdout.split()


def test_pkg_config_names_installed_paths(root):
    pc = (root / "usr/lib/pkgconfig/s3rdma.pc").read_text()
    assert "prefix=/usr\n" in pc and str(REPO_ROOT) not in pc and str(BUILD) not in pc
    assert pkg_config(root, "--modversion") == [project_version()]
    assert pkg_config(root, "--cflags") == [f"-I{root}/usr/include"]
    assert pkg_config(root, "--libs") == [f"-L{root}/usr/lib", "-ls3rdma"]


def test_program_built_against_installed_library(root, server, tmp_path):
    lib = root / "usr/lib/libs3rdma.so"
    exe = tmp_path / "probe"
    run(["cc", "-o", str(exe), str(HERE / "install/probe.c"), *asan_flags(lib),
         *pkg_config(root, "--cflags", "--libs")])
    dyn = run(["readelf", "-d", str(exe)]).stdout
    assert "Shared library: [libs3rdma.so.0]" in dyn, dyn
    env = clean_env({"LD_LIBRARY_PATH": str(root / "usr/lib"),
                     "AWS_ACCESS_KEY_ID": USERS[0][0], "AWS_SECRET_ACCESS_KEY": USERS[0][1]})
    p = run([str(exe), server.endpoint, new_bucket_name("inst")], env=env)
    assert p.stdout == "ok 37\n"
    # The program really runs on the installed copy, not the build tree's.
    assert resolved_lib(exe, env) == root / "usr/lib/libs3rdma.so.0"


def test_make_install_passes_prefix_and_destdir():
    """`make install PREFIX=... DESTDIR=...` is cmake --install of the build tree with both."""
    p = run(["make", "-n", "-C", str(REPO_ROOT), "install", f"BUILD={BUILD}", "PREFIX=/opt/x y",
             "DESTDIR=/tmp/stage dir"])
    assert f'DESTDIR="/tmp/stage dir" cmake --install {BUILD} --prefix "/opt/x y"' in p.stdout


# --------------------------------------------------------------------------
# The sample config
# --------------------------------------------------------------------------
def help_keys():
    """Every file key `s3rdmad --help` lists: the settings table as the server reports it."""
    out = run([BINARY, "--help"], env=clean_env()).stdout
    keys = re.findall(r"file key ([a-z0-9_.]+)", out)
    assert len(keys) > 20, out
    return keys


def uncomment_all(text):
    """The sample with every setting, section and the example user in effect."""
    return re.sub(r"^( *)#([a-z0-9_]+:| +- | +secret_key:)", r"\1\2", text, flags=re.M)


def test_sample_config_lists_every_setting(root):
    text = (root / "etc/s3rdma/s3rdmad.yaml").read_text()
    # Only data_dir is in effect: the systemd unit's StateDirectory.
    assert re.findall(r"^[a-z0-9_]+:.*$", text, re.M) == ["data_dir: /var/lib/s3rdma"]
    for key in help_keys():
        # "a.b.c": "#a:", then "  #b:" inside it, then "    #c: " inside that.
        *sections, name = key.split(".")
        pattern = "^"
        for depth, section in enumerate(sections):
            pattern += rf"{'  ' * depth}#{section}:\n(?:{'  ' * (depth + 1)}.*\n|\n)*?"
        pattern += rf"{'  ' * len(sections)}#{'?' if not sections else ''}{name}: "
        assert re.search(pattern, text, re.M), key
    assert "#users:\n#  - access_key: " in text


def test_sample_config_is_what_the_server_reads(root, tmp_path):
    """The sample reads back to itself, and with every line uncommented (the defaults it shows,
    the example user) it is still a valid config with the same values."""
    sample = root / "etc/s3rdma/s3rdmad.yaml"
    env = clean_env()
    again = run([BINARY, "--config", str(sample), "--print-config"], env=env).stdout
    assert again == sample.read_text()
    full = tmp_path / "full.yaml"
    full.write_text(uncomment_all(sample.read_text()))
    assert run([BINARY, "--config", str(full), "--print-config"], env=env).stdout == again
    # Values from a file, the environment and flags show up in effect.
    env["S3RDMA_REGION"] = "eu-west-3"
    out = run([BINARY, "--config", str(sample), "--rdma-socket", "@my socket", "--print-config"],
              env=env).stdout
    assert "\nregion: eu-west-3\n" in out
    assert "\nrdma:\n" in out and '\n  socket: "@my socket"\n' in out
    assert "\n#http:\n" in out
    assert "AKEXAMPLE" in out and "a-long-secret" in out  # the commented example only
    # Configured users' secrets never appear.
    with_user = tmp_path / "user.yaml"
    with_user.write_text("users:\n  - access_key: AKREALUSER\n    secret_key: real-secret-123\n")
    out = run([BINARY, "--config", str(with_user), "--print-config"], env=clean_env()).stdout
    assert "AKREALUSER" not in out and "real-secret-123" not in out
    # Nor the metrics bearer token: a set one shows as a commented placeholder.
    out = run([BINARY, "--metrics-enabled", "true", "--metrics-token", "tok-sekrit-42",
               "--print-config"], env=clean_env()).stdout
    assert "tok-sekrit-42" not in out and '#token: "<set, not shown>"' in out
    assert "\nmetrics:\n  " in out or "\nmetrics:\n\n  " in out


def test_reinstall_keeps_the_edited_config(tmp_path):
    dest = tmp_path / "d"
    cmake_install("/usr", dest)
    conf = dest / "etc/s3rdma/s3rdmad.yaml"
    conf.write_text("data_dir: /srv/s3\n")
    out = cmake_install("/usr", dest).stdout
    assert conf.read_text() == "data_dir: /srv/s3\n"
    assert "Keeping" in out


# --------------------------------------------------------------------------
# Man pages
# --------------------------------------------------------------------------
@pytest.mark.parametrize("page,section,option", [("s3rdmad", 8, "--print-config"),
                                                 ("s3rdma", 1, "--transport"),
                                                 ("s3rdma-bench", 1, "--object-size")])
def test_man_page(root, page, section, option):
    path = root / f"usr/share/man/man{section}/{page}.{section}"
    src = path.read_text()
    assert re.search(rf'^\.TH {re.escape(page.upper())} "{section}"', src, re.M), src[:300]
    p = run(["man", "--warnings", "-l", str(path)],
            env=dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="0", PAGER="cat"))
    text = re.sub(r".\x08", "", p.stdout)
    assert re.search(rf"\b{re.escape(page)}\b", text) and option in text
    assert "SEE ALSO" in text
    assert p.stderr == "", p.stderr


# --------------------------------------------------------------------------
# The systemd unit
# --------------------------------------------------------------------------
def analyze_verify(unit, manpath):
    env = dict(os.environ, MANPATH=str(manpath), SYSTEMD_LOG_COLOR="0")
    return run(["systemd-analyze", "verify", str(unit)], check=False, env=env)


def test_systemd_unit_verifies(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze not found (Debian package systemd; scripts/install-deps)")
    # Installed under a real prefix, so every path the unit names exists for verify.
    prefix = tmp_path / "usr"
    cmake_install(prefix)
    unit = prefix / "lib/systemd/system/s3rdmad.service"
    text = unit.read_text()
    for line in ["User=s3rdma", "LimitMEMLOCK=infinity", "StateDirectory=s3rdma",
                 "ConfigurationDirectory=s3rdma", "ProtectSystem=strict", "NoNewPrivileges=yes",
                 "PrivateTmp=yes", "CapabilityBoundingSet=",
                 f"ExecStart={prefix}/sbin/s3rdmad --config {prefix}/etc/s3rdma/s3rdmad.yaml"]:
        assert f"\n{line}\n" in text, line
    p = analyze_verify(unit, prefix / "share/man")
    assert p.returncode == 0 and p.stderr == "" and p.stdout == "", p.stdout + p.stderr
    # verify does complain about a broken unit (so silence above means something).
    bad = tmp_path / "bad" / "s3rdmad.service"
    bad.parent.mkdir()
    bad.write_text(text.replace("LimitMEMLOCK=infinity", "LimitMEMLOCK=lots"))
    assert "lots" in analyze_verify(bad, prefix / "share/man").stderr
    # The unit's command line with the installed config parses (--print-config stops there).
    cmd = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    out = run(cmd + ["--print-config"], env=clean_env()).stdout
    assert "\ndata_dir: /var/lib/s3rdma\n" in out
    users = (prefix / "lib/sysusers.d/s3rdma.conf").read_text()
    assert re.search(r"^u s3rdma - .* /var/lib/s3rdma$", users, re.M), users


# --------------------------------------------------------------------------
# bash completion
# --------------------------------------------------------------------------
def complete(root, line, env=None):
    """What the installed completion offers for the command line `line` (cursor at its end)."""
    script = f"""
source {root}/usr/share/bash-completion/completions/s3rdma
COMP_LINE=$1; COMP_POINT=${{#COMP_LINE}}
read -r -a COMP_WORDS <<<"$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
_s3rdma
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    p = run(["bash", "--norc", "--noprofile", "-c", script, "complete", line],
            env=env or clean_env())
    return [w for w in p.stdout.split("\n") if w]


def cli_help():
    return run([str(BUILD / "s3rdma"), "--help"], env=clean_env()).stdout


def test_bash_completion_loads_and_completes_verbs(root):
    p = run(["bash", "--norc", "--noprofile", "-c",
             f"source {root}/usr/share/bash-completion/completions/s3rdma && complete -p s3rdma"])
    assert p.stdout.strip() == "complete -F _s3rdma s3rdma" and p.stderr == ""
    verbs = re.findall(r"^  ([a-z]+) ", cli_help().split("\noptions")[0], re.M)
    assert len(verbs) >= 12 and "help" in verbs
    assert sorted(complete(root, "s3rdma ")) == sorted(verbs)
    assert complete(root, "s3rdma pr") == ["presign"]
    assert complete(root, "s3rdma --transport native s") == ["stat", "sync"]
    assert complete(root, "s3rdma help r") == ["rb", "rm"]


def test_bash_completion_options_match_the_cli(root):
    documented = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b", cli_help()))
    documented.discard("--endpoint")  # "--endpoint is the same": both offered
    offered = set(complete(root, "s3rdma -"))
    assert documented - offered == set()
    assert offered - documented <= {"--endpoint"}
    assert complete(root, "s3rdma --transport ") == ["http", "token", "native", "auto"]
    assert complete(root, "s3rdma ls ") == ["s3://"]


def test_bash_completion_lists_remote_paths(root, server, s3):
    bucket = new_bucket_name("comp")
    s3.create_bucket(Bucket=bucket)
    for key in ["dir/a.txt", "dir/b.txt", "dir/sub/c.txt", "top.txt"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    try:
        env = clean_env({"PATH": f"{root}/usr/bin:{os.environ['PATH']}",
                         "AWS_ACCESS_KEY_ID": USERS[0][0],
                         "AWS_SECRET_ACCESS_KEY": USERS[0][1]})
        ep = f"s3rdma --endpoint-url {server.endpoint} "
        # Bash replaces only the part after the last colon of s3://...: "//bucket/...".
        assert f"//{bucket}/" in complete(root, ep + f"ls s3://{bucket[:6]}", env)
        assert sorted(complete(root, ep + f"cp s3://{bucket}/", env)) == \
            [f"//{bucket}/dir/", f"//{bucket}/top.txt"]
        assert sorted(complete(root, ep + f"get s3://{bucket}/dir/", env)) == \
            [f"//{bucket}/dir/a.txt", f"//{bucket}/dir/b.txt", f"//{bucket}/dir/sub/"]
        assert complete(root, ep + f"rm s3://{bucket}/dir/s", env) == [f"//{bucket}/dir/sub/"]
        # Another user's credentials see nothing of it.
        env2 = dict(env, AWS_ACCESS_KEY_ID=USERS[1][0], AWS_SECRET_ACCESS_KEY=USERS[1][1])
        assert complete(root, ep + f"ls s3://{bucket}/", env2) == []
    finally:
        for key in ["dir/a.txt", "dir/b.txt", "dir/sub/c.txt", "top.txt"]:
            s3.delete_object(Bucket=bucket, Key=key)
        s3.delete_bucket(Bucket=bucket)
