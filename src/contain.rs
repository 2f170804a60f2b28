//! Panics inside a dependency on hostile bytes, turned into an error naming the input (Parquet
//! files go to polars' reader when dlqf's own page reader gives up, and a damaged one can make
//! it panic), and a mapped input truncated under the run, turned into a clean exit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Contained sections running now, on any thread (polars panics on its own pool's threads).
static CONTAINING: AtomicUsize = AtomicUsize::new(0);
/// The last contained panic's message and place.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Installs the panic hook: a panic while a contained section runs is kept for its error
/// instead of printed; any other prints as Rust's default hook would.
pub fn install_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if CONTAINING.load(Ordering::SeqCst) > 0 {
            let message = info.payload().downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| info.payload().downcast_ref::<String>().cloned());
            let place = info.location().map(|l| format!(" at {}:{}", l.file().rsplit("/src/").next().unwrap_or(l.file()), l.line())).unwrap_or_default();
            *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{}{place}", message.unwrap_or_else(|| "a panic".into())));
        } else {
            default(info);
        }
    }));
}

/// Makes SIGBUS a clean error: inputs are memory-mapped, and a file another process truncates
/// while it is mapped faults on the pages past its new end. No read can go on from there, so
/// the handler says what happened and exits 1 (outputs are written aside and renamed into
/// place, so none is left half written under its name).
pub fn sigbus_is_an_error() {
    extern "C" fn on_sigbus(_: libc::c_int) {
        const MESSAGE: &[u8] = b"dlqf: an input file shrank while it was read (another process truncated or rewrote it): nothing was written; run again on a stable copy\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe, and the message is static.
        unsafe {
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(1);
        }
    }
    // SAFETY: a handler that only calls async-signal-safe functions, installed once at start.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

/// Runs `work`; a panic inside it comes back as Err with its message.
pub fn contained<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    CONTAINING.fetch_add(1, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(work));
    CONTAINING.fetch_sub(1, Ordering::SeqCst);
    result.map_err(|_| LAST.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(|| "a panic".into()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_inside_is_an_error_with_its_message_and_work_that_ends_is_its_value() {
        super::install_hook();
        assert_eq!(super::contained(|| 7), Ok(7));
        let e = super::contained(|| -> u8 { panic!("index {} out of range", 9) }).unwrap_err();
        assert!(e.starts_with("index 9 out of range at "), "{e}");
    }
}
