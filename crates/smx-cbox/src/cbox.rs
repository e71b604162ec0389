//! One C box instance as a [`BoxImpl`]: its handle (what the C code gets as `h`) and the calls
//! of `NAME_init`, `NAME` and `NAME_cleanup`.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use smx_box::io::Io;
use smx_box::{BoxConfig, BoxError, BoxImpl, Flow, InPort, InitCtx, Message, Stats};

use crate::abi::{CleanupFn, InitFn, StepFn, err, flow};

/// The three functions of one implementation, resolved in a library.
#[derive(Debug, Clone, Copy)]
pub struct Functions {
    pub step: StepFn,
    pub init: InitFn,
    pub cleanup: CleanupFn,
}

/// One declared port as the C box sees it.
#[derive(Debug, Clone)]
pub struct PortInfo {
    /// The implementation's name for it (`x` for a port declared `y(x)`).
    pub name: String,
    pub decoupled: bool,
    pub open: bool,
}

/// The declared ports of one box instance of the net, in declaration order per direction.
#[derive(Debug, Clone)]
pub struct NodePorts {
    pub id: usize,
    pub label: String,
    pub inputs: Vec<PortInfo>,
    pub outputs: Vec<PortInfo>,
}

/// Everything a factory needs to make instances of one C implementation.
#[derive(Debug)]
pub struct Implementation {
    pub name: String,
    pub library: String,
    pub functions: Functions,
    /// Every instance of the implementation in the net.
    pub nodes: Vec<NodePorts>,
}

/// Marks a valid handle (`"smx_hndl"`), so that a wrong pointer passed as `h` (the state, say)
/// is reported instead of misread.
pub const MAGIC: u64 = u64::from_le_bytes(*b"smx_hndl");

/// What `h` points to.
pub struct Handle {
    pub magic: u64,
    /// The current step's ports; NULL outside `NAME()`.
    pub io: *mut Io<'static>,
    pub in_err: Vec<i32>,
    pub out_err: Vec<i32>,
    pub inputs: Vec<PortInfo>,
    pub outputs: Vec<PortInfo>,
    pub in_connected: Vec<bool>,
    pub out_connected: Vec<bool>,
    pub read_timeout: Vec<Option<Duration>>,
    pub write_timeout: Vec<Option<Duration>>,
    /// Decoupled inputs whose next firing waits for a new message (`smx_block_next_read`).
    pub block_next: Vec<bool>,
    /// Some `block_next` is set: the common step looks at this one flag, not the list.
    pub any_block_next: bool,
    /// What such a wait brought, handed out by the next `smx_read` of that port.
    pub stash: Vec<Option<Option<Message>>>,
    /// Outputs whose refused write was already warned about.
    pub warned_refused: Vec<bool>,
    pub name: CString,
    pub implementation: CString,
    /// The log target, `net_<INSTANCE>_<ID>` as the original's log category.
    pub target: String,
    pub config: BoxConfig,
    /// `smx_config_get_string` results, alive until the handle is freed.
    pub strings: HashMap<String, CString>,
    pub state: *mut c_void,
    pub count: u64,
    pub id: u32,
    /// Sequence number of the next message this net creates.
    pub seq: u64,
    /// A failure found by an ABI function (a caught panic): fails the net after the C call.
    pub failed: Option<String>,
    pub created: u64,
    pub destroyed: u64,
    pub copied: u64,
}

impl Handle {
    fn new(config: &BoxConfig, ports: &NodePorts) -> Handle {
        let cstring = |s: &str| CString::new(s.replace('\0', "?")).unwrap_or_default();
        let (ni, no) = (ports.inputs.len(), ports.outputs.len());
        Handle {
            magic: MAGIC,
            io: ptr::null_mut(),
            in_err: vec![err::NONE; ni],
            out_err: vec![err::NONE; no],
            inputs: ports.inputs.clone(),
            outputs: ports.outputs.clone(),
            in_connected: vec![false; ni],
            out_connected: vec![false; no],
            read_timeout: vec![None; ni],
            write_timeout: vec![None; no],
            block_next: vec![false; ni],
            any_block_next: false,
            stash: vec![None; ni],
            warned_refused: vec![false; no],
            name: cstring(&config.instance),
            implementation: cstring(&config.implementation),
            target: format!("net_{}_{}", config.instance, ports.id),
            config: config.clone(),
            strings: HashMap::new(),
            state: ptr::null_mut(),
            count: 0,
            id: ports.id as u32,
            seq: 0,
            failed: None,
            created: 0,
            destroyed: 0,
            copied: 0,
        }
    }

    /// Marks the net failed (the first failure is kept).
    pub fn fail(&mut self, why: String) {
        if self.failed.is_none() {
            self.failed = Some(why);
        }
    }

    /// Prepares the handle for one step.
    fn begin_step(&mut self, io: &mut Io<'_>) {
        crate::home::reclaim();
        self.count = io.iteration();
        // A store only where an error is left: `fill` becomes a call to memset, which for the
        // one or two ports of a box cost a tenth of a C source's step (perf).
        for e in self.in_err.iter_mut().chain(self.out_err.iter_mut()) {
            if *e != err::NONE {
                *e = err::NONE;
            }
        }
        if std::mem::take(&mut self.any_block_next) {
            for i in 0..self.block_next.len() {
                if std::mem::take(&mut self.block_next[i]) {
                    self.stash[i] = Some(io.read_blocking(InPort(i)));
                }
            }
        }
        self.io = (io as *mut Io<'_>).cast::<Io<'static>>();
    }
}

/// One instance: the handle the C code sees and the functions it runs.
pub struct CBox {
    handle: *mut Handle,
    functions: Functions,
    implementation: Arc<Implementation>,
    warned_flow: bool,
    last_rc: i32,
}

// SAFETY: the handle and the C state are only touched by the thread that runs the box (the box
// contract: one thread at a time); the C code must not keep `h` for other threads
// (docs/c-abi.md §2).
unsafe impl Send for CBox {}

impl CBox {
    /// An instance of `implementation` for the net configured by `config`.
    pub fn new(implementation: Arc<Implementation>, config: &BoxConfig) -> Result<CBox, BoxError> {
        let ports = pick_node(&implementation.nodes, config).ok_or_else(|| {
            BoxError::new(format!(
                "no instance '{}' of C box '{}' in the net",
                config.instance, implementation.name
            ))
        })?;
        let handle = Box::into_raw(Box::new(Handle::new(config, ports)));
        Ok(CBox {
            handle,
            functions: implementation.functions,
            implementation,
            warned_flow: false,
            last_rc: 0,
        })
    }

    fn h(&self) -> *mut c_void {
        self.handle as *mut c_void
    }

    /// A failure an ABI function recorded during the last C call.
    fn take_failure(&mut self) -> Option<String> {
        // SAFETY: no C call runs now; the handle is ours.
        unsafe { (*self.handle).failed.take() }
    }
}

/// The instance among `nodes` that `config` configures: by the node id, which is unique where
/// labels repeat.
fn pick_node<'a>(nodes: &'a [NodePorts], config: &BoxConfig) -> Option<&'a NodePorts> {
    nodes
        .iter()
        .find(|n| n.id == config.id && n.label == config.instance)
        .or_else(|| nodes.iter().find(|n| n.label == config.instance))
}

impl BoxImpl for CBox {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        {
            // SAFETY: no C call runs now.
            let h = unsafe { &mut *self.handle };
            if ctx.input_count() != h.inputs.len() || ctx.output_count() != h.outputs.len() {
                return Err(BoxError::new(format!(
                    "{}: the runtime gives {} inputs and {} outputs, the net declares {} and {}",
                    ctx.instance(),
                    ctx.input_count(),
                    ctx.output_count(),
                    h.inputs.len(),
                    h.outputs.len()
                )));
            }
            for i in 0..h.inputs.len() {
                h.in_connected[i] = ctx.input_connected(InPort(i));
            }
            for o in 0..h.outputs.len() {
                h.out_connected[o] = ctx.output_connected(smx_box::OutPort(o));
            }
        }
        let mut state: *mut c_void = ptr::null_mut();
        // SAFETY: the library's `NAME_init` with a valid handle and a place for the state.
        let rc = unsafe { (self.functions.init)(self.h(), &mut state) };
        // SAFETY: the C call has returned.
        let timeouts = unsafe {
            (*self.handle).state = state;
            (*self.handle).read_timeout.clone()
        };
        for (i, timeout) in timeouts.into_iter().enumerate() {
            ctx.set_read_timeout(InPort(i), timeout);
        }
        if let Some(why) = self.take_failure() {
            return Err(BoxError::new(why));
        }
        if rc != 0 {
            return Err(BoxError::new(format!(
                "{}_init returned {rc}",
                self.implementation.name
            )));
        }
        Ok(())
    }

    #[inline]
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        // SAFETY: no C call runs now; `io` outlives the call below, and the pointer to it is
        // cleared before this function returns.
        let state = unsafe {
            (*self.handle).begin_step(io);
            (*self.handle).state
        };
        // SAFETY: the library's `NAME` with a valid handle and its state.
        let rc = unsafe { (self.functions.step)(self.h(), state) };
        // SAFETY: the C call has returned.
        unsafe { (*self.handle).io = ptr::null_mut() };
        self.last_rc = rc;
        if let Some(why) = self.take_failure() {
            return Err(BoxError::new(why));
        }
        match rc {
            flow::RETURN => Ok(Flow::Return),
            flow::CONTINUE => Ok(Flow::Continue),
            flow::END => Ok(Flow::End),
            rc if rc < 0 => Err(BoxError::new(format!(
                "{} returned {rc} (a negative value marks a failure)",
                self.implementation.name
            ))),
            rc => {
                if !self.warned_flow {
                    self.warned_flow = true;
                    // SAFETY: no C call runs now.
                    let target = unsafe { &(*self.handle).target };
                    log::warn!(
                        target: target,
                        "{} returned {rc}, which is none of SMX_NET_RETURN (0), SMX_NET_CONTINUE (1), \
                         SMX_NET_END (2): the net ends, as in the original runtime",
                        self.implementation.name
                    );
                }
                Ok(Flow::End)
            }
        }
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        // SAFETY: no C call runs now.
        let state = unsafe {
            let h = &mut *self.handle;
            h.io = ptr::null_mut();
            h.state
        };
        // SAFETY: the library's `NAME_cleanup`, once, with what init stored.
        unsafe { (self.functions.cleanup)(self.h(), state) };
        // No more steps here to free what consumers hand back: from now on they free it.
        crate::home::flush();
        crate::home::release();
        // SAFETY: the C call has returned; what a blocking wait brought and nobody read goes.
        unsafe {
            (*self.handle).state = ptr::null_mut();
            (*self.handle).stash.iter_mut().for_each(|s| *s = None);
        }
        match self.take_failure() {
            Some(why) => Err(BoxError::new(why)),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        // SAFETY: no C call runs now.
        let h = unsafe { &*self.handle };
        Stats::new()
            .with("created", h.created)
            .with("copied", h.copied)
            .with("destroyed", h.destroyed)
    }
}

impl Drop for CBox {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in `new`, freed once; the C code may no longer use it.
        let mut h = unsafe { Box::from_raw(self.handle) };
        h.magic = 0;
    }
}

/// The handle behind `h`, if `h` is one.
///
/// # Safety
/// `h` must be NULL or point to readable memory; the result must not outlive the C call.
pub(crate) unsafe fn handle<'a>(h: *mut std::ffi::c_void) -> Option<&'a mut Handle> {
    if h.is_null() || !(h as usize).is_multiple_of(std::mem::align_of::<Handle>()) {
        return None;
    }
    let hd = h as *mut Handle;
    // SAFETY: the caller's contract; a handle of ours starts with its magic word.
    if unsafe { (*hd).magic } != MAGIC {
        log::error!("smx: {h:p} is not a box handle (the `h` given to NAME_init, NAME and NAME_cleanup)");
        return None;
    }
    // SAFETY: a live handle; C calls into the ABI one at a time on the net's thread.
    Some(unsafe { &mut *hd })
}
