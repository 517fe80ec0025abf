"""Where Client settings come from when the caller leaves them out: the AWS
environment variables and the ~/.aws profiles, read the way the AWS CLI reads them.

Precedence, for each of access key, secret key, region and endpoint: the argument,
then the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION /
AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL), then the profile
(AWS_PROFILE or "default") in AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and
AWS_CONFIG_FILE (~/.aws/config: section "profile NAME", or "default"; endpoint_url
at the top level or in its "s3 =" sub-section).
"""
import configparser
import os
from pathlib import Path
from typing import Dict, Optional


def _read(path: Path) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read(path)
    except configparser.Error as e:
        raise ValueError(f"s3rdma: cannot parse {path}: {e}") from None
    return cp


def _nested(value: str) -> Dict[str, str]:
    """The "key = value" lines of a nested section such as "s3 =\\n endpoint_url = ..."."""
    out = {}
    for line in value.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def profile_settings(profile: Optional[str] = None) -> Dict[str, str]:
    """The settings of one AWS profile: keys access_key, secret_key, region, endpoint,
    ca_bundle (only those present). A profile named explicitly (argument or AWS_PROFILE) that
    exists in neither file is a ValueError."""
    name = profile or os.environ.get("AWS_PROFILE") or "default"
    home = Path.home() / ".aws"
    creds = _read(Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or home / "credentials"))
    conf = _read(Path(os.environ.get("AWS_CONFIG_FILE") or home / "config"))
    section = name if name == "default" else f"profile {name}"
    out: Dict[str, str] = {}
    found = False
    for cp, sec in ((conf, section), (conf, name), (creds, name)):
        if not cp.has_section(sec):
            continue
        found = True
        s = cp[sec]
        for src, dst in (("aws_access_key_id", "access_key"),
                         ("aws_secret_access_key", "secret_key"), ("region", "region"),
                         ("endpoint_url", "endpoint"), ("ca_bundle", "ca_bundle")):
            if s.get(src):
                out[dst] = s[src].strip()
        if s.get("s3") and _nested(s["s3"]).get("endpoint_url"):
            out["endpoint"] = _nested(s["s3"])["endpoint_url"]
    if not found and (profile or os.environ.get("AWS_PROFILE")):
        raise ValueError(f"s3rdma: AWS profile {name!r} not found in {home}")
    return out


def resolve(endpoint: Optional[str], access_key: Optional[str], secret_key: Optional[str],
            region: Optional[str], profile: Optional[str],
            ca_bundle: Optional[str] = None) -> Dict[str, Optional[str]]:
    """Fills the settings left None from the environment, then the profile."""
    env = os.environ
    prof = profile_settings(profile)
    return {
        "endpoint": endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        or prof.get("endpoint"),
        "access_key": access_key or env.get("AWS_ACCESS_KEY_ID") or prof.get("access_key"),
        "secret_key": secret_key or env.get("AWS_SECRET_ACCESS_KEY") or prof.get("secret_key"),
        "region": region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        or prof.get("region"),
        "ca_bundle": ca_bundle or env.get("AWS_CA_BUNDLE") or prof.get("ca_bundle"),
    }
