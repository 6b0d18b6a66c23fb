"""Temporal cores: step == sequence (with resets), causality, and the SSD scan against a loop."""

from __future__ import annotations

import pytest
import torch

from navi_actor.models import TEMPORAL_CORES, PolicyConfig
from navi_actor.models.cores import build_core
from navi_actor.models.cores.causal_conv import CausalDepthwiseConv
from navi_actor.models.cores.ssd import segment_sum, ssd_chunked_scan

D = 32


def make_core(name: str, chunk: int = 4):
    torch.manual_seed(0)
    cfg = PolicyConfig(
        visit_input=False, temporal_core=name, embed_dim=D, ssm_head_dim=16, ssm_state=8, ssm_chunk=chunk
    )
    return build_core(cfg).double()


def step_through(core, x: torch.Tensor, state: torch.Tensor, resets: torch.Tensor):
    outputs = []
    for t in range(x.shape[0]):
        state = state * (~resets[t]).double()[:, None]
        y, state = core.step(x[t], state)
        outputs.append(y)
    return torch.stack(outputs), state


@pytest.mark.parametrize("chunk", [4, 5, 64])
@pytest.mark.parametrize("name", TEMPORAL_CORES)
def test_step_equals_sequence_with_resets(name: str, chunk: int) -> None:
    core = make_core(name, chunk=chunk)
    T, B = 17, 4
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(T, B, D, generator=gen, dtype=torch.float64)
    state0 = torch.randn(B, core.state_size, generator=gen, dtype=torch.float64)
    resets = torch.zeros(T, B, dtype=torch.bool)
    resets[0, 1] = resets[4, 0] = resets[5, 0] = resets[8, 2] = resets[16, 3] = True  # incl. chunk edges
    stepped, stepped_state = step_through(core, x, state0, resets)
    sequenced, sequenced_state = core.sequence(x, state0, resets)
    torch.testing.assert_close(sequenced, stepped, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(sequenced_state, stepped_state, atol=1e-10, rtol=1e-9)


@pytest.mark.parametrize("name", TEMPORAL_CORES)
def test_causality_and_reset_isolation(name: str) -> None:
    core = make_core(name)
    T, B = 12, 2
    x = torch.randn(T, B, D, dtype=torch.float64)
    state0 = torch.randn(B, core.state_size, dtype=torch.float64)
    resets = torch.zeros(T, B, dtype=torch.bool)
    resets[7, 0] = True
    base, _ = core.sequence(x, state0, resets)
    future = x.clone()
    future[9:] += 5.0  # change inputs after t=8
    changed, _ = core.sequence(future, state0, resets)
    torch.testing.assert_close(changed[:9], base[:9], atol=0, rtol=0)
    assert not torch.allclose(changed[9:], base[9:])
    past = x.clone()
    past[:7, 0] += 5.0  # change row 0 before its episode start at t=7
    isolated, _ = core.sequence(past, state0 * 3.0, resets)
    torch.testing.assert_close(isolated[7:, 0], base[7:, 0], atol=1e-12, rtol=0)
    assert not torch.allclose(isolated[:7, 0], base[:7, 0])


def naive_ssd(x, log_decay, b, c, h0):
    """Reference loop: h_t = exp(a_t) h_{t-1} + x_t b_t^T, y_t = h_t c_t."""
    h, ys = h0, []
    for t in range(x.shape[1]):
        h = torch.exp(log_decay[:, t])[:, :, None, None] * h + x[:, t, :, :, None] * b[:, t, None, None, :]
        ys.append(torch.einsum("bhpn,bn->bhp", h, c[:, t]))
    return torch.stack(ys, dim=1), h


@pytest.mark.parametrize("chunk", [1, 3, 8, 32])
def test_ssd_chunked_scan_matches_loop_including_zero_decay(chunk: int) -> None:
    gen = torch.Generator().manual_seed(3)
    Bt, T, H, P, N = 2, 19, 3, 4, 5
    x = torch.randn(Bt, T, H, P, generator=gen, dtype=torch.float64)
    log_decay = -torch.rand(Bt, T, H, generator=gen, dtype=torch.float64)
    log_decay[0, 6] = float("-inf")
    log_decay[1, 16, 1] = float("-inf")
    b, c = torch.randn(2, Bt, T, N, generator=gen, dtype=torch.float64)
    h0 = torch.randn(Bt, H, P, N, generator=gen, dtype=torch.float64)
    y, final = ssd_chunked_scan(x, log_decay, b, c, h0, chunk=chunk)
    y_ref, final_ref = naive_ssd(x, log_decay, b, c, h0)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(final, final_ref)


def test_segment_sum_known_answer() -> None:
    out = segment_sum(torch.tensor([1.0, 2.0, 4.0]))
    inf = float("-inf")
    torch.testing.assert_close(out, torch.tensor([[0.0, inf, inf], [2.0, 0.0, inf], [6.0, 4.0, 0.0]]))


def test_causal_conv_known_answer() -> None:
    conv = CausalDepthwiseConv(channels=1, kernel=3)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[1.0, 10.0, 100.0]]))  # oldest ... newest
        conv.bias.zero_()
    x = torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(4, 1, 1)
    state0 = torch.tensor([5.0, 6.0]).reshape(1, 2, 1)
    resets = torch.tensor([False, False, True, False]).reshape(4, 1)
    y, state = conv.sequence(x, state0, resets)
    # t0: 5,6,1 ; t1: 6,1,2 ; t2 (reset): 0,0,3 ; t3: 0,3,4
    torch.testing.assert_close(y.flatten(), torch.tensor([165.0, 216.0, 300.0, 430.0]))
    torch.testing.assert_close(state.flatten(), torch.tensor([3.0, 4.0]))


def test_ssd_backward_matches_finite_differences_across_a_reset() -> None:
    """The -inf decay at an episode start must give exact, finite gradients (no NaN from -inf - -inf)."""
    gen = torch.Generator().manual_seed(4)
    Bt, T, H, P, N = 1, 7, 2, 2, 3
    x = torch.randn(Bt, T, H, P, generator=gen, dtype=torch.float64, requires_grad=True)
    log_decay = (-torch.rand(Bt, T, H, generator=gen, dtype=torch.float64)).requires_grad_()
    b, c = torch.randn(2, Bt, T, N, generator=gen, dtype=torch.float64).unbind(0)
    b.requires_grad_()
    c.requires_grad_()
    h0 = torch.randn(Bt, H, P, N, generator=gen, dtype=torch.float64, requires_grad=True)
    reset = torch.zeros(Bt, T, H, dtype=torch.bool)
    reset[0, 3] = True  # an episode starts mid-chunk

    def scan(x, log_decay, b, c, h0):
        y, final = ssd_chunked_scan(x, log_decay.masked_fill(reset, float("-inf")), b, c, h0, chunk=3)
        return y.sum() + final.square().sum()

    assert torch.autograd.gradcheck(scan, (x, log_decay, b, c, h0))
