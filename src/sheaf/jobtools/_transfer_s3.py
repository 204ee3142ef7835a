"""``s3://`` and ``s3s://`` for ``sheaf-transfer``, through boto3 (optional: without it, a clear error).

URLs and credentials follow Pegasus's ``pegasus-s3``:

- ``s3://user@site/bucket/key`` (``s3s://`` the same over https when the endpoint does not say).  The
  credentials file is ``$PEGASUS_CREDENTIALS``, else ``$S3CFG`` (the ``S3CFG`` env profile Pegasus
  jobs get), else ``~/.pegasus/credentials.conf``, else ``~/.pegasus/s3cfg``: an INI file whose
  ``[site]`` section holds ``endpoint`` (and optionally ``region``) and whose ``[user@site]`` section
  holds ``access_key`` and ``secret_key``.  Like Pegasus, a file that group or others may read is
  refused: it holds a secret.
- ``s3://bucket/key`` (no ``user@``): boto3's own credential chain (``AWS_ACCESS_KEY_ID``, ...), the
  endpoint ``$S3_ENDPOINT`` when set, else AWS.
- A GET writes the runner's temporary file (renamed by the runner); a PUT is one object upload, atomic
  on S3's side, and creates the bucket when it does not exist (as ``pegasus-s3 put -b``).
- A missing key, bucket or credential is final for that URL; a connection error or a 5xx is retried.
"""

from __future__ import annotations

__all__ = ["s3_get", "s3_put"]

import configparser
import os
import stat
from typing import Any
from urllib.parse import unquote

from sheaf.jobtools._transfer_schemes import AttemptFailed, scheme_of

_FINAL_CODES = frozenset({"404", "403", "NoSuchKey", "NoSuchBucket", "AccessDenied", "InvalidAccessKeyId",
                          "SignatureDoesNotMatch"})


def _parse(url: str) -> tuple[str | None, str, str]:
    """``(user@site or None, bucket, key)``."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    authority, _, path = rest.partition("/")
    if "@" in authority:
        bucket, _, key = path.partition("/")
        ident: str | None = authority
    else:
        ident, bucket, key = None, authority, path
    if not bucket or not key:
        raise AttemptFailed("not an S3 URL of the form s3://user@site/bucket/key", retry=False)
    return ident, bucket, unquote(key)


def _config_path() -> str:
    for name in ("PEGASUS_CREDENTIALS", "S3CFG"):
        if os.environ.get(name):
            return os.environ[name]
    new = os.path.expanduser("~/.pegasus/credentials.conf")
    return new if os.path.isfile(new) else os.path.expanduser("~/.pegasus/s3cfg")


def _settings(ident: str | None, secure: bool) -> dict[str, Any]:
    """boto3 client arguments for ``ident`` (``user@site``) from the credentials file."""
    if ident is None:
        endpoint = os.environ.get("S3_ENDPOINT")
        return {"endpoint_url": endpoint} if endpoint else {}
    path = _config_path()
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise AttemptFailed(f"no S3 credentials file ({path}; set S3CFG or PEGASUS_CREDENTIALS)",
                            retry=False) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AttemptFailed(f"the S3 credentials file {path} may be read by others (chmod 600 it)",
                            retry=False)
    config = configparser.ConfigParser(interpolation=None)
    config.read(path, encoding="utf-8")
    site = ident.split("@", 1)[1]
    for section, key in ((site, "endpoint"), (ident, "access_key"), (ident, "secret_key")):
        if not config.has_option(section, key):
            raise AttemptFailed(f"{path} has no {key} in section [{section}]", retry=False)
    endpoint = config.get(site, "endpoint")
    if "://" not in endpoint:
        endpoint = ("https://" if secure else "http://") + endpoint
    return {"endpoint_url": endpoint, "region_name": config.get(site, "region", fallback=None),
            "aws_access_key_id": config.get(ident, "access_key"),
            "aws_secret_access_key": config.get(ident, "secret_key")}


def _client(url: str) -> tuple[Any, str, str]:
    try:
        import boto3
    except ImportError:
        raise AttemptFailed("s3:// needs boto3 in the job's Python (pip install boto3)",
                            retry=False) from None
    ident, bucket, key = _parse(url)
    try:
        return boto3.client("s3", **_settings(ident, scheme_of(url) == "s3s")), bucket, key
    except ValueError as exc:  # botocore's check of the endpoint URL
        raise AttemptFailed(f"bad S3 endpoint: {exc}", retry=False) from None


def _failure(exc: Exception) -> AttemptFailed:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        code = str(error.get("Code", ""))
        return AttemptFailed(f"S3 {code}: {error.get('Message') or exc}", retry=code not in _FINAL_CODES)
    return AttemptFailed(f"{type(exc).__name__}: {exc}", retry=True)


def _errors() -> tuple[type[Exception], ...]:
    """What boto3 raises for a failed request (its errors share no one base class)."""
    import boto3.exceptions
    import botocore.exceptions

    return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
            boto3.exceptions.Boto3Error)


def s3_get(url: str, target: str, timeout: float) -> None:
    del timeout  # boto3's own connect/read timeouts and retries apply
    client, bucket, key = _client(url)
    try:
        client.download_file(bucket, key, target)
    except _errors() as exc:
        raise _failure(exc) from None


def s3_put(source: str, url: str, timeout: float) -> None:
    del timeout
    client, bucket, key = _client(url)
    try:
        _ensure_bucket(client, bucket)
        client.upload_file(source, bucket, key)
    except _errors() as exc:
        raise _failure(exc) from None


def _ensure_bucket(client: Any, bucket: str) -> None:
    import botocore.exceptions

    try:
        client.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) not in ("404", "NoSuchBucket"):
            raise
        client.create_bucket(Bucket=bucket)
