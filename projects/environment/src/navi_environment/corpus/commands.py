"""Compiler commands: compile-gmdag, check-sdfdag, qualify-gmdag, export-scene, corpus."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from navi_common.cli_options import settings_kwargs, settings_options
from navi_environment.corpus.settings import CompileSettings

COMPILE_FIELDS = ("resolution", "far_tolerance_voxels", "exact_clearance_m")
"""Compile settings ``compile-gmdag`` exposes, each as ``--<field>`` (``compile.<field>``)."""
PREPARE_FIELDS = ("count_per_family", "resolution", "qualify")
"""Compile settings ``corpus prepare`` exposes, each as ``--<field>`` (``--qualify/--no-qualify``)."""

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings

_SOURCE_HELP = (
    "A mesh file (.glb/.gltf/.obj/.ply/.stl) or a procedural scene 'procedural:<family>[:seed=<n>]' "
    "with family one of apartment, maze, warehouse, building, hall."
)


def _settings(**compile_overrides: Any) -> EnvironmentSettings:
    """Environment settings with the CLI's compile options as init kwargs (they outrank env/.env)."""
    from navi_common.cli_options import build_settings
    from navi_common.logging import configure_logging
    from navi_environment.config import EnvironmentSettings

    # A dict for a nested group is deep-merged with env/.env values by pydantic-settings.
    overrides = {f"compile__{key}": value for key, value in compile_overrides.items()}
    settings = build_settings(EnvironmentSettings, **settings_kwargs(overrides))
    configure_logging(settings.log_level, settings.log_json, production=False)  # one-shot CLI: no caching
    return settings


_up_axis_option = click.option(
    "--up-axis",
    type=click.Choice(["auto", "z", "y", "x", "-z", "-y", "-x"]),
    default="auto",
    show_default=True,
    help="Meshes: the file's up direction. auto: +y for glTF (its convention), decided from the "
    "geometry for OBJ/PLY/STL (the choice and the reason are printed).",
)
_scale_option = click.option(
    "--scale",
    type=click.FloatRange(min=0.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Meshes: multiply coordinates by this to get metres (0.01 for centimetres, 0.001 for mm).",
)


def _emit(payload: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(payload, sort_keys=True))
    else:
        for line in lines:
            click.echo(line)


@click.command("compile-gmdag")
@click.option("--source", required=True, help=_SOURCE_HELP)
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The .gmdag to write."
)
@settings_options(CompileSettings, COMPILE_FIELDS)
@click.option("--repair", is_flag=True, help="Mesh sources: merge vertices, fix winding/normals, fill holes.")
@_up_axis_option
@_scale_option
def compile_gmdag(
    source: str, output: Path, repair: bool, up_axis: str, scale: float, **compile_options: Any
) -> None:
    """Compile a mesh or procedural scene into a GMDAG v1 file (written atomically), with a
    provenance record beside it (``<output>.provenance.json``: source, transform, versions)."""
    from navi_environment.corpus.provenance import write_provenance
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    settings = _settings(**settings_kwargs(compile_options))
    try:
        compiled = compile_source(source, settings.compile, repair=repair, up_axis=up_axis, scale=scale)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    written = write_gmdag(compiled.asset, output)
    write_provenance(output, compiled, repair=repair)
    ratio = 2 * compiled.asset.resolution**3 / written
    if compiled.mesh_import is not None:
        for line in _mesh_import_lines(compiled.mesh_import):
            click.echo(line)
    click.echo(
        f"{output}: {compiled.asset.resolution}^3, voxel {compiled.asset.voxel_size:.4f} m, "
        f"{compiled.asset.nodes.shape[0]} nodes, {written} bytes ({ratio:.1f}x vs dense fp16), "
        f"{compiled.seconds:.1f} s"
    )


def _mesh_import_lines(record: dict[str, Any]) -> list[str]:
    """What the import did: triangles kept/dropped, the up axis and why, and any doubt."""
    dropped = record["dropped"]
    lines = [
        f"triangles: {record['triangles_kept']} of {record['triangles_read']} kept "
        f"(dropped: {dropped['non_finite']} NaN/infinite, {dropped['degenerate']} degenerate, "
        f"{dropped['duplicate']} duplicate)",
        f"up axis: {record['up_axis_reason']}; scale {record['scale']}",
    ]
    if record.get("orientation_warning"):
        lines.append(f"warning: {record['orientation_warning']}")
    return lines


@click.command("check-sdfdag")
@click.option("--gmdag-file", type=click.Path(dir_okay=False, path_type=Path), help="One file to validate.")
@click.option(
    "--gmdag-root", type=click.Path(file_okay=False, path_type=Path), help="Validate every .gmdag below."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def check_sdfdag(gmdag_file: Path | None, gmdag_root: Path | None, as_json: bool) -> None:
    """Validate GMDAG files against every format rule (and a corpus manifest when present).

    Exit status 1 when any file or the manifest is broken.
    """
    from navi_environment.corpus.check import check_file, check_root

    if (gmdag_file is None) == (gmdag_root is None):
        raise click.UsageError("give exactly one of --gmdag-file or --gmdag-root")
    if gmdag_file is not None:
        reports, problems = [check_file(gmdag_file)], list[str]()
    else:
        assert gmdag_root is not None
        reports, problems = check_root(gmdag_root)
    ok = not problems and all(report["ok"] for report in reports)
    lines = [
        f"{'OK  ' if r['ok'] else 'FAIL'} {r['file']}" + (f": {r['error']}" if r["error"] else "")
        for r in reports
    ]
    lines += [f"FAIL {problem}" for problem in problems]
    lines.append(f"{'PASS' if ok else 'FAIL'}: {sum(r['ok'] for r in reports)}/{len(reports)} files valid")
    _emit({"ok": ok, "files": reports, "problems": problems}, as_json, lines)
    if not ok:
        sys.exit(1)


@click.command("qualify-gmdag")
@click.option(
    "--gmdag-file", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The scene."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Spawn candidate sampling seed.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def qualify_gmdag(gmdag_file: Path, seed: int, as_json: bool) -> None:
    """Probe spawn candidates with a coarse spherical sensor; FAIL (exit 1) without a viable spawn
    or when the best spawn's starvation is >= 0.7."""
    from navi_environment.corpus.qualify import qualify_asset
    from navi_environment.gmdag.format import GmdagFormatError
    from navi_environment.gmdag.reader import load_gmdag

    settings = _settings()
    try:
        asset = load_gmdag(gmdag_file)
    except GmdagFormatError as error:
        raise click.ClickException(str(error)) from error
    summary = qualify_asset(asset, settings, seed=seed)
    lines = [f"{summary['verdict']} {gmdag_file}: {summary['reason']}"]
    _emit(summary, as_json, lines)
    if summary["verdict"] != "PASS":
        sys.exit(1)


@click.command("export-scene")
@click.option("--source", required=True, help="A procedural scene 'procedural:<family>[:seed=<n>]'.")
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help=".obj/.glb/.ply/.stl"
)
def export_scene(source: str, output: Path) -> None:
    """Export a procedural scene as a triangle mesh."""
    from navi_environment.scenes.export import export_layout
    from navi_environment.scenes.registry import generate, parse_procedural

    try:
        spec = parse_procedural(source)
        path = export_layout(generate(spec.family, spec.seed), output)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"{path}: {spec}")


@click.group("corpus")
def corpus() -> None:
    """Build and inspect a training corpus (procedural scenes and/or your own meshes)."""


@corpus.command("prepare")
@click.option(
    "--families", default=None, help="Comma-separated procedural families (default: compile.families, all "
    "five; none when meshes are given; 'none' for none)."
)  # fmt: skip
@settings_options(CompileSettings, PREPARE_FIELDS)
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Corpus folder (default: artifacts/<compile.corpus_dir>).")  # fmt: skip
@click.option(
    "--source", "source_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
    help="A folder of mesh files (.glb/.gltf/.obj/.ply/.stl, searched recursively) to compile.",
)  # fmt: skip
@click.option(
    "--mesh", "mesh_paths", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
    help="A mesh file to compile into the corpus (repeatable).",
)  # fmt: skip
@_up_axis_option
@_scale_option
@click.option("--repair", is_flag=True, help="Meshes: merge vertices, fix winding/normals, fill holes.")
def corpus_prepare(  # noqa: PLR0917 - one parameter per CLI option
    families: str | None,
    output: Path | None,
    source_dir: Path | None,
    mesh_paths: tuple[Path, ...],
    up_axis: str,
    scale: float,
    repair: bool,
    **compile_options: Any,
) -> None:
    """Compile, qualify and write the corpus with manifest.json (staged, swapped in on success).

    Mesh files that cannot be imported or cannot host drones are left out and listed under
    ``rejected`` in the manifest, with their reason.
    """
    from navi_contracts.paths import artifacts_root
    from navi_environment.corpus.prepare import MeshSources, mesh_files, prepare_corpus

    family_list = None
    if families is not None:
        family_list = tuple(n.strip() for n in families.split(",") if n.strip() and n.strip() != "none")
    settings = _settings(**settings_kwargs(compile_options))
    target = output or artifacts_root() / settings.compile.corpus_dir
    try:
        files = [*(mesh_files(source_dir) if source_dir is not None else []), *mesh_paths]
        meshes = MeshSources(tuple(files), up_axis=up_axis, scale=scale, repair=repair)
        manifest = prepare_corpus(
            target,
            settings.compile,
            families=family_list,
            env_settings=settings,
            progress=True,
            meshes=meshes,
        )
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"{target}: {len(manifest.scenes)} scenes, {len(manifest.rejected)} rejected")
    for rejected in manifest.rejected:
        click.echo(f"rejected {rejected['source']}: {rejected['reason']}")
    for entry in manifest.scenes:
        if entry.mesh_import is not None:
            click.echo(
                f"{entry.id}: {entry.source}: {entry.mesh_import['up_axis_reason']}; "
                f"{entry.qualification.reason}"
            )


def register(group: click.Group) -> None:
    """Attach this module's commands to the ``navi-environment`` group."""
    for command in (compile_gmdag, check_sdfdag, qualify_gmdag, export_scene, corpus):
        group.add_command(command)
