//! `bytelens.Ring`: batches between processes through a ring of slots in
//! shared memory (`bytelens::Ring`). A producer's slot and a consumer's
//! batch are each an ordinary `bytelens.Buffer` over the slot's bytes,
//! with one numpy array per plan field; a batch's buffer owns the batch
//! (`Storage::RingBatch`), so its slot goes back to the producers only
//! when the last array, memoryview or DLPack tensor made from it is gone.

use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use super::buffer::PyBuf;
use super::error::{PyErrResult, error_of_kind};
use super::layout::PyPlan;
use super::memory::{Memory, Storage};
use super::shared::timeout_arg;
use bytelens::{Batch, ErrorKind, Filling, QuoteStyle, Quoted, Ring, RingError};

/// A ring of `slots` slots in the shared-memory segment `name`, each laid
/// out by `plan` (a bytelens.Plan, or a byte size): Ring.create(name, plan,
/// slots=8) makes it, Ring.attach(name) opens it in another process (a Ring
/// pickles as its name, so multiprocessing, Ray and Dask workers attach).
/// `with ring.produce() as slot:` fills a free slot in place and publishes
/// it; `with ring.consume() as batch:` (or `for batch in ring:`) takes the
/// oldest published batch. As with SharedBuffer, no process may shrink the
/// segment while it is mapped.
#[pyclass(name = "Ring", module = "bytelens._native", frozen)]
pub struct PyRing {
    ring: Ring,
    plan: Option<Py<PyPlan>>,
}

impl PyRing {
    fn new(py: Python<'_>, ring: Ring) -> PyResult<PyRing> {
        let plan = match ring.plan().py_err(py)? {
            Some(spec) => Some(Py::new(py, PyPlan::from_spec(py, spec)?)?),
            None => None,
        };
        Ok(PyRing { ring, plan })
    }

    /// One numpy array per plan field over `buffer` (none without a plan).
    fn arrays<'py>(
        &self,
        py: Python<'py>,
        buffer: &Bound<'py, PyBuf>,
    ) -> PyResult<Bound<'py, PyDict>> {
        match &self.plan {
            Some(plan) => PyBuf::arrays(buffer, plan.bind(py)),
            None => Ok(PyDict::new(py)),
        }
    }
}

/// Runs a ring wait: first without giving up the GIL and without waiting,
/// then, if it must wait, with the GIL released, in slices between which
/// Python's signal handlers run (Ctrl-C raises KeyboardInterrupt).
fn wait_for<T: Send>(
    py: Python<'_>,
    timeout: Option<Duration>,
    f: impl Fn(Option<Duration>, bytelens::Interrupt<'_>) -> Result<T, RingError> + Sync,
) -> PyResult<T> {
    match f(Some(Duration::ZERO), &mut || false) {
        Err(RingError::Timeout { .. }) if timeout != Some(Duration::ZERO) => {}
        done => return done.py_err(py),
    }
    let mut raised: Option<PyErr> = None;
    let out = py.detach(|| {
        f(timeout, &mut || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(err) => {
                    raised = Some(err);
                    true
                }
            })
        })
    });
    match (out, raised) {
        (Err(RingError::Interrupted { .. }), Some(err)) => Err(err),
        (out, _) => out.py_err(py),
    }
}

#[pymethods]
impl PyRing {
    /// Creates the ring `name` with `slots` slots laid out by `plan` (a
    /// Plan; attaching processes read it back), or of `plan` bytes each
    /// when it is an int. `nbytes` makes each slot larger than its plan
    /// (room after the plan's arrays for what the caller keeps there).
    #[classmethod]
    #[pyo3(signature = (name, plan, slots = 8, *, nbytes = None))]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        plan: &Bound<'_, PyAny>,
        slots: i64,
        nbytes: Option<usize>,
    ) -> PyResult<PyRing> {
        // Refused here as the ring refuses 0 slots, with the number given
        // (a negative count would be pyo3's OverflowError).
        let Ok(slots) = usize::try_from(slots) else {
            return Err::<PyRing, _>(RingError::BadRing {
                name: name.to_owned(),
                why: format!("{slots} slots: a ring has 1 to {}", bytelens::MAX_SLOTS),
            })
            .py_err(py);
        };
        let ring = if let Ok(plan) = plan.cast::<PyPlan>() {
            let plan = plan.get().plan.spec().build().py_err(py)?;
            let nbytes = nbytes.unwrap_or(plan.nbytes());
            // SAFETY: shrinking the segment under its mappings is the one
            // thing no process may do; the class docstring says so.
            unsafe { Ring::create(name, Some(&plan), nbytes, slots) }
        } else if let Ok(size) = plan.extract::<usize>() {
            // SAFETY: as above.
            unsafe { Ring::create(name, None, nbytes.unwrap_or(size).max(size), slots) }
        } else {
            let message = format!(
                "plan must be a bytelens.Plan or a byte size (an int >= 0), not {}",
                plan.get_type().name()?
            );
            return Err(error_of_kind(py, ErrorKind::WrongType, message));
        };
        PyRing::new(py, ring.py_err(py)?)
    }

    /// Opens the ring another process created, checking its table.
    #[classmethod]
    fn attach(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<PyRing> {
        // SAFETY: as in `create`.
        let ring = unsafe { Ring::attach(name) };
        PyRing::new(py, ring.py_err(py)?)
    }

    /// Claims a free slot to fill, waiting while none is (backpressure; at
    /// most `timeout` seconds, TimeoutError then; None waits for ever). Use
    /// it as `with ring.produce() as slot:`: the batch is published when the
    /// block ends, and abandoned (the slot free again, nothing published)
    /// when it raises. RingClosedError once the ring is closed.
    #[pyo3(signature = (timeout = None))]
    fn produce(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PySlot> {
        let timeout = timeout_arg(timeout)?;
        let ring = &self.ring;
        let mut filling = wait_for(py, timeout, |t, stop| ring.produce_with(t, stop))?;
        let (address, nbytes) = (filling.as_mut_ptr(), ring.slot_bytes());
        let memory = Memory::new(Storage::Ring(ring.clone()), address, nbytes, false);
        let buffer = Bound::new(py, PyBuf::new(py, memory)?)?;
        let arrays = self.arrays(py, &buffer)?;
        Ok(PySlot {
            slot: filling.slot(),
            filling: Mutex::new(Some(filling)),
            buffer: buffer.unbind(),
            arrays: arrays.unbind(),
            address: address as usize,
            nbytes,
        })
    }

    /// Takes the oldest published batch, waiting while there is none (at
    /// most `timeout` seconds, TimeoutError then; None waits for ever); once
    /// the ring is closed and nothing published is left, RingClosedError.
    /// Use it as `with ring.consume() as batch:`.
    #[pyo3(signature = (timeout = None))]
    fn consume(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyBatch> {
        let timeout = timeout_arg(timeout)?;
        let ring = &self.ring;
        let batch = wait_for(py, timeout, |t, stop| ring.consume_with(t, stop))?;
        self.batch(py, batch)
    }

    /// `for batch in ring:` takes batches until the ring is closed and
    /// drained, letting go of each batch when it takes the next (unless
    /// something else still refers to it, or to its arrays).
    fn __iter__(slf: Bound<'_, Self>) -> PyRingIter {
        PyRingIter {
            ring: slf.unbind(),
            last: Mutex::new(None),
        }
    }

    /// The next batch, waiting for it; the iteration ends once the ring is
    /// closed and drained.
    fn __next__(&self, py: Python<'_>) -> PyResult<PyBatch> {
        self.next_batch(py)
    }

    /// Closes the ring for every process: producers can no longer claim or
    /// publish (waiting ones get RingClosedError), consumers take what was
    /// published, and then their iteration ends. Closing twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let ring = &self.ring;
        py.detach(|| ring.close()).py_err(py)
    }

    /// Removes the ring's name (processes that have it keep using it).
    fn unlink(&self, py: Python<'_>) -> PyResult<()> {
        Ring::unlink(self.ring.name()).py_err(py)
    }

    /// Takes back now what processes that died were holding (the ring does
    /// it by itself when a wait lasts 50 ms): how many slots.
    fn recover(&self, py: Python<'_>) -> PyResult<usize> {
        let ring = &self.ring;
        py.detach(|| ring.recover()).py_err(py)
    }

    /// What every process has done with the ring: published, consumed,
    /// redelivered, abandoned, recovered, producer_waits, consumer_waits.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.ring.stats();
        let out = PyDict::new(py);
        for (key, value) in [
            ("published", s.published),
            ("consumed", s.consumed),
            ("redelivered", s.redelivered),
            ("abandoned", s.abandoned),
            ("recovered", s.recovered),
            ("producer_waits", s.producer_waits),
            ("consumer_waits", s.consumer_waits),
        ] {
            out.set_item(key, value)?;
        }
        Ok(out)
    }

    #[getter]
    fn name(&self) -> &str {
        self.ring.name()
    }

    #[getter]
    fn slots(&self) -> usize {
        self.ring.slots()
    }

    /// Bytes of one slot.
    #[getter]
    fn slot_nbytes(&self) -> usize {
        self.ring.slot_bytes()
    }

    /// Bytes of the segment (the ring's table and every slot, after the
    /// one-page header).
    #[getter]
    fn nbytes(&self) -> usize {
        self.ring.nbytes()
    }

    #[getter]
    fn plan(&self, py: Python<'_>) -> Option<Py<PyPlan>> {
        self.plan.as_ref().map(|p| p.clone_ref(py))
    }

    #[getter]
    fn closed(&self) -> bool {
        self.ring.is_closed()
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let attach = py.get_type::<PyRing>().getattr("attach")?;
        Ok((attach, (self.ring.name().to_owned(),)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Ring({}, slots={}, slot_nbytes={}{})",
            super::error::excerpt(self.ring.name()),
            self.ring.slots(),
            self.ring.slot_bytes(),
            if self.ring.is_closed() {
                ", closed"
            } else {
                ""
            }
        )
    }
}

impl PyRing {
    /// The next batch, waiting for it; StopIteration once the ring is
    /// closed and drained.
    fn next_batch(&self, py: Python<'_>) -> PyResult<PyBatch> {
        let ring = &self.ring;
        match wait_for(py, None, |t, stop| ring.consume_with(t, stop)) {
            Ok(batch) => self.batch(py, batch),
            Err(err) if err.is_instance_of::<super::error::RingClosedError>(py) => {
                Err(PyStopIteration::new_err(()))
            }
            Err(err) => Err(err),
        }
    }

    fn batch(&self, py: Python<'_>, batch: Batch) -> PyResult<PyBatch> {
        let (address, nbytes) = (batch.as_ptr().cast_mut(), self.ring.slot_bytes());
        let (seq, redelivered, slot) = (batch.seq(), batch.redelivered(), batch.slot());
        let memory = Memory::new(Storage::RingBatch(batch), address, nbytes, false);
        let buffer = Bound::new(py, PyBuf::new(py, memory)?)?;
        let arrays = self.arrays(py, &buffer)?;
        Ok(PyBatch {
            held: Mutex::new(Some((buffer.unbind(), arrays.unbind()))),
            seq,
            redelivered,
            slot,
            address: address as usize,
            nbytes,
        })
    }
}

/// `iter(ring)`: the ring's batches, each let go of when the next is
/// taken. A loop variable holding the previous batch would otherwise keep
/// its slot while the next take waits: a one-slot ring's producer, or two
/// consumers draining a closed ring, would wait for each other for good.
#[pyclass(name = "RingIterator", module = "bytelens._native", frozen)]
pub struct PyRingIter {
    ring: Py<PyRing>,
    last: Mutex<Option<Py<PyBatch>>>,
}

#[pymethods]
impl PyRingIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch, after letting go of the one given before, unless
    /// something other than the loop's variable still refers to it (a
    /// list the loop keeps it in): then it stays the holder's. Arrays
    /// taken from it keep their slot in either case.
    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyBatch>> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(last) = last {
            // SAFETY: `last` is a live object (we hold a reference), and
            // reading a reference count is allowed while attached (`py`).
            let refs = unsafe { pyo3::ffi::Py_REFCNT(last.as_ptr()) };
            // This reference and the loop's variable: nothing else has it.
            if refs <= 2 {
                last.get().release();
            }
        }
        let batch = Py::new(py, self.ring.get().next_batch(py)?)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(batch.clone_ref(py));
        Ok(batch)
    }
}

/// A slot a producer holds: `slot["x"]` is the plan field's numpy array
/// over the slot's bytes, `slot.address` and `slot.nbytes` where a C
/// library writes in place. Published when its `with` block ends (or by
/// publish()), abandoned when the block raises (or by abandon(), or when
/// the slot is dropped unpublished). Arrays kept past the block must not
/// be written: the bytes are a consumer's then.
#[pyclass(name = "RingSlot", module = "bytelens._native", frozen)]
pub struct PySlot {
    filling: Mutex<Option<Filling>>,
    buffer: Py<PyBuf>,
    arrays: Py<PyDict>,
    /// Which slot of the ring this is.
    #[pyo3(get, name = "index")]
    slot: usize,
    #[pyo3(get)]
    address: usize,
    #[pyo3(get)]
    nbytes: usize,
}

impl PySlot {
    fn take(&self, py: Python<'_>) -> PyResult<Filling> {
        let mut held = self.filling.lock().unwrap_or_else(|e| e.into_inner());
        held.take().ok_or_else(|| {
            let message = format!("slot {} was already published or abandoned", self.slot);
            error_of_kind(py, ErrorKind::OutOfOrder, message)
        })
    }

    /// `InUse` while anything but the slot itself refers to its memory: a
    /// variable holding `slot["x"]`, a view or tensor made from it, a view
    /// of `slot.buffer`. Once published the bytes are a consumer's, and
    /// such an array would write into them.
    fn refuse_if_referenced(&self, py: Python<'_>, ring: &str) -> PyResult<()> {
        let arrays = self.arrays.bind(py);
        let mut held = vec![];
        for (name, array) in arrays.iter() {
            // SAFETY: `array` is a live object (bound here), and reading a
            // reference count is allowed while attached (`py`).
            let refs = unsafe { pyo3::ffi::Py_REFCNT(array.as_ptr()) };
            // The dict's reference and `array`'s: nothing else has it.
            if refs > 2 {
                held.push(format!("slot[{}]", name.repr()?));
            }
        }
        // Each of the dict's arrays holds one export; any other is a view,
        // memoryview or capsule made some other way.
        let others = self
            .buffer
            .get()
            .live_exports(py)
            .saturating_sub(arrays.len());
        if held.is_empty() && others == 0 {
            return Ok(());
        }
        if others > 0 {
            let s = if others == 1 { "" } else { "s" };
            held.push(format!(
                "{others} other array{s}, memoryview{s} or capsule{s} over the slot's bytes"
            ));
        }
        let message = format!(
            "ring {}: slot {} cannot be published while something still refers to its \
             memory: {} (a variable, or a view or tensor made from it). Once published the \
             bytes are a consumer's, and these would write into them: delete them (or copy \
             what you keep) before publishing",
            Quoted::new(ring, 64, QuoteStyle::Name),
            self.slot,
            held.join(", ")
        );
        Err(error_of_kind(py, ErrorKind::InUse, message))
    }
}

#[pymethods]
impl PySlot {
    /// Publishes the batch: its sequence number. Refused (`BufferError`,
    /// the slot still this producer's) while arrays, views or tensors of
    /// the slot live outside it: they would write into the published batch.
    fn publish(&self, py: Python<'_>) -> PyResult<u64> {
        let ring = {
            let held = self.filling.lock().unwrap_or_else(|e| e.into_inner());
            held.as_ref().map(|f| f.ring_name())
        };
        if let Some(ring) = ring {
            self.refuse_if_referenced(py, &ring)?;
        }
        let filling = self.take(py)?;
        py.detach(|| filling.publish()).py_err(py)
    }

    /// Gives the slot back unpublished.
    fn abandon(&self, py: Python<'_>) -> PyResult<()> {
        let filling = self.take(py)?;
        py.detach(|| drop(filling));
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let raised = args.get_item(0).is_ok_and(|t| !t.is_none());
        let done = self.filling.lock().map(|f| f.is_none()).unwrap_or(false);
        if done {
            // publish() or abandon() inside the block: nothing more to do.
            return Ok(false);
        }
        // Abandoning a slot already published or abandoned in the block is
        // refused, which changes nothing here.
        if raised {
            let _ = self.abandon(py);
        } else if let Err(err) = self.publish(py) {
            // Not published: the block is over, so the slot goes back.
            let _ = self.abandon(py);
            return Err(err);
        }
        Ok(false)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        field(self.arrays.bind(py), key)
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.arrays.bind(py).call_method0("keys")
    }

    /// The slot's bytes as a bytelens.Buffer (views of any layout).
    #[getter]
    fn buffer(&self, py: Python<'_>) -> Py<PyBuf> {
        self.buffer.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        let open = self.filling.lock().map(|f| f.is_some()).unwrap_or(false);
        format!(
            "RingSlot(index={}, nbytes={}{})",
            self.slot,
            self.nbytes,
            if open { "" } else { ", done" }
        )
    }
}

/// A batch a consumer holds: `batch["x"]` is the plan field's numpy array
/// over the slot (writable: the batch is this consumer's alone), with
/// `batch.seq` its sequence number and `batch.redelivered` whether a
/// consumer died holding it before. Its slot goes back to the producers
/// when the batch's `with` block ends (or release() is called) and every
/// array, memoryview and tensor made from it is gone.
#[pyclass(name = "RingBatch", module = "bytelens._native", frozen)]
pub struct PyBatch {
    held: Mutex<Option<(Py<PyBuf>, Py<PyDict>)>>,
    #[pyo3(get)]
    seq: u64,
    #[pyo3(get)]
    redelivered: bool,
    /// Which slot of the ring holds it.
    #[pyo3(get, name = "index")]
    slot: usize,
    #[pyo3(get)]
    address: usize,
    #[pyo3(get)]
    nbytes: usize,
}

impl PyBatch {
    fn held<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBuf>, Bound<'py, PyDict>)> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        match &*held {
            Some((buffer, arrays)) => Ok((buffer.bind(py).clone(), arrays.bind(py).clone())),
            None => Err(error_of_kind(
                py,
                ErrorKind::OutOfOrder,
                format!(
                    "batch {} was released: take what you need from it inside its with \
                     block, or keep its arrays (they keep the slot)",
                    self.seq
                ),
            )),
        }
    }
}

#[pymethods]
impl PyBatch {
    /// Lets go of the batch: its slot is free once every array made from
    /// it is gone too.
    fn release(&self) {
        drop(self.held.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.release();
        false
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        field(&self.held(py)?.1, key)
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.held(py)?.1.call_method0("keys")
    }

    /// The arrays, `{name: array}` (a new dict; the arrays are the batch's).
    fn arrays<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.held(py)?.1.copy()
    }

    /// The batch's bytes as a bytelens.Buffer.
    #[getter]
    fn buffer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBuf>> {
        Ok(self.held(py)?.0)
    }

    fn __repr__(&self) -> String {
        format!(
            "RingBatch(seq={}, index={}, nbytes={}{})",
            self.seq,
            self.slot,
            self.nbytes,
            if self.redelivered {
                ", redelivered"
            } else {
                ""
            }
        )
    }
}

/// The array of plan field `key`, KeyError naming the fields otherwise.
fn field<'py>(arrays: &Bound<'py, PyDict>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match arrays.get_item(key)? {
        Some(array) => Ok(array),
        None => {
            let names: Vec<String> = arrays.keys().iter().map(|k| k.to_string()).collect();
            let message = format!(
                "no field {} in the ring's plan (it has: {})",
                key.repr()?,
                if names.is_empty() {
                    "none; the ring was made with a byte size: use .buffer".to_owned()
                } else {
                    names.join(", ")
                }
            );
            Err(error_of_kind(arrays.py(), ErrorKind::NoSuchArray, message))
        }
    }
}
