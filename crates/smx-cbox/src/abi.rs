//! The C side's types and numbers, exactly as `include/smx_abi.h` declares them (for Rust code
//! that drives or tests C boxes).

use std::ffi::{c_char, c_int, c_ulonglong, c_void};

/// `smx_msg_copy_fn`: deep-copies `size` bytes of payload `data`.
pub type CopyFn = unsafe extern "C" fn(data: *mut c_void, size: usize) -> *mut c_void;
/// `smx_msg_destroy_fn`: frees payload `data`.
pub type DestroyFn = unsafe extern "C" fn(data: *mut c_void);
/// `smx_msg_unpack_fn`: the usable view of payload `data`.
pub type UnpackFn = unsafe extern "C" fn(data: *mut c_void) -> *mut c_void;

/// `NAME(h, state)`: one iteration.
pub type StepFn = unsafe extern "C" fn(h: *mut c_void, state: *mut c_void) -> c_int;
/// `NAME_init(h, &state)`: 0 or a failure.
pub type InitFn = unsafe extern "C" fn(h: *mut c_void, state: *mut *mut c_void) -> c_int;
/// `NAME_cleanup(h, state)`.
pub type CleanupFn = unsafe extern "C" fn(h: *mut c_void, state: *mut c_void);

/// `struct smx_msg_s`.
#[repr(C)]
#[derive(Debug)]
pub struct SmxMsg {
    pub id: c_ulonglong,
    pub type_: *mut c_char,
    pub prevent_backup: bool,
    pub data: *mut c_void,
    pub size: c_int,
    pub copy: Option<CopyFn>,
    pub destroy: Option<DestroyFn>,
    pub unpack: Option<UnpackFn>,
    pub seq: c_ulonglong,
    pub sent_ns: c_ulonglong,
    pub reserved: *mut c_void,
}

/// `smx_channel_err_t`.
pub mod err {
    pub const NONE: i32 = 0;
    pub const NO_DEFAULT: i32 = -99;
    pub const NO_TARGET: i32 = -98;
    pub const NO_DATA: i32 = -96;
    pub const UNINITIALISED: i32 = -93;
    pub const TIMEOUT: i32 = -92;
    pub const OPEN: i32 = -90;
}

/// `smx_config_error_t`.
pub mod config_err {
    pub const NO_ERROR: i32 = 0;
    pub const BAD_TYPE: i32 = -199;
    pub const NO_VALUE: i32 = -198;
}

/// What `NAME()` returns.
pub mod flow {
    pub const RETURN: i32 = 0;
    pub const CONTINUE: i32 = 1;
    pub const END: i32 = 2;
}

/// `enum smx_log_level_e` (the original's zlog levels).
pub mod level {
    pub const DEBUG: i32 = 20;
    pub const INFO: i32 = 40;
    pub const EVENT: i32 = 50;
    pub const NOTICE: i32 = 60;
    pub const WARN: i32 = 80;
    pub const ERROR: i32 = 100;
    pub const FATAL: i32 = 120;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout `include/smx_abi.h` gives `struct smx_msg_s` on LP64 (checked against gcc's
    /// `offsetof` when the header was written).
    #[test]
    fn the_message_layout_is_the_headers() {
        assert_eq!(offset_of!(SmxMsg, id), 0);
        assert_eq!(offset_of!(SmxMsg, type_), 8);
        assert_eq!(offset_of!(SmxMsg, prevent_backup), 16);
        assert_eq!(offset_of!(SmxMsg, data), 24);
        assert_eq!(offset_of!(SmxMsg, size), 32);
        assert_eq!(offset_of!(SmxMsg, copy), 40);
        assert_eq!(offset_of!(SmxMsg, destroy), 48);
        assert_eq!(offset_of!(SmxMsg, unpack), 56);
        assert_eq!(offset_of!(SmxMsg, seq), 64);
        assert_eq!(offset_of!(SmxMsg, sent_ns), 72);
        assert_eq!(offset_of!(SmxMsg, reserved), 80);
        assert_eq!(size_of::<SmxMsg>(), 88);
    }
}
