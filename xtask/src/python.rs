//! The `python` suite: the manylinux abi3 wheel installed without Rust
//! into every venv of [`wheel_envs`], its tests run there, then
//! `mypy.stubtest` of the extension's stubs and mypy of the package.

use crate::python_env::{PY_ENVS, PY_PACKAGE, py_dir, venv_python, wheel_envs, without_rust};
use crate::util::{Run, Step, cmd, require_gpu, xtask_step};

/// What the python suite checks before each venv's pytest: that
/// `bytelens` is the wheel installed in the venv's site-packages (the abi3
/// extension), not a source tree on `sys.path`.
const INSTALLED_CHECK: &str = "\
import sys, sysconfig, bytelens, bytelens._native as native
site = sysconfig.get_paths()['platlib']
assert bytelens.__file__.startswith(site + '/'), (bytelens.__file__, site)
assert native.__file__.endswith('_native.abi3.so'), native.__file__
print(f'CPython {sys.version.split()[0]}: bytelens from {bytelens.__file__}')
";

pub fn steps(run: &Run) -> Vec<Step> {
    let mut list = vec![("build the wheel".into(), xtask_step("build-python", run))];
    // tests/python/test_shared.py runs native/examples/shared.rs, which it
    // would build with cargo if it were not there: built here, as the
    // tests run without Rust.
    let example = cmd("cargo", &["build", "-p", "bytelens", "--example", "shared"]);
    list.push(("the Rust side of test_shared.py".into(), example));
    let labels = [
        "numpy 2.x, CPython 3.11",
        "numpy 1.26, CPython 3.11",
        "CPython 3.12",
        "CPython 3.13",
    ];
    for (i, (name, label)) in wheel_envs().zip(labels).enumerate() {
        let label = if i > 0 && !run.all {
            format!("{label}, -m compat")
        } else {
            label.to_owned()
        };
        let mut check = cmd(&venv_python(name), &["-c", INSTALLED_CHECK]);
        let mut pytest = cmd(&venv_python(name), &["-m", "pytest", "tests/python", "-q"]);
        // The README's and the guide's examples are the docs suite's.
        pytest.arg("--ignore=tests/python/test_examples.py");
        // The one abi3 binary is searched hardest (300 examples a property)
        // under 3.11 with both numpys; the newer interpreters run with
        // hypothesis' default 100, which is about their own C API and
        // packaging, not the kernels again.
        let profile = if i < PY_ENVS.len() { "ci" } else { "default" };
        pytest
            .args(["-p", "no:cacheprovider"])
            .env("HYPOTHESIS_PROFILE", profile);
        // The same wheel under another numpy or CPython: the tests of what
        // differs between them (tests/python/conftest.py's COMPAT_FILES),
        // unless every test is asked for.
        if i > 0 && !run.all {
            pytest.args(["-m", "compat"]);
        }
        require_gpu(&mut pytest);
        without_rust(&mut check);
        without_rust(&mut pytest);
        list.push((format!("the installed wheel, {label}"), check));
        list.push((format!("pytest, {label}"), pytest));
    }
    let mut stubtest = cmd(
        &venv_python(PY_ENVS[0].0),
        &["-m", "mypy.stubtest", "bytelens._native"],
    );
    stubtest.env("MYPY_CACHE_DIR", py_dir().join("mypy-cache"));
    list.push(("stubtest".into(), stubtest));
    let mut mypy = cmd(&venv_python(PY_ENVS[0].0), &["-m", "mypy", PY_PACKAGE]);
    mypy.env("MYPY_CACHE_DIR", py_dir().join("mypy-cache"));
    list.push(("mypy of the package's Python".into(), mypy));
    list
}
