"""doc/support.md, the table of JAX names dynjax has, is up to date with the code: it is
regenerated in memory by doc/gen_support_table.py and compared with the committed page
(rerun ``python doc/gen_support_table.py`` after adding a function)."""
import importlib.util
import pathlib

import jax  # noqa: F401  (a test extra: the table lists the names of the installed jax)

DOC = pathlib.Path(__file__).resolve().parent.parent / "doc"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_support_table", DOC / "gen_support_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_support_page_is_up_to_date():
    gen = _generator()
    assert (DOC / "support.md").read_text() == gen.render(), \
        "doc/support.md is out of date: run python doc/gen_support_table.py"


def test_every_missing_name_has_a_reason_and_the_table_is_right():
    gen = _generator()
    import dynjax.numpy as jnp
    tables = {jax_name: entries for jax_name, _, entries in gen.rows()}
    numpy_rows = {name: (ok, why) for name, ok, why in tables["jax.numpy"]}
    assert numpy_rows["polyval"] == (True, "") and numpy_rows["load"][0] is False
    assert "I/O" in numpy_rows["load"][1]
    for name, (ok, why) in numpy_rows.items():
        assert ok == hasattr(jnp, name)
        assert ok or why, name
    # jax.numpy: every missing name is explained (none is merely "not implemented yet")
    assert [n for n, (ok, why) in numpy_rows.items() if not ok and why == gen.DEFAULT_REASON] == []
