"""IVF_RQ storage (RaBitQ, pylance 14.0.2 ``index_version`` 2): the ``auxiliary.idx`` code layouts and the
``_distance`` pylance reports for them before any refine.

Verified on pylance 14.0.2 files (``num_bits`` 1 to 9, fast rotation, ``query_estimator`` raw_query):

- **Rotation** (``rotation_type`` fast): the vector (zero-padded to ``code_dim``) goes through 4 rounds of
  sign flips (``fast_rotation_signs``: ``code_dim/8`` bytes per round, bit ``i % 8`` of byte ``i // 8`` set
  = negate dim ``i``) and a normalized Walsh-Hadamard transform (power-of-two dims; other dims alternate
  the transform over the head / tail power-of-two part with a Kac walk, then scale by 1/4).
  Stored codes are of the rotated residual ``x - c_p`` (cosine: ``x`` normalized first).
- **Binary codes** ``_rabit_codes`` (the sign bits, 1 = positive) are "packed" per partition: each full
  batch of 32 rows takes ``16 * code_dim/4`` bytes, 16 bytes per group of 4 dims; byte ``j`` holds the
  group's 4-bit code of batch row ``PERM[j]`` (low nibble) and ``PERM[j] + 16`` (high nibble), bit ``b``
  of the nibble = dim ``4g + b``. The partition's last ``n % 32`` rows are stored transposed (all rows'
  byte 0, then byte 1, ...), bits LSB-first.
- **Extra bits** ``__blocked_ex_codes`` (``ex_bits = num_bits - 1`` per dim; none for 1-bit codes): per block
  of 64 dims ``8 * ex_bits`` bytes in a layout of its own per width (:func:`unpack_blocked_ex`; e.g. 4 bits:
  byte ``8j + b`` = dim ``16j + b`` (low nibble) | dim ``16j + 8 + b`` (high nibble)). The full code of a
  dim is ``2^ex_bits * sign_bit + ex``.
- **Estimate** (raw query ``q``, cosine: ``q`` normalized; ``qr`` = rotate(q)):
  the binary part ``<bits, qr>`` goes through pylance's FastScan table: per 4-dim group 16 sums of the
  query's components, quantized to u8 over the whole table (``round_half_even((t - min) * 255/(max - min))``),
  summed per row and mapped back (``s * (max-min)/255 + groups * min``); then
  ``ip = scale_ex * (2^ex_bits * bin + <ex, qr> - (2^ex_bits - 0.5) * sum(qr))`` (1-bit codes:
  ``scale * (bin - sum(qr) / 2)`` with the 1-bit factors) and
  ``_distance`` = ``|q - c_p|^2 + add_ex + ip`` for l2 and cosine, and
  ``alpha * (add_ex - 1) + 1 - q.c_p + ip`` with ``alpha = q.c_p / |c_p|^2`` for dot.
  Rows outside the partition's full 32-row batches (its last ``n % 32``) use the exact float table instead
  of the u8 one.
- **Gated scan** (which rows pylance keeps): rows are visited in partition order, partitions nearest first,
  with one top-k heap for the query. A row is skipped when its 1-bit lower bound
  ``(bin - sum(qr)/2) * scale + add_scale * (add - offset) + qf - error * qerr`` is not below the heap's k-th
  distance (once k rows are held) or the range's upper bound (``qf``, ``add_scale``, ``offset`` as above:
  ``|q - c_p|^2, 1, 0`` for l2 / cosine, ``1 - q.c_p, alpha, 1`` for dot; ``qerr`` = ``sqrt(|q - c_p|^2)``,
  for dot ``|qr - alpha * rotate(c_p)|`` rounded up). Skipped rows can hold a smaller estimate than the
  k-th, so the gate changes results and is reproduced.
- Verified: same row ids in the same order and distances within ~1e-6 relative (float32 summation order
  differs) on l2 / cosine / dot, dims 16, 24, 32, 64, 128, nprobes 1-8, k 1-50, every ``num_bits``
  (tests/vector_index/test_vector_rq_search.py).

Other widths, dense-matrix rotations and the residual-query estimator are refused by name.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from .storage import F32, Storage, fsl_matrix, normalized

ROUNDS = 4
#: rows of a partition's gated scan walked one by one before those that can no longer count are dropped
_GATE_RUN = 64
NUM_BITS_MAX = 9        # pylance 14.0.2 writes num_bits 1..9 (a sign bit and 0..8 extra bits per dim)
PERM = np.array([0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15], dtype=np.intp)

_F32s = npt.NDArray[np.float32]
_Ints = npt.NDArray[np.integer[Any]]
#: a query prepared by :meth:`RQStorage.query`: (q, rotated q, float table, u8 pair table, quantized,
#: step, table minimum, sum of rotated q)
RQQuery = tuple[_F32s, _F32s, _F32s, _Ints, np.bool_, np.float32, np.float32, np.float32]
#: a partition decoded by :meth:`RQStorage.decode`: (pair positions, ex codes or None, add, scale,
#: tail mask, 1-bit add, 1-bit scale, 1-bit error)
RQPayload = tuple[_Ints, 'npt.NDArray[np.uint8] | None', _F32s, _F32s, npt.NDArray[np.bool_], _F32s, _F32s, _F32s]


def _fwht(v: _F32s) -> _F32s:
    """Unnormalized Walsh-Hadamard transform of a power-of-two length vector (float32): per level the
    pairs' sums, then their differences, written to a second buffer (the two alternate)."""
    n = len(v)
    src: _F32s = v.copy()
    dst: _F32s = np.empty_like(v)
    h = 1
    while h < n:
        w, o = src.reshape(-1, 2, h), dst.reshape(-1, 2, h)
        np.add(w[:, 0], w[:, 1], out=o[:, 0])
        np.subtract(w[:, 0], w[:, 1], out=o[:, 1])
        src, dst = dst, src
        h *= 2
    return src


def fast_rotation(x: _F32s, signs: npt.NDArray[np.uint8], code_dim: int) -> _F32s:
    """pylance's fast rotation of ``x`` (float32, zero-padded to ``code_dim``) by ``signs`` (uint8)."""
    out: _F32s = np.zeros(code_dim, dtype=F32)
    m = min(len(x), code_dim)
    out[:m] = x[:m]
    if code_dim == 0:
        return out
    per = (code_dim + 7) // 8
    flips = np.unpackbits(signs.reshape(ROUNDS, per), axis=1, bitorder="little")[:, :code_dim].astype(bool)
    trunc = 1 << (code_dim.bit_length() - 1)
    scale = F32(1.0 / np.sqrt(F32(trunc)))
    if trunc == code_dim:
        for r in range(ROUNDS):
            out[flips[r]] = -out[flips[r]]
            out = _fwht(out) * scale
        return out
    start, half = code_dim - trunc, code_dim // 2
    for r in range(ROUNDS):
        out[flips[r]] = -out[flips[r]]
        if r % 2 == 0:
            out[:trunc] = _fwht(out[:trunc]) * scale
        else:
            out[start:] = _fwht(out[start:]) * scale
        a, b = out[:half].copy(), out[half:2 * half].copy()
        out[:half], out[half:2 * half] = a + b, a - b
    rotated: _F32s = out * F32(0.25)
    return rotated


def unpack_packed_codes(codes: npt.NDArray[np.uint8], n: int, code_dim: int) -> npt.NDArray[np.uint8]:
    """(groups, n) 4-bit group codes of a partition's packed ``_rabit_codes`` bytes (n rows)."""
    groups = code_dim // 4
    flat = codes.reshape(-1)
    nb = n // 32
    out: npt.NDArray[np.uint8] = np.empty((n, groups), dtype=np.uint8)
    if nb:
        blocks = flat[:nb * groups * 16].reshape(nb, groups, 16)
        full = out[:nb * 32].reshape(nb, 32, groups)
        full[:, PERM, :] = (blocks & 15).transpose(0, 2, 1)
        full[:, PERM + 16, :] = (blocks >> 4).transpose(0, 2, 1)
    tail = n - nb * 32
    if tail:
        tb = flat[nb * groups * 16:].reshape(code_dim // 8, tail).T
        out[nb * 32:] = np.stack([tb & 15, tb >> 4], axis=2).reshape(tail, groups)
    by_group: npt.NDArray[np.uint8] = out.T.copy()
    return by_group


# the top-bit plane of 3/5/7-bit blocks (a little-endian u64): the bit of dim 16k + b sits at bit
# 8 * (b % 8) + 2k + b // 8
_TOP = np.array([8 * (b % 8) + 2 * k + b // 8 for k in range(4) for b in range(16)], dtype=np.intp)


def _top_plane(plane: np.ndarray) -> np.ndarray:
    """(n, blocks, 64) top bits from (n, blocks, 8) plane bytes."""
    return np.unpackbits(plane, axis=2, bitorder="little")[:, :, _TOP]


def _two_bit_runs(b: np.ndarray) -> np.ndarray:
    """(n, blocks, 64) values of a 16-byte 2-bit plane: byte b holds dims b, b+16, b+32, b+48 at bits 0/2/4/6."""
    return np.stack([(b >> s) & 3 for s in (0, 2, 4, 6)], axis=2).reshape(b.shape[0], b.shape[1], 64)


def unpack_blocked_ex(ex: np.ndarray, code_dim: int, ex_bits: int = 4) -> np.ndarray:
    """(n, code_dim) ``ex_bits``-wide extra codes from the blocked layout (``8 * ex_bits`` bytes per
    64 dims; 1 bit: LSB-first; 2: four 2-bit runs of 16 dims per byte; 4: byte ``8j + b`` = dim
    ``16j + b`` | dim ``16j + 8 + b`` << 4; 5: nibbles of dims b | b+16 then b+32 | b+48; 6: runs 0-2's
    6 low bits in place, run 3's dims split into their top 2-bit pieces; 8: bytes; 3 / 5 / 7 add a
    top-bit plane to the 2 / 4 / 6-bit layout)."""
    n = len(ex)
    b = ex.reshape(n, -1, 8 * ex_bits)
    if ex_bits == 1:
        v = np.unpackbits(b, axis=2, bitorder="little")
    elif ex_bits in (2, 3):
        v = _two_bit_runs(b[:, :, :16])
    elif ex_bits == 4:
        v = np.stack([b.reshape(n, -1, 4, 8) & 15, b.reshape(n, -1, 4, 8) >> 4], axis=3).reshape(n, -1, 64)
    elif ex_bits == 5:
        lo, hi = b[:, :, :16], b[:, :, 16:32]
        v = np.concatenate([lo & 15, lo >> 4, hi & 15, hi >> 4], axis=2)
    elif ex_bits in (6, 7):
        runs = b[:, :, :48]
        top = runs >> 6
        last = top[:, :, :16] | (top[:, :, 16:32] << 2) | (top[:, :, 32:48] << 4)
        v = np.concatenate([runs & 0x3F, last], axis=2)
    else:
        v = b.copy()
    if ex_bits in (3, 5, 7):
        plane = b[:, :, 8 * ex_bits - 8:]
        v = v | (_top_plane(plane) << np.uint8(ex_bits - 1))
    return v.reshape(n, -1)[:, :code_dim]


class RQStorage(Storage):
    """IVF_RQ codes and their estimated distances (see the module docstring)."""

    BASE = ("_rabit_codes", "__add_factors", "__scale_factors", "__error_factors")
    EXTRA = ("__blocked_ex_codes", "__add_factors_ex", "__scale_factors_ex")

    def __init__(self, metric: str, dim: int, path: str, meta: dict[str, Any],
                 work: type[np.floating[Any]] = F32) -> None:
        super().__init__(metric, dim, path, work)
        what = {k: meta.get(k) for k in ("rotation_type", "num_bits", "packed", "query_estimator")}
        bits = what["num_bits"]
        if (what != {"rotation_type": "fast", "num_bits": bits, "packed": True, "query_estimator": "raw_query"}
                or not isinstance(bits, int) or isinstance(bits, bool) or not 1 <= bits <= NUM_BITS_MAX):
            raise UnsupportedFeatureError(f"{path}: IVF_RQ storage {what} (lance_duck reads 1- to {NUM_BITS_MAX}-bit "
                                          "packed codes with fast rotation and the raw-query estimator); search "
                                          "with use_index=False")
        self.ex_bits = bits - 1
        self.columns = self.BASE + (self.EXTRA if self.ex_bits else ())
        if metric not in ("l2", "cosine", "dot"):
            raise UnsupportedFeatureError(f"{path}: IVF_RQ with {metric} distance; search with use_index=False")
        code_dim = meta.get("code_dim")
        if not isinstance(code_dim, int) or isinstance(code_dim, bool) or code_dim < dim or code_dim % 8:
            raise CorruptFileError(f"{path}: IVF_RQ code_dim {code_dim!r} does not fit dimension {dim}")
        self.code_dim = code_dim
        signs = meta.get("fast_rotation_signs")
        per = code_dim // 8
        if (not isinstance(signs, list) or len(signs) != ROUNDS * per
                or not all(isinstance(s, int) and 0 <= s <= 255 for s in signs)):
            raise CorruptFileError(f"{path}: fast_rotation_signs is not {ROUNDS * per} bytes")
        self.signs = np.asarray(signs, dtype=np.uint8)
        self.groups = code_dim // 4
        self.code_offsets = (np.arange(self.groups, dtype=np.intp) * 16)[:, None]
        self.ex_width = -(-code_dim // 64) * 64 * self.ex_bits // 8

    def decode(self, arrays: list[pa.Array], n: int) -> RQPayload:
        codes = fsl_matrix(arrays[0], self.code_dim // 8, np.uint8, self.path, "_rabit_codes")
        factors = [np.asarray(a.to_numpy(zero_copy_only=False), dtype=F32) for a in arrays[1:4]]
        ex = None
        if self.ex_bits:
            blocked = fsl_matrix(arrays[4], self.ex_width, np.uint8, self.path, "__blocked_ex_codes")
            ex = unpack_blocked_ex(blocked, self.code_dim, self.ex_bits)
            factors = [np.asarray(a.to_numpy(zero_copy_only=False), dtype=F32) for a in arrays[5:7]] + factors
        else:      # 1-bit codes: the estimate is the 1-bit one
            factors = factors[:2] + factors
        add, scale, add1, scale1, err1 = factors
        if any(len(f) != n or np.isnan(f).any() for f in (add, scale, add1, scale1, err1)):
            raise CorruptFileError(f"{self.path}: IVF_RQ factors are missing or NaN")
        groups = unpack_packed_codes(codes, n, self.code_dim)
        # per row one byte per pair of 4-dim groups (group 2j low nibble, 2j + 1 high): the binary sums
        # are read from a per-query (bytes, 256) table
        pairs = groups[0::2] | (groups[1::2] << np.uint8(4))
        # stored as flat positions in that table (byte j's rows offset by 256 * j): one gather per partition
        pairs = pairs.astype(np.uint16 if len(pairs) * 256 <= 1 << 16 else np.uint32)
        pairs += (np.arange(len(pairs), dtype=pairs.dtype) * 256)[:, None]
        tail = np.arange(n) >= n - n % 32      # rows outside full 32-row batches: exact binary sums
        return pairs, ex, add, scale, tail, add1, scale1, err1

    def query(self, q: npt.NDArray[Any]) -> RQQuery:
        q = q.astype(F32)
        if self.metric == "cosine":
            q = normalized(q).astype(self.vector_type).astype(F32)
        qr = fast_rotation(q, self.signs, self.code_dim)
        sub = qr.reshape(self.groups, 4)
        table = np.zeros((self.groups, 16), dtype=F32)     # entry j = sum of the dims of j's bits,
        for j in range(1, 16):                             # built as pylance adds them (lowest bit last)
            low = j & -j
            table[:, j] = table[:, j - low] + sub[:, low.bit_length() - 1]
        lo, hi = table.min(), table.max()
        span = F32(hi - lo)
        factor = F32(255) / span if span > 0 else F32(0)
        lut = np.rint((table - lo) * factor) if np.isfinite(factor) and factor > 0 else np.zeros_like(table)
        step = F32(span / F32(255))
        # the u8 entries of two groups summed per code byte: sums of integers, exact in any order
        wide = np.uint16 if self.groups * 255 <= np.iinfo(np.uint16).max else np.uint32
        qlut = lut.astype(wide)
        byte = np.arange(256)
        pair_lut = qlut[0::2][:, byte & 15] + qlut[1::2][:, byte >> 4]
        return q, qr, table, pair_lut, factor > 0, step, F32(lo), F32(np.cumsum(qr, dtype=F32)[-1])

    def _estimates(self, qs: RQQuery, centroid: npt.NDArray[Any], payload: RQPayload,
                   rows: npt.NDArray[np.intp] | None = None,
                   gate: Callable[[_F32s], npt.NDArray[np.intp]] | None = None) -> tuple[_F32s, _F32s]:
        """(ex estimates, 1-bit lower bounds) of the partition's rows (all, or those at ``rows``); with
        ``gate`` (lower bounds -> positions) the ex estimates of only the rows it picks are computed (the
        others are left at +inf: the gated scan never reads them)."""
        q, qr, table, pair_lut, quantized, step, lo, sum_q = qs
        pairs, ex, add, scale, tail, add1, scale1, err1 = payload
        if rows is not None:
            pairs, add, scale, tail = pairs[:, rows], add[rows], scale[rows], tail[rows]
            ex = None if ex is None else ex[rows]
            add1, scale1, err1 = add1[rows], scale1[rows], err1[rows]
        if quantized:
            s = pair_lut.ravel().take(pairs).sum(axis=0, dtype=pair_lut.dtype)
            binary = s.astype(F32) * step + F32(self.groups) * lo
        else:
            binary = np.zeros(pairs.shape[1], dtype=F32)
            tail = np.ones_like(tail)
        if tail.any():     # these rows' float sums, group by group in order as pylance adds them
            codes = pairs[:, tail] & 255
            idx = np.empty((self.groups, codes.shape[1]), dtype=np.intp)
            idx[0::2], idx[1::2] = codes & 15, codes >> 4
            binary[tail] = table.ravel().take(idx + self.code_offsets).sum(axis=0, dtype=F32)
        c = centroid.astype(F32)
        if self.metric == "dot":
            cr = fast_rotation(c, self.signs, self.code_dim)
            ip = F32(qr @ cr)
            alpha = ip / F32(cr @ cr)
            alpha = alpha if np.isfinite(alpha) else F32(0)
            factor, add_scale, offset = F32(1) - ip, alpha, F32(1)
            resid = qr.astype(np.float64) - float(alpha) * cr.astype(np.float64)
            norm = float(np.sqrt(resid @ resid))
            err_q = F32(norm)
            if float(err_q) < norm:
                err_q = np.nextafter(err_q, F32(np.inf))
        else:
            diff = q - c
            factor, add_scale, offset = F32(diff @ diff), F32(1), F32(0)
            err_q = F32(np.sqrt(max(float(factor) + 0.0, 0.0)))
        # float32 throughout, in pylance's order: ((bin - sum/2) * scale + add_scale * (add - offset)
        # + factor) - error * err_q, computed in place
        lower = binary - F32(0.5) * sum_q
        lower *= scale1
        lower += add1 if add_scale == 1 and offset == 0 else add_scale * (add1 - offset)
        lower += factor
        lower -= err1 * err_q
        est = exact_rows = None
        if gate is not None:
            exact_rows = gate(lower)
            est = np.full(len(binary), np.inf, dtype=F32)
            binary, add, scale = binary[exact_rows], add[exact_rows], scale[exact_rows]
            ex = None if ex is None else ex[exact_rows]
        if ex is None:
            part = ((binary - F32(0.5) * sum_q) * scale + add_scale * (add - offset) + factor).astype(F32)
        else:
            # the code of a dim: its sign bit above its ex_bits extra bits, centred on (2^num_bits - 1) / 2
            top = F32(1 << self.ex_bits)
            full = top * binary + (ex.astype(F32) @ qr) - (top - F32(0.5)) * sum_q
            part = (full * scale + add_scale * (add - offset) + factor).astype(F32)
        if est is None:
            return part, lower
        est[exact_rows] = part
        return est, lower

    def distances(self, qs: RQQuery, centroid: npt.NDArray[Any], payload: RQPayload,
                  rows: npt.NDArray[np.intp] | None = None) -> _F32s:
        return self._estimates(qs, centroid, payload, rows)[0]

    def gated(self, qs: RQQuery, centroid: npt.NDArray[Any], payload: RQPayload, ids: npt.NDArray[Any],
              keep: Callable[[npt.NDArray[Any]], Any] | None, k: int, heap: list[tuple[float, int]],
              bounds: tuple[float, float] | None) -> tuple[npt.NDArray[Any], _F32s]:
        """pylance's gated scan of one partition: rows in order, a row skipped when its 1-bit lower bound
        is not below the current k-th distance of ``heap`` (shared by the query's probed partitions, a
        max-heap of ``(-distance, -row id)``) or the range's upper bound, or when ``keep`` (row ids ->
        bool mask, or None; asked only about the rows the bound lets through) refuses it; returns the
        rows it accepted."""
        lo_b, hi_b = (-np.inf, np.inf) if bounds is None else bounds
        threshold = -heap[0][0] if len(heap) >= k else np.inf
        picked: list[np.ndarray] = []

        def gate(lower: np.ndarray) -> np.ndarray:
            """Rows whose 1-bit bound lets them through now (the threshold only falls later)."""
            rows = np.flatnonzero(lower < min(hi_b, threshold))
            if keep is not None and len(rows):
                rows = rows[np.asarray(keep(ids[rows]), dtype=bool)]
            picked.append(rows)
            return rows

        est, lower = self._estimates(qs, centroid, payload, gate=gate)
        cand = picked[0]
        inside = ~((est < lo_b) | (est >= hi_b))
        acc: list[np.ndarray] = []
        pos = 0
        while pos < len(cand) and len(heap) < k:     # filling the heap: every row in range enters it
            i = int(cand[pos])
            pos += 1
            if inside[i]:
                acc.append(cand[pos - 1:pos])
                heapq.heappush(heap, (-float(est[i]), -int(ids[i])))
        rest = cand[pos:]
        if len(rest):
            # after the heap is full the k-th distance only falls, and only at a row whose bound and
            # estimate are both below it: those rows are walked in order (scalars), then every row is
            # judged against the k-th distance in force when the scan reached it
            low_r, ok_r = lower[rest], inside[rest]
            key = np.maximum(low_r, est[rest])
            top0 = top = -heap[0][0]
            could = np.flatnonzero(ok_r & (key < top0))
            could_key = key[could]
            changes: list[int] = []
            levels = [top0]
            while len(could):       # a run at a time; then the rows that cannot lower the new k-th dropped
                for j, kv in zip(could[:_GATE_RUN].tolist(), could_key[:_GATE_RUN].tolist()):
                    if kv < top:
                        i = int(rest[j])
                        heapq.heapreplace(heap, (-float(est[i]), -int(ids[i])))
                        top = -heap[0][0]
                        changes.append(j)
                        levels.append(top)
                could, could_key = could[_GATE_RUN:], could_key[_GATE_RUN:]
                still = could_key < top
                could, could_key = could[still], could_key[still]
            if changes:
                before = np.searchsorted(np.asarray(changes), np.arange(len(rest)), side="left")
                limit = np.asarray(levels)[before]
                acc.append(rest[ok_r & (low_r < limit)])
            else:
                acc.append(rest[ok_r & (low_r < top0)])
        sel = np.concatenate(acc) if acc else np.zeros(0, dtype=np.intp)
        return ids[sel], est[sel]
