"""The import-linter contract type of the package's stages (``[tool.importlinter]`` in ``pyproject.toml``).

``stage_layers`` is import-linter's ``layers`` contract with one more token: a layer written ``*`` holds every
subpackage of the root package that no other layer names -- the release families. A family added in its own folder
is therefore checked (independent of the other families, above the release protocol, below inference and the
audit) without an edit of ``pyproject.toml``; ``tests/project/test_architecture.py`` checks that the families found
this way are exactly the folders of the family registry.

import-linter imports this module from the repository root (``lint-imports`` puts the working directory on
``sys.path``); it is not part of the package.
"""
from __future__ import annotations

import grimp
from importlinter.contracts.layers import Layer, LayersContract, ModuleTail
from importlinter.domain.contract import ContractCheck

FAMILIES_TOKEN = "*"


def unnamed_subpackages(graph: grimp.ImportGraph, root: str, named: set[str]) -> set[str]:
    """Direct subpackages of ``root`` (modules with children) that are not in, or above, any ``named`` module."""
    return {m for m in graph.find_children(root) if graph.find_children(m)
            and not any(n == m or n.startswith(m + ".") for n in named)}


class StageLayersContract(LayersContract):
    """``layers``, where the layer ``*`` stands for the root package's subpackages that no other layer names."""

    type_name = "stage_layers"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        named = {t.name for layer in self.layers for t in layer.module_tails if t.name != FAMILIES_TOKEN}  # type: ignore
        roots = {n.split(".")[0] for n in named}
        (root,) = roots
        families = unnamed_subpackages(graph, root, named)
        self.layers = [Layer({ModuleTail(m) for m in families}, is_independent=layer.is_independent)  # type: ignore
                       if {t.name for t in layer.module_tails} == {FAMILIES_TOKEN} else layer
                       for layer in self.layers]  # type: ignore
        self.families = families
        return super().check(graph, verbose)
