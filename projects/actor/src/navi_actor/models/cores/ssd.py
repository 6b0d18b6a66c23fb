"""Chunked Mamba-2 SSD scan in pure PyTorch, with episode resets as zero decay.

Recurrence per head (state ``h [P, N]``)::

    h_t = exp(a_t) * h_{t-1} + x_t B_t^T        y_t = h_t C_t

The window is cut into chunks of length ``Lc``: inside a chunk the outputs come from a masked
(attention-like) matrix ``C B^T * exp(segsum(a))``; between chunks a short recurrence carries the
chunk states. An episode start at ``t`` is encoded as ``a_t = -inf`` (decay exactly 0), so no state
flows across the boundary. All decays are built from *sums* (``segment_sum``, ``cumsum``), never
from differences of cumulative sums: ``-inf - -inf`` would be NaN, and differences of large
cumulative sums would also lose float32 precision.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf


def segment_sum(a: torch.Tensor) -> torch.Tensor:
    """Pairwise sums of a log-decay sequence.

    Args:
        a: ``[..., L]`` log-decays (may contain ``-inf``).

    Returns:
        ``[..., L, L]`` with ``out[..., i, j] = sum(a[j+1 .. i])`` for ``i >= j`` and ``-inf`` above
        the diagonal.
    """
    length = a.shape[-1]
    strict = torch.ones(length, length, dtype=torch.bool, device=a.device).tril(-1)
    repeated = a[..., :, None].expand(*a.shape, length)  # [..., i, j] = a_i
    summed = torch.cumsum(repeated.masked_fill(~strict, 0.0), dim=-2)
    lower = torch.ones(length, length, dtype=torch.bool, device=a.device).tril(0)
    return summed.masked_fill(~lower, float("-inf"))


def ssd_chunked_scan(
    x: torch.Tensor,
    log_decay: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    h0: torch.Tensor,
    *,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the SSD recurrence over a window.

    Args:
        x: ``[Bt, T, H, P]`` inputs (already scaled by the step size dt).
        log_decay: ``[Bt, T, H]`` log-decays ``a_t`` (``-inf`` where an episode starts).
        b: ``[Bt, T, N]`` input projections (one group shared by all heads).
        c: ``[Bt, T, N]`` output projections.
        h0: ``[Bt, H, P, N]`` state before step 0.
        chunk: Chunk length ``Lc``.

    Returns:
        Outputs ``[Bt, T, H, P]`` and the final state ``[Bt, H, P, N]``.
    """
    batch, length, heads, head_dim = x.shape
    pad = (-length) % chunk
    if pad:  # zero inputs with zero log-decay leave the state untouched
        x = nnf.pad(x, (0, 0, 0, 0, 0, pad))
        log_decay = nnf.pad(log_decay, (0, 0, 0, pad))
        b = nnf.pad(b, (0, 0, 0, pad))
        c = nnf.pad(c, (0, 0, 0, pad))
    n_chunks = (length + pad) // chunk
    x = x.reshape(batch, n_chunks, chunk, heads, head_dim)  # [Bt, Nc, Lc, H, P]
    b = b.reshape(batch, n_chunks, chunk, -1)  # [Bt, Nc, Lc, N]
    c = c.reshape(batch, n_chunks, chunk, -1)
    a = log_decay.reshape(batch, n_chunks, chunk, heads).permute(0, 3, 1, 2)  # [Bt, H, Nc, Lc]

    # 1. Outputs from inputs of the same chunk.
    seg = segment_sum(a)  # [Bt, H, Nc, Lc(l), Lc(s)]
    scores = torch.einsum("bcln,bcsn->bcls", c, b)  # [Bt, Nc, Lc, Lc]
    mixing = torch.exp(seg) * scores[:, None]  # [Bt, H, Nc, Lc, Lc]
    y_diag = torch.einsum("bhcls,bcshp->bclhp", mixing, x)

    # 2. State contributed by each chunk, decayed to the chunk end.
    decay_to_end = torch.exp(seg[..., -1, :])  # [Bt, H, Nc, Lc]: exp(sum a[s+1 .. Lc-1])
    chunk_states = torch.einsum("bcsn,bhcs,bcshp->bchpn", b, decay_to_end, x)  # [Bt, Nc, H, P, N]

    # 3. Carry states across chunks (a short recurrence written as a masked matrix).
    cum = torch.cumsum(a, dim=-1)  # [Bt, H, Nc, Lc]: sum a[0 .. l] (sums only, -inf safe)
    chunk_total = cum[..., -1]  # [Bt, H, Nc]
    states = torch.cat([h0[:, None], chunk_states], dim=1)  # [Bt, Nc+1, H, P, N]
    carry = torch.exp(segment_sum(nnf.pad(chunk_total, (1, 0))))  # [Bt, H, Nc+1, Nc+1]
    carried = torch.einsum("bhzc,bchpn->bzhpn", carry, states)  # [Bt, Nc+1, H, P, N]
    entering, final = carried[:, :-1], carried[:, -1]

    # 4. Outputs from the state entering each chunk.
    y_off = torch.einsum("bcln,bchpn,bhcl->bclhp", c, entering, torch.exp(cum))
    y = (y_diag + y_off).reshape(batch, n_chunks * chunk, heads, head_dim)[:, :length]
    return y, final
