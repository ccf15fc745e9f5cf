"""Small refusals of the native bindings (issue 20, item 14): each answer is
one rule, and each message is short and names the number or item at fault.

The lock waits that could hang or crash run in a child process with a time
limit, so that a regression fails the test instead of stopping the run.
"""

import math
import os
import sys
import zlib

import numpy as np
import pytest

import bytelens as bl
from bytelens import gpu
from _support import run_child

#: The longest segment name each OS takes (README: "On Linux, macOS and Windows").
LONGEST_NAME = {"darwin": 30, "win32": 240}.get(sys.platform, 254)


@pytest.fixture
def name(request):
    """A segment name unique to this test (and its parameters), removed
    afterwards: short, as macOS takes at most 30 bytes."""
    name = f"bh{os.getpid()}-{zlib.crc32(request.node.nodeid.encode()):08x}"
    yield name
    try:
        bl.SharedBuffer.attach(name).unlink()
    except FileNotFoundError:
        pass


# lock(timeout=...): None, math.inf and anything past ~292 years wait
# forever; negative and NaN timeouts are refused, with the number.


@pytest.mark.parametrize("timeout", ["math.inf", "1e300", "1e19", "9223372037.0"])
def test_a_timeout_too_long_to_matter_waits_forever(name, timeout):
    # Contended, so that the wait itself runs (an uncontended lock is taken
    # before any deadline is computed). inf was refused; 1e19 seconds
    # overflowed the deadline's Instant and panicked.
    code = f"""
        import math, threading, time
        import bytelens as bl
        sh = bl.SharedBuffer.create({name!r}, 8)
        sh.unlink()
        held, release = threading.Event(), threading.Event()

        def holder():
            with sh.lock():
                held.set()
                release.wait()

        thread = threading.Thread(target=holder)
        thread.start()
        held.wait()
        threading.Timer(0.3, release.set).start()
        start = time.monotonic()
        with sh.lock(timeout={timeout}):
            waited = time.monotonic() - start
        thread.join()
        print("waited", round(waited, 2))
    """
    rc, out = run_child(code, timeout=60)
    assert rc == 0, out
    assert "waited" in out


def test_long_timeouts_are_the_forever_lock_and_short_ones_wait(name):
    sh = bl.SharedBuffer.create(name, 8)
    for timeout in (math.inf, 1e300, 9223372036.5):
        with sh.lock(timeout=timeout) as held:
            assert not held.owner_died
    # The largest timeout that is a deadline, and zero (-0.0 too), are waits.
    for timeout in (9223372036.0, 0.0, -0.0, 1e-9):
        with sh.lock(timeout=timeout):
            pass


@pytest.mark.parametrize(
    ("timeout", "shown"),
    [(-1.0, "-1.0"), (-1e300, "-1e300"), (math.nan, "nan"), (-math.inf, "-inf")],
)
def test_negative_and_nan_timeouts_are_refused_with_the_number(name, timeout, shown):
    sh = bl.SharedBuffer.create(name, 8)
    with pytest.raises(ValueError) as raised:
        sh.lock(timeout=timeout)
    message = str(raised.value)
    assert message.endswith(f"not {shown}"), message
    assert "math.inf to wait forever" in message
    assert len(message) < 120, message


# SharedBuffer names: the message quotes at most 64 characters of a name,
# escaped, and says how long it was.


@pytest.mark.parametrize("call", ["create", "attach"])
def test_a_long_bad_name_gives_a_short_message(call):
    name = "n" * 10_000
    with pytest.raises(ValueError, match="not a usable shared-memory name") as raised:
        if call == "create":
            bl.SharedBuffer.create(name, 8)
        else:
            bl.SharedBuffer.attach(name)
    message = str(raised.value)
    assert len(message) <= 200, len(message)
    assert f'"{"n" * 64}"... (10000 bytes) is not' in message


def test_a_name_of_control_characters_stays_short_when_missing():
    name = "\x1b" * LONGEST_NAME  # a name the OS takes, each character escaped to 6
    with pytest.raises(FileNotFoundError) as raised:
        bl.SharedBuffer.attach(name)
    message = str(raised.value)
    assert len(message) <= 200, len(message)
    assert "\x1b" not in message and message.endswith(f"({LONGEST_NAME} bytes)"), message


def test_a_short_name_is_quoted_whole(name):
    with pytest.raises(FileNotFoundError) as raised:
        bl.SharedBuffer.attach(name)
    assert str(raised.value) == f'no shared memory named "{name}"'


# Plan fields: dtype, (dtype, shape) or (dtype, shape, offset); a tuple of
# any other length is refused as such, not read as an "unknown dtype".


@pytest.mark.parametrize(
    ("field", "items"),
    [(("<f4", 1, 0, 0), "4 items"), (("<f4",), "1 item"), ((), "0 items")],
)
def test_a_field_tuple_of_other_than_two_or_three_items_is_refused(field, items):
    with pytest.raises(TypeError) as raised:
        bl.Plan("P").struct(A=field)
    assert str(raised.value) == (
        'field "A": a field is dtype, (dtype, shape) or (dtype, shape, offset), '
        f"not a tuple of {items}"
    )


def test_fields_of_one_two_and_three_parts_still_read():
    plan = bl.Plan("P").struct(A=("<f4", 1, 8), B=("<u2", (2,)), C="<u1")
    assert plan.to_text() == "P\nA <f4 1 @8\nB <u2 2\nC |u1"


def test_a_long_field_name_is_cut_in_the_message():
    with pytest.raises(TypeError) as raised:
        bl.Plan("P").struct(**{"x" * 10_000: ("<f4", 1, 0, 0)})
    assert len(str(raised.value)) <= 200
    assert "(10000 characters)" in str(raised.value)


# --- every argument the extension converts is named when it is the wrong type --


def _stub_signatures():
    """(owner, name, parameters) for every function and method in the
    extension's stubs (_native.pyi): parameters as (name, annotation text,
    kind, has_default), without self and cls."""
    import ast
    import pathlib

    stub = pathlib.Path(bl._native.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())

    def params(fn):
        a = fn.args
        out = []
        positional = a.posonlyargs + a.args
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        for arg, default in zip(positional, defaults):
            if arg.arg not in ("self", "cls"):
                out.append((arg.arg, ast.unparse(arg.annotation) if arg.annotation else "", "pos", default is not None))
        for arg, default in zip(a.kwonlyargs, a.kw_defaults):
            out.append((arg.arg, ast.unparse(arg.annotation) if arg.annotation else "", "kw", default is not None))
        return out

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield None, node.name, params(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not any(
                    isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list
                ):
                    yield node.name, item.name, params(item)


#: A value of each simple annotation that converts (the wrong-typed
#: argument is then the only one that cannot).
_SAMPLES = {"int": 1, "str": "x", "bool": False, "float": 1.0, "float | None": None, "str | None": None,
            "int | None": None, "bytes": b"\0" * 16, "npt.DTypeLike": "<f4"}
#: What is passed where a simple type is wanted: no int, str, bool or float.
_WRONG = object()
#: An instance to call each class's methods on.
_RECEIVERS = {
    "Buffer": lambda: bl.Buffer(64),
    "Layout": lambda: bl.Layout("<f4", (4,)),
    "Plan": lambda: bl.Plan("P").struct(a="<f4"),
}
#: Calls whose arguments are converted after a check that runs first, or
#: that need more than sample values to reach the conversion.
_SKIP = {"__exit__", "__buffer__", "__release_buffer__", "__reduce_ex__", "_from_state", "__dlpack__", "_dlpack_view"}


def _named_cases():
    for owner, name, params in _stub_signatures():
        if name in _SKIP or (owner is not None and owner not in _RECEIVERS):
            continue
        # The simple types pyo3 converts (a dtype takes anything numpy.dtype() does).
        simple = [p for p in params if p[1] in ("int", "str", "bool", "float", "bytes")]
        required_unknown = [p for p in params if p[1] not in _SAMPLES and not p[3]]
        if required_unknown:
            continue
        for target in simple:
            yield pytest.param(owner, name, params, target[0], id=f"{owner or '_native'}.{name}({target[0]})")


@pytest.mark.parametrize("owner, name, params, target", list(_named_cases()))
def test_a_wrong_typed_argument_is_named(owner, name, params, target):
    # upload_texture(a, dimension=None) once said only "'None' is not an
    # instance of 'str'". pyo3 names the argument in a note (PEP 678, which
    # every traceback prints); bytelens' Python wrappers put it into the
    # message. Either way the name is there, with what the argument takes.
    if owner is None:
        call = getattr(bl._native, name)
    elif name == "__new__":
        call = getattr(bl._native, owner)
    else:
        call = getattr(_RECEIVERS[owner](), name)
    args, kwargs = [], {}
    for pname, annotation, kind, has_default in params:
        if pname != target and annotation not in _SAMPLES:
            break  # the rest keep their defaults
        value = _WRONG if pname == target else _SAMPLES[annotation]
        if kind == "kw":
            kwargs[pname] = value
        else:
            args.append(value)
    with pytest.raises(TypeError) as err:
        call(*args, **kwargs)
    text = " ".join([str(err.value), *getattr(err.value, "__notes__", [])])
    assert f"'{target}'" in text, text


@pytest.mark.parametrize(
    "call, shown",
    [
        (lambda: gpu.upload_texture(np.zeros((2, 2), np.uint8), dimension=None), "argument 'dimension': "),
        (lambda: gpu.upload_texture(np.zeros((2, 2), np.uint8), format=3), "argument 'format': "),
        (lambda: bl.View.of(np.zeros(2)).__dlpack__(copy="yes"), "argument 'copy': "),
    ],
)
def test_python_wrappers_name_the_argument_in_the_message(call, shown):
    with pytest.raises(TypeError) as err:
        call()
    assert str(err.value).startswith(shown) and "not an instance of" in str(err.value)


@pytest.mark.parametrize(
    "call, shown",
    [
        (lambda: bl.Buffer(16).view(np.complex128), 'unknown dtype "complex128"'),
        (lambda: bl.Buffer(16).view(np.datetime64), 'unknown dtype "datetime64"'),
        (lambda: bl.Buffer(16).view("nope" * 20), 'unknown dtype "nopenopenopenopenopenope..."'),
        (lambda: bl.Buffer(16).view("abcdefgh" * 3), 'unknown dtype "abcdefghabcdefghabcdefgh"'),
    ],
)
def test_dtype_names_are_numpy_names_and_a_cut_is_marked(call, shown):
    # Once '"<class \'numpy.complex128"' (cut inside the repr) and 24
    # characters of "nope" with no mark that they were cut.
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == shown
