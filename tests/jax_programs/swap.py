"""Run a Python file with its ``jax`` imports answered by ``dynjax``: the "change the imports"
test of dynjax's API.

A program (or library) file is executed as a fresh module whose ``__import__`` maps a module
name beginning with ``jax`` onto the ``dynjax`` module of the same name. Two names need more than a
rename:

* ``jax.example_libraries.<name>`` (JAX's small pure-JAX libraries, e.g. ``stax`` and
  ``optimizers``) is JAX's own source file, taken from the installed jax package and executed
  under this same swap, so JAX's library code runs on dynjax unmodified;
* ``jax._src.util`` (a private JAX module those libraries import three helpers from) is answered
  by a small module defined here.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.util
import os
import types

_real_import = builtins.__import__


def _util_module():
    """The three helpers JAX's example libraries take from ``jax._src.util``."""
    mod = types.ModuleType("swapped_jax_util")

    def safe_zip(*seqs):
        seqs = [list(s) for s in seqs]
        if len({len(s) for s in seqs}) > 1:
            raise ValueError(f"safe_zip: lengths differ: {[len(s) for s in seqs]}")
        return list(zip(*seqs))

    def safe_map(f, *seqs):
        return [f(*args) for args in safe_zip(*seqs)]

    def unzip2(pairs):
        firsts, seconds = [], []
        for a, b in pairs:
            firsts.append(a)
            seconds.append(b)
        return tuple(firsts), tuple(seconds)

    mod.safe_zip, mod.safe_map, mod.unzip2 = safe_zip, safe_map, unzip2
    return mod


class ImportSwap:
    """The module table of one swapped run: dynjax modules by jax name, plus the swapped copies
    of JAX's example libraries (each loaded once per swap)."""

    def __init__(self):
        self.libraries = types.ModuleType("swapped_example_libraries")
        self.util = _util_module()

    def _example_library(self, name: str):
        if not hasattr(self.libraries, name):
            spec = importlib.util.find_spec("jax")  # the installed jax, only for its source file
            path = os.path.join(os.path.dirname(spec.origin), "example_libraries", name + ".py")
            setattr(self.libraries, name, self.exec_file(path, f"swapped_{name}"))
        return getattr(self.libraries, name)

    def _resolve(self, name: str):
        """The module standing in for ``jax`` module ``name``."""
        if name == "jax._src.util":
            return self.util
        if name == "jax.example_libraries":
            return self.libraries
        if name.startswith("jax.example_libraries."):
            return self._example_library(name.rsplit(".", 1)[1])
        return importlib.import_module("dynjax" + name[3:])

    def __import__(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or not (name == "jax" or name.startswith("jax.")):
            return _real_import(name, globals, locals, fromlist, level)
        target = self._resolve(name)
        if fromlist:
            if name == "jax.example_libraries":
                for sub in fromlist:
                    self._example_library(sub)
            return target
        # ``import jax.numpy as jnp`` / ``import jax.numpy``: the top-level module, with each
        # dotted component reached by attribute
        top = importlib.import_module("dynjax")
        if name.startswith("jax.example_libraries"):
            # ``import jax.example_libraries.stax as stax``: attribute access from the top
            # module must reach the swapped copy; give a view with that attribute chain.
            view = types.SimpleNamespace(**vars(top))
            view.example_libraries = self.libraries
            return view
        return top

    def exec_file(self, path: str, module_name: str):
        """Execute ``path`` as a new module under this swap and return the module."""
        mod = types.ModuleType(module_name)
        mod.__file__ = path
        mod.__builtins__ = dict(vars(builtins), __import__=self.__import__)
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        exec(code, mod.__dict__)
        return mod


def load_swapped(path: str):
    """The program at ``path``, executed with jax imports answered by dynjax."""
    return ImportSwap().exec_file(path, "swapped_" + os.path.splitext(os.path.basename(path))[0])


def load_original(path: str):
    """The program at ``path``, imported as written (on jax)."""
    name = "original_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
