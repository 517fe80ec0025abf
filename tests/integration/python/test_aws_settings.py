"""The AWS environment and ~/.aws profiles as s3rdma.Client reads them (libs3rdma's
s3r_aws_settings_load, shared with the CLI): the AWS CLI's precedence for endpoints, keys and
region, and a clear ValueError, never a crash, for shared files that do not parse. No server
is needed: these check what the settings resolve to."""
import pytest
import s3rdma


@pytest.fixture
def aws(tmp_path, monkeypatch):
    """A clean AWS environment with HOME in tmp_path; returns a writer of ~/.aws files."""
    import os
    for k in list(os.environ):
        if k.startswith("AWS_") or k.startswith("S3RDMA_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws").mkdir()

    def write(credentials=None, conf=None):
        if credentials is not None:
            (tmp_path / ".aws" / "credentials").write_bytes(
                credentials if isinstance(credentials, bytes) else credentials.encode())
        if conf is not None:
            (tmp_path / ".aws" / "config").write_bytes(
                conf if isinstance(conf, bytes) else conf.encode())
    return write


def resolved(profile=None):
    return s3rdma.config.resolve(None, None, None, None, profile)


CONF = ("[default]\nregion = conf-region\nendpoint_url = http://profile-global:1\n"
        "services = mine\n"
        "[services mine]\ns3 =\n  endpoint_url = http://services-s3:1\n"
        "[profile dev]\nregion = dev-region\nendpoint_url = http://dev-global:1\n"
        "s3 =\n  endpoint_url = http://dev-nested:1\n"
        "[profile nested]\ns3 =\n  endpoint_url = http://nested-only:1\n"
        "[bare]\nendpoint_url = http://not-a-profile:1\n")
CREDS = ("[default]\naws_access_key_id = AKDEF\naws_secret_access_key = SKDEF\n"
         "[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = SKDEV\n"
         "aws_session_token = TOKDEV\nregion = cred-region\n"
         "[nested]\naws_access_key_id = AKN\naws_secret_access_key = SKN\n"
         "[bare]\naws_access_key_id = AKB\naws_secret_access_key = SKB\n")


def test_endpoint_precedence(aws, monkeypatch):
    aws(CREDS, CONF)
    # The profile: its services section beats its endpoint_url, which beats a nested s3 block.
    assert resolved()["endpoint"] == "http://services-s3:1"
    assert resolved("dev")["endpoint"] == "http://dev-global:1"
    assert resolved("nested")["endpoint"] == "http://nested-only:1"
    # A bare [name] in the config file is not a profile there (the AWS CLI's rule).
    assert "endpoint" not in s3rdma.config.aws_settings("bare")
    # The environment beats the profile; the service's variable beats the global one.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://env-global:1")
    assert resolved("dev")["endpoint"] == "http://env-global:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://env-s3:1")
    assert resolved("dev")["endpoint"] == "http://env-s3:1"
    # The argument beats everything.
    s = s3rdma.config.resolve("http://arg:1", None, None, None, "dev")
    assert s["endpoint"] == "http://arg:1"
    # AWS_IGNORE_CONFIGURED_ENDPOINT_URLS drops every configured endpoint, env and profile.
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert resolved("dev")["endpoint"] is None
    with pytest.raises(ValueError, match="no endpoint"):
        s3rdma.Client(profile="dev")


def test_keys_and_region_precedence(aws, monkeypatch):
    aws(CREDS, CONF)
    s = s3rdma.config.aws_settings()
    assert (s["access_key"], s["secret_key"], s["region"]) == ("AKDEF", "SKDEF", "conf-region")
    # The credentials file's values win over the config file's for one profile.
    s = s3rdma.config.aws_settings("dev")
    assert (s["access_key"], s["session_token"], s["region"]) == ("AKDEV", "TOKDEV",
                                                                  "cred-region")
    # AWS_PROFILE picks the profile; the environment's keys beat it...
    monkeypatch.setenv("AWS_PROFILE", "dev")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SKENV")
    s = s3rdma.config.aws_settings()
    assert (s["access_key"], s["secret_key"]) == ("AKENV", "SKENV")
    assert "session_token" not in s  # the token goes with the keys it belongs to
    # ... but a profile named by the caller beats them (as aws --profile does).
    s = resolved("dev")
    assert (s["access_key"], s["secret_key"]) == ("AKDEV", "SKDEV")
    # Key and secret come from one place: half a pair in the environment is not used.
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s = s3rdma.config.aws_settings()
    assert (s["access_key"], s["secret_key"]) == ("AKDEV", "SKDEV")
    # Region: AWS_REGION > AWS_DEFAULT_REGION > profile, whoever named the profile.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "env-default")
    assert resolved("dev")["region"] == "env-default"
    monkeypatch.setenv("AWS_REGION", "env-region")
    assert resolved("dev")["region"] == "env-region"
    assert s3rdma.config.resolve(None, None, None, "arg-region", "dev")["region"] == "arg-region"


def test_files_moved_missing_and_profiles_that_do_not_exist(aws, tmp_path, monkeypatch):
    # No files at all: nothing found, no error.
    assert s3rdma.config.aws_settings() == {"profile": "default"}
    alt = tmp_path / "alt"
    alt.mkdir()
    (alt / "c").write_text("[x]\naws_access_key_id = AKX\naws_secret_access_key = SKX\n")
    (alt / "f").write_text("[profile x]\nendpoint_url = http://x:1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(alt / "c"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(alt / "f"))
    s = s3rdma.config.aws_settings("x")
    assert (s["access_key"], s["endpoint"]) == ("AKX", "http://x:1")
    for kw, env in (({"profile": "nope"}, None), ({}, "nope")):
        if env:
            monkeypatch.setenv("AWS_PROFILE", env)
        with pytest.raises(ValueError, match='profile "nope".*not found'):
            s3rdma.Client(endpoint="http://127.0.0.1:1", **kw)


@pytest.mark.parametrize("text, line, why", [
    ("aws_access_key_id = A\n[default]\n", 1, "before the first"),
    ("[default]\nthis line has no delimiter\n", 2, "not \"key = value\""),
    ("[default\naws_access_key_id = A\n", 1, "without ']'"),
    ("# c\n[]\n", 2, "empty section"),
    ("[default]\nregion = a\n[default]\nregion = b\n", 3, "section given twice"),
    ("[default]\nregion = a\nregion = b\n", 3, "key given twice"),
    ("[default]\ns3 =\n  no delimiter here\n", 3, "not \"key = value\""),
    (b"[default]\nregion = a\x00b\n", 2, "NUL byte"),
    (b"\xff\xfe[default]\n\x80\x81\n", 1, "before the first"),
])
@pytest.mark.parametrize("which", ["credentials", "config"])
def test_malformed_files_are_a_clear_error(aws, tmp_path, text, line, why, which):
    aws(**{("credentials" if which == "credentials" else "conf"): text})
    with pytest.raises(ValueError) as e:
        s3rdma.Client(endpoint="http://127.0.0.1:1", access_key="a", secret_key="b")
    msg = str(e.value)
    assert f"{tmp_path / '.aws' / which}:{line}: " in msg and why in msg, msg


def test_large_and_unreadable_files(aws, tmp_path, monkeypatch):
    # A long value is fine; a file over 1 MiB, or one that cannot be read, is refused.
    aws("[default]\naws_access_key_id = " + "A" * 200_000 + "\naws_secret_access_key = S\n")
    assert len(s3rdma.config.aws_settings()["access_key"]) == 200_000
    aws("[default]\n" + "# padding\n" * 110_000)
    with pytest.raises(ValueError, match="larger than 1 MiB"):
        s3rdma.config.aws_settings()
    aws("[default]\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path))  # a directory
    with pytest.raises(ValueError, match="cannot read"):
        s3rdma.config.aws_settings()
