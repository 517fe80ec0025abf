"""Where Client settings come from when the caller leaves them out: the AWS
environment variables and the ~/.aws profiles, read by libs3rdma
(s3r_aws_settings_load) exactly as the s3rdma CLI reads them, with the AWS CLI's
precedence (docs/client.md, "The AWS environment and profiles").

For each setting: the argument, then the environment (AWS_ENDPOINT_URL_S3 /
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, AWS_REGION /
AWS_DEFAULT_REGION, AWS_CA_BUNDLE), then the profile (AWS_PROFILE or "default") in
AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and AWS_CONFIG_FILE (~/.aws/config).
A profile passed as an argument beats the environment's keys, as ``aws --profile``
does.
"""
from typing import Dict, Optional

from . import _s3rdma


def aws_settings(profile: Optional[str] = None, keys: bool = True) -> Dict[str, str]:
    """The settings found in the AWS environment and the profile: keys endpoint,
    access_key, secret_key, session_token, region, ca_bundle, rdma_endpoint,
    transport, profile, keys_from (where the keys came from: "AWS_ACCESS_KEY_ID",
    "profile", "credential_process", "container"); only those found. A shared file
    that does not parse, a profile named explicitly (argument or AWS_PROFILE) that
    exists in neither file, or a credential_process or container endpoint that fails
    is a ValueError that says which. keys=False leaves the keys out: no program runs
    and no endpoint is asked; keys_from then names "credential_process" or
    "container" when the keys would come from one (else it is absent)."""
    return _s3rdma.aws_settings(profile, "all" if keys else "none")


def resolve(endpoint: Optional[str], access_key: Optional[str], secret_key: Optional[str],
            region: Optional[str], profile: Optional[str],
            ca_bundle: Optional[str] = None, keys: bool = True) -> Dict[str, Optional[str]]:
    """Fills the settings left None from the environment, then the profile; keys=False:
    no keys wanted (anonymous requests)."""
    # Keys from a program or an endpoint are the client's to load (once, and again
    # before they expire): only static keys are read here (s3r_aws_settings_load_static_keys
    # names such a source in keys_from, with no access_key), as the CLI reads them.
    found = _s3rdma.aws_settings(profile, "static" if keys and not (access_key and secret_key)
                                 else "none")
    return {
        "endpoint": endpoint or found.get("endpoint"),
        "access_key": access_key or found.get("access_key"),
        "secret_key": secret_key or found.get("secret_key"),
        "region": region or found.get("region"),
        "ca_bundle": ca_bundle or found.get("ca_bundle"),
        # keys that may expire (a program's, a container's): the client loads them
        # itself and again before they expire (s3r_config_t.aws_credentials)
        "expiring_keys": keys and not (access_key or secret_key) and "keys_from" in found
        and "access_key" not in found,
    }
