"""The Gymnasium ids of Navi: ``gymnasium.make("Navi/Explore-v0", scene=...)`` and ``make_vec``.

``Navi/Explore-v0`` is one drone exploring (:class:`~navi_environment.gym_adapter.NaviGymEnv`); its
vector entry point (``gymnasium.make_vec("Navi/Explore-v0", num_envs=B, ...)``) is B drones stepped
as one batch (:class:`~navi_environment.gym_adapter.NaviVectorEnv`, no subprocesses). Keywords:

* ``scene=`` a ``.gmdag`` file, a mesh file, or ``procedural:<family>[:seed=<n>]`` (compiled on first
  use into ``artifacts/gmdag/cache/``), or ``corpus=`` a corpus folder; neither: the default corpus;
* ``render_mode="rgb_array"``: ``render()`` returns the dashboard's panorama;
* ``settings=`` an ``EnvironmentSettings``, or its groups as keywords (``sensor={"azimuth_bins": 64}``,
  ``episode={"max_steps": 500}``; unknown names fail loudly), outranking ``NAVI_ENV_*``;
* ``device=`` (vector only): ``"cpu"`` or a CUDA device.

Why a hook: Gymnasium 1.x has no plugin entry points any more, so ``gymnasium.make`` only knows ids
that some imported module registered. ``import navi_environment`` registers them, at once when
gymnasium is already imported, otherwise the moment it is (a one-shot import hook, so importing
navi_environment never pays for importing gymnasium, numpy or torch). The package also installs
``navi_environment_gym.pth``, which imports navi_environment at interpreter start-up: that is what
lets ``import gymnasium as gym; gym.make("Navi/Explore-v0", ...)`` work with no import of ours.
"""

from __future__ import annotations

import sys
import warnings

# Only modules every interpreter has loaded already at run time: this module is imported at start-up
# (navi_environment_gym.pth), so typing, pathlib and importlib.abc / importlib.util (tens of
# milliseconds on a busy machine) are imported for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from pathlib import Path
    from types import ModuleType
    from typing import Any

    from navi_environment.config import EnvironmentSettings
    from navi_environment.gym_adapter import NaviGymEnv, NaviVectorEnv

EXPLORE_ID = "Navi/Explore-v0"


def make_explore_env(
    *,
    scene: str | Path | None = None,
    corpus: str | Path | None = None,
    render_mode: str | None = None,
    settings: EnvironmentSettings | None = None,
    **settings_fields: Any,
) -> NaviGymEnv:
    """Entry point of ``Navi/Explore-v0``: one drone (see the module docstring for the keywords)."""
    from navi_environment.gym_adapter import NaviGymEnv
    from navi_environment.gym_scenes import resolve_scene_paths

    env_settings = _settings(settings, settings_fields)
    paths = resolve_scene_paths(scene, corpus, env_settings)
    return NaviGymEnv(env_settings, scene_paths=paths, render_mode=render_mode)


def make_explore_vector_env(
    num_envs: int = 1,
    *,
    scene: str | Path | None = None,
    corpus: str | Path | None = None,
    render_mode: str | None = None,
    device: str = "cpu",
    settings: EnvironmentSettings | None = None,
    **settings_fields: Any,
) -> NaviVectorEnv:
    """Vector entry point of ``Navi/Explore-v0``: ``num_envs`` drones in one batched backend."""
    from navi_environment.gym_adapter import NaviVectorEnv
    from navi_environment.gym_scenes import resolve_scene_paths

    env_settings = _settings(settings, settings_fields)
    paths = resolve_scene_paths(scene, corpus, env_settings)
    return NaviVectorEnv(env_settings, num_envs, scene_paths=paths, device=device, render_mode=render_mode)


def _settings(settings: EnvironmentSettings | None, fields: dict[str, Any]) -> EnvironmentSettings:
    """``settings`` as given, or ``EnvironmentSettings(**fields)`` (keywords outrank ``NAVI_ENV_*``)."""
    from navi_environment.config import EnvironmentSettings

    if settings is not None and fields:
        raise ValueError(f"pass settings= or settings fields ({', '.join(sorted(fields))}), not both")
    return settings if settings is not None else EnvironmentSettings(**fields)


def register_envs() -> None:
    """Register Navi's ids with Gymnasium (imports gymnasium; a second call changes nothing)."""
    import gymnasium

    if EXPLORE_ID in gymnasium.registry:
        return
    gymnasium.register(
        id=EXPLORE_ID,
        entry_point="navi_environment.gym_registration:make_explore_env",
        vector_entry_point="navi_environment.gym_registration:make_explore_vector_env",
        # Episodes end inside the simulator (episode.max_steps); no TimeLimit on top.
        max_episode_steps=None,
    )


def register_when_gymnasium_loads() -> None:
    """Register now when gymnasium is imported already, else as soon as it is."""
    loaded = sys.modules.get("gymnasium")
    if loaded is not None and hasattr(loaded, "register"):
        register_envs()
    elif not any(isinstance(finder, _GymnasiumImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumImportHook())


class _GymnasiumImportHook:
    """One-shot ``sys.meta_path`` finder: the first ``import gymnasium`` gets a loader that registers
    after it runs (duck-typed ``importlib.abc.MetaPathFinder``)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)  # one shot; the real finders resolve the module
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None and spec.loader is not None:
                spec.loader = _RegisterAfterLoading(spec.loader)
                return spec
        return None


class _RegisterAfterLoading:
    """Runs gymnasium's own loader, then registers Navi's ids; everything else is the inner loader's
    (duck-typed ``importlib.abc.Loader``)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        try:
            register_envs()
        except Exception as error:  # never break someone's `import gymnasium` over our ids
            warnings.warn(f"navi_environment could not register {EXPLORE_ID}: {error}", stacklevel=2)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
