"""The type stubs name exactly what the compiled module exports, with the
same parameters; the package is marked typed."""

import ast
import inspect
from pathlib import Path

import fasthts
from fasthts import _fasthts

PKG = Path(fasthts.__file__).parent


def stub_tree():
    return ast.parse((PKG / "_fasthts.pyi").read_text())


def params(fn: ast.FunctionDef):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else [])]
    return [n for n in names if n not in ("self", "cls")]


def runtime_params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters if p not in ("self", "cls", "$self", "$cls")]


def test_package_is_typed():
    assert (PKG / "py.typed").is_file()


def test_stub_names_match_module():
    tree = stub_tree()
    stub_names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stub_names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stub_names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            stub_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    runtime = {n for n in dir(_fasthts) if not n.startswith("__") or n == "__version__"}
    assert stub_names - {"_Path", "_RegionLike", "__all__"} == runtime


def test_stub_signatures_match_module():
    checked = 0
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            rt = runtime_params(getattr(_fasthts, node.name))
            assert rt == params(node), node.name
            checked += 1
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_fasthts, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not any(
                    isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list
                ):
                    if item.name.startswith("__") and item.name != "__new__":
                        assert hasattr(cls, item.name), (node.name, item.name)
                        continue
                    target = cls if item.name == "__new__" else getattr(cls, item.name)
                    rt = runtime_params(target)
                    if rt is not None:
                        assert rt == params(item), (node.name, item.name)
                        checked += 1
                elif isinstance(item, ast.FunctionDef):
                    assert hasattr(cls, item.name), (node.name, item.name)
                elif isinstance(item, ast.AnnAssign):
                    assert hasattr(cls, item.target.id) or node.name in ("Region",), (node.name, item.target.id)
    assert checked > 20


def test_mypy_stubtest_finds_no_difference():
    """mypy's stubtest: the stubs against the built module, signatures and
    types of defaults included."""
    import subprocess
    import sys

    from conftest import require_module

    require_module("mypy")
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "fasthts._fasthts"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
