//! The few synchronisation primitives the queue uses, from `std` or, under `--cfg loom`, from
//! loom's model checker (which needs its own atomics, cells, mutex and thread parking to see
//! every interleaving).

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, fence},
    sync::{Arc, Mutex},
    thread::{self, Thread},
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, fence},
    sync::{Arc, Mutex},
    thread::{self, Thread},
};

/// `std`'s cell with loom's closure-style interface, so the same code compiles for both.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
