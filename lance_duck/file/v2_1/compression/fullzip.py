"""Full-zip values (already unzipped per value) -> values."""
from __future__ import annotations

import numpy as np

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from .. import _kernels
from ..gather import gather_bytes, read_uint
from ..values import Fixed, FslValues, Values, VarBin, VarPackedValues, as_varbin
from .common import flat_bits, fsl_layers, encoding_kind


def decode_per_value(enc: pb.CompressiveEncoding, vals: Fixed | VarBin, n: int, what: str) -> Values:
    """Decode full-zip values: ``vals`` is a VarBin (variable) or Fixed (fixed-width records)."""
    kind = encoding_kind(enc)
    trace.record(f"fz:{kind}")
    m = getattr(enc, kind)
    if kind == "variable" and isinstance(vals, VarBin):
        return vals
    if kind == "flat" and isinstance(vals, Fixed):
        return vals
    if kind == "fsst" and isinstance(vals, VarBin):
        inner = as_varbin(decode_per_value(m.values, vals, n, what), what)
        return VarBin(*_kernels.fsst_decompress(m.symbol_table, inner.offsets, inner.data))
    if kind == "general" and isinstance(vals, VarBin):
        scheme = int(m.compression.scheme)
        trace.record(f"general:{scheme}")
        offs, data = _kernels.decompress_many(scheme, vals.offsets, vals.data, what)
        return decode_per_value(m.values, VarBin(offs, data), n, what)
    if kind == "fixed_size_list" and isinstance(vals, Fixed):
        return _fz_fsl(m, vals, what)
    if kind == "variable_packed_struct" and isinstance(vals, VarBin):
        return _fz_var_packed(m, vals, what)
    raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported for full-zip values")


def _fz_fsl(m: pb.FixedSizeList, vals: Fixed, what: str) -> Values:
    layers, cur = fsl_layers(m)
    trace.record("fz:fixed_size_list" + ("+validity" if any(v for _, v in layers) else ""))
    item_bits = flat_bits(cur.values, what, (8, 16, 32, 64, 128, 256))
    cum = np.cumprod([d for d, _ in layers]).astype(np.int64)
    n = vals.n
    rec = vals.bits // 8
    rows = vals.u8()[: n * rec].reshape(n, rec)
    pos = 0
    validities: list[np.ndarray | None] = []
    for li, (_, has_v) in enumerate(layers):
        if not has_v:
            validities.append(None)
            continue
        nb = (int(cum[li]) + 7) // 8
        bits = np.unpackbits(np.ascontiguousarray(rows[:, pos: pos + nb]), axis=1, count=int(cum[li]),
                             bitorder="little")
        validities.append(bits.reshape(-1).view(np.bool_))
        pos += nb
    data_bytes = int(cum[-1]) * item_bits // 8
    if pos + data_bytes != rec:
        raise CorruptFileError(f"{what}: full-zip fixed-size-list record of {rec} bytes, expected {pos + data_bytes}")
    items = Fixed(np.ascontiguousarray(rows[:, pos:]).reshape(-1), item_bits, n * int(cum[-1]))
    return FslValues(items, layers, validities)


def _fz_var_packed(m: pb.VariablePackedStruct, vals: VarBin, what: str) -> VarPackedValues:
    present = np.diff(vals.offsets) > 0   # null rows carry no bytes
    if not present.all():
        idx = np.flatnonzero(present)
        sub = VarBin(np.concatenate(([0], np.cumsum(np.diff(vals.offsets)[idx]))),
                     gather_bytes(vals.data, vals.offsets[idx], np.diff(vals.offsets)[idx], what))
        part = _fz_var_packed(m, sub, what)
        return VarPackedValues([_scatter(c, idx, vals.n, what) for c in part.children])
    n = vals.n
    data = vals.data
    cur = vals.offsets[:-1].copy()
    end = vals.offsets[1:]
    children = []
    for fe in m.fields:
        lay = fe.WhichOneof("layout")
        if lay == "bits_per_value":
            w = int(fe.bits_per_value) // 8
            if (cur + w > end).any():
                raise CorruptFileError(f"{what}: packed struct row too short")
            raw = data[cur[:, None] + np.arange(w)].reshape(-1) if n else np.zeros(0, np.uint8)
            child = decode_per_value(fe.value, Fixed(raw, w * 8, n), n, what)
            cur = cur + w
        elif lay == "bits_per_length":
            lb = int(fe.bits_per_length) // 8
            if (cur + lb > end).any():
                raise CorruptFileError(f"{what}: packed struct row too short")
            ln = read_uint(data, cur, lb, what)
            cur = cur + lb
            if (cur + ln > end).any():
                raise CorruptFileError(f"{what}: packed struct value overruns its row")
            body = gather_bytes(data, cur, ln, what)
            child = decode_per_value(fe.value, VarBin(np.concatenate(([0], np.cumsum(ln))), body), n, what)
            cur = cur + ln
        else:
            raise CorruptFileError(f"{what}: packed struct field without a layout")
        children.append(child)
    return VarPackedValues(children)


def _scatter(v: Values, idx: np.ndarray, n: int, what: str) -> Values:
    """Values of rows ``idx`` placed into ``n`` rows (other rows zero / empty)."""
    if isinstance(v, VarBin):
        lens = np.zeros(n, np.int64)
        lens[idx] = np.diff(v.offsets)
        return VarBin(np.concatenate(([0], np.cumsum(lens))), v.data)
    if isinstance(v, Fixed) and v.bits % 8 == 0:
        w = v.bits // 8
        out = np.zeros((n, w), np.uint8)
        out[idx] = v.u8()[: idx.size * w].reshape(idx.size, w)
        return Fixed(out.reshape(-1), v.bits, n)
    raise UnsupportedFeatureError(f"{what}: null rows in a packed struct with {type(v).__name__} children")

