//! `bytelens.SharedBuffer`: named shared memory for several processes, with
//! a lock that survives a holder's death. Its memory is an ordinary
//! `bytelens.Buffer` (`.buffer`), so views, exports and `close()` work as
//! they do there; a SharedBuffer pickles to its name, so `multiprocessing`
//! workers attach instead of copying.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use super::buffer::PyBuf;
use super::error::{IntoPyErr, PyErrResult};
use super::layout::PyPlan;
use super::memory::{Memory, Storage};
use bytelens::{LockKind, SharedBuffer, SharedError};

/// Named shared memory that other processes attach to by name, with a
/// process-shared lock. SharedBuffer.create(name, nbytes, plan=None, *,
/// lock=None) makes it (mode 0600 on Unix; a plan must fit in nbytes);
/// SharedBuffer.attach(name) opens it elsewhere; unlink() removes the name
/// while it is still this segment's (on Windows, where a segment lives while
/// any process has it open, it only hides it from attach). As with
/// Buffer.map, no process may shrink the segment while it is mapped:
/// touching the missing pages would crash the process (SIGBUS).
#[pyclass(name = "SharedBuffer", module = "bytelens._native", frozen)]
pub struct PySharedBuffer {
    shared: Arc<SharedBuffer>,
    buffer: Py<PyBuf>,
    /// The lock object `lock()` hands out when no timeout is asked for.
    default_lock: Py<PyLock>,
}

impl PySharedBuffer {
    fn new(py: Python<'_>, mut shared: SharedBuffer) -> PyResult<PySharedBuffer> {
        let (address, len) = (shared.as_mut_ptr(), shared.len());
        let shared = Arc::new(shared);
        let memory = Memory::new(Storage::Shared(Arc::clone(&shared)), address, len, false);
        let buffer = Py::new(py, PyBuf::new(py, memory)?)?;
        let default_lock = Py::new(py, PyLock::new(Arc::clone(&shared), None))?;
        Ok(PySharedBuffer {
            shared,
            buffer,
            default_lock,
        })
    }
}

#[pymethods]
impl PySharedBuffer {
    /// Creates the segment `name` with `nbytes` zeroed bytes and, optionally,
    /// a Plan stored in its header for attaching processes. `lock` is the
    /// lock's kind: None for this OS's own ("robust-mutex" on Linux, "file"
    /// on macOS, "named-mutex" on Windows), or one of those this OS has
    /// ("file" works on Linux too); attaching processes use the same.
    #[classmethod]
    #[pyo3(signature = (name, nbytes, plan = None, *, lock = None))]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        nbytes: usize,
        plan: Option<&Bound<'_, PyPlan>>,
        lock: Option<&str>,
    ) -> PyResult<PySharedBuffer> {
        let kind = match lock {
            None => LockKind::native(),
            Some(name) => LockKind::from_name(name)
                .filter(|kind| kind.is_available())
                .ok_or_else(|| {
                    let have: Vec<_> = LockKind::available()
                        .map(|k| format!("{:?}", k.name()))
                        .collect();
                    PyValueError::new_err(format!(
                        "lock={name:?} is not a lock this OS has: {}",
                        have.join(", ")
                    ))
                })?,
        };
        let shared = match plan {
            // SAFETY: shrinking the segment under its mappings is the one thing no
            // process may do; the class docstring says so (as Buffer.map's does).
            None => unsafe { SharedBuffer::create_with(name, nbytes, None, kind) },
            Some(plan) => {
                let plan = plan.get().plan.spec().build().py_err(py)?;
                // SAFETY: as above.
                unsafe { SharedBuffer::create_with(name, nbytes, Some(&plan), kind) }
            }
        };
        PySharedBuffer::new(py, shared.py_err(py)?)
    }

    /// Opens the segment another process created.
    #[classmethod]
    fn attach(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<PySharedBuffer> {
        // SAFETY: as in `create`: the class docstring forbids shrinking the segment.
        let shared = unsafe { SharedBuffer::attach(name) };
        PySharedBuffer::new(py, shared.py_err(py)?)
    }

    /// Removes the segment's name (attached processes keep their mappings),
    /// if the name still names this segment: once it was unlinked and a new
    /// segment created under it, ValueError, and the new one keeps its name
    /// (SharedBuffer.attach(name).unlink() removes that one, deliberately).
    fn unlink(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.unlink_checked().py_err(py)
    }

    #[getter]
    fn name(&self) -> &str {
        self.shared.name()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.shared.len()
    }

    /// The lock's kind: "robust-mutex", "file" or "named-mutex".
    #[getter]
    fn lock_kind(&self) -> &'static str {
        self.shared.lock_kind().name()
    }

    /// The segment's memory as a bytelens.Buffer.
    #[getter]
    fn buffer(&self, py: Python<'_>) -> Py<PyBuf> {
        self.buffer.clone_ref(py)
    }

    /// The Plan stored at creation, or None.
    #[getter]
    fn plan(&self, py: Python<'_>) -> PyResult<Option<PyPlan>> {
        match self.shared.plan().py_err(py)? {
            Some(spec) => Ok(Some(PyPlan::from_spec(py, spec)?)),
            None => Ok(None),
        }
    }

    /// As Buffer.view.
    #[pyo3(signature = (*args, **kwargs))]
    fn view<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.buffer.bind(py).call_method("view", args, kwargs)
    }

    /// As Buffer.arrays; without a plan, the one stored at creation.
    #[pyo3(signature = (plan = None))]
    fn arrays<'py>(
        &self,
        py: Python<'py>,
        plan: Option<Bound<'py, PyPlan>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let plan = match plan {
            Some(plan) => plan,
            None => match self.plan(py)? {
                Some(plan) => Bound::new(py, plan)?,
                None => {
                    return Err(PyValueError::new_err(
                        "this SharedBuffer has no stored plan; pass one",
                    ));
                }
            },
        };
        self.buffer.bind(py).call_method1("arrays", (plan,))
    }

    /// A context manager holding the segment's lock: `with sh.lock(timeout=1.0)
    /// as held:`. `held.owner_died` says the previous holder died holding it.
    /// TimeoutError when not free in time (timeout=0 only tries). None and
    /// math.inf wait forever, as does any timeout over 9223372036 seconds
    /// (about 292 years, threading.TIMEOUT_MAX on Linux); a negative or NaN
    /// timeout is a ValueError.
    #[pyo3(signature = (timeout = None))]
    fn lock(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyLock>> {
        match timeout_arg(timeout)? {
            None => Ok(self.default_lock.clone_ref(py)),
            Some(t) => Py::new(py, PyLock::new(Arc::clone(&self.shared), Some(t))),
        }
    }

    /// Live exports of the memory (as Buffer.exports).
    #[getter]
    fn exports(&self, py: Python<'_>) -> PyResult<usize> {
        self.buffer.bind(py).getattr("exports")?.extract()
    }

    /// Closes the memory as Buffer.close does (BufferError while exports live;
    /// no new views after). The mapping itself stays until this object and
    /// its lock objects are gone, so the lock keeps working.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.buffer.bind(py).call_method0("close")?;
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.shared.len()
    }

    /// Pickles to its name: unpickling attaches.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let attach = py.get_type::<PySharedBuffer>().getattr("attach")?;
        Ok((attach, (self.shared.name().to_owned(),)))
    }

    fn __repr__(&self) -> String {
        format!(
            "SharedBuffer({:?}, nbytes={})",
            self.shared.name(),
            self.shared.len()
        )
    }
}

/// The lock of a SharedBuffer, as a context manager.
#[pyclass(name = "SharedLock", module = "bytelens._native", frozen)]
pub struct PyLock {
    shared: Arc<SharedBuffer>,
    timeout: Option<Duration>,
    owner_died: AtomicBool,
}

/// Seconds past which a lock's timeout means forever: `i64::MAX`
/// nanoseconds, about 292 years, what a monotonic deadline holds (and
/// `threading.TIMEOUT_MAX` on Linux). Longer timeouts, `math.inf` among
/// them, are waited out as `None` is, instead of overflowing the deadline.
const FOREVER: f64 = 9_223_372_036.0;

/// A `timeout=` argument in seconds: `None` (and `math.inf`, and anything
/// past [`FOREVER`]) waits for ever; a negative or NaN one is a ValueError.
pub(crate) fn timeout_arg(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t > FOREVER => Ok(None),
        Some(t) if t >= 0.0 => Ok(Some(Duration::from_secs_f64(t))),
        // Debug, so that 1e300 stays short; NaN as Python writes it.
        Some(t) => Err(PyValueError::new_err(format!(
            "timeout must be seconds >= 0, or None or math.inf to wait forever, not {}",
            if t.is_nan() {
                "nan".to_owned()
            } else {
                format!("{t:?}")
            }
        ))),
    }
}

/// How long one wait for the lock lasts before Python's signal handlers
/// (Ctrl-C) get a chance to run.
const WAIT_SLICE: Duration = Duration::from_millis(50);

impl PyLock {
    /// Waits for the lock with the GIL released (so a holder that is a thread
    /// of this process can run), in slices between which signals are handled.
    fn wait(&self, py: Python<'_>) -> PyResult<bool> {
        let deadline = self.timeout.map(|t| std::time::Instant::now() + t);
        loop {
            let slice = match deadline {
                None => WAIT_SLICE,
                Some(deadline) => deadline
                    .saturating_duration_since(std::time::Instant::now())
                    .min(WAIT_SLICE),
            };
            let shared = Arc::clone(&self.shared);
            match py.detach(move || shared.lock_raw(Some(slice.max(Duration::from_nanos(1))))) {
                Ok(died) => return Ok(died),
                Err(SharedError::Timeout { .. }) => {
                    py.check_signals()?;
                    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                        return Err(SharedError::Timeout {
                            waited: self.timeout.unwrap_or_default(),
                        }
                        .into_py_err(py));
                    }
                }
                Err(err) => return Err(err.into_py_err(py)),
            }
        }
    }

    fn new(shared: Arc<SharedBuffer>, timeout: Option<Duration>) -> PyLock {
        PyLock {
            shared,
            timeout,
            owner_died: AtomicBool::new(false),
        }
    }
}

#[pymethods]
impl PyLock {
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let py = slf.py();
        let this = slf.get();
        // Uncontended: take it without giving up the GIL.
        let owner_died = match this.shared.lock_raw(Some(Duration::ZERO)) {
            Ok(died) => died,
            Err(SharedError::Timeout { .. }) if this.timeout != Some(Duration::ZERO) => {
                this.wait(py)?
            }
            Err(err) => return Err(err.into_py_err(py)),
        };
        this.owner_died.store(owner_died, Ordering::Relaxed);
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        // From another thread, or without __enter__: the error-checking mutex
        // refuses, and this says so.
        self.shared.unlock_raw().py_err(py)?;
        Ok(false)
    }

    /// Whether the previous holder died holding the lock (set by entering).
    #[getter]
    fn owner_died(&self) -> bool {
        self.owner_died.load(Ordering::Relaxed)
    }
}
