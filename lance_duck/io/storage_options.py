"""pylance-style storage options -> fsspec filesystem arguments.

pylance takes object_store keys (``aws_access_key_id``, ``aws_endpoint``, ``google_service_account``,
``azure_storage_account_name``, ...). The same dict works here: known keys are translated to the
arguments of s3fs / gcsfs / adlfs; keys that are not object_store keys pass through unchanged, so
fsspec-style options (``key``, ``endpoint_url``, ``anon``, ...) work too.

Like pylance, object-store keys are ignored where they do not apply: every such key on a local or
``memory://`` path (one options dict can serve a table on S3 and its local copy), and another store's
keys on a remote URL (``google_*`` keys for ``s3://``). Where pylance would silently drop an unknown key
of the store in use (``aws_made_up_option`` for ``s3://``), we refuse it by name: it is a typo or an
option we cannot translate, and guessing could send the wrong credentials.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import InvalidArgumentError

__all__ = ["fsspec_options"]

_TRUE = {"1", "true", "yes", "on"}

#: keyword arguments of an fsspec filesystem (values of any type: credentials, nested client configs)
_Kwargs = dict[str, Any]
#: puts one storage option's value into the fsspec keyword arguments
_Put = Callable[[_Kwargs, Any], None]


def _truthy(v: Any) -> bool:
    return v is True or str(v).strip().lower() in _TRUE


def _set(key: str) -> _Put:
    def put(out: _Kwargs, v: Any) -> None:
        out[key] = v
    return put


def _nested(outer: str, *path: str) -> _Put:
    def put(out: _Kwargs, v: Any) -> None:
        d = out.setdefault(outer, {})
        for p in path[:-1]:
            d = d.setdefault(p, {})
        d[path[-1]] = v
    return put


def _drop(out: _Kwargs, v: Any) -> None:
    """Options with no fsspec counterpart that change nothing here (e.g. allow_http: the
    endpoint's scheme decides)."""


def _anon(out: _Kwargs, v: Any) -> None:
    if _truthy(v):
        out["anon"] = True


def _virtual_hosted(out: _Kwargs, v: Any) -> None:
    if _truthy(v):
        _nested("config_kwargs", "s3", "addressing_style")(out, "virtual")


def _gcs_key(out: _Kwargs, v: Any) -> None:
    out["token"] = json.loads(v) if isinstance(v, str) else v


_S3 = {
    "aws_access_key_id": _set("key"), "access_key_id": _set("key"),
    "aws_secret_access_key": _set("secret"), "secret_access_key": _set("secret"),
    "aws_session_token": _set("token"), "session_token": _set("token"), "aws_token": _set("token"),
    "aws_region": _nested("client_kwargs", "region_name"), "region": _nested("client_kwargs", "region_name"),
    "aws_default_region": _nested("client_kwargs", "region_name"),
    "aws_endpoint": _set("endpoint_url"), "aws_endpoint_url": _set("endpoint_url"), "endpoint": _set("endpoint_url"),
    "aws_allow_http": _drop, "allow_http": _drop,
    "aws_skip_signature": _anon, "skip_signature": _anon,
    "aws_virtual_hosted_style_request": _virtual_hosted, "virtual_hosted_style_request": _virtual_hosted,
}
_GCS = {
    "google_service_account": _set("token"), "google_service_account_path": _set("token"),
    "service_account": _set("token"), "service_account_path": _set("token"),
    "google_application_credentials": _set("token"),
    "google_service_account_key": _gcs_key, "service_account_key": _gcs_key,
    "google_bucket": _drop, "google_bucket_name": _drop,
}
_AZURE = {
    "azure_storage_account_name": _set("account_name"), "account_name": _set("account_name"),
    "azure_storage_account_key": _set("account_key"), "azure_storage_access_key": _set("account_key"),
    "account_key": _set("account_key"), "access_key": _set("account_key"),
    "azure_storage_sas_key": _set("sas_token"), "azure_storage_sas_token": _set("sas_token"),
    "sas_key": _set("sas_token"), "sas_token": _set("sas_token"),
    "azure_storage_client_id": _set("client_id"), "azure_client_id": _set("client_id"),
    "client_id": _set("client_id"),
    "azure_storage_client_secret": _set("client_secret"), "azure_client_secret": _set("client_secret"),
    "client_secret": _set("client_secret"),
    "azure_storage_tenant_id": _set("tenant_id"), "azure_tenant_id": _set("tenant_id"),
    "tenant_id": _set("tenant_id"),
    "azure_storage_connection_string": _set("connection_string"), "connection_string": _set("connection_string"),
    "azure_allow_http": _drop, "allow_http": _drop,
}
_BY_PROTOCOL = {
    "s3": _S3, "s3a": _S3,
    "gs": _GCS, "gcs": _GCS,
    "az": _AZURE, "abfs": _AZURE, "abfss": _AZURE, "adl": _AZURE,
}
_OBJECT_STORE_PREFIXES = ("aws_", "google_", "azure_")
_PREFIX_OF = {"s3": "aws_", "s3a": "aws_", "gs": "google_", "gcs": "google_",
              "az": "azure_", "abfs": "azure_", "abfss": "azure_", "adl": "azure_"}
# Every key an object store understands (any store), lower case: ignored where it does not apply.
_ALL_OBJECT_STORE_KEYS = frozenset(_S3) | frozenset(_GCS) | frozenset(_AZURE)


def _is_object_store_key(k: str) -> bool:
    return k in _ALL_OBJECT_STORE_KEYS or k.startswith(_OBJECT_STORE_PREFIXES)


def fsspec_options(uri: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """The fsspec keyword arguments for opening ``uri`` with pylance-style ``options``.

    Translates the object-store keys of ``uri``'s store, ignores those of other stores (all of them for
    local and ``memory://`` paths), passes other keys through as fsspec arguments, and raises
    :class:`InvalidArgumentError` naming any unknown key with the store's own prefix (``aws_*`` for S3).
    """
    if not options:
        return {}
    protocol = uri.split("://", 1)[0].lower() if "://" in uri else "file"
    table = _BY_PROTOCOL.get(protocol, {})
    own_prefix = _PREFIX_OF.get(protocol)
    out: dict[str, Any] = {}
    unknown = []
    for key, value in options.items():
        k = str(key).lower()
        if k in table:
            table[k](out, value)
        elif own_prefix is not None and k.startswith(own_prefix):
            unknown.append(str(key))
        elif _is_object_store_key(k):
            continue                # another store's key (or any, on a local path): pylance ignores it
        else:
            out[key] = value        # an fsspec argument as it is
    if unknown:
        raise InvalidArgumentError(
            f"storage option(s) {', '.join(sorted(unknown))} not supported for {protocol}:// URIs "
            "(give the fsspec argument instead)")
    return out
