//! `smx_config_get_{int,bool,double,string}_err`: the net's configuration as C boxes read it.
//!
//! The values are the instance's [`BoxConfig`](smx_box::BoxConfig) after every configuration
//! layer (`[default]` < `[impl.NAME]` < `[net.INSTANCE]` < `[net."INSTANCE#ID"]` < `--set`).
//! A C box declares no keys, so its values arrive as text, the way a TOML file or `--set` wrote
//! them, and each getter parses the text as its type:
//!
//! * int: a decimal integer in `int` range (`_` separators allowed), else BAD_TYPE;
//! * bool: `true/false/yes/no/on/off/1/0`, else BAD_TYPE;
//! * double: a finite decimal number (an integer too), else BAD_TYPE;
//! * string: the text as it is (so `min = 5` also reads as the string `"5"`).
//!
//! A key that is not set is NO_VALUE. The key is looked up as written (a TOML key
//! `"limits.max"` is one key): smx's configuration files have no nested tables.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr;

use smx_box::ConfigValue;

use crate::abi::config_err;
use crate::cbox::Handle;
use crate::cbox::handle;

enum Found<'a> {
    Text(&'a str),
    Value(&'a ConfigValue),
}

/// Looks `key` up; on an error `*err` is set and `None` returned.
///
/// # Safety
/// `conf` must be NULL or a handle; `key` NULL or a C string; `err` NULL or writable.
unsafe fn lookup<'a>(conf: *mut c_void, key: *const c_char, err: *mut c_int) -> Option<(&'a mut Handle, String)> {
    let set = |code: c_int| {
        if !err.is_null() {
            // SAFETY: the caller's contract.
            unsafe { *err = code };
        }
    };
    // SAFETY: the caller's contract.
    let (Some(hd), false) = (unsafe { handle(conf) }, key.is_null()) else {
        set(config_err::NO_VALUE);
        return None;
    };
    // SAFETY: a C string from the box.
    let key = unsafe { CStr::from_ptr(key) }.to_string_lossy().into_owned();
    if !hd.config.values.contains_key(&key) {
        set(config_err::NO_VALUE);
        return None;
    }
    set(config_err::NO_ERROR);
    Some((hd, key))
}

fn found<'a>(hd: &'a Handle, key: &str) -> Found<'a> {
    match &hd.config.values[key] {
        ConfigValue::Str(s) => Found::Text(s),
        other => Found::Value(other),
    }
}

fn parse_int(text: &str) -> Option<i32> {
    text.trim().replace('_', "").parse::<i32>().ok()
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn parse_double(text: &str) -> Option<f64> {
    text.trim()
        .replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// Runs a getter: the value, or `bad` with BAD_TYPE.
///
/// # Safety
/// As for [`lookup`].
unsafe fn get<T: Copy>(
    conf: *mut c_void,
    key: *const c_char,
    err: *mut c_int,
    bad: T,
    read: impl FnOnce(Found<'_>) -> Option<T>,
) -> T {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let (hd, key) = unsafe { lookup(conf, key, err) }?;
        Some(read(found(hd, &key)))
    }));
    match result {
        Ok(Some(Some(v))) => v,
        Ok(Some(None)) => {
            if !err.is_null() {
                // SAFETY: the caller's contract.
                unsafe { *err = config_err::BAD_TYPE };
            }
            bad
        }
        Ok(None) => bad,
        Err(_) => {
            log::error!("smx_config_get_*: panicked");
            if !err.is_null() {
                // SAFETY: the caller's contract.
                unsafe { *err = config_err::NO_VALUE };
            }
            bad
        }
    }
}

/// The value of `key` as an `int`.
///
/// # Safety
/// `conf` must be NULL or `smx_net_conf(h)`; `key` NULL or a C string; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_config_get_int_err(conf: *mut c_void, key: *const c_char, err: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        get(conf, key, err, 0, |v| match v {
            Found::Text(t) => parse_int(t),
            Found::Value(ConfigValue::Int(i)) => i32::try_from(*i).ok(),
            Found::Value(_) => None,
        })
    }
}

/// The value of `key` as a `bool`.
///
/// # Safety
/// `conf` must be NULL or `smx_net_conf(h)`; `key` NULL or a C string; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_config_get_bool_err(conf: *mut c_void, key: *const c_char, err: *mut c_int) -> bool {
    // SAFETY: the caller's contract.
    unsafe {
        get(conf, key, err, false, |v| match v {
            Found::Text(t) => parse_bool(t),
            Found::Value(ConfigValue::Bool(b)) => Some(*b),
            Found::Value(_) => None,
        })
    }
}

/// The value of `key` as a `double`.
///
/// # Safety
/// `conf` must be NULL or `smx_net_conf(h)`; `key` NULL or a C string; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_config_get_double_err(conf: *mut c_void, key: *const c_char, err: *mut c_int) -> f64 {
    // SAFETY: the caller's contract.
    unsafe {
        get(conf, key, err, 0.0, |v| match v {
            Found::Text(t) => parse_double(t),
            Found::Value(ConfigValue::Float(f)) => Some(*f),
            Found::Value(ConfigValue::Int(i)) => Some(*i as f64),
            Found::Value(ConfigValue::Bool(b)) => Some(f64::from(u8::from(*b))),
            Found::Value(_) => None,
        })
    }
}

/// The value of `key` as a string, owned by the runtime until `NAME_cleanup` returns.
///
/// # Safety
/// `conf` must be NULL or `smx_net_conf(h)`; `key` NULL or a C string; `len` and `err` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_config_get_string_err(
    conf: *mut c_void,
    key: *const c_char,
    len: *mut c_uint,
    err: *mut c_int,
) -> *const c_char {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let (hd, key) = unsafe { lookup(conf, key, err) }?;
        let text = match found(hd, &key) {
            Found::Text(t) => t.to_string(),
            Found::Value(ConfigValue::Duration(d)) => format!("{}ns", d.as_nanos()),
            Found::Value(ConfigValue::Int(i)) => i.to_string(),
            Found::Value(ConfigValue::Float(f)) => f.to_string(),
            Found::Value(ConfigValue::Bool(b)) => b.to_string(),
            Found::Value(ConfigValue::Str(s)) => s.clone(),
        };
        let Ok(c) = CString::new(text) else {
            return Some(None);
        };
        let s = hd.strings.entry(key).or_insert(c);
        Some(Some((s.as_ptr(), s.as_bytes().len())))
    }));
    let set = |code: c_int| {
        if !err.is_null() {
            // SAFETY: the caller's contract.
            unsafe { *err = code };
        }
    };
    match result {
        Ok(Some(Some((p, n)))) => {
            if !len.is_null() {
                // SAFETY: the caller's contract.
                unsafe { *len = n as c_uint };
            }
            p
        }
        Ok(Some(None)) => {
            set(config_err::BAD_TYPE);
            ptr::null()
        }
        Ok(None) => ptr::null(),
        Err(_) => {
            log::error!("smx_config_get_string_err: panicked");
            set(config_err::NO_VALUE);
            ptr::null()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_parses_by_the_getters_type() {
        assert_eq!(parse_int(" -5 "), Some(-5));
        assert_eq!(parse_int("1_000"), Some(1000));
        assert_eq!(parse_int("3000000000"), None);
        assert_eq!(parse_int("1.5"), None);
        assert_eq!(parse_bool("yes"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
        assert_eq!(parse_double("2"), Some(2.0));
        assert_eq!(parse_double("0.25"), Some(0.25));
        assert_eq!(parse_double("inf"), None);
    }
}
