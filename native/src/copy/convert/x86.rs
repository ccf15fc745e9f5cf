//! SIMD kernels for x86-64, chosen at run time (none yet: every conversion
//! takes the scalar reference).

use bytelens_core::Descr;

/// A SIMD kernel the CPU supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {}

impl Kernel {
    /// The kernel for `from` → `to`, if there is one and the CPU has what
    /// it needs.
    pub(super) fn detect(_: Descr, _: Descr) -> Option<Kernel> {
        None
    }

    /// Converts `src` into `dst` (as `Convert::run`).
    pub(super) fn run(self, _: Descr, _: Descr, _: &[u8], _: &mut [u8]) {
        match self {}
    }
}
