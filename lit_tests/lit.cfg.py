# lit configuration for dynjax: `lit -v lit_tests` (needs `pip install lit filecheck`).
import os
import shutil
import sys

import lit.formats

config.name = "dynjax-lit"
# Internal shell: execute_external=True is deprecated (raises) in lit 23.
config.test_format = lit.formats.ShTest()
config.suffixes = [".py", ".mlir"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "__init__.py", "conftest.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "..", "lit-out")

repo_root = os.path.dirname(config.test_source_root)
config.substitutions.append(("%PYTHON", sys.executable))

# `filecheck` and `dynjax-opt` next to the python running lit; fall back to
# running the driver as a module when the console script is not installed.
bindir = os.path.dirname(sys.executable)
path = os.pathsep.join([bindir, os.environ.get("PATH", "")])
config.environment["PATH"] = path
config.environment["PYTHONPATH"] = os.pathsep.join(
    [repo_root, os.path.join(repo_root, "frontend"), os.environ.get("PYTHONPATH", "")])
if shutil.which("dynjax-opt", path=path) is None:
    config.substitutions.append(("dynjax-opt", f"{sys.executable} -m mlir_passes.cli"))
if shutil.which("filecheck", path=path) is None:
    lit_config.fatal("filecheck not found (pip install filecheck)")
